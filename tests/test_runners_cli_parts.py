"""The runners' shared parts: one option rule, one bootstrap count, one set of TLS key names,
and a command line that loads a subcommand's modules only when that subcommand runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from runners.cli.main import build_parser
from runners.cli.main import main as runners_main
from runners.errors import RunnerError
from runners.scenario import Scenario
from sizing.errors import InputError
from sizing.workload.value import Workload
from trialtable import tls
from trialtable.profile import HANDSHAKE_FULL

ROOT = Path(__file__).resolve().parents[1]
#: Modules no subcommand's options need: each is imported only by the subcommand that runs it.
HEAVY = (
    "runners.search",
    "runners.session",
    "runners.sweep",
    "runners.interleave",
    "runners.compare",
    "runners.calibrate.campaign",
    "runners.calibrate.fit",
    "runners.plan",
    "runners.hosts",
    "numpy",
    "fabric",
)


def test_building_the_parser_imports_no_subcommand_module():
    code = (
        "import sys\nfrom runners.cli.main import build_parser\nbuild_parser()\n"
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


@pytest.mark.parametrize(
    ("command", "words"),
    [
        (["ab"], ["--schedule {together,alternate}", "--measure {cpu,rps}", "runners ab [SWEEP"]),
        (["compare"], ["--gate LIST", "Compare two run folders setting by setting"]),
        (["search"], ["--strategy {adaptive,grid,rate}"]),
        (["sweep"], ["--tls-key {ecdsa-p256,rsa2048}"]),
    ],
)
def test_help_stays_complete(command, words, capsys):
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args([*command, "--help"])
    assert exc.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for word in words:
        assert " ".join(word.split()) in text


@pytest.mark.parametrize("value", ["150%", "-1%", "1", "nan", "lots"])
def test_compare_and_ab_read_fail_if_worse_by_one_rule(value, capsys):
    lines = []
    for command in (["compare", "A", "B"], ["ab", "--ab-directive", "x 1"]):
        with pytest.raises(SystemExit) as exc:
            runners_main([*command, f"--fail-if-worse={value}"])
        assert exc.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1
        lines.append(err[0].split("--fail-if-worse: ", 1)[1])
    assert lines[0] == lines[1]
    assert "fraction" in lines[0] or "[0, 1)" in lines[0]


@pytest.mark.parametrize("key", tls.KEYS, ids=lambda k: k.name)
def test_each_tls_key_is_one_key_in_both_packages(key):
    # The runners' CLI reads either name to the short one a run records ...
    for spelling in (key.name, key.short, key.name.upper()):
        args = build_parser().parse_args(["sweep", "--protocol", "https", "--tls-key", spelling])
        assert args.tls_key == key.short
    Scenario(protocol="https", tls_key=key.short)
    # ... sizing takes the long one, and both price the same handshake coefficient.
    assert Workload(tls_key=key.name).tls_key == key.name
    assert HANDSHAKE_FULL[key.name] == HANDSHAKE_FULL[key.short] == key.coefficient


def test_names_no_package_knows_are_refused():
    with pytest.raises(RunnerError):
        Scenario(protocol="https", tls_key="dsa")
    with pytest.raises(InputError):
        Workload(tls_key="ecdsa")  # sizing takes the long names only
    with pytest.raises(ValueError, match="ecdsa-p256 or rsa2048"):
        tls.tls_key("ed25519")

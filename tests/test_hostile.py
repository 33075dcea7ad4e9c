"""Hostile files, links, pipes, devices, processes, numbers and text, one class at a time.

Each test plants one thing the tool must not trust (a symbolic link at an output's name, a
named pipe as an input, a device node made in the test's own folder, a process renamed
nginx, a 100,000-digit number, an escape sequence, a formula) and checks one line on stderr,
the exit code, that nothing outside the tool's own files was written, and that no process or
file is left. Device nodes are made with ``os.mknod`` in ``tmp_path`` only (skipped where not
permitted); no test names a system path as an output.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runners.cli.options import wildcard_problem
from runners.hosts import LocalHost
from runners.loadgen import h2load
from sizing.cli.main import main as sizing_main
from sizing.errors import InputError
from tests.conftest import runners_cli, sizing_cli
from tests.test_catalog_build import upstream  # noqa: F401  (a fixture)
from trialtable import profile as tprofile
from trialtable.files import FileRefused, check_output, read_bounded, write_atomic
from trialtable.output import csv_cell, json_text, terminal

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "data" / "profile-fixture-epyc.json"
SIM = ("sweep", "--server", "sim", "--quiet", "--connections", "8")


def one_line(err: str, prefix: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith(prefix), lines[0]
    assert "Traceback" not in err
    return lines[0]


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _device(path: Path) -> Path:
    """A character device node like /dev/full (1, 7), made in the test's own folder."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 7))
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot make a device node here ({exc.strerror})")
    return path


def _victim(tmp_path: Path) -> Path:
    v = tmp_path / "victim.txt"
    v.write_text("precious\n")
    return v


def _sim_run(out: Path) -> Path:
    p = runners_cli(*SIM, "--out", str(out))
    assert p.returncode == 0, p.stderr
    (run,) = [d for d in out.iterdir() if d.is_dir()]
    return run


# -- 1. writes outside what the tool owns -------------------------------------------------------
def test_write_atomic_refuses_links_pipes_devices_and_inputs(tmp_path):
    victim = _victim(tmp_path)
    link = tmp_path / "link.csv"
    link.symlink_to(victim)
    fifo = _fifo(tmp_path / "fifo.csv")
    for target, word in ((link, "symbolic link"), (fifo, "pipe"), (tmp_path, "folder")):
        with pytest.raises(FileRefused, match=word):
            write_atomic(target, "x")
    with pytest.raises(FileRefused, match="one of the inputs"):
        write_atomic(victim, "x", inputs=[victim])
    assert victim.read_text() == "precious\n"
    assert link.is_symlink() and stat.S_ISFIFO(fifo.lstat().st_mode)
    assert write_atomic(tmp_path / "new.txt", "fresh").read_text() == "fresh"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["victim.txt", "link.csv", "fifo.csv", "new.txt"]
    )  # no temporary file left


def test_write_atomic_refuses_a_device(tmp_path):
    dev = _device(tmp_path / "full")
    with pytest.raises(FileRefused, match="device"):
        check_output(dev)
    assert stat.S_ISCHR(dev.lstat().st_mode)


def _build(aws: Path, gcp: Path, out: Path, *extra: str) -> list[str]:
    return ["catalog", "build", "--aws-dir", str(aws), "--gcp-dir", str(gcp), "--out", str(out)]


def test_catalog_build_onto_a_device_writes_nothing(upstream, tmp_path, capsys):  # noqa: F811
    aws, gcp = upstream
    devdir = tmp_path / "dev"
    devdir.mkdir()
    dev = _device(devdir / "full")
    with pytest.raises(SystemExit) as exc:  # refused as the command line is parsed
        sizing_main(_build(aws, gcp, dev))
    assert exc.value.code == 2
    one_line(capsys.readouterr().err, "python -m sizing catalog: error: ")
    assert stat.S_ISCHR(dev.lstat().st_mode)
    assert [p.name for p in devdir.iterdir()] == ["full"]  # no sibling written beside it


def test_catalog_build_through_a_planted_sibling_link_is_refused(upstream, tmp_path, capsys):  # noqa: F811
    aws, gcp = upstream
    victim = _victim(tmp_path)
    out = tmp_path / "out" / "cat.csv"
    out.parent.mkdir()
    (out.parent / "cat.excluded.csv").symlink_to(victim)
    assert sizing_main(_build(aws, gcp, out)) == 2
    line = one_line(capsys.readouterr().err, "python -m sizing catalog: error: ")
    assert "symbolic link" in line
    assert victim.read_text() == "precious\n"
    assert not out.exists()  # every output is checked before the first is written


def test_catalog_build_onto_its_own_input_is_refused(upstream, tmp_path, capsys):  # noqa: F811
    aws, gcp = upstream
    own = aws / "zz_generated.pricing_aws.go"
    before = own.read_bytes()
    with pytest.raises(SystemExit) as exc:
        sizing_main(_build(aws, gcp, own))
    assert exc.value.code == 2
    assert "one of the inputs" in one_line(capsys.readouterr().err, "python -m sizing")
    assert own.read_bytes() == before


# -- 2. locks and state files that follow links ---------------------------------------------
def test_a_planted_lock_link_truncates_nothing(tmp_path):
    out = tmp_path / "runs"
    run = _sim_run(out)
    victim = _victim(tmp_path)
    (run / "run.lock").unlink()
    (run / "run.lock").symlink_to(victim)
    p = runners_cli(*SIM, "--out", str(out), "--resume", run.name)
    assert p.returncode == 2
    assert "run.lock" in one_line(p.stderr, "python -m runners: error: ")
    q = runners_cli("cleanup", run.name, "--out", str(out))
    assert q.returncode == 0 and "Traceback" not in q.stderr
    assert victim.read_text() == "precious\n"


def test_a_planted_temporary_state_link_is_not_written_through(tmp_path):
    out = tmp_path / "runs"
    run = _sim_run(out)
    victim = _victim(tmp_path)
    (run / "run.json.tmp").symlink_to(victim)
    (run / "trials.csv.tmp").symlink_to(victim)
    p = runners_cli(*SIM, "--out", str(out), "--resume", run.name)
    assert p.returncode == 0, p.stderr
    assert victim.read_text() == "precious\n"


def test_state_files_that_are_links_or_pipes_are_refused(tmp_path):
    out = tmp_path / "runs"
    run = _sim_run(out)
    victim = _victim(tmp_path)
    (run / "histograms.jsonl").unlink()
    (run / "histograms.jsonl").symlink_to(victim)
    p = runners_cli(*SIM, "--out", str(out), "--resume", run.name)
    assert p.returncode == 2
    assert "symbolic link" in one_line(p.stderr, "python -m runners: error: ")
    assert victim.read_text() == "precious\n"


# -- 3. cleanup acts only on what it can prove it started -----------------------------------
@pytest.fixture
def decoy(tmp_path):
    """A process whose name is nginx (a link named nginx to sleep), killed at the end."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "nginx").symlink_to(shutil.which("sleep") or "/bin/sleep")
    proc = subprocess.Popen([str(bindir / "nginx"), "600"])
    try:
        comm = Path(f"/proc/{proc.pid}/comm")
        deadline = time.monotonic() + 60  # until the child has exec'd
        while comm.read_text().strip() != "nginx" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert comm.read_text().strip() == "nginx"
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=60)


def _start_time(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(") ")[2].split()[19]


def _plant(out: Path, entries: list[dict], run_id: str = "r1") -> Path:
    run = out / run_id
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"run_id": run_id, "plan": {}}))
    lines = [json.dumps({"event": "started", "host": "local", **e}) for e in entries]
    (run / "started.jsonl").write_text("\n".join(lines) + "\n")
    return run


@pytest.mark.parametrize("starts", [None, "wrong"])
def test_cleanup_leaves_a_recorded_pid_it_cannot_prove(tmp_path, own_tmpdir, decoy, starts):
    prefix = own_tmpdir / "nginx-sizing.abcdefgh"
    prefix.mkdir()
    entry = {"what": "nginx", "path": str(prefix), "pids": [decoy.pid]}
    if starts:
        entry["starts"] = {str(decoy.pid): "1"}
    _plant(tmp_path / "runs", [entry])
    p = runners_cli("cleanup", "r1", "--out", str(tmp_path / "runs"))
    assert p.returncode == 0, p.stderr
    assert decoy.poll() is None, "a process the run cannot prove it started was killed"
    assert f"pid {decoy.pid}" in p.stderr and "left alone" in p.stderr
    assert not prefix.exists()  # the prefix itself is provably the run's own


def test_cleanup_stops_a_pid_whose_start_time_matches(tmp_path, own_tmpdir, decoy):
    prefix = own_tmpdir / "nginx-sizing.abcdefgh"
    prefix.mkdir()
    starts = {str(decoy.pid): _start_time(decoy.pid)}
    entry = {"what": "nginx", "path": str(prefix), "pids": [decoy.pid], "starts": starts}
    _plant(tmp_path / "runs", [entry])
    p = runners_cli("cleanup", "r1", "--out", str(tmp_path / "runs"))
    assert p.returncode == 0, p.stderr
    assert decoy.wait(timeout=60) is not None
    assert not prefix.exists()


def test_cleanup_leaves_paths_outside_its_temporary_folder(tmp_path, own_tmpdir):
    outside = tmp_path / "elsewhere" / "nginx-sizing.abcdefgh"
    outside.mkdir(parents=True)
    (outside / "keep").write_text("mine")
    victim_dir = tmp_path / "victim"
    victim_dir.mkdir()
    (victim_dir / "keep").write_text("mine")
    link = own_tmpdir / "nginx-sizing.ijklmnop"
    link.symlink_to(victim_dir)
    entries = [
        {"what": "nginx-prefix", "path": str(outside), "pids": []},
        {"what": "nginx-prefix", "path": str(link), "pids": []},
    ]
    _plant(tmp_path / "runs", entries)
    p = runners_cli("cleanup", "r1", "--out", str(tmp_path / "runs"))
    assert p.returncode == 0, p.stderr
    assert (outside / "keep").exists() and (victim_dir / "keep").exists() and link.is_symlink()
    assert "not in this host's temporary folder" in p.stderr
    assert "symbolic link" in p.stderr


# -- 5. readers that hang --------------------------------------------------------------------
def test_a_pipe_nobody_writes_is_refused_not_waited_on(tmp_path):
    fifo = _fifo(tmp_path / "p")
    with pytest.raises(FileRefused, match="pipe"):
        read_bounded(fifo, 1000)
    with pytest.raises(FileRefused, match="pipe"):
        read_bounded(fifo, 1000, regular_only=True)


def test_a_pipe_that_never_ends_is_read_for_a_bounded_time(tmp_path):
    fifo = _fifo(tmp_path / "p")
    # A writer that wrote and holds the pipe open (O_RDWR: opening never waits on Linux).
    writer = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    try:
        os.write(writer, b"x")
        with pytest.raises(FileRefused, match="did not end"):
            read_bounded(fifo, 1000, timeout=2)
    finally:
        os.close(writer)


@pytest.mark.parametrize("option", ["--profile", "--catalog"])
def test_sizing_refuses_a_pipe_as_input(tmp_path, option):
    fifo = _fifo(tmp_path / "input")
    p = sizing_cli("recommend", "--rps", "1e6", option, str(fifo))
    assert p.returncode == 2
    assert "pipe" in one_line(p.stderr, "python -m sizing recommend: error: ")


def test_catalog_build_refuses_a_pipe_as_upstream_file(upstream, tmp_path):  # noqa: F811
    aws, gcp = upstream
    (aws / "instance-types.md").unlink()
    _fifo(aws / "instance-types.md")
    p = sizing_cli(*_build(aws, gcp, tmp_path / "c.csv"))
    assert p.returncode == 2
    assert "pipe" in one_line(p.stderr, "python -m sizing catalog: error: ")


def test_runners_refuse_a_pipe_as_inventory_and_started_record(tmp_path):
    p = runners_cli(*SIM, "--out", str(tmp_path), "--inventory", str(_fifo(tmp_path / "inv")))
    assert p.returncode == 2  # bad input, refused as the command line is parsed
    assert "pipe" in one_line(p.stderr, "python -m runners sweep: error: ")
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "run.json").write_text('{"run_id": "r1", "plan": {}}')
    _fifo(run / "started.jsonl")
    q = runners_cli("cleanup", "r1", "--out", str(tmp_path / "runs"))
    assert q.returncode == 0 and "nothing left behind" in q.stderr


# -- 6. what a killed run leaves -------------------------------------------------------------
def test_cleanup_all_looks_inside_campaigns_and_removes_load_logs(tmp_path, own_tmpdir):
    out = tmp_path / "runs"
    (out / "c1").mkdir(parents=True)
    (out / "c1" / "campaign.json").write_text("{}")
    prefix = own_tmpdir / "nginx-sizing.abcdefgh"
    prefix.mkdir()
    work = own_tmpdir / "nginx-sizing-load.abcdefgh"
    work.mkdir()
    log = own_tmpdir / "nginx-sizing-load.abcdefgh-h2load.XXXXXXXX"
    log.write_text("1\t200\t5\n")
    entries = [
        {"what": "nginx-prefix", "path": str(prefix), "pids": []},
        {"what": "client-workdir", "path": str(work), "pids": []},
    ]
    _plant(out / "c1" / "runs", entries)
    p = runners_cli("cleanup", "--all", "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert not prefix.exists() and not work.exists() and not log.exists()
    again = runners_cli("cleanup", "--all", "--out", str(out))
    assert "nothing left behind" in again.stderr


def test_h2load_log_is_named_after_the_recorded_work_folder(tmp_path, own_tmpdir):
    work = own_tmpdir / "nginx-sizing-load.abcdefgh"
    work.mkdir()
    out = LocalHost().sh(h2load.WRAPPER, str(work), "printf", "%s\\n", timeout=120, check=False)
    logs = [ln for ln in out.stdout.splitlines() if ln.startswith("--log-file=")]
    assert logs, out.stdout
    assert Path(logs[0].removeprefix("--log-file=")).name.startswith(work.name + "-h2load.")
    assert not Path(logs[0].removeprefix("--log-file=")).exists()


# -- 4 and 7. one schema with ranges; numbers ------------------------------------------------
def _profile(tmp_path: Path, change, name: str = "p.json", text: str | None = None) -> Path:
    doc = json.loads(FIXTURE.read_text())
    change(doc)
    path = tmp_path / name
    path.write_text(text if text is not None else json.dumps(doc))
    return path


def _coef(name, **kw):
    def change(doc):
        doc["coefficients"].setdefault(name, {"value": 1.0, "unit": "us/request"}).update(kw)

    return change


@pytest.mark.parametrize(
    "change,word",
    [
        (_coef("request_us", value=-5.0), "negative"),
        (_coef("request_us", value=1e308), "larger than"),
        (_coef("request_us", unit="ms/request"), "unit"),
        (_coef("request_us", stderr=-1.0), "stderr"),
        (_coef("bogus_us", value=1.0), "unknown"),
        (lambda d: [c.update(value=0.0) for c in d["coefficients"].values()], "cost nothing"),
        (lambda d: d.update(sla_p99_ms=-1), "sla_p99_ms"),
    ],
)
def test_sizing_refuses_a_profile_the_schema_refuses(tmp_path, capsys, change, word):
    path = _profile(tmp_path, change)
    assert sizing_main(["recommend", "--rps", "1e6", "--profile", str(path)]) == 2
    assert word in one_line(capsys.readouterr().err, "python -m sizing recommend: error: ")


@pytest.mark.parametrize("literal", ["NaN", "1e999", "9" * 100_000])
def test_sizing_refuses_profile_numbers_json_cannot_hold(tmp_path, capsys, literal):
    text = FIXTURE.read_text()
    doc = json.loads(text)
    value = doc["coefficients"]["request_us"]["value"]
    text = text.replace(json.dumps(value), literal, 1)
    path = _profile(tmp_path, lambda d: None, text=text)
    assert sizing_main(["recommend", "--rps", "1e6", "--profile", str(path)]) == 2
    one_line(capsys.readouterr().err, "python -m sizing recommend: error: ")


def test_two_profiles_of_one_platform_that_disagree_are_refused(tmp_path, capsys):
    def triple(doc):
        c = doc["coefficients"]["request_us"]
        c.update(value=c["value"] * 3, stderr=0.01, spread=0.0)

    a = _profile(tmp_path, lambda d: None, "a.json")
    b = _profile(tmp_path, triple, "b.json")
    code = sizing_main(["recommend", "--rps", "1e6", "--profile", str(a), "--profile", str(b)])
    assert code == 2
    line = one_line(capsys.readouterr().err, "python -m sizing recommend: error: ")
    assert "disagree" in line and "a.json" in line and "b.json" in line
    assert sizing_main(["recommend", "--rps", "1e6", "--profile", str(a), "--profile", str(a)]) == 0


_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e308, -1e308, 5e-324, -0.0, 0.0, 1e6, 1e6 + 1]),
    st.text(max_size=20),
    st.lists(st.integers(-5, 5), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)
_BASE = json.loads(FIXTURE.read_text())
_FIELDS = [(k,) for k in _BASE if k not in ("coefficients",)] + [
    ("coefficients", name, sub)
    for name in _BASE["coefficients"]
    for sub in ("value", "stderr", "spread", "unit")
]
_FIELDS += [("scaling", k) for k in ("workers", "rps", "efficiency")]


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(field=st.sampled_from(_FIELDS), value=_VALUES)
def test_every_profile_field_is_read_or_refused_in_one_line(tmp_path, field, value):
    doc = copy.deepcopy(_BASE)
    node = doc
    for key in field[:-1]:
        node = node[key]
    node[field[-1]] = value
    path = tmp_path / "fuzz.json"
    path.write_text(json.dumps(doc))
    try:
        prof = tprofile.read_profile(path)
    except tprofile.ProfileError as exc:
        assert "\n" not in str(exc)
    else:
        for c in prof.coefficients.values():
            assert abs(c.value) <= tprofile.UNIT_MAX[c.unit]
        assert prof.coefficients["request_us"].value > 0
    from sizing.evidence.profiles import read_profile

    try:
        cost = read_profile(path)
    except InputError as exc:
        assert "\n" not in str(exc)
    else:
        assert cost.coefficients["request_us"].value > 0


def test_long_durations_and_bad_seeds_are_no_traceback(capsys):
    assert LocalHost().run(["true"], timeout=1e9).ok  # poll() takes at most 2**31 ms
    with pytest.raises(SystemExit) as exit_:
        sizing_main(["plan-measurements", "--seed", "-1"])
    assert exit_.value.code == 2
    one_line(capsys.readouterr().err, "python -m sizing plan-measurements: error: ")


def test_json_output_is_always_valid_json(capsys):
    assert (
        json_text({"a": float("nan"), "b": [float("inf"), 1.5]}) == '{"a": null, "b": [null, 1.5]}'
    )
    assert sizing_main(["recommend", "--rps", "1e6", "--format", "json", "--top", "3"]) == 0

    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in JSON output")

    json.loads(capsys.readouterr().out, parse_constant=refuse)


# -- 8. output injection ---------------------------------------------------------------------
ESC = "\x1b]0;owned\x07\x1b[2J"


def test_fit_profile_escapes_control_characters(tmp_path, capsys):
    path = _profile(tmp_path, lambda d: d.update(cpu_model="AMD EPYC " + ESC, warnings=[ESC]))
    assert sizing_main(["fit", "--profile", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\\x1b" in out


def test_cleanup_escapes_control_characters(tmp_path):
    _plant(tmp_path / "runs", [{"what": "nginx-prefix", "path": "/x/" + ESC, "pids": []}])
    p = runners_cli("cleanup", "r1", "--out", str(tmp_path / "runs"))
    assert p.returncode == 0
    assert "\x1b" not in p.stderr and "\x07" not in p.stderr and "\\x1b" in p.stderr


@pytest.mark.parametrize("text", ['=HYPERLINK("http://x")', "+1", "-1+1", "@SUM(A1)", "\tx", "\rx"])
def test_formula_prefixes_are_neutralised(text):
    assert csv_cell(text) == "'" + text
    assert csv_cell(-1.5) == -1.5 and csv_cell("plain") == "plain"


def test_recommend_csv_and_a_run_label_carry_no_formula(tmp_path, capsys):
    src = (ROOT / "data" / "catalog" / "instances.csv").read_text().splitlines()
    rows = list(csv.DictReader(io.StringIO("\n".join(src[:40]) + "\n")))
    rows[0]["instance_type"] = '=HYPERLINK("http://x")'
    path = tmp_path / "cat.csv"
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    assert (
        sizing_main(["recommend", "--rps", "1e5", "--catalog", str(path), "--format", "csv"]) == 0
    )
    for row in csv.reader(io.StringIO(capsys.readouterr().out)):
        assert not any(cell.startswith(("=", "+", "@")) for cell in row), row
    p = runners_cli(*SIM, "--out", str(tmp_path / "runs"), "--label", "=cmd|x", "--format", "csv")
    assert p.returncode == 0, p.stderr
    assert "'=cmd|x" in p.stdout and ",=cmd" not in p.stdout
    (trials,) = (tmp_path / "runs").glob("*/trials.csv")
    assert ",=cmd" not in trials.read_text()


def test_terminal_keeps_lines_and_escapes_the_rest():
    assert terminal("a\x1b[2J\nb\x07") == "a\\x1b[2J\nb\\x07"


# -- 9. exposure -----------------------------------------------------------------------------
@pytest.mark.parametrize("address", ["0.0.0.0", "::", "[::]", "0"])
def test_wildcard_target_addresses_need_an_explicit_flag(tmp_path, address):
    assert wildcard_problem(address, False) and wildcard_problem(address, True) is None
    p = runners_cli("sweep", "--target-address", address, "--out", str(tmp_path), "--quiet")
    assert p.returncode == 2
    assert "--allow-wildcard-address" in one_line(p.stderr, "python -m runners: error: ")
    assert not list(tmp_path.iterdir())  # refused before a run folder is made
    assert wildcard_problem("127.0.0.1", False) is None


def test_calibrate_refuses_a_wildcard_target_address(tmp_path):
    p = runners_cli("calibrate", "--target-address", "0.0.0.0", "--out", str(tmp_path))
    assert p.returncode == 2
    assert "wildcard" in one_line(p.stderr, "python -m runners: error: ")

"""Damaged run folders: one line naming the folder, the file and the problem, in both CLIs."""

from __future__ import annotations

import csv
import json
import os
import shutil
from pathlib import Path

import pytest

from runners.plan import Plan
from runners.sim import SimServer
from runners.sweep import run_sweep
from sizing.cli.main import main as sizing_main
from tests.conftest import runners_cli
from trialtable.folder import RunFolderError
from trialtable.read import read_rows

# The fixture's Plan() serves plain HTTP (the Python API's default); the CLI defaults to
# HTTPS (one default protocol with sizing), so the resumes say --protocol http.
SWEEP = (
    "--server",
    "sim",
    "--protocol",
    "http",
    "--seed",
    "4",
    "--connections",
    "8,16",
    "--label",
    "c7g.large",
    "--quiet",
)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """A simulated run with two of its three settings done."""
    out = tmp_path_factory.mktemp("runs")
    plan = Plan(connections=(8, 16), warmup_s=0, cooldown_s=0.0, label="c7g.large")
    run_sweep(plan, out, sim=SimServer(seed=4), progress=None)
    (run,) = out.iterdir()
    return run


def _copy(pristine: Path, tmp_path: Path) -> Path:
    run = tmp_path / "runs" / pristine.name
    shutil.copytree(pristine, run)
    (run / "run.lock").unlink(missing_ok=True)
    return run


def _tear(run: Path) -> None:
    with (run / "trials.csv").open("a") as fh:
        fh.write(f"{run.name},{run.name}-0003,2026-")


def _empty(run: Path) -> None:
    (run / "trials.csv").write_bytes(b"")


def _binary(run: Path) -> None:
    (run / "trials.csv").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)))


def _latin1(run: Path) -> None:
    path = run / "trials.csv"
    path.write_bytes(path.read_bytes().replace(b"c7g.large", b"c7g.l\xe4rge"))


def _renamed(run: Path) -> None:
    path = run / "trials.csv"
    path.write_text(path.read_text().replace(",rps,", ",req_per_s,", 1))


def _missing(run: Path) -> None:
    (run / "trials.csv").unlink()


def _no_plan(run: Path) -> None:
    meta = json.loads((run / "run.json").read_text())
    del meta["plan"]
    (run / "run.json").write_text(json.dumps(meta))


def _bad_plan(run: Path) -> None:
    meta = json.loads((run / "run.json").read_text())
    meta["plan"]["vcpus"] = "lots"
    (run / "run.json").write_text(json.dumps(meta))


# damage, what sizing says (None: sizing reads trials.csv only), what --resume does
CASES = {
    "torn": (_tear, "cut-short line 4", None),
    "empty": (_empty, "is empty (0 bytes)", None),
    "binary": (_binary, "holds binary data", "holds binary data"),
    "latin1": (_latin1, "is not UTF-8 text", "is not UTF-8 text"),
    "renamed": (_renamed, "unknown column 'req_per_s'", "unknown column 'req_per_s'"),
    "missing": (_missing, "no trials.csv", "trials.csv is missing"),
    "no-plan": (_no_plan, None, "run.json has no plan"),
    "bad-plan": (_bad_plan, None, "run.json has a plan this version cannot use"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_sizing_says_what_is_wrong(pristine, tmp_path, capsys, case):
    damage, message, _ = CASES[case]
    run = _copy(pristine, tmp_path)
    damage(run)
    if message is None:
        return
    for argv in (
        ["fit", "--runs", str(run), "--allow-simulated"],
        ["recommend", "--rps", "1e5", "--runs", str(run), "--allow-simulated"],
        ["report", "--rps", "1e5", "--runs", str(run), "--allow-simulated", "--out", "x"],
    ):
        assert sizing_main(argv) in (1, 2)
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1, err
        assert str(run) in err and message in err, err
        if case != "missing":
            assert "trials.csv" in err
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("case", list(CASES))
def test_resume_says_what_is_wrong_or_repairs(pristine, tmp_path, case):
    damage, _, message = CASES[case]
    run = _copy(pristine, tmp_path)
    damage(run)
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    p = runners_cli("sweep", *SWEEP, "--out", str(run.parent), "--resume", run.name)
    if message is None:
        # Damage a crash can cause is repaired, and the run goes on.
        assert p.returncode == 0, p.stderr
        lines = (run / "trials.csv").read_text().splitlines()
        assert len(lines) == 3  # the header and both settings, whole
        assert json.loads((run / "run.json").read_text())["status"] == "complete"
        return
    assert p.returncode == 2, p.stderr  # the run given to --resume is bad input
    err = p.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert str(run) in err and message in err, err
    after = {p.name: p.read_bytes() for p in run.iterdir() if p.name != "run.lock"}
    assert after == before  # nothing changed: fixed by hand, the run resumes


def test_resume_names_a_bad_value(pristine, tmp_path):
    run = _copy(pristine, tmp_path)
    path = run / "trials.csv"
    rows = list(csv.reader(path.open(newline="")))
    rows[1][rows[0].index("vcpus")] = "two"
    with path.open("w", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows(rows)
    p = runners_cli("sweep", *SWEEP, "--out", str(run.parent), "--resume", run.name)
    assert p.returncode == 2
    assert "trials.csv:2: column vcpus: 'two' is not an integer" in p.stderr


def test_an_empty_table_with_histograms_is_not_restarted(pristine, tmp_path):
    run = _copy(pristine, tmp_path)
    (run / "trials.csv").write_bytes(b"")
    (run / "histograms.jsonl").write_text('{"trial_id": "x-0001", "clients": {}}\n')
    p = runners_cli("sweep", *SWEEP, "--out", str(run.parent), "--resume", run.name)
    assert p.returncode == 2 and "the table was lost" in p.stderr
    assert (run / "trials.csv").read_bytes() == b""


def test_a_run_of_an_older_version_is_upgraded_on_resume(pristine, tmp_path):
    run = _copy(pristine, tmp_path)
    path = run / "trials.csv"
    rows = list(csv.DictReader(path.open(newline="")))
    old = [c for c in rows[0] if c not in ("http_version", "load_generator", "streams")]
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, old, lineterminator="\n", extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    # Nor did its run.json know the load-generator, HTTP/2, resumption and JWT options.
    meta = json.loads((run / "run.json").read_text())
    for key in ("load_generator", "http_version", "streams", "h2load"):
        del meta["plan"][key]
    for key in ("tls_resumption", "jwt"):
        del meta["plan"]["scenario"][key]
    (run / "run.json").write_text(json.dumps(meta))
    p = runners_cli("sweep", *SWEEP, "--out", str(run.parent), "--resume", run.name)
    assert p.returncode == 0, p.stderr
    again = list(csv.DictReader(path.open(newline="")))
    assert [r["load_generator"] for r in again] == ["wrk", "wrk"]  # what older rows meant
    assert [r["rps"] for r in again] == [r["rps"] for r in rows]
    assert not (run / "trials.csv.tmp").exists()


def test_a_row_being_written_is_skipped_while_its_writer_lives(pristine, tmp_path):
    run = _copy(pristine, tmp_path)
    _tear(run)
    with pytest.raises(RunFolderError, match="cut-short line 4"):
        read_rows(run)
    (run / "run.lock").write_text(f"{os.getpid()}\n")  # a live writer
    assert len(read_rows(run)) == 2

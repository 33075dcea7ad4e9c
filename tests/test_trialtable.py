"""The trial table's reader and run folder on mangled files: a RunFolderError or a result."""

from __future__ import annotations

import random
import shutil

import pytest

from runners.plan import Plan
from runners.sim import SimServer
from runners.sweep import run_sweep
from trialtable.folder import RunFolder, RunFolderError
from trialtable.read import read_rows
from trialtable.schema import COLUMNS, TRIAL_COLUMNS


@pytest.fixture(scope="module")
def valid(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    run_sweep(Plan(connections=(4, 8, 16)), out, sim=SimServer(seed=9), progress=None)
    (run,) = out.iterdir()
    return run


def _mangle(data: bytes, rng: random.Random) -> bytes:
    kind = rng.randrange(5)
    if kind == 0:  # truncated anywhere
        return data[: rng.randrange(len(data) + 1)]
    if kind == 1:  # random bytes written over a stretch
        i = rng.randrange(len(data))
        return data[:i] + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40))) + data[i:]
    if kind == 2:  # one byte changed
        i = rng.randrange(len(data))
        return data[:i] + bytes([rng.randrange(256)]) + data[i + 1 :]
    if kind == 3:  # a huge field
        return data + b'"' + b"x" * 300_000 + b'"\n'
    return bytes(rng.randrange(256) for _ in range(rng.randrange(200)))


def test_mangled_tables_are_read_or_refused_in_one_line(valid, tmp_path):
    rng = random.Random(14)
    data = (valid / "trials.csv").read_bytes()
    outcomes = {"read": 0, "refused": 0}
    for i in range(150):
        # Each copy keeps the run's id as its folder name (rows name the folder's run).
        run = tmp_path / f"r{i}" / valid.name
        shutil.copytree(valid, run)
        (run / "run.lock").unlink(missing_ok=True)
        (run / "trials.csv").write_bytes(_mangle(data, rng))
        try:
            rows = read_rows(run)
        except RunFolderError as exc:
            assert "\n" not in str(exc) and str(run) in str(exc)
            outcomes["refused"] += 1
        else:
            assert all(set(r) == set(TRIAL_COLUMNS) for r in rows)
            outcomes["read"] += 1
        try:
            RunFolder.open(run.parent, run.name).close()
        except RunFolderError as exc:
            assert "\n" not in str(exc)
    assert outcomes["read"] and outcomes["refused"]


def test_every_column_has_a_type_and_a_meaning():
    assert len(TRIAL_COLUMNS) == len(set(TRIAL_COLUMNS))
    for c in COLUMNS:
        assert c.kind in ("str", "int", "float", "bool") and c.meaning
        if c.name.endswith("_ms"):
            assert c.unit == "ms"

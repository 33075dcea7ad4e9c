"""The append-only run store."""

from __future__ import annotations

import json

import pytest

from runners.errors import RunnerError
from runners.store import load_trials
from trialtable.folder import RunFolder, RunFolderError, new_run_id
from trialtable.schema import TRIAL_COLUMNS


def _row(i: int) -> dict:
    return {
        "run_id": "r1",
        "trial_id": f"r1-{i:04d}",
        "kind": "sweep",
        "vcpus": 1,
        "threads": 1,
        "connections": 8 * i,
        "rps": 1000.5 * i,
        "valid": True,
        "meets_sla": i % 2 == 0,
        "simulated": False,
        "invalid_reason": "",
    }


def test_append_and_reload(tmp_path):
    store = RunFolder.create(tmp_path, {"run_id": "r1", "plan": {}})
    for i in (1, 2):
        store.append(_row(i), {"local": [[100, i], [250, 3]]})
    df = load_trials(tmp_path / "r1")
    assert list(df.columns) == list(TRIAL_COLUMNS)
    assert df["connections"].tolist() == [8, 16]
    assert df["meets_sla"].tolist() == [False, True]
    assert df["valid"].dtype == bool
    hist = list(RunFolder.open(tmp_path, "r1").histograms())
    assert [h["trial_id"] for h in hist] == ["r1-0001", "r1-0002"]
    assert hist[1]["clients"]["local"] == [[100, 2], [250, 3]]


def test_torn_last_line_is_cut_on_open(tmp_path):
    store = RunFolder.create(tmp_path, {"run_id": "r1", "plan": {}})
    store.append(_row(1))
    with store.trials_path.open("a") as fh:
        fh.write("r1,r1-0002,2026-")  # a crash in the middle of a write
    reopened = RunFolder.open(tmp_path, "r1")
    assert [r["trial_id"] for r in reopened.rows()] == ["r1-0001"]
    reopened.append(_row(3))
    assert [r["trial_id"] for r in reopened.rows()] == ["r1-0001", "r1-0003"]


def test_meta_is_replaced_atomically(tmp_path):
    store = RunFolder.create(tmp_path, {"run_id": "r1", "plan": {"a": 1}})
    store.meta["status"] = "complete"
    store.save_meta()
    assert json.loads((tmp_path / "r1" / "run.json").read_text())["status"] == "complete"
    assert not (tmp_path / "r1" / "run.json.tmp").exists()


def test_errors(tmp_path):
    RunFolder.create(tmp_path, {"run_id": "r1", "plan": {}})
    with pytest.raises(RunFolderError, match="already exists; use --resume r1"):
        RunFolder.create(tmp_path, {"run_id": "r1", "plan": {}})
    with pytest.raises(RunFolderError, match="no run 'nope'"):
        RunFolder.open(tmp_path, "nope")
    with pytest.raises(RunFolderError, match="plain folder name"):
        RunFolder.open(tmp_path, "../etc")
    with pytest.raises(RunFolderError, match="unknown trial columns"):
        RunFolder.open(tmp_path, "r1").append({"bogus": 1})
    with pytest.raises(RunnerError, match="not a run folder"):
        load_trials(tmp_path)


def test_run_ids_are_safe_and_distinct():
    a, b = new_run_id("c6in.large; rm -rf /"), new_run_id("c6in.large; rm -rf /")
    assert a != b
    assert "c6in-large-rm-rf" in a and "/" not in a and " " not in a

"""Answers recorded before a change, held byte for byte after it (`tests/test_golden.py`).

``python tests/golden.py`` re-records every answer into ``tests/data/golden/``: run it only
when an answer is meant to change, and say why in the commit. ``runs/`` holds a simulated run
written by ``python -m runners search --server sim --seed 3 --vcpus 1,2 --label c7i.large``.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "data" / "golden"
RUN = "tests/data/golden/runs/20261127T034257Z-c7i-large-76c0"

#: name -> the arguments of ``python -m sizing``.
ANSWERS: dict[str, list[str]] = {
    "recommend": ["recommend", "--rps", "1e6"],
    "recommend.json": ["recommend", "--rps", "1e6", "--format", "json"],
    "region-all": ["recommend", "--rps", "1e6", "--region", "all"],
    "region-all.json": ["recommend", "--rps", "1e6", "--region", "all", "--format", "json"],
    "mix": ["recommend", "--rps", "1e6", "--mix", "3", "--zones", "3"],
    "runs": ["recommend", "--rps", "1e6", "--runs", RUN, "--allow-simulated"],
    "runs.json": ["recommend", "--rps", "1e6", "--runs", RUN, "--allow-simulated",
                  "--format", "json"],
    "format-k8s": ["recommend", "--rps", "1e6", "--format", "k8s"],
    "plan-measurements": ["plan-measurements", "--rps", "1e6"],
    "compare": ["compare", "--rps", "1e6", "--baseline", "c6i.xlarge x12"],
    "compare.json": ["compare", "--rps", "1e6", "--baseline", "c6i.xlarge x12",
                     "--format", "json"],
    "k8s": ["k8s", "--rps", "1e6", "--zones", "3", "--zone-loss", "1", "--pod-cpus", "2",
            "--name", "web", "--namespace", "prod"],
}


#: Answers longer than this are held by their SHA-256 (a 37 MB JSON is no file to commit).
LONG = 64_000


def recorded(name: str) -> Path:
    """The file that holds ``name``'s answer, or its digest when the answer is long."""
    text = GOLDEN / f"{name}.txt"
    return text if text.exists() else GOLDEN / f"{name}.sha256"


def held(text: str) -> str:
    """What is stored for an answer: itself, or its digest and length when it is long."""
    if len(text) <= LONG:
        return text
    return f"sha256 {hashlib.sha256(text.encode()).hexdigest()} chars {len(text)}\n"


def answer(name: str) -> str:
    """What ``python -m sizing`` prints for ``ANSWERS[name]``: stdout, stderr, exit."""
    env = {**os.environ, "COLUMNS": "100", "PYTHONHASHSEED": "0"}
    done = subprocess.run(
        [sys.executable, "-m", "sizing", *ANSWERS[name]],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )
    return f"{done.stdout}\n--- stderr\n{done.stderr}\n--- exit {done.returncode}\n"


if __name__ == "__main__":
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for key in sys.argv[1:] or ANSWERS:
        text = answer(key)
        for old in GOLDEN.glob(f"{key}.*"):
            old.unlink()
        suffix = "txt" if len(text) <= LONG else "sha256"
        (GOLDEN / f"{key}.{suffix}").write_text(held(text))
        print("recorded", key)

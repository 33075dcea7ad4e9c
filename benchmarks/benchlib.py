"""Shared by the benchmarks: the machine they ran on, and where their results go."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


def machine() -> str:
    """CPU model, CPU count, OS and Python version of this machine."""
    cpu = next(
        (
            ln.split(":", 1)[1].strip()
            for ln in Path("/proc/cpuinfo").read_text().splitlines()
            if ln.startswith("model name")
        ),
        platform.processor() or "unknown CPU",
    )
    return (
        f"{cpu}, {os.cpu_count()} CPUs, {platform.platform()}, Python {platform.python_version()}"
    )


def save(name: str, results: dict[str, Any]) -> Path:
    """Write ``benchmarks/results/<name>.json`` with the machine added."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps({**results, "machine": machine()}, indent=1, default=str) + "\n")
    return path

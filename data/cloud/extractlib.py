"""What the extractors of ``data/cloud/`` share: the columns, git, and rewriting one source's rows.

Each ``extract_*.py`` rebuilds the rows of one source in ``measurements.csv`` from a clone of
that source's repository at a pinned commit, keeping every other source's rows as they are.
"""

from __future__ import annotations

import csv
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

#: The columns of ``measurements.csv``, in the file's order: `sizing.fitting.cloudtruth`'s
#: ``COLUMNS`` and ``OPTIONAL_COLUMNS`` (which its loader checks the file against); spelled
#: out here so that an extractor runs without the project installed.
HEADER = (
    "source_id,provider,instance_type,vcpus,cpu_platform,server,workload_class,protocol,"
    "body_bytes,connections,threads,client_placement,container,metric,value,repo,commit,path,"
    "url,quote"
).split(",")
#: The source whose rows give every AWS instance type's vCPUs and CPU platform.
SHAPES_SOURCE = "sparecores-static-web"


def git(repo: Path, *args: str) -> str:
    """Output of a git command in ``repo``."""
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def other_rows(out_path: Path, source_id: str) -> list[dict[str, str]]:
    """The rows of ``out_path`` (if it exists) of every source but ``source_id``."""
    if not out_path.exists():
        return []
    with out_path.open(newline="", encoding="utf-8") as fh:
        return [r for r in csv.DictReader(fh) if r["source_id"] != source_id]


def aws_shapes(rows: Iterable[Mapping[str, str]]) -> dict[str, tuple[str, str]]:
    """Instance type -> (vCPUs, CPU platform) of the AWS rows of `SHAPES_SOURCE`."""
    return {
        r["instance_type"]: (r["vcpus"], r["cpu_platform"])
        for r in rows
        if r["provider"] == "aws" and r["source_id"] == SHAPES_SOURCE
    }


def write_rows(out_path: Path, *groups: Iterable[Mapping[str, object]]) -> None:
    """Write ``out_path`` with the header and the groups of rows, in that order."""
    with out_path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=HEADER, lineterminator="\n")
        writer.writeheader()
        for group in groups:
            writer.writerows(group)

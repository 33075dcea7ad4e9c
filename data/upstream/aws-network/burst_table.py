"""Rebuild ``data/catalog/aws-network-burst.csv`` from AWS's instance-types guide, pinned.

Usage (on a machine with git and internet access)::

    python data/upstream/aws-network/burst_table.py [--work DIR]

Reads ``backend/data/AWS/ec2-types.md`` of ``jihoo529/ragstone`` at the pinned commit: a
Markdown rendering of AWS's PDF "Amazon EC2: Instance Types" (Amazon Web Services, 2024).
Its "Network specifications" tables give each type's bandwidth either as
``baseline / burst`` Gbit/s (the types sold as "Up to N Gigabit") or as one fixed
``N Gigabit``. Writes, through `trialtable.files.write_atomic`, one row per type:
``instance_type, baseline_gbps, burst_peak_gbps, network_burst, source``.

The PDF's text extraction splits some names (``m6gd.medi 1 um``, ``c5a.8xlar ge``) and puts
footnote digits beside them (``1 m5.large``); `type_name` rejoins them, and a name that still
does not look like an instance type is dropped. Rows of the table this replaces for types the
guide does not list (c8g, from a later edition) are kept with their own source.
"""

from __future__ import annotations

import argparse
import csv
import io
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from trialtable.files import write_atomic  # noqa: E402

GUIDE = ("jihoo529/ragstone", "fc702f1e896befe8ad362282056088c43c3186ef")
DATA_FILE = "backend/data/AWS/ec2-types.md"
OUT = HERE.parents[1] / "catalog" / "aws-network-burst.csv"
_FILE_NAME = DATA_FILE.rsplit("/", 1)[-1]
SOURCE = f"AWS 'Amazon EC2: Instance Types' 2024 ({GUIDE[0]}@{GUIDE[1][:7]} {_FILE_NAME}:{{line}})"
#: The marks of a network table's EFA, ENA and ENA Express columns.
_MARKS = {"\u2713", "\u2717"}
_NAME = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9][a-z0-9-]*$")
_BURST = re.compile(r"^([0-9.]+) / ([0-9.]+)$")
_FIXED = re.compile(r"^([0-9.]+) Gigabit$")


def type_name(cell: str) -> str | None:
    """The instance type in a table's first cell, footnote digits dropped; None if not one."""
    parts = [p for p in cell.split() if not p.isdigit()]
    name = "".join(parts)
    return name if _NAME.match(name) else None


def bandwidth(cell: str) -> tuple[float, float, bool] | None:
    """``(baseline, peak [Gbit/s], sold as "up to")`` of a bandwidth cell, or None."""
    m = _BURST.match(cell)
    if m:
        return float(m.group(1)), float(m.group(2)), True
    m = _FIXED.match(cell)
    if m:
        return float(m.group(1)), float(m.group(1)), False
    return None


def network_rows(text: str) -> dict[str, tuple[float, float, bool, int]]:
    """``type -> (baseline, peak, up_to, line)`` from the guide's network tables.

    A network row is known by its shape, since page breaks split the tables and some parts
    lose their header: a type, a bandwidth, then the EFA, ENA and ENA Express marks (the
    EBS tables' ``a / b`` bandwidths are followed by numbers). The first row of a type wins.
    """
    out: dict[str, tuple[float, float, bool, int]] = {}
    for i, line in enumerate(text.splitlines(), start=1):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 5 or not set(cells[2:5]) <= _MARKS:
            continue
        name, bw = type_name(cells[0]), bandwidth(cells[1])
        if name and bw and name not in out:
            out[name] = (*bw, i)
    return out


def _num(x: float) -> str:
    return f"{x:g}"


def rows_csv(text: str, earlier: str = "") -> str:
    """The compact CSV of every type in the guide's network tables, sorted by name.

    ``earlier`` is the table this one replaces (CSV text): its rows for types the guide does
    not list are kept as they were, their source unchanged.
    """
    fields = ["instance_type", "baseline_gbps", "burst_peak_gbps", "network_burst", "source"]
    rows = {
        r["instance_type"]: r for r in csv.DictReader(io.StringIO(earlier)) if r["instance_type"]
    }
    for name, (base, peak, up_to, line) in network_rows(text).items():
        rows[name] = {
            "instance_type": name,
            "baseline_gbps": _num(base),
            "burst_peak_gbps": _num(peak),
            "network_burst": "true" if up_to else "false",
            "source": SOURCE.format(line=line),
        }
    buf = io.StringIO()
    out = csv.DictWriter(buf, fields, lineterminator="\n", extrasaction="ignore")
    out.writeheader()
    out.writerows(rows[name] for name in sorted(rows))
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    """Clone the pinned copy (once, under ``--work``) and write the extract (exit status 0)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default="/tmp/aws-network-upstream", help="where the clone is kept")
    args = ap.parse_args(argv)
    path = Path(args.work) / GUIDE[0].replace("/", "+")
    if not path.exists():
        url = f"https://github.com/{GUIDE[0]}.git"
        subprocess.run(["git", "clone", "--bare", "--filter=blob:none", url, str(path)], check=True)
    text = subprocess.run(
        ["git", "-C", str(path), "show", f"{GUIDE[1]}:{DATA_FILE}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    earlier = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
    write_atomic(OUT, rows_csv(text, earlier))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

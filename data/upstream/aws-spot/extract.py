"""Rebuild ``spot-advisor.csv`` from the Spot Advisor data packaged by spotinfo, pinned.

Usage (on a machine with git and internet access)::

    python data/upstream/aws-spot/extract.py [--work DIR]

Reads ``internal/spot/data/spot-advisor-data.json`` of ``alexei-led/spotinfo`` (Apache-2.0) at
the pinned commit: AWS's public Spot Instance Advisor feed
(``spot-bid-advisor.s3.amazonaws.com/spot-advisor-data.json``) as spotinfo embeds it. Writes,
through `trialtable.files.write_atomic`, one row per region and Linux instance type: the
savings over on-demand [%] and the interruption band (0: <5%, 1: 5-10%, 2: 10-15%,
3: 15-20%, 4: >20% of instances interrupted a month).
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from trialtable.files import write_atomic  # noqa: E402

SPOTINFO = ("alexei-led/spotinfo", "05e933139449b888c78795b28af8e9370429a031")
DATA_FILE = "internal/spot/data/spot-advisor-data.json"


def rows_csv(doc: dict) -> str:
    """The compact CSV of the feed's Linux entries (a ``#`` line naming the source first)."""
    buf = io.StringIO()
    buf.write(f"# {SPOTINFO[0]}@{SPOTINFO[1][:7]} {DATA_FILE} (AWS Spot Instance Advisor)\n")
    buf.write("region,instance_type,savings_pct,interruption_band\n")
    for region in sorted(doc["spot_advisor"]):
        linux = doc["spot_advisor"][region].get("Linux", {})
        for name in sorted(linux):
            entry = linux[name]
            buf.write(f"{region},{name},{int(entry['s'])},{int(entry['r'])}\n")
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    """Clone spotinfo (once, under ``--work``) and write the extract (exit status 0)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default="/tmp/spot-upstream", help="where the clone is kept")
    args = ap.parse_args(argv)
    path = Path(args.work) / SPOTINFO[0].replace("/", "+")
    if not path.exists():
        url = f"https://github.com/{SPOTINFO[0]}.git"
        subprocess.run(["git", "clone", "--bare", "--filter=blob:none", url, str(path)], check=True)
    text = subprocess.run(
        ["git", "-C", str(path), "show", f"{SPOTINFO[1]}:{DATA_FILE}"],
        check=True,
        capture_output=True,
    ).stdout
    write_atomic(HERE / "spot-advisor.csv", rows_csv(json.loads(text)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

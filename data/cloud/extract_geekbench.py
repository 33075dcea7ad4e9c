"""Write ``data/platforms/geekbench-single.csv``: each CPU platform's single-core compute score.

Usage (by hand; needs a clone of https://github.com/SpareCores/sc-inspector-data, no network)::

    python data/cloud/extract_geekbench.py CLONE data/platforms/geekbench-single.csv

The snapshot's ``data/<provider>/<instance type>/geekbench/results.json`` holds Geekbench 6's
results of one server (SpareCores Inspector runs Geekbench 6 on every instance type it
inspects); its "Single-Core Performance" "Score" is one thread's speed on an otherwise idle
VM, so on a hyper-threaded VM a whole core's. The server's CPU platform comes from the same
snapshot's ``lscpu/stdout`` by the rules of ``extract_sparecores.platform``. For every
platform with AWS, GCP or Azure servers this writes the median score, its quartiles and how
many servers it rests on.
"""

from __future__ import annotations

import csv
import io
import json
import re
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from extract_sparecores import platform
from extractlib import git

PROVIDERS = ("aws", "azure", "gcp")
REPO = "SpareCores/sc-inspector-data"
COLUMNS = ("platform", "gb6_single_median", "gb6_single_q1", "gb6_single_q3", "servers", "source")


def score_of(repo: Path, commit: str, provider: str, server: str) -> tuple[str, int]:
    """(platform, Geekbench 6 single-core score) of one server."""
    base = f"data/{provider}/{server}"
    lscpu = {
        e["field"].rstrip(":"): e["data"]
        for e in json.loads(git(repo, "show", f"{commit}:{base}/lscpu/stdout"))["lscpu"]
    }
    results = json.loads(git(repo, "show", f"{commit}:{base}/geekbench/results.json"))
    score = int(results["Single-Core Performance"]["Score"]["score"])
    if score <= 0:
        raise ValueError(f"score {score}")
    return platform(provider, lscpu), score


def main(argv: list[str]) -> int:
    """Write one row per platform (to ``argv[2]``, else standard output)."""
    repo = Path(argv[1])
    commit = git(repo, "rev-parse", "HEAD").strip()
    names = git(repo, "ls-tree", "-r", "--name-only", commit).split("\n")
    pattern = re.compile(rf"^data/({'|'.join(PROVIDERS)})/([^/]+)/geekbench/results\.json$")
    scores: dict[str, list[int]] = defaultdict(list)
    for provider, server in sorted(m.groups() for n in names if (m := pattern.match(n))):
        try:
            plat, score = score_of(repo, commit, provider, server)
        except (subprocess.CalledProcessError, KeyError, ValueError, TypeError) as exc:
            print(f"skipped {provider}/{server}: {exc}", file=sys.stderr)
            continue
        scores[plat].append(score)
    source = (
        f"{REPO}@{commit[:7]} data/<provider>/<type>/geekbench/results.json (SpareCores "
        "Inspector, Geekbench 6 Single-Core Score; CC BY-SA 4.0)"
    )
    rows = []
    for plat, values in sorted(scores.items()):
        q1, _, q3 = statistics.quantiles(values, n=4) if len(values) > 1 else (values[0],) * 3
        rows.append((plat, statistics.median(values), round(q1), round(q3), len(values), source))
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows(rows)
    if len(argv) > 2:
        Path(argv[2]).write_text(buf.getvalue())
    else:
        sys.stdout.write(buf.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

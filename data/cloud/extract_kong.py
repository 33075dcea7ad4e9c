"""Rebuild the Kong Gateway benchmark rows of ``measurements.csv`` from a local snapshot.

Usage (by hand; needs a clone of https://github.com/Kong/docs.konghq.com, no network)::

    python data/cloud/extract_kong.py /path/to/docs.konghq.com data/cloud/measurements.csv

The rows are read at `COMMIT` (2025-03-26), the version of `PAGE` that holds the published
results of Kong Gateway 3.6 to 3.10, one table per release inside ``{% if_version eq:3.N.x %}``
with one line per case: ``| Kong proxy with no plugins | 1 route, 0 consumers | 137850.4 |
6.25 | 3.82 |`` (test type, routes/consumers, mean requests per second of five 15-minute
runs, p99 and p95 latency [ms]). Each line gives one ``rps`` row; ``path`` names its line and
the release is in the quote's context (README). Kong ran in a Kubernetes pod alone on a
c5.4xlarge node with 16 workers, HTTPS only, k6 on separate c5.metal nodes (the page's "Test
environment" and "Test configuration").

The case without plugins is ``proxy``; those with rate limiting or authentication plugins are
``api_gateway``. The upstream (go-bench-suite ``/json/valid``) answers a JSON body of about 65
bytes (`BODY_BYTES`, the example in its README). The number of k6 virtual users of the
published runs is not stated, so ``connections`` is empty. vCPUs and CPU platform come from the
SpareCores rows of c5.4xlarge already in the output file. The rows of other sources in the
output file are kept.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from extractlib import aws_shapes, git, other_rows, write_rows

SOURCE_ID = "kong-gateway-perf"
REPO = "Kong/docs.konghq.com"
#: "Update performance-testing.md for 3.10 rc.8 (#8617)": the page with all five releases.
COMMIT = "4b09936b46ee2f65f41e68fcf41f492da9dcfcae"
PAGE = "app/_src/gateway/production/performance/performance-testing.md"
URL = "https://developer.konghq.com/gateway/performance/benchmarks"
INSTANCE_TYPE = "c5.4xlarge"
#: go-bench-suite's README: ``curl localhost:8000/json/valid`` -> ``Content-Length: 65``.
BODY_BYTES = 65
VERSION = re.compile(r"\{%\s*if_version eq:(\d+\.\d+)\.x\s*%\}")
#: A results line: test type, routes/consumers, requests per second, p99, p95.
LINE = re.compile(
    r"^\|\s*(Kong proxy with no plugins|Rate limit and [a-z ]+?)\s*\|[^|]+\|\s*([0-9.]+)\s*\|"
)


def main(argv: list[str]) -> int:
    """Replace this source's rows in the output file with those of the snapshot."""
    repo, out_path = Path(argv[1]), Path(argv[2])
    kept = other_rows(out_path, SOURCE_ID)
    known = aws_shapes(kept)
    vcpus, plat = known[INSTANCE_TYPE]
    rows: list[dict[str, object]] = []
    release = ""
    for line_no, line in enumerate(git(repo, "show", f"{COMMIT}:{PAGE}").split("\n"), 1):
        if v := VERSION.search(line):
            release = v.group(1)
            continue
        m = LINE.match(line)
        if not m or not release:
            continue
        case, rps = m.groups()
        rows.append(
            {
                "source_id": SOURCE_ID,
                "provider": "aws",
                "instance_type": INSTANCE_TYPE,
                "vcpus": vcpus,
                "cpu_platform": plat,
                "server": "kong",
                "workload_class": "proxy" if case.endswith("no plugins") else "api_gateway",
                "protocol": "https",
                "body_bytes": BODY_BYTES,
                "connections": "",
                "threads": "",
                "client_placement": "separate_vm",
                "container": "yes",
                "metric": "rps",
                "value": rps,
                "repo": REPO,
                "commit": COMMIT,
                "path": f"{PAGE}#L{line_no}",
                "url": URL,
                "quote": line.strip(),
            }
        )
    write_rows(out_path, kept, rows)
    print(f"{len(rows)} rows", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Rebuild the monolake benchmark's NGINX rows of ``measurements.csv`` from a local snapshot.

Usage (by hand; needs a clone of https://github.com/cloudwego/monolake, no network)::

    python data/cloud/extract_monolake.py /path/to/monolake data/cloud/measurements.csv

The rows are read at each of `COMMITS`: the version of ``benchmark/`` that first published
results (2024-10-17) and the last one before the project removed it (2024-11-11, results of
2024-11-08), two runs of the same harness. ``benchmark/README.md`` has a table "Throughput and
requests per second compare" with one line per case,
``| http-result-4c-nginx-tiny | 187973.44 | ... |``. In that
benchmark NGINX is a reverse proxy on an AWS c5a.xlarge (the "4c" proxy of the README), with
wrk2 on a separate c6a.8xlarge and the upstream NGINX on a separate c6a.2xlarge, none in a
container. Each NGINX case (HTTP and HTTPS, four body sizes) gives one ``rps`` row.

Taken from the same commit: the body of each case (the size of
``benchmark/server/webroot/server<N>/index.html``, the upstream's file for ``/server<N>``; tiny,
small, medium and large are server2 to server5 in the client scripts) and wrk2's threads and
connections (the first uncommented ``./wrk`` line of ``benchmark/client/benchmark-nginx-
<protocol>.sh``). vCPUs and CPU platform come from the SpareCores rows of c5a.xlarge already in
the output file. The rows of other sources in the output file are kept.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from extractlib import aws_shapes, git, other_rows, write_rows

SOURCE_ID = "monolake-nginx-proxy"
REPO = "cloudwego/monolake"
#: The first results (#113, 2024-10-17) and the last commit with ``benchmark/`` (#142,
#: 2024-11-11; its table is that of #141, 2024-11-08); the harness files are the same in both.
COMMITS = (
    "9ad584aa57edbb99ea01ef183cc9a737b1149df3",
    "bcd4dd8ab02bd2add60c1b7cc3a99a56abf97ede",
)
README = "benchmark/README.md"
#: The proxy machine of the "4c" cases (README: "c5a.xlarge (4 cores)").
INSTANCE_TYPE = "c5a.xlarge"
#: Case size -> the upstream location the client script requests for it.
LOCATION = {"tiny": "server2", "small": "server3", "medium": "server4", "large": "server5"}
LINE = re.compile(r"^\|\s*(https?)-result-4c-nginx-(tiny|small|medium|large)\s*\|\s*([0-9.]+)\s*\|")


def body_bytes(repo: Path, commit: str) -> dict[str, int]:
    """Size of each upstream location's index.html at ``commit`` [B]."""
    out: dict[str, int] = {}
    listing = git(repo, "ls-tree", "-r", "-l", commit, "benchmark/server/webroot")
    for line in listing.splitlines():
        meta, name = line.split("\t", 1)
        m = re.match(r"benchmark/server/webroot/(server\d+)/index\.html$", name)
        if m:
            out[m.group(1)] = int(meta.split()[3])
    return out


def wrk_settings(repo: Path, commit: str, protocol: str) -> tuple[int, int]:
    """(threads, connections) of the first wrk2 command of the client script of ``protocol``."""
    script = git(repo, "show", f"{commit}:benchmark/client/benchmark-nginx-{protocol}.sh")
    for line in script.splitlines():
        if line.startswith("./wrk"):
            threads = re.search(r"-t (\d+)", line)
            conns = re.search(r"-c (\d+)", line)
            if threads and conns:
                return int(threads.group(1)), int(conns.group(1))
    raise ValueError(f"no wrk command in benchmark-nginx-{protocol}.sh")


def rows_at(repo: Path, commit: str, vcpus: str, plat: str) -> list[dict[str, object]]:
    """The rows of the README's first results table at ``commit``."""
    sizes = body_bytes(repo, commit)
    settings = {p: wrk_settings(repo, commit, p) for p in ("http", "https")}
    rows: list[dict[str, object]] = []
    seen: set[tuple[str, str]] = set()
    for line_no, line in enumerate(git(repo, "show", f"{commit}:{README}").split("\n"), 1):
        m = LINE.match(line)
        if not m or (m.group(1), m.group(2)) in seen:
            continue  # the second table repeats the first, by payload size
        protocol, size, rps = m.groups()
        seen.add((protocol, size))
        threads, conns = settings[protocol]
        rows.append(
            {
                "source_id": SOURCE_ID,
                "provider": "aws",
                "instance_type": INSTANCE_TYPE,
                "vcpus": vcpus,
                "cpu_platform": plat,
                "server": "nginx",
                "workload_class": "proxy",
                "protocol": protocol,
                "body_bytes": sizes[LOCATION[size]],
                "connections": conns,
                "threads": threads,
                "client_placement": "separate_vm",
                "container": "no",
                "metric": "rps",
                "value": rps,
                "repo": REPO,
                "commit": commit,
                "path": f"{README}#L{line_no}",
                "url": "",
                "quote": line.strip(),
            }
        )
    return rows


def main(argv: list[str]) -> int:
    """Replace this source's rows in the output file with those of the snapshot."""
    repo, out_path = Path(argv[1]), Path(argv[2])
    kept = other_rows(out_path, SOURCE_ID)
    known = aws_shapes(kept)
    vcpus, plat = known[INSTANCE_TYPE]
    rows: list[dict[str, object]] = []
    for commit in COMMITS:
        rows.extend(rows_at(repo, commit, vcpus, plat))
    write_rows(out_path, kept, rows)
    print(f"{len(rows)} rows", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Rebuild the Proxy-Benchmarks NGINX rows of ``measurements.csv`` from a local snapshot.

Usage (by hand; needs a clone of https://github.com/NickMRamirez/Proxy-Benchmarks, no
network)::

    python data/cloud/extract_proxybench.py /path/to/Proxy-Benchmarks data/cloud/measurements.csv

The repository's ``README.md`` publishes one ``hey`` summary per proxy under a heading such as
``### NGINX (1.22.1)``; the NGINX summary has the lines ``Requests/sec: 33506.2571`` and
``Size/request: 126 bytes``. Four different runs were published, each read at `RUNS`, the
commit that first published it (2019-08-06, 2020-05-23, 2021-03-02 and 2023-02-26). Each run
gives one ``rps`` row: ``value`` is the ``Requests/sec`` line, ``body_bytes`` the
``Size/request`` of the same summary (the upstream echo server's response body), and
``connections`` the ``-c`` of the ``hey`` command at the same commit (``README.md``, or
``client/run_tests.sh`` once the README stopped showing it).

The harness (Terraform, the same commit): NGINX as a reverse proxy (``worker_processes 3``,
HTTP/1.1 upstream keep-alive) on an AWS m5.xlarge VM (``variables.tf``'s
``aws_instance_type``), forwarding to ``jmalloc/echo-server`` on a separate m5.xlarge; ``hey``
on another VM. In the 2019 run NGINX is the Ubuntu package, not in a container; in the later
runs it is the ``nginx`` Docker image with a published port (``container=yes``: Docker on a
VM, not Kubernetes). vCPUs and CPU platform come from the SpareCores rows of m5.xlarge already
in the output file. The rows of other sources in the output file are kept.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from extractlib import aws_shapes, git, other_rows, write_rows

SOURCE_ID = "proxy-benchmarks-nginx-rp"
REPO = "NickMRamirez/Proxy-Benchmarks"
#: (commit, NGINX in a container) of each published run: the commit that first published it.
RUNS = (
    #: "Changed NGINX config to be more fair and updated results." (NGINX 1.10.3, apt).
    ("0dd81b8c173e7191aed9ffc5f9f42b5a78d0216e", "no"),
    #: "Updated proxies to latest versions, added Caddy Server benchmark" (nginx:1.18.0).
    ("5f42a6dbcdbd1a8e556bc8cc6e2b733e45bd970f", "yes"),
    #: "Update README to match versions + benchmarks" (nginx:1.19.7).
    ("024f6ab02ac3bb4888d0af42ae648fc29f172298", "yes"),
    #: "Updated to latest versions of proxies (Feb 2023)" (nginx:1.22.1, dedicated client VM).
    ("5a982900c84dbaeb569610184430d540c14e27cd", "yes"),
)
PAGE = "README.md"
INSTANCE_TYPE = "m5.xlarge"
HEADING = re.compile(r"^###\s+NGINX\b")
RPS = re.compile(r"^\s*Requests/sec:\s*([0-9.]+)\s*$")
SIZE = re.compile(r"^\s*Size/request:\s*(\d+) bytes\s*$")
HEY = re.compile(r"hey -n \d+ -c (\d+)")


def connections(repo: Path, commit: str) -> int:
    """The ``-c`` of the ``hey`` command at ``commit``."""
    for path in (PAGE, "client/run_tests.sh"):
        try:
            text = git(repo, "show", f"{commit}:{path}")
        except subprocess.CalledProcessError:  # no such file at this commit
            continue
        if m := HEY.search(text):
            return int(m.group(1))
    raise SystemExit(f"{commit}: no hey command found")


def nginx_summary(lines: list[str]) -> tuple[int, str, str, int]:
    """(line number, Requests/sec line, value, body bytes) of the NGINX summary."""
    start = next(i for i, line in enumerate(lines) if HEADING.match(line))
    rps: tuple[int, str, str] | None = None
    size = None
    for i in range(start + 1, len(lines)):
        line = lines[i]
        if line.startswith("### "):
            break
        if (m := RPS.match(line)) and rps is None:
            rps = (i + 1, line.strip(), m.group(1))
        if (s := SIZE.match(line)) and size is None:
            size = int(s.group(1))
    if rps is None or size is None:
        raise SystemExit("no Requests/sec or Size/request line in the NGINX summary")
    return rps[0], rps[1], rps[2], size


def main(argv: list[str]) -> int:
    """Replace this source's rows in the output file with those of the snapshot."""
    repo, out_path = Path(argv[1]), Path(argv[2])
    kept = other_rows(out_path, SOURCE_ID)
    vcpus, plat = aws_shapes(kept)[INSTANCE_TYPE]
    rows: list[dict[str, object]] = []
    for commit, container in RUNS:
        lines = git(repo, "show", f"{commit}:{PAGE}").split("\n")
        line_no, quote, value, body = nginx_summary(lines)
        rows.append(
            {
                "source_id": SOURCE_ID,
                "provider": "aws",
                "instance_type": INSTANCE_TYPE,
                "vcpus": vcpus,
                "cpu_platform": plat,
                "server": "nginx",
                "workload_class": "proxy",
                "protocol": "http",
                "body_bytes": body,
                "connections": connections(repo, commit),
                "threads": "",
                "client_placement": "separate_vm",
                "container": container,
                "metric": "rps",
                "value": value,
                "repo": REPO,
                "commit": commit,
                "path": f"{PAGE}#L{line_no}",
                "url": "",
                "quote": quote,
            }
        )
    write_rows(out_path, kept, rows)
    print(f"{len(rows)} rows", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

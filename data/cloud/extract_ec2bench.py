"""Rebuild the aws-ec2-benchmark rows of ``measurements.csv`` from a local snapshot.

Usage (by hand; needs a clone of https://github.com/Atom-oh/aws-ec2-benchmark, no network)::

    python data/cloud/extract_ec2bench.py /path/to/aws-ec2-benchmark data/cloud/measurements.csv

The snapshot's ``results/nginx/<instance type>/run<N>.log`` holds wrk's output of three tests
per run (``benchmarks/nginx/nginx-benchmark.yaml``): 2 threads/100 connections, 4/200 and 8/400,
30 s each, against ``nginx:alpine`` (``benchmarks/nginx/nginx-server.yaml``: worker_processes
auto, access log off, keep-alive, an index.html of a few hundred bytes) in a Kubernetes pod on
the instance under test (EKS, xlarge = 4 vCPUs), reached through a ClusterIP Service from a wrk
pod on a separate client node in the same zone. Every ``Requests/sec:`` line becomes one ``rps``
row (its run, threads and connections in ``path`` and the columns).

vCPUs and CPU platform are taken from the SpareCores rows of the same instance type already in
the output file (from lscpu); an instance type SpareCores lacks gets them from its family name
(``FAMILY``). The rows of other sources in the output file are kept.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from extractlib import aws_shapes, git, other_rows, write_rows

SOURCE_ID = "aws-ec2-benchmark-nginx"
REPO = "Atom-oh/aws-ec2-benchmark"
#: index.html of nginx-server.yaml's ConfigMap: 252 bytes of HTML (the guide says "~300 bytes").
BODY_BYTES = 252
#: Family -> (vCPUs of the xlarge size, platform) for types without a SpareCores row.
FAMILY = {
    "c8gn": (4, "graviton4"),
    "r8gd": (4, "graviton4"),
    "c8g": (4, "graviton4"),
    "m8g": (4, "graviton4"),
    "r8g": (4, "graviton4"),
}


def main(argv: list[str]) -> int:
    """Replace this source's rows in the output file with those of the snapshot."""
    repo, out_path = Path(argv[1]), Path(argv[2])
    commit = git(repo, "rev-parse", "HEAD").strip()
    kept = other_rows(out_path, SOURCE_ID)
    known = aws_shapes(kept)
    names = git(repo, "ls-tree", "-r", "--name-only", commit).split("\n")
    pattern = re.compile(r"^results/nginx/([^/]+)/(run\d+)\.log$")
    rows: list[dict[str, object]] = []
    for name in sorted(names):
        m = pattern.match(name)
        if not m:
            continue
        itype = m.group(1)
        family = itype.split(".")[0]
        if itype in known:
            vcpus, plat = known[itype]
        elif family in FAMILY:
            vcpus, plat = (str(v) for v in FAMILY[family])
        else:
            print(f"skipped {itype}: no platform", file=sys.stderr)
            continue
        threads = conns = 0
        for line_no, line in enumerate(git(repo, "show", f"{commit}:{name}").split("\n"), 1):
            if t := re.search(r"(\d+) threads and (\d+) connections", line):
                threads, conns = int(t.group(1)), int(t.group(2))
            elif r := re.match(r"Requests/sec:\s+([0-9.]+)", line.strip()):
                rows.append(
                    {
                        "source_id": SOURCE_ID,
                        "provider": "aws",
                        "instance_type": itype,
                        "vcpus": vcpus,
                        "cpu_platform": plat,
                        "server": "nginx",
                        "workload_class": "small_static",
                        "protocol": "http",
                        "body_bytes": BODY_BYTES,
                        "connections": conns,
                        "threads": threads,
                        "client_placement": "separate_vm",
                        "container": "yes",
                        "metric": "rps",
                        "value": r.group(1),
                        "repo": REPO,
                        "commit": commit,
                        "path": f"{name}#L{line_no}",
                        "url": "",
                        "quote": line.strip(),
                    }
                )
    write_rows(out_path, rows, kept)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Rebuild the SpareCores rows of ``measurements.csv`` from a local snapshot of sc-inspector-data.

Usage (by hand; needs a clone of https://github.com/SpareCores/sc-inspector-data, no network)::

    python data/cloud/extract_sparecores.py /path/to/sc-inspector-data data/cloud/measurements.csv

Without an output file the rows go to standard output; an existing output file keeps its rows
of the other sources (those are transcribed by hand) and has its SpareCores rows replaced.

The snapshot's ``data/{aws,gcp}/<instance type>/static_web/stdout`` holds one CSV line per wrk
run (``size,threads,connections,rps,latency,failed,server_usr,server_sys,client_usr,client_sys``;
written by ``images/benchmark-web/benchmark.py`` of SpareCores/sc-images: binserve serving a file
of 1, 16, 64, 256 or 512 KiB from memory, wrk 4.2.0 on the same VM over localhost for 10 s per
run, threads = vCPUs x {1, 2, 4}, connections = vCPUs x {1, 2, 4, 8, 16, 32}). The CPU seconds
are the server's (binserve's) and the client's (wrk's) user and system time during the run.

For every instance type and body size of 1, 16, 64 and 512 KiB this writes two rows, both
taken from the run with the highest requests per second at that size (no failed responses):

* ``rps``: wrk's ``Requests/sec`` of that run;
* ``cpu_us_per_request``: the server's CPU time per request, (server_usr + server_sys) /
  (rps x 10 s) in microseconds (wrk runs ``-d 10``).

The CPU platform and vCPUs come from the same snapshot's ``lscpu/stdout`` (lscpu -J): x86 CPU
family/model/stepping, the Arm core name, and the BIOS model name (Graviton generation).
"""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

from extractlib import HEADER, git, other_rows, write_rows

PROVIDERS = ("aws", "gcp")
SOURCE_ID = "sparecores-static-web"
REPO = "SpareCores/sc-inspector-data"
WRK_SECONDS = 10.0
#: The body sizes kept (the 256 KiB runs are left out to keep the file small).
SIZES = {"1k": 1024, "16k": 16384, "64k": 65536, "512k": 524288}
#: Bodies up to 16 KiB are small static files; larger ones are large static files.
SMALL_MAX = 16384
#: (vendor, family, model) -> platform for x86; Skylake and Cascade Lake share model 85 and
#: differ by stepping (<= 4 Skylake, >= 5 Cascade Lake).
X86 = {
    ("GenuineIntel", "6", "45"): "sandy_bridge",
    ("GenuineIntel", "6", "62"): "ivy_bridge",
    ("GenuineIntel", "6", "63"): "haswell",
    ("GenuineIntel", "6", "79"): "broadwell",
    ("GenuineIntel", "6", "106"): "ice_lake",
    ("GenuineIntel", "6", "143"): "sapphire_rapids",
    ("GenuineIntel", "6", "207"): "emerald_rapids",
    ("GenuineIntel", "6", "173"): "granite_rapids",
    ("AuthenticAMD", "23", "1"): "zen1",
    ("AuthenticAMD", "23", "49"): "zen2",
    ("AuthenticAMD", "25", "1"): "zen3",
    ("AuthenticAMD", "25", "17"): "zen4",
    ("AuthenticAMD", "26", "2"): "zen5",
}


def platform(provider: str, lscpu: dict[str, str]) -> str:
    """CPU platform id of one server from its lscpu fields."""
    vendor = lscpu.get("Vendor ID", "")
    if vendor == "ARM":
        core = lscpu.get("Model name", "")
        bios = lscpu.get("BIOS Model name", "")
        if core == "Cortex-A72":
            return "graviton1"
        if core == "Neoverse-N1":
            return "graviton2" if provider == "aws" else "altra"
        if core == "Neoverse-V1":
            return "graviton3e" if "Graviton3E" in bios else "graviton3"
        if core == "Neoverse-V2":
            return "graviton4" if provider == "aws" else "axion"
        if core == "Neoverse-V3":
            return "graviton5"
        if core == "Neoverse-N3":
            return "axion_n3"
        raise ValueError(f"unknown Arm core {core!r}")
    key = (vendor, lscpu.get("CPU family", ""), lscpu.get("Model", ""))
    if key[0] == "GenuineIntel" and key[2] == "85":
        return "skylake" if int(lscpu.get("Stepping", "0")) <= 4 else "cascade_lake"
    if key not in X86:
        raise ValueError(f"unknown x86 CPU {key!r}")
    return X86[key]


def rows_of(repo: Path, commit: str, provider: str, server: str) -> list[dict[str, object]]:
    """The rows of one instance type (empty when it has no usable run)."""
    base = f"data/{provider}/{server}"
    lscpu = {
        e["field"].rstrip(":"): e["data"]
        for e in json.loads(git(repo, "show", f"{commit}:{base}/lscpu/stdout"))["lscpu"]
    }
    vcpus = int(lscpu["CPU(s)"])
    plat = platform(provider, lscpu)
    path = f"{base}/static_web/stdout"
    text = git(repo, "show", f"{commit}:{path}")
    best: dict[str, tuple[int, list[str], int]] = {}
    for line_no, rec in enumerate(csv.reader(io.StringIO(text)), start=1):
        if line_no == 1 or len(rec) != 10 or rec[0] not in SIZES:
            continue
        rps, failed = int(rec[3]), int(rec[5])
        if rps <= 0 or failed:
            continue
        if rec[0] not in best or rps > best[rec[0]][0]:
            best[rec[0]] = (rps, rec, line_no)
    out: list[dict[str, object]] = []
    for size, (rps, rec, line_no) in best.items():
        body = SIZES[size]
        cpu_s = float(rec[6]) + float(rec[7])
        common = {
            "source_id": SOURCE_ID,
            "provider": provider,
            "instance_type": server,
            "vcpus": vcpus,
            "cpu_platform": plat,
            "server": "binserve",
            "workload_class": "small_static" if body <= SMALL_MAX else "large_static",
            "protocol": "http",
            "body_bytes": body,
            "connections": int(rec[2]),
            "threads": int(rec[1]),
            "client_placement": "same_vm",
            "container": "yes",
            "repo": REPO,
            "commit": commit,
            "path": f"{path}#L{line_no}",
            "url": "",
        }
        raw = ",".join(rec)
        out.append(common | {"metric": "rps", "value": rps, "quote": raw})
        if cpu_s > 0:
            us = cpu_s / (rps * WRK_SECONDS) * 1e6
            out.append(
                common
                | {
                    "metric": "cpu_us_per_request",
                    "value": f"{us:.4g}",
                    "quote": raw,
                }
            )
    return out


def main(argv: list[str]) -> int:
    """Write the SpareCores rows of every AWS and GCP instance type with a static_web run."""
    repo = Path(argv[1])
    out_path = Path(argv[2]) if len(argv) > 2 else None
    commit = git(repo, "rev-parse", "HEAD").strip()
    names = git(repo, "ls-tree", "-r", "--name-only", commit).split("\n")
    pattern = re.compile(r"^data/(aws|gcp)/([^/]+)/static_web/stdout$")
    servers = sorted(m.groups() for n in names if (m := pattern.match(n)))
    rows: list[dict[str, object]] = []
    for provider, server in servers:
        try:
            rows.extend(rows_of(repo, commit, provider, server))
        except (subprocess.CalledProcessError, KeyError, ValueError) as exc:
            print(f"skipped {provider}/{server}: {exc}", file=sys.stderr)
    if out_path is None:
        writer = csv.DictWriter(sys.stdout, fieldnames=HEADER, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return 0
    # An existing file keeps its rows of the other sources (transcribed by hand), first.
    kept = other_rows(out_path, SOURCE_ID)
    write_rows(out_path, kept, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

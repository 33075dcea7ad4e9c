"""Rebuild the compact Azure extracts of this folder from the pinned upstream commits.

Usage (on a machine with git and internet access)::

    python data/upstream/azure/extract.py [--work DIR]

It clones (or reuses, under ``--work``) the two repositories below at the pinned commits and
writes, through `trialtable.files.write_atomic`:

- ``sizes.csv``: Azure's server table of SpareCores' ``sc-data-dumps`` (``data/server/azure``,
  CC BY-SA 4.0, see ``ATTRIBUTION.md``): size, family, vCPUs, memory, architecture, CPU
  allocation, CPU maker, family and model, status. Only these columns are kept.
- ``prices.csv``: on-demand Linux USD/hour per size (rows) and region (columns) from
  ``Azure/karpenter-provider-azure`` ``pkg/providers/pricing/zz_generated.pricing.go``
  (Apache-2.0). Dedicated-host SKUs (names without the ``Standard_`` prefix, such as
  ``Dasv4_Type1``) and ``Basic_`` sizes are dropped; a zero price is missing, not free, and is
  left empty.

``bandwidth.csv`` is written by ``bandwidth.py`` from Microsoft's size pages
(``MicrosoftDocs/azure-compute-docs``, each row naming the page and its commit).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from trialtable.files import write_atomic  # noqa: E402

SPARECORES = ("SpareCores/sc-data-dumps", "e8749bef991dfd1c531e84f09c2882945064a18d")
KARPENTER = ("Azure/karpenter-provider-azure", "352646f599290c3a6d2f9710fb535a7b288f88ed")
PRICE_FILE = "pkg/providers/pricing/zz_generated.pricing.go"
SIZE_COLUMNS = (
    "size",
    "family",
    "vcpus",
    "memory_gib",
    "arch",
    "cpu_allocation",
    "cpu_manufacturer",
    "cpu_family",
    "cpu_model",
    "description",
    "status",
)


def checkout(repo: str, commit: str, work: Path) -> Path:
    """A bare clone of ``repo`` under ``work`` holding ``commit`` (cloned once)."""
    path = work / repo.replace("/", "+")
    if not path.exists():
        url = f"https://github.com/{repo}.git"
        subprocess.run(["git", "clone", "--bare", "--filter=blob:none", url, str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "cat-file", "-e", commit], check=True)
    return path


def git_show(path: Path, commit: str, name: str) -> str:
    """The text of file ``name`` at ``commit``."""
    out = subprocess.run(
        ["git", "-C", str(path), "show", f"{commit}:{name}"], check=True, capture_output=True
    )
    return out.stdout.decode("utf-8")


def size_rows(path: Path, commit: str) -> list[dict[str, str]]:
    """One row per Azure server record of the dump, `SIZE_COLUMNS` only."""
    listing = subprocess.run(
        ["git", "-C", str(path), "ls-tree", "--name-only", commit, "data/server/azure/"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    rows = []
    for name in sorted(n for n in listing if n.endswith(".json")):
        d = json.loads(git_show(path, commit, name))
        rows.append(
            {
                "size": d["server_id"],
                "family": d.get("family") or "",
                "vcpus": str(d["vcpus"]),
                "memory_gib": f"{d['memory_amount'] / 1024:.6g}",
                "arch": {"X86_64": "x86_64", "ARM64": "arm64"}.get(d["cpu_architecture"], ""),
                "cpu_allocation": d.get("cpu_allocation") or "",
                "cpu_manufacturer": d.get("cpu_manufacturer") or "",
                "cpu_family": d.get("cpu_family") or "",
                "cpu_model": d.get("cpu_model") or "",
                "description": d.get("description") or "",
                "status": d.get("status") or "",
            }
        )
    return rows


def parse_prices(text: str) -> tuple[dict[str, dict[str, float]], str]:
    """``{size: {region: USD/h}}`` of the generated Go file, and its generation time."""
    prices: dict[str, dict[str, float]] = {}
    region = ""
    head = re.compile(r'initialOnDemandPrices\["([a-z0-9]+)"\]')
    pair = re.compile(r'^\s*"([A-Za-z0-9_]+)":\s*([0-9.eE+-]+),')
    for line in text.splitlines():
        m = head.search(line)
        if m:
            region = m.group(1)
            continue
        m = pair.match(line)
        if m and region and m.group(1).startswith("Standard_"):
            value = float(m.group(2))
            if value > 0:  # zero: missing, not free
                prices.setdefault(m.group(1), {})[region] = value
    gen = re.search(r"generated at (\S+)", text)
    return prices, gen.group(1) if gen else ""


def prices_csv(prices: dict[str, dict[str, float]], generated: str) -> str:
    """The wide price table: a comment line, then ``size`` and one column per region."""
    regions = sorted({r for by in prices.values() for r in by})
    buf = io.StringIO()
    buf.write(f"# {KARPENTER[0]}@{KARPENTER[1][:7]} {PRICE_FILE}, generated at {generated}\n")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["size", *regions])
    for size in sorted(prices):
        by = prices[size]
        w.writerow([size, *(f"{by[r]:g}" if r in by else "" for r in regions)])
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    """Write sizes.csv and prices.csv from the pinned commits (exit status 0)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default="/tmp/azure-upstream", help="where the clones are kept")
    args = ap.parse_args(argv)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    sc = checkout(*SPARECORES, work)
    rows = size_rows(sc, SPARECORES[1])
    buf = io.StringIO()
    buf.write(f"# {SPARECORES[0]}@{SPARECORES[1][:7]} data/server/azure (CC BY-SA 4.0)\n")
    w = csv.DictWriter(buf, fieldnames=list(SIZE_COLUMNS), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    write_atomic(HERE / "sizes.csv", buf.getvalue())
    kp = checkout(*KARPENTER, work)
    prices, generated = parse_prices(git_show(kp, KARPENTER[1], PRICE_FILE))
    write_atomic(HERE / "prices.csv", prices_csv(prices, generated))
    print(f"{len(rows)} sizes, {len(prices)} priced sizes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

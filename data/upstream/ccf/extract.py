"""Rebuild the compact Cloud Carbon Footprint extracts of this folder from pinned commits.

Usage (on a machine with git and internet access)::

    python data/upstream/ccf/extract.py [--work DIR] [--ccf GITDIR] [--coefficients GITDIR]

It clones (or reuses, under ``--work``, or the git directories given) the two repositories
below at the pinned commits and writes, through `trialtable.files.write_atomic`:

- ``cpu-power.csv``: per provider and CPU microarchitecture, the watts one vCPU draws idle
  and at full load (``Min Watts``, ``Max Watts`` of ``output/coefficients-<provider>-use.csv``,
  ccf-coefficients, from SPECpower_ssj2008 results).
- ``embodied.csv``: per provider and instance type, the manufacturing emissions of the whole
  server [kgCO2e] (``total``, or ``total_mean`` over the microarchitectures a type runs on, of
  ``output/coefficients-<provider>-embodied*.csv``) and the vCPUs of that server (the platform's
  vCPUs, or the family's largest size, of ``data/<provider>-instances.csv``).
- ``grid.csv``: per provider and region, the grid's emissions [kgCO2e/kWh] with the source and
  year CCF names (Appendix V of ``microsite/docs/HowItWorks/Methodology.md``; for GCP the table
  without Google's carbon-free energy share, the grid's own intensity). Azure region names are
  written as the API's codes (``East US`` -> ``eastus``; the few that differ by word order are
  in `AZURE_CODES`).

Both repositories are Apache-2.0 (``LICENSE-Apache-2.0.txt``).
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

CCF = ("cloud-carbon-footprint/cloud-carbon-footprint", "b7a049c7d25c0022919ab9010199dd9e77aa4577")
COEFFICIENTS = (
    "cloud-carbon-footprint/ccf-coefficients",
    "b0032d928c787cf76cecd7d1d611c5b46f366e29",
)
METHODOLOGY = "microsite/docs/HowItWorks/Methodology.md"
PROVIDERS = ("aws", "gcp", "azure")
#: Azure's display names whose API code is not the name lower-cased without spaces.
AZURE_CODES = {
    "India West": "westindia",
    "India Central": "centralindia",
    "India South": "southindia",
    "Australia South East": "australiasoutheast",
    "United Arab Emirates North": "uaenorth",
    "United Arab Emirates Central": "uaecentral",
    "Korea South": "koreasouth",
    "Korea East": "koreacentral",
}
#: Source name in CCF's table -> (what it is, its year; "" where CCF states none).
SOURCES = {
    "EPA": ("US EPA eGRID2020, by NERC region", "2020"),
    "carbonfootprint.com": (
        "carbonfootprint.com country factors for 2021 electricity (v11)",
        "2021",
    ),
    "EEA": ("European Environment Agency, CO2 emission intensity of electricity", ""),
    "Google": ("Google Cloud, carbon data across GCP regions (location-based)", ""),
}


def checkout(repo: str, commit: str, work: Path, given: Path | None) -> Path:
    """A git directory holding ``commit`` of ``repo`` (``given``, or cloned under ``work``)."""
    path = given or work / repo.replace("/", "+")
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


def rows_of(text: str) -> list[dict[str, str]]:
    """The rows of a CSV text."""
    return list(csv.DictReader(io.StringIO(text)))


def cpu_power(path: Path, commit: str) -> list[dict[str, str]]:
    """Min and max watts per vCPU of each provider's microarchitectures."""
    out = []
    for prov in PROVIDERS:
        for r in rows_of(git_show(path, commit, f"output/coefficients-{prov}-use.csv")):
            out.append(
                {
                    "provider": prov,
                    "architecture": r["Architecture"],
                    "min_watts_per_vcpu": f"{float(r['Min Watts']):.4f}",
                    "max_watts_per_vcpu": f"{float(r['Max Watts']):.4f}",
                }
            )
    return out


def _mean_by(rows: list[dict[str, str]], key: str, value: str) -> dict[str, float]:
    sums: dict[str, list[float]] = {}
    for r in rows:
        sums.setdefault(r[key], []).append(float(r[value]))
    return {k: sum(v) / len(v) for k, v in sums.items()}


def _azure_name(name: str) -> str:
    return "Standard_" + name.strip().replace(" ", "_")


def embodied(path: Path, commit: str) -> list[dict[str, str]]:
    """Each type's server emissions [kgCO2e] and the server's vCPUs."""
    show = lambda name: rows_of(git_show(path, commit, name))  # noqa: E731
    tables = {
        "aws": (
            _mean_by(show("output/coefficients-aws-embodied.csv"), "type", "total"),
            _mean_by(
                show("data/aws-instances.csv"), "Instance type", "Platform Total Number of vCPU"
            ),
            lambda n: n,
        ),
        "gcp": (
            _mean_by(show("output/coefficients-gcp-embodied-mean.csv"), "type", "total_mean"),
            _mean_by(
                show("data/gcp-instances.csv"),
                "Machine type",
                "Platform vCPUs (highest vCPU possible)",
            ),
            lambda n: n,
        ),
        "azure": (
            _mean_by(show("output/coefficients-azure-embodied.csv"), "type", "total"),
            _mean_by(
                show("data/azure-instances.csv"),
                "Virtual Machine",
                "Platform vCPUs (highest vCPU possible)",
            ),
            _azure_name,
        ),
    }
    out = []
    for prov, (totals, platform, name) in tables.items():
        for t in sorted(totals):
            if t not in platform or platform[t] <= 0 or t.count(".") > 1:
                continue  # no server size, or a managed service's (``.elasticsearch``)
            out.append(
                {
                    "provider": prov,
                    "instance_type": name(t),
                    "kgco2e_server": f"{totals[t]:.2f}",
                    "server_vcpus": f"{platform[t]:g}",
                }
            )
    return out


def _tables(text: str) -> dict[str, list[list[str]]]:
    """The tables of Appendix V by heading (GCP: the second, location-based, table)."""
    part = text.split("### Appendix V", 1)[1]
    out: dict[str, list[list[str]]] = {}
    for block in re.split(r"^#### ", part, flags=re.M)[1:]:
        title, body = block.split("\n", 1)
        tables: list[list[list[str]]] = [[]]
        for line in body.splitlines():
            if line.startswith("|"):
                tables[-1].append([c.strip() for c in line.strip().strip("|").split("|")])
            elif tables[-1]:
                tables.append([])
        found = [t[2:] for t in tables if t]
        out[title.strip()] = found[-1]
    return out


def grid(path: Path, commit: str) -> list[dict[str, str]]:
    """Each region's grid emissions [kgCO2e/kWh] with its source and year."""
    out = []
    for title, rows in _tables(git_show(path, commit, METHODOLOGY)).items():
        prov = title.lower()
        for cells in rows:
            region, location = cells[0].rstrip("*").strip(), cells[1]
            factor = cells[-2]
            m = re.match(r"\[([^\]]+)\]", cells[-1])
            source = m.group(1) if m else cells[-1]
            if prov == "azure":
                region = AZURE_CODES.get(region, region.lower().replace(" ", ""))
            what, year = SOURCES[source]
            out.append(
                {
                    "provider": prov,
                    "region": region,
                    "kgco2e_per_kwh": f"{float(factor) * 1000:.6g}",
                    "location": location,
                    "source": what,
                    "year": year,
                }
            )
    return out


def write_csv(name: str, rows: list[dict[str, str]], note: str) -> None:
    """``name`` in this folder: a ``#`` source line, the header, the rows."""
    buf = io.StringIO()
    buf.write(f"# {note}\n")
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    write_atomic(HERE / name, buf.getvalue())


def main() -> None:
    """Write the three extracts."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/ccf-upstream"))
    ap.add_argument("--ccf", type=Path, help="a git directory of cloud-carbon-footprint")
    ap.add_argument("--coefficients", type=Path, help="a git directory of ccf-coefficients")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    coef = checkout(*COEFFICIENTS, args.work, args.coefficients)
    ccf = checkout(*CCF, args.work, args.ccf)
    at = f"{COEFFICIENTS[0]}@{COEFFICIENTS[1][:7]}"
    write_csv(
        "cpu-power.csv", cpu_power(coef, COEFFICIENTS[1]), f"{at} output/coefficients-*-use.csv"
    )
    write_csv(
        "embodied.csv",
        embodied(coef, COEFFICIENTS[1]),
        f"{at} output/coefficients-*-embodied*.csv, data/*-instances.csv",
    )
    write_csv("grid.csv", grid(ccf, CCF[1]), f"{CCF[0]}@{CCF[1][:7]} {METHODOLOGY} Appendix V")


if __name__ == "__main__":
    main()

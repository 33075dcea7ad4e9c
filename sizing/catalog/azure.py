"""Microsoft Azure: its catalog build, network rules, default regions and egress prices.

The build reads the compact extracts of ``data/upstream/azure`` (``extract.py`` there rebuilds
them from the pinned upstream commits; ``README.md`` there names sources and licences):

- ``sizes.csv``: Azure's server table of SpareCores' ``sc-data-dumps`` (CC BY-SA 4.0): vCPUs,
  memory, architecture, CPU allocation (``BURSTABLE`` for the B-series) and, where SpareCores
  measured it, the CPU maker and model;
- ``prices.csv``: on-demand Linux USD/hour per size and region from
  ``Azure/karpenter-provider-azure``'s generated price file (Apache-2.0), dedicated-host SKUs
  dropped, an empty cell a missing price;
- ``bandwidth.csv``: "Max Network Bandwidth (Mbps)" per size from Microsoft's size pages,
  where read; any other size's bandwidth is an estimate (`estimate_gbps`), marked in its source.

``network-path.csv`` (read by the model, not the build) holds Microsoft's published limits of
the VM network path; `connection_cap` turns its connections per second into a cap on requests
per second for workloads that open connections per request.

The CPU text names the platform by codename (`azure_cpu`): from SpareCores' model where it
has one, else from the size name's letters and version (marked "inferred"); a CPU that the
platform table does not place (Cobalt 100, Neoverse N2) gets the platform table's labelled
fallback with its wide range.

Left out, each with its reason: GPU and accelerator sizes (N-series), sizes SpareCores marks
inactive, sizes without a price in any region, priced sizes SpareCores does not list.

A provider module of `sizing.catalog.providers`. Runs with the standard library only.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from sizing.catalog.rows import BuildResult, egress_row, num, read_upstream
from sizing.errors import InputError
from sizing.paths import DATA_DIR
from trialtable.profile import PROXIED

if TYPE_CHECKING:
    from sizing.catalog.load import Instance
    from sizing.workload.value import Workload

NAME = "azure"
TITLE = "Microsoft Azure"
#: Regions compared when ``--provider azure`` names none.
DEFAULT_REGIONS = ("eastus",)
#: Not in the answer without ``--provider azure`` or ``--region``: the default answer
#: (AWS us-east-1 and GCP us-central1) stays as it was before Azure was added.
OPT_IN = True
UPSTREAM = "SpareCores/sc-data-dumps data/server/azure, Azure/karpenter-provider-azure prices"
#: The folder of the shipped Azure extracts.
FOLDER = DATA_DIR / "upstream" / "azure"
FILES = ("sizes.csv", "prices.csv", "bandwidth.csv")
#: Bandwidth per vCPU where Microsoft's table was not read [Gbit/s], an estimate: the tables
#: read (Dsv5, Dasv5, Dpsv5, Dsv6, Dasv6, Dpsv6) give 0.5 Gbps per vCPU from 32 vCPUs,
#: 12.5 Gbps below and about 40 Gbps at the top (`estimate_gbps`).
GBPS_PER_VCPU = 0.5
#: Left empty: the one Azure estimate (`GBPS_PER_VCPU`) is named in each row it sets (the
#: row's source and the network line), and every answer prints this table.
ESTIMATES: dict[str, tuple[float, str]] = {}

#: Families of the special groups (`sizing.catalog.providers.FAMILY_GROUPS`), by name.
SPECIAL_FAMILIES = {
    "hpc": r"H[BCX]?[a-z]*_?v?\d*$|H[BCX]",
    "gpu": r"N[CDGPV]",
}

# ----------------------------------------------------------------------------- CPU

#: Xeon and EPYC model numbers to codenames (Azure's custom parts: 8370C, 9V74...).
_MODEL_CODENAMES = (
    (r"^8[0-9]*1\d\d[A-Z]*$|^81\d\d", "Intel Xeon Skylake"),
    (r"^82\d\d", "Intel Xeon Cascade Lake"),
    (r"^83\d\d", "Intel Xeon Ice Lake"),
    (r"^84\d\d", "Intel Xeon Sapphire Rapids"),
    (r"^85\d\d", "Intel Xeon Emerald Rapids"),
    (r"^E5-2\d\d\d[A-Z]? v3$", "Intel Xeon Haswell"),
    (r"^E5-2\d\d\d[A-Z]? v4$", "Intel Xeon Broadwell"),
    (r"^7\w\w1$", "AMD EPYC Naples"),
    (r"^7\w\w2$", "AMD EPYC Rome"),
    (r"^7\w\w3$", "AMD EPYC Milan"),
    (r"^9\w\w4$", "AMD EPYC Genoa"),
    (r"^9\w\w5$", "AMD EPYC Turin"),
    (r"^Neoverse-N1$", "Ampere Altra"),
    (r"^Neoverse-N2$", "Microsoft Azure Cobalt 100"),
)
#: Platform by the size name's maker letter ("a" AMD, "p" Arm, none Intel) and version.
_BY_VERSION = {
    ("p", 5): "Ampere Altra (Neoverse-N1)",
    ("p", 6): "Microsoft Azure Cobalt 100 (Neoverse N2)",
    ("a", 4): "AMD EPYC Rome / AMD EPYC Milan",
    ("a", 5): "AMD EPYC Milan",
    ("a", 6): "AMD EPYC Genoa",
    ("a", 7): "AMD EPYC Turin",
    ("i", 3): "Intel Xeon Broadwell / Intel Xeon Skylake / Intel Xeon Cascade Lake",
    ("i", 4): "Intel Xeon Cascade Lake / Intel Xeon Ice Lake",
    ("i", 5): "Intel Xeon Ice Lake",
    ("i", 6): "Intel Xeon Emerald Rapids",
    ("i", 7): "Intel Xeon Granite Rapids",
}
#: ``Standard_<series letters><vCPUs>[-<constrained>]<feature letters>[_<extra>]_v<version>``.
_SIZE_RE = re.compile(r"^Standard_([A-Z]+)(\d+)(?:-\d+)?([a-z]*)(?:_[A-Za-z0-9]+)*?(?:_v(\d+))?$")


def parse_size(size: str) -> tuple[str, str, int]:
    """Series letters, feature letters and version of a size name ('' and 0 when absent)."""
    m = _SIZE_RE.match(size)
    if not m:
        return "", "", 0
    return m.group(1), m.group(3), int(m.group(4) or 0)


def azure_cpu(size: str, maker: str, model: str) -> str:
    """The CPU text of a size: the codename of SpareCores' model, else inferred from the name.

    An inferred text ends with "(inferred from the size name)"; "" when nothing places it.
    """
    for pattern, codename in _MODEL_CODENAMES:
        if model and re.search(pattern, model):
            return f"{codename} ({model})"
    if model:
        return f"{maker} {model}".strip()
    series, letters, version = parse_size(size)
    kind = "p" if "p" in letters else "a" if "a" in letters else "i"
    if series.startswith("DC") or series.startswith("EC"):
        if kind == "i" and version == 5:  # confidential v5 (DCesv5, ECesv5): TDX parts
            return "Intel Xeon Sapphire Rapids (inferred from the size name)"
    found = _BY_VERSION.get((kind, version))
    return f"{found} (inferred from the size name)" if found else ""


def family_of(size: str) -> str:
    """``Standard_D2as_v5`` -> ``Das_v5``: the size name without its vCPU count."""
    return re.sub(r"(?<=[A-Z])\d+(?:-\d+)?", "", size.removeprefix("Standard_"), count=1)


# ----------------------------------------------------------------------------- build


def extract_rows(path: Path) -> list[dict[str, str]]:
    """The rows of an extract (its ``#`` comment lines skipped), or InputError."""
    text = read_upstream(path)
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    try:
        return list(csv.DictReader(io.StringIO("\n".join(lines) + "\n", newline="")))
    except csv.Error as exc:
        raise InputError(f"{path}: malformed CSV: {exc}") from None


def source_comment(path: Path) -> str:
    """The first ``#`` line of an extract, without its mark: where the extract comes from."""
    for line in read_upstream(path).splitlines()[:1]:
        if line.startswith("#"):
            return line.lstrip("# ").strip()
    return path.name


def read_bandwidth(folder: Path) -> dict[str, float]:
    """Published "Max Network Bandwidth" per size [Gbit/s] from ``bandwidth.csv``."""
    out: dict[str, float] = {}
    for i, row in enumerate(extract_rows(folder / "bandwidth.csv"), start=3):
        try:
            mbps = float(row["max_network_mbps"])
        except (KeyError, TypeError, ValueError):
            raise InputError(f"{folder / 'bandwidth.csv'}:{i}: bad max_network_mbps") from None
        if not 0 < mbps < 1e7:
            raise InputError(f"{folder / 'bandwidth.csv'}:{i}: max_network_mbps out of range")
        out[row["size"]] = mbps / 1000.0
    return out


@cache
def _shipped_bandwidth() -> dict[str, float]:
    return read_bandwidth(FOLDER)


def estimate_gbps(vcpus: int, version: int) -> float:
    """Estimated bandwidth of a size Microsoft's table was not read for [Gbit/s].

    v5 and later: 0.5 Gbps per vCPU between 12.5 and 40 Gbps (the tables read); older:
    0.5 Gbps per vCPU from 1 Gbps, up to 30 Gbps.
    """
    if version >= 5:
        return min(max(12.5, GBPS_PER_VCPU * vcpus), 40.0)
    return min(max(1.0, GBPS_PER_VCPU * vcpus), 30.0)


def read_prices(path: Path) -> tuple[list[str], dict[str, list[str]]]:
    """The regions and, per size, its price cells (one per region, "" for missing)."""
    rows = list(csv.reader(line for line in read_upstream(path).splitlines() if line[:1] != "#"))
    if not rows or rows[0][:1] != ["size"]:
        raise InputError(f"{path}: expected a header starting with 'size'")
    regions = rows[0][1:]
    out = {}
    for i, row in enumerate(rows[1:], start=3):
        if len(row) != len(regions) + 1:
            raise InputError(f"{path}:{i}: {len(row)} cells, expected {len(regions) + 1}")
        out[row[0]] = row[1:]
    return regions, out


@cache
def regions() -> tuple[str, ...]:
    """The regions of the shipped price extract (its header), read without building."""
    path = FOLDER / "prices.csv"
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if not line.startswith("#"):
                    return tuple(line.strip().split(",")[1:])
    except OSError as exc:
        raise InputError(f"{path} cannot be read: {exc.strerror}") from None
    return ()


def exclusion(size: dict[str, str], priced: bool) -> str:
    """Why a size is left out of the catalog ("" when it is kept); ``priced``: has a price."""
    series, _, _ = parse_size(size["size"])
    if series.startswith("N") or size["family"].strip().startswith(("N", "Standard N")):
        return "GPU, FPGA or ML accelerator"
    if size["status"] != "ACTIVE":
        return "inactive in the SpareCores size table"
    if size["arch"] not in ("x86_64", "arm64"):
        return "unknown architecture"
    if not priced:
        return "no price in any region"
    return ""


def build_azure(folder: Path) -> BuildResult:
    """Catalog rows for every priced, active Azure size and region of the extracts."""
    sizes = {s["size"]: s for s in extract_rows(folder / "sizes.csv")}
    if not sizes:
        raise InputError(f"{folder / 'sizes.csv'}: no sizes")
    regions, prices = read_prices(folder / "prices.csv")
    bandwidth = read_bandwidth(folder)
    source = f"{source_comment(folder / 'sizes.csv')}; {source_comment(folder / 'prices.csv')}"
    date = re.search(r"generated at (\d{4}-\d\d-\d\d)", source)
    result = BuildResult()
    result.inputs = [folder / name for name in FILES]
    for name in sorted(set(prices) - set(sizes)):
        result.excluded.append((NAME, name, "priced, but not in the SpareCores size table"))
    for name, size in sizes.items():
        cells = prices.get(name, [])
        reason = exclusion(size, any(cells))
        if reason:
            result.excluded.append((NAME, name, reason))
            continue
        shared = shared_row(size, bandwidth, source)
        shared["source_date"] = date.group(1) if date else ""
        for region, cell in zip(regions, cells, strict=True):
            if cell:
                row = shared.copy()
                row["region"] = region
                row["price_usd_hour"] = num(float(cell))
                result.rows.append(row)
    result.egress = egress_rows(folder)
    result.egress_read = True
    return result


def shared_row(size: dict[str, str], bandwidth: dict[str, float], source: str) -> dict[str, str]:
    """What every region's row of one size shares (its region and price left empty)."""
    name, vcpus = size["size"], int(size["vcpus"])
    _, letters, version = parse_size(name)
    gbps = bandwidth.get(name)
    if gbps is None:
        gbps = estimate_gbps(vcpus, version)
        source += f"; bandwidth: estimate ({GBPS_PER_VCPU:g} Gbps per vCPU rule, azure.py)"
    else:
        source += "; bandwidth: Microsoft size table (bandwidth.csv)"
    cpu = azure_cpu(name, size["cpu_manufacturer"], size["cpu_model"])
    arm = size["arch"] == "arm64"
    whole_core = arm or (name.startswith("Standard_F") and "a" in letters and version >= 6)
    return {
        "provider": NAME,
        "region": "",
        "instance_type": name,
        "family": family_of(name),
        "arch": size["arch"],
        "cpu": cpu,
        "vcpus": str(vcpus),
        "memory_gib": num(float(size["memory_gib"])),
        "network_gbps": num(gbps),
        "network_burst": "false",
        "price_usd_hour": "",
        "source": source,
        "source_date": "",
        "threads_per_core": "1" if whole_core else "",
        "burstable": "true" if size["cpu_allocation"] == "BURSTABLE" else "false",
        "network_burst_gbps": "",
        "spot_usd_hour": "",
        "commit_1y_usd_hour": "",
        "commit_3y_usd_hour": "",
        "cpu_baseline": "",
        "coremark": "",
    }


def build(folder: Path, burst_table: Path | None = None) -> BuildResult:
    """Catalog rows from the extracts folder (`build_azure`); the contract's entry point."""
    del burst_table  # an AWS table
    return build_azure(folder)


# ----------------------------------------------------------------------------- network


def network_gbps(inst: Instance, work: Workload) -> tuple[float, str]:
    """The bandwidth that caps this Azure size for this workload [Gbit/s], and why.

    Microsoft publishes one number per size, the maximum aggregated bandwidth over all NICs
    ("upper limits aren't guaranteed"); it is used as sustained, and ``--network burst``
    changes nothing. Azure has no internet-gateway limit like AWS's.
    """
    del work
    published = inst.instance_type in _shipped_bandwidth()
    how = "published maximum (Microsoft size table)" if published else "estimate, 0.5 Gbps/vCPU"
    return inst.network_gbps, f"Azure {inst.network_gbps:g} Gbps {how}"


# ----------------------------------------------------------------------------- network path

#: Microsoft's published limits of the VM network path (``network-path.md`` quotes them).
NETWORK_PATH = FOLDER / "network-path.csv"
_PATH_LIMITS = frozenset(
    {
        "active_connections",
        "active_connections_proxy",
        "flows_each_direction",
        "connections_per_second",
        "connection_limit",
    }
)
#: What a row's ``commit`` and ``page`` may hold (a hex hash; a path of a Markdown page).
_COMMIT = re.compile(r"[0-9a-f]{7,40}")
_PAGE = re.compile(r"[A-Za-z0-9_./-]{1,200}\.md")
#: Pages of `NETWORK_PATH` by file, as the basis names them.
PATH_PAGES = {
    "virtual-machine-network-throughput.md": "Microsoft, 'Virtual machine network bandwidth'",
    "network-optimized-vm-network-connection-acceleration.md": (
        "Microsoft, 'Network optimized virtual machine connection acceleration (Preview)'"
    ),
}


@dataclass(frozen=True)
class PathLimit:
    """One published limit of Azure's VM network path (a row of `NETWORK_PATH`).

    Attributes
    ----------
    limit : str
        What is limited (`_PATH_LIMITS`).
    vcpus_from, vcpus_to : int
        The sizes it holds for, by vCPUs [1] (``vcpus_to`` 0: no upper end).
    value : float
        The limit [connections, flows or connections/s].
    applies_to, page, commit : str
        Which sizes, and where it was read (page of MicrosoftDocs/azure-docs at commit).
    line : int
        Line of that page the figure is on.
    """

    limit: str
    vcpus_from: int
    vcpus_to: int
    value: float
    applies_to: str
    page: str
    commit: str
    line: int

    def holds_for(self, vcpus: int) -> bool:
        """The limit's vCPU range holds ``vcpus``."""
        return self.vcpus_from <= vcpus and (not self.vcpus_to or vcpus <= self.vcpus_to)

    @property
    def cite(self) -> str:
        """Its source in words: page title, repository at commit, path and line."""
        name = self.page.rsplit("/", 1)[-1]
        title = PATH_PAGES.get(name, name)
        return f"{title}, MicrosoftDocs/azure-docs@{self.commit} {self.page}:{self.line}"


def _path_limit(path: Path, i: int, row: dict[str, str]) -> PathLimit:
    """One checked row of the network-path file, or InputError naming file and line."""
    try:
        limit = PathLimit(
            row["limit"],
            int(row["vcpus_from"]),
            int(row["vcpus_to"] or 0),
            float(row["value"]),
            row["applies_to"],
            row["page"],
            row["commit"],
            int(row["line"]),
        )
    except (KeyError, TypeError, ValueError):
        raise InputError(
            f"{path}:{i}: a network-path row needs every column, numbers where due"
        ) from None
    if limit.limit not in _PATH_LIMITS:
        raise InputError(f"{path}:{i}: unknown limit {limit.limit[:40]!r}")
    if not (math.isfinite(limit.value) and 0 < limit.value < 1e9 and limit.vcpus_from >= 1):
        raise InputError(f"{path}:{i}: value or vCPUs out of range")
    if limit.vcpus_to and limit.vcpus_to < limit.vcpus_from:
        raise InputError(f"{path}:{i}: vcpus_to below vcpus_from")
    # page and commit are printed in the basis (`PathLimit.cite`): a path and a hash, no more
    if not (_COMMIT.fullmatch(limit.commit) and _PAGE.fullmatch(limit.page)) or limit.line < 1:
        raise InputError(f"{path}:{i}: page, commit or line is not a page path, hash and line")
    return limit


def read_network_path(path: Path = NETWORK_PATH) -> tuple[PathLimit, ...]:
    """The published limits of ``path`` (`NETWORK_PATH`), checked."""
    return tuple(_path_limit(path, i, row) for i, row in enumerate(extract_rows(path), start=3))


@cache
def network_path() -> tuple[PathLimit, ...]:
    """The shipped `NETWORK_PATH`, read once."""
    return read_network_path()


def limit_for(limits: tuple[PathLimit, ...], name: str, vcpus: int) -> PathLimit | None:
    """The row of ``name`` whose vCPU range holds ``vcpus``; below every range, the lowest."""
    rows = sorted((r for r in limits if r.limit == name), key=lambda r: r.vcpus_from)
    held = [r for r in rows if r.holds_for(vcpus)]
    if held:
        return held[0]
    return rows[0] if rows and vcpus < rows[0].vcpus_from else None


@cache
def network_optimized(size: str) -> bool:
    """A network-optimized size: ``n`` among the name's feature letters (``D16ns_v6``)."""
    return "n" in parse_size(size)[1]


def new_connections_per_request(work: Workload) -> tuple[float, float]:
    """New TCP connections per request [1]: the client's side and the upstream side.

    The client's ``1 / requests_per_connection`` (0 for connections reused without end); the
    upstream's, one per ``proxy_new_connection`` (`trialtable.features`).
    """
    return work.connections_per_request, work.feature("proxy_new_connection")


# ----------------------------------------------------------------------------- egress

#: Internet egress tiers per GiB a month by Azure's transfer zone, first 100 GB free:
#: zone 1 (North America, Europe), zone 2 (Asia Pacific, Australia, Japan, Korea, India),
#: zone 3 (Brazil, South Africa, Middle East). Estimates, see `EGRESS_SOURCE`.
EGRESS_ZONES = {
    1: (0.087, 0.083, 0.07, 0.05),
    2: (0.12, 0.085, 0.082, 0.08),
    3: (0.181, 0.175, 0.17, 0.16),
}
_TIER_EDGES = (100.0, 10240.0 + 100.0, 51200.0 + 100.0, 153600.0 + 100.0)
_ZONE2 = ("asia", "australia", "japan", "korea", "india", "indonesia", "malaysia", "newzealand")
_ZONE3 = ("brazil", "southafrica", "uae", "qatar", "israel", "chile", "mexico")
EGRESS_SOURCE = (
    "estimate: Microsoft Azure 'Bandwidth pricing' (azure.microsoft.com/pricing/details/"
    "bandwidth), internet egress over Microsoft's network by zone, as last read, not re-checked "
    "against the page; regions placed in zones by name"
)
INTER_ZONE_SOURCE = (
    "adammazouz.com/post/2023/8/understanding-azure-bandwidth-part-1: no charge for data "
    "transfer between availability zones of one region"
)
EGRESS_DATE = "2026-06-18"


def transfer_zone(region: str) -> int:
    """Azure's transfer zone of a region (1, 2 or 3), by its name."""
    if any(k in region for k in _ZONE3):
        return 3
    if any(k in region for k in _ZONE2):
        return 2
    return 1


def egress_rows(folder: Path | None = None) -> list[dict[str, str]]:
    """``egress.csv`` rows of Azure: internet tiers by transfer zone, and free inter-zone."""
    if folder is None or Path(folder) == FOLDER:  # the shipped extract: its header alone
        names = regions()
    else:
        names = tuple(read_prices(folder / "prices.csv")[0])
    out = []
    for region in names:
        prices = EGRESS_ZONES[transfer_zone(region)]
        edges: tuple[float | None, ...] = (*_TIER_EDGES, None)
        tiers: list[tuple[float, float | None, float]] = [(0.0, 100.0, 0.0)]
        tiers += [(_TIER_EDGES[i], edges[i + 1], p) for i, p in enumerate(prices)]
        for tier in tiers:
            note = "free tier, aggregated over the account" if tier[2] == 0 else ""
            out.append(egress_row(NAME, region, "internet", tier, EGRESS_SOURCE, EGRESS_DATE, note))
        out.append(
            egress_row(NAME, region, "inter-zone", (0.0, None, 0.0), INTER_ZONE_SOURCE, EGRESS_DATE)
        )
    return out


def _path_notes(active: PathLimit | None, proxying: bool) -> str:
    """What the basis says of Azure's limits that the model does not apply, and why."""
    held = (
        f"{active.value:,.0f} active connections per VM{' that proxies' if proxying else ''} "
        f"({active.cite}), not applied: the model takes no count of open connections and "
        "Microsoft publishes no time a closed connection's flows stay; "
        if active
        else ""
    )
    return (
        f"{held}no packets-per-second figure is published for Azure, so the packet-rate "
        "estimate is kept; whether this size has Accelerated Networking is not in the bundled "
        "data (data/upstream/azure/network-path.md)"
    )


def connection_cap(inst: Instance, work: Workload) -> tuple[float, str]:
    """The cap Azure's connection rate puts on requests per second [1/s], and the basis text.

    A request opens `new_connections_per_request` connections; the VM creates at most the
    published connections per second of its vCPU row (`NETWORK_PATH`): Microsoft's figure for
    a network-optimized size, an upper bound for any other (the page says those sizes
    "enable higher connection creation rates"). Connections kept alive: no cap (inf).
    """
    client, upstream = new_connections_per_request(work)
    proxying = work.scenario in PROXIED or any(
        name.startswith("proxy_") for name, _ in work.features
    )
    optimized = network_optimized(inst.instance_type)
    return _connection_cap(inst.vcpus, optimized, client, upstream, proxying)


@cache
def _connection_cap(
    vcpus: int, optimized: bool, client: float, upstream: float, proxying: bool
) -> tuple[float, str]:
    """`connection_cap` of a size by what it depends on (regions and sizes share it)."""
    limits = network_path()
    per_request = client + upstream
    name = "active_connections_proxy" if proxying else "active_connections"
    notes = _path_notes(limit_for(limits, name, vcpus), proxying)
    cps = limit_for(limits, "connections_per_second", vcpus)
    if per_request <= 0 or cps is None:
        return math.inf, f"Azure network path: no new connections per request, no cap; {notes}"
    cap = cps.value / per_request
    kind = (
        "published for this network-optimized size"
        if optimized
        else "an upper bound for this size: Microsoft publishes no rate for sizes that are not "
        "network-optimized and says those 'enable higher connection creation rates'"
    )
    row = f"{cps.vcpus_from}-{cps.vcpus_to}" if cps.vcpus_to else f"{cps.vcpus_from}+"
    return cap, (
        f"Azure's connection rate {cps.value:,.0f} connections/s ({kind}; {row} vCPU row; "
        f"{cps.cite}) / {per_request:.3g} new connections per request (client {client:.3g}, "
        f"upstream {upstream:.3g}) = {cap:,.0f} RPS; {notes}"
    )

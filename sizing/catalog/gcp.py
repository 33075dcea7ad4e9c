"""Google Cloud: its catalog build, network rules, default regions and egress prices.

The build reads, from ``Cyclenerd/google-cloud-pricing-cost-calculator`` and
``Cyclenerd/google-cloud-compute-machine-types`` (``--gcp-dir``):

- ``pricing.yml``: ``compute.instance.<type>``: ``cpu``, ``ram`` [GB] and per region ``hour``
  (on-demand), ``hour_spot``, ``month_1y`` and ``month_3y`` (committed use, 730 h a month).
  Only region keys are read under ``cost``: OS licence costs (rhel, sles, windows) that share
  the machine type names are not machine prices. ``compute.network.traffic.egress.internet`` gives
  the internet egress tiers per region (`egress_rows`).
- ``series/*.sql``: per series the ``cpuPlatform`` and the per-VM egress ``bandwidth``
  [Gbit/s], as SQL ``UPDATE ... WHERE name LIKE`` statements applied in file order (later
  statements override earlier ones).
- ``series/cpu/coremark.sql`` (or ``cpu/coremark.sql``): CoreMark scores per machine type.

Left out, each with its reason in the build's exclusion list: accelerator series (a2, a3, a4,
g2, g4 and any type with an accelerator count), ``*-metal`` types, types without a price or a
series file, and the example custom shapes. Shared-core types (e2-micro, e2-small, e2-medium,
f1-micro, g1-small) are kept and marked ``burstable=true`` with their ``cpu_baseline``.

A provider module of `sizing.catalog.providers` (see `sizing.catalog.aws` for the contract).
Runs with the standard library only.
"""

from __future__ import annotations

import bisect
import datetime as dt
import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sizing.catalog.rows import (
    HOURS_PER_MONTH,
    BuildResult,
    commit_note,
    egress_row,
    num,
    read_upstream,
)
from sizing.errors import InputError

if TYPE_CHECKING:
    from sizing.catalog.load import Instance
    from sizing.workload.value import Workload

NAME = "gcp"
TITLE = "Google Cloud"
#: Regions compared when the user names none.
DEFAULT_REGIONS = ("us-central1",)
UPSTREAM = "Cyclenerd/google-cloud-pricing-cost-calculator pricing.yml, ...machine-types series"
GCP_PRICING = "pricing.yml"
#: Sustained per-VM egress per vCPU, an estimate of GCP's rule [Gbit/s].
GCP_GBPS_PER_VCPU = 2.0
ESTIMATES: dict[str, tuple[float, str]] = {
    "gcp_sustained_gbps_per_vcpu": (
        GCP_GBPS_PER_VCPU,
        "GCP documents per-VM egress as about 2 Gbps per vCPU with a 10 Gbps floor for small "
        "shapes; the floor is an 'up to' (burst), the per-vCPU rate is taken as sustained",
    ),
}

#: Families of the special groups (`sizing.catalog.providers.FAMILY_GROUPS`), by name.
SPECIAL_FAMILIES = {
    "hpc": r"(h3|h4d)-",
    "gpu": r"(a2|a3|a4|g2|g4)-",
}

# ----------------------------------------------------------------------------- build


def parse_simple_yaml(text: str, path: str = "pricing.yml") -> dict[str, object]:
    """Nested mappings of scalars as ``pricing.yml`` writes them (list items are skipped).

    Block scalars (``key: |``) are skipped. A key that appears twice at one level has its
    mappings merged, so a second section of the same name adds to the first. A value that
    reads as a number is a float, any other is text (quotes around it removed).

    Raises
    ------
    InputError
        For a line that is not ``key: value`` (naming ``path`` and the line).
    """
    root: dict[str, object] = {}
    # Open mappings and their indentation; the root's -1 is below every line's, so the
    # stack never empties.
    stack: list[tuple[int, dict[str, object]]] = [(-1, root)]
    top, parent = stack[-1]
    skip_deeper_than = -1  # inside a block scalar: its key's indentation, else -1
    for lineno, raw in enumerate(text.splitlines(), start=1):
        body = raw.lstrip(" ")
        indent = len(raw) - len(body)
        # Most lines are ``name: value`` inside the open mapping: a key that is an identifier
        # (no space, quote, colon, "#" or "-" to read otherwise) ends at the first colon.
        key, sep, value = body.partition(": ")
        if sep and top < indent and skip_deeper_than < 0 and key.isidentifier():
            try:  # a number: what the rules below read (float() strips spaces itself)
                parent[key] = float(value)
                continue
            except ValueError:
                value = value.strip()
            if value and value[0] != "|" and value[0] != ">":
                value = value.strip("'\"")
                try:
                    parent[key] = float(value)
                except ValueError:
                    parent[key] = value
                continue
        # The next most are ``name:`` opening a mapping, the name an identifier but for "-".
        elif body[-1:] == ":" and skip_deeper_than < 0:
            key = body[:-1]
            if key.replace("-", "_").isidentifier():
                if top >= indent:
                    while stack[-1][0] >= indent:
                        stack.pop()
                    top, parent = stack[-1]
                child = parent.get(key)
                if not isinstance(child, dict):
                    child = {}
                    parent[key] = child
                stack.append((indent, child))
                top, parent = indent, child
                continue
        line = raw.strip()
        if not line or line[0] == "#" or line == "---":
            continue
        if skip_deeper_than >= 0:
            if indent > skip_deeper_than:
                continue
            skip_deeper_than = -1
        if line[0] == "-" and raw.lstrip().startswith("- "):
            continue  # list items: not used by the catalog
        key, sep, value = line.partition(":")
        if not sep:
            raise InputError(f"{path}:{lineno}: expected 'key: value', got {line!r}")
        if top >= indent:
            while stack[-1][0] >= indent:
                stack.pop()
            top, parent = stack[-1]
        value = value.strip()
        key = key.strip().strip("'\"")
        if not value:
            child = parent.get(key)
            if not isinstance(child, dict):
                child = {}
                parent[key] = child
            stack.append((indent, child))
            top, parent = indent, child
        elif value[0] == "|" or value[0] == ">":
            skip_deeper_than = indent
        else:
            value = value.strip("'\"")
            try:
                parent[key] = float(value)
            except ValueError:
                parent[key] = value
    return root


def _pricing_date(doc: dict[str, object], path: Path) -> str:
    """The UTC date of ``about.timestamp`` [s since 1970] ("" without one), or InputError."""
    about = doc.get("about")
    stamp = about.get("timestamp") if isinstance(about, dict) else None
    if not isinstance(stamp, float):
        return ""
    try:
        return dt.datetime.fromtimestamp(stamp, dt.UTC).date().isoformat()
    except (OverflowError, OSError, ValueError):
        raise InputError(f"{path}: about.timestamp {stamp:g} is not a time") from None


def read_pricing(path: Path) -> dict[str, object]:
    """``pricing.yml`` read (bounded, `read_upstream`) and parsed (`parse_simple_yaml`)."""
    return parse_simple_yaml(read_upstream(path), str(path))


_SQL_RE = re.compile(r"UPDATE\s+instances\s+SET\s+(.*?)\s+WHERE\s+(.*?)\s*;", re.S | re.I)
_SET_RE = re.compile(r"(\w+)\s*=\s*'([^']*)'")
_LIKE_RE = re.compile(r"name\s+LIKE\s+'([^']*)'", re.I)


def like_to_regex(pattern: str) -> re.Pattern[str]:
    """SQL ``LIKE`` (``%`` any run, ``_`` one character, case-insensitive) as a regex."""
    out = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.compile(f"^{out}$", re.I | re.S)


def _sql_updates(text: str) -> list[tuple[list[str], dict[str, str]]]:
    """Each statement's ``LIKE`` patterns as written and the columns it sets, in file order."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    out = []
    for sets, where in _SQL_RE.findall(text + ";"):
        values = {k: v.strip() for k, v in _SET_RE.findall(sets)}
        likes = _LIKE_RE.findall(where)
        if likes and values:
            out.append((likes, values))
    return out


def _like_parts(like: str) -> list[str] | None:
    """The lower-case texts between the ``%`` of an ASCII pattern without ``_``, else None."""
    if "_" in like or not like.isascii():
        return None
    return like.lower().split("%")


def _like_match(name: str, parts: list[str]) -> bool:
    """Whether the lower-case ``name`` matches the pattern of `_like_parts` ``parts``.

    The head and tail fixed, each middle part found at its first place after the last: a
    pattern whose only wildcard is ``%`` matches so or not at all.
    """
    head, tail = parts[0], parts[-1]
    if len(parts) == 1:
        return name == head
    end = len(name) - len(tail)
    if end < len(head) or not name.startswith(head) or not name.endswith(tail):
        return False
    pos = len(head)
    for part in parts[1:-1]:
        found = name.find(part, pos, end)
        if found < 0:
            return False
        pos = found + len(part)
    return True


def apply_updates(
    names: Iterable[str], files: Iterable[Path]
) -> dict[str, dict[str, tuple[str, str]]]:
    """Per machine type, every column the SQL files set: ``column -> (value, file name)``.

    Statements apply in file order, so a later one overrides an earlier one. When every name
    is plain ASCII, a pattern of ASCII without ``_`` is tried on the names that start with its
    literal head (found by bisection), by its literal parts; any other by `like_to_regex`.
    """
    names = list(names)
    out: dict[str, dict[str, tuple[str, str]]] = {n: {} for n in names}
    plain = all(n.isascii() and "\n" not in n for n in names)
    order = sorted(set(names), key=str.lower)
    lowered = [n.lower() for n in order]
    for f in files:
        for likes, values in _sql_updates(read_upstream(f)):
            parts = [_like_parts(like) for like in likes] if plain else [None]
            matched: dict[str, None] = {}
            for part in parts:
                if part is None:
                    patterns = [like_to_regex(like) for like in likes]
                    matched = {n: None for n in names if any(p.match(n) for p in patterns)}
                    break
                i = bisect.bisect_left(lowered, part[0])
                while i < len(lowered) and lowered[i].startswith(part[0]):
                    if _like_match(lowered[i], part):
                        matched[order[i]] = None
                    i += 1
            for n in matched:
                row = out[n]
                for k, v in values.items():
                    row[k] = (v, f.name)
    return out


_GCP_PLATFORM = {
    "google axion": "Google Axion",
    "ampere altra": "Ampere Altra",
    "rome": "AMD EPYC Rome",
    "milan": "AMD EPYC Milan",
    "genoa": "AMD EPYC Genoa",
    "turin": "AMD EPYC Turin",
}
_INTEL_CODENAMES = (
    "sandy bridge",
    "ivy bridge",
    "haswell",
    "broadwell",
    "skylake",
    "cascade lake",
    "ice lake",
    "sapphire rapids",
    "emerald rapids",
    "granite rapids",
)
_ARM_PLATFORMS = {"Google Axion", "Ampere Altra"}
#: GCP series whose vCPU is a whole core: Arm series, and x86 series sold with SMT off.
_GCP_ONE_THREAD = {"t2a", "c4a", "n4a", "t2d", "h3"}
_GCP_ACCELERATOR_SERIES = {"a2", "a3", "a4", "g2", "g4"}
_GCP_ACCELERATOR_KEYS = {"a100", "a100-80gb", "h100-80gb", "h100-80gb-mega", "l4", "rtx6000"}
_GCP_SHARED_CORE = {"e2-micro", "e2-small", "e2-medium", "f1-micro", "g1-small"}


def gcp_cpu(platform: str) -> str:
    """CPU text from a series' ``cpuPlatform`` ("Cascade Lake, Ice Lake" and the like)."""
    parts = []
    for p in (x.strip() for x in platform.split(",")):
        low = p.lower()
        if low in _GCP_PLATFORM:
            parts.append(_GCP_PLATFORM[low])
        elif low in _INTEL_CODENAMES:
            parts.append("Intel Xeon " + p.title().replace("Of", "of"))
        elif p:
            parts.append(p)
    return " / ".join(parts)


def _family_of(name: str) -> str:
    """``c4a-standard-8-lssd`` -> ``c4a-standard``; shared-core ``e2-micro`` -> ``e2``."""
    parts = name.split("-")
    if len(parts) >= 3 and parts[2].isdigit():
        return "-".join(parts[:2])
    return parts[0]


def build_gcp(gcp_dir: Path) -> BuildResult:
    """Catalog rows for every priced GCP machine type and region in ``gcp_dir``."""
    pricing_path = gcp_dir / GCP_PRICING
    doc = read_pricing(pricing_path)
    compute = doc.get("compute")
    instances = compute.get("instance") if isinstance(compute, dict) else None
    if not isinstance(instances, dict) or not instances:
        raise InputError(f"{pricing_path}: no compute.instance section")
    regions_doc = doc.get("region")
    known_regions = set(regions_doc) if isinstance(regions_doc, dict) else set()
    region_re = re.compile(r"^[a-z]+-[a-z]+\d+$")
    date = _pricing_date(doc, pricing_path)
    series_files = sorted((gcp_dir / "series").glob("*.sql"))
    coremark_files = [
        p for p in (gcp_dir / "cpu" / "coremark.sql", gcp_dir / "series/cpu/coremark.sql")
    ]
    coremark_files = [p for p in coremark_files if p.exists()][:1]
    names = sorted(instances)
    attrs = apply_updates(names, series_files)
    coremark = apply_updates(names, coremark_files)
    price_repo = commit_note(
        gcp_dir.parent / "README.md", "Cyclenerd/google-cloud-pricing-cost-calculator"
    )
    spec_repo = commit_note(
        gcp_dir.parent / "README.md", "Cyclenerd/google-cloud-compute-machine-types"
    )
    result = BuildResult()
    for name in names:
        spec = instances[name]
        if not isinstance(spec, dict):
            continue
        a = attrs[name]
        reason = _gcp_exclusion(name, spec, a)
        if reason:
            result.excluded.append(("gcp", name, reason))
            continue
        cost = spec.get("cost")
        assert isinstance(cost, dict)
        score = coremark[name].get("coremarkScore", ("", ""))[0]
        source = (
            f"{price_repo} pricing.yml ({date or 'date unknown'}); "
            f"{spec_repo} series/{a['cpuPlatform'][1]}"
            + (f", {coremark_files[0].name}" if score else "")
        )
        shared_row = _shared_row(name, spec, a, score)
        shared_row["source"], shared_row["source_date"] = source, date
        if known_regions:
            regions = [r for r in sorted(cost) if r in known_regions]
        else:
            regions = [r for r in sorted(cost) if region_re.match(r)]
        rows = _region_rows(shared_row, cost, regions)
        result.rows += rows
        if not rows:
            result.excluded.append(("gcp", name, "no price in any region"))
    result.egress = _egress_rows(doc, pricing_path, gcp_dir)  # from the file parsed once
    result.egress_read = True
    return result


def _shared_row(
    name: str, spec: dict[str, Any], attrs: dict[str, tuple[str, str]], coremark: str
) -> dict[str, str]:
    """What every region's row of a machine type shares (its region, prices and source blank).

    ``spec`` is the type's ``pricing.yml`` entry, ``attrs`` what the series files set for it.
    """
    cpu_raw = float(spec["cpu"])
    platform = gcp_cpu(attrs["cpuPlatform"][0])
    series = attrs.get("series", (name.split("-")[0], ""))[0]
    shared = name in _GCP_SHARED_CORE
    return {
        "provider": "gcp",
        "region": "",
        "instance_type": name,
        "family": _family_of(name),
        "arch": "arm64" if platform in _ARM_PLATFORMS else "x86_64",
        "cpu": platform,
        "vcpus": str(max(1, math.ceil(cpu_raw))),
        "memory_gib": num(float(spec["ram"])),
        "network_gbps": num(float(attrs["bandwidth"][0])),
        "network_burst": "false",
        "price_usd_hour": "",
        "source": "",
        "source_date": "",
        "threads_per_core": "" if shared else "1" if series in _GCP_ONE_THREAD else "2",
        "burstable": "true" if shared else "false",
        "network_burst_gbps": "",
        "spot_usd_hour": "",
        "commit_1y_usd_hour": "",
        "commit_3y_usd_hour": "",
        "cpu_baseline": num(cpu_raw) if shared else "",
        "coremark": coremark,
    }


def _region_rows(
    shared: dict[str, str], cost: dict[object, object], regions: list[str]
) -> list[dict[str, str]]:
    """A copy of ``shared`` with each region's prices, for the ``regions`` of ``cost`` priced.

    A region is priced by a positive ``hour`` [USD/h]; its ``hour_spot`` [USD/h], ``month_1y``
    and ``month_3y`` [USD a month of `HOURS_PER_MONTH`] each where positive, else "" (the
    text of `sizing.catalog.rows.num`, written inline: 16,000 rows).
    """
    rows = []
    for region in regions:
        entry = cost[region]
        if not isinstance(entry, dict):
            continue
        hour = entry.get("hour")
        if not isinstance(hour, float) or not hour > 0:
            continue
        spot, m1, m3 = entry.get("hour_spot"), entry.get("month_1y"), entry.get("month_3y")
        row = shared.copy()
        row["region"] = region
        row["price_usd_hour"] = f"{hour:.10g}"
        if type(spot) is float and spot > 0:
            row["spot_usd_hour"] = f"{spot:.10g}"
        if type(m1) is float and m1 > 0:
            row["commit_1y_usd_hour"] = f"{m1 / HOURS_PER_MONTH:.10g}"
        if type(m3) is float and m3 > 0:
            row["commit_3y_usd_hour"] = f"{m3 / HOURS_PER_MONTH:.10g}"
        rows.append(row)
    return rows


def _gcp_exclusion(name: str, spec: dict[str, object], attrs: dict[str, tuple[str, str]]) -> str:
    series = name.split("-")[0]
    if series in _GCP_ACCELERATOR_SERIES or _GCP_ACCELERATOR_KEYS & set(spec):
        return "GPU, FPGA or ML accelerator"
    if name.endswith("-metal"):
        return "bare metal (same CPUs and price as the largest size)"
    if name.startswith("custom-"):
        return "example custom shape (priced per vCPU and GB, not a machine type)"
    if not isinstance(spec.get("cost"), dict):
        return "no price in any region"
    cpu, ram = spec.get("cpu"), spec.get("ram")
    if not isinstance(cpu, float) or not isinstance(ram, float) or not math.isfinite(cpu):
        return "missing cpu or ram"  # an infinite or NaN cpu has no vCPU count
    if "cpuPlatform" not in attrs:
        return "no series file (CPU platform unknown)"
    try:
        bw = float(attrs.get("bandwidth", ("", ""))[0])
    except ValueError:
        bw = 0.0
    if not bw > 0:
        return "no bandwidth number"
    return ""


def build(folder: Path, burst_table: Path | None = None) -> BuildResult:
    """Catalog rows from the upstream folder (`build_gcp`); the contract's entry point."""
    del burst_table  # an AWS table
    return build_gcp(folder)


# ----------------------------------------------------------------------------- network


def network_gbps(inst: Instance, work: Workload) -> tuple[float, str]:
    """The bandwidth that caps this GCP instance for this workload [Gbit/s], and why.

    Sustained: 2 Gbps per vCPU up to the VM's egress ceiling (an estimate of GCP's rule);
    the "up to" peak (``--network burst``) is the per-VM egress ceiling. GCP has no
    internet-gateway limit like AWS's.
    """
    sustained = min(inst.network_gbps, GCP_GBPS_PER_VCPU * inst.vcpus)
    peak = inst.network_burst_gbps or inst.network_gbps
    if work.burst_network:
        gbps = max(peak, sustained)
        return gbps, f"{inst.provider.upper()} {gbps:g} Gbps 'up to' peak (--network burst)"
    return sustained, (
        f"GCP {sustained:g} Gbps sustained (2 Gbps per vCPU, an estimate, up to the "
        f"{inst.network_gbps:g} Gbps egress ceiling)"
    )


# ----------------------------------------------------------------------------- egress

#: pricing.yml's internet egress tier keys and their ranges [GiB]: Premium Tier, worldwide
#: destinations other than China and Australia, 0-1 TiB, 1-10 TiB and above 10 TiB a month.
_TIERS = {"0-1": (0.0, 1024.0), "1-10": (1024.0, 10240.0), "10n": (10240.0, None)}
#: Data transfer between zones of one region, VM to VM, per GiB sent [USD/GiB].
EGRESS_INTER_ZONE = 0.01
INTER_ZONE_SOURCE = (
    "Google Cloud, 'Network pricing' (cloud.google.com/vpc/network-pricing): data transfer "
    "between zones in the same region, 0.01 USD per GiB"
)
INTER_ZONE_DATE = "2026-07-30"


def egress_rows(folder: Path | None) -> list[dict[str, str]]:
    """``egress.csv`` rows of GCP: internet tiers per region from pricing.yml, and inter-zone.

    Parameters
    ----------
    folder : Path
        The upstream folder with ``pricing.yml`` (``compute.network.traffic.egress.internet.cost``,
        USD per GiB a month by tier and region).
    """
    if folder is None:
        raise InputError("GCP egress prices need the folder with pricing.yml (--gcp-dir)")
    path = folder / GCP_PRICING
    return _egress_rows(read_pricing(path), path, folder)


def _egress_rows(doc: dict[str, object], path: Path, folder: Path) -> list[dict[str, str]]:
    """`egress_rows` of the parsed ``pricing.yml`` (``path``) of the upstream ``folder``."""
    node: object = doc
    for key in ("compute", "network", "traffic", "egress", "internet", "cost"):
        node = node.get(key) if isinstance(node, dict) else None
    if not isinstance(node, dict):
        return []  # a pricing file without transfer prices: egress is left unpriced
    date = _pricing_date(doc, path)
    repo = commit_note(
        folder.parent / "README.md", "Cyclenerd/google-cloud-pricing-cost-calculator"
    )
    source = (
        f"{repo} pricing.yml compute.network.traffic.egress.internet.cost (Premium Tier, worldwide "
        "destinations other than China and Australia)"
    )
    by_region: dict[str, list[tuple[float, float | None, float]]] = {}
    for key, (lo, hi) in _TIERS.items():
        regions = node.get(key)
        if not isinstance(regions, dict):
            raise InputError(f"{path}: no internet egress tier {key!r}")
        for region, entry in regions.items():
            price = entry.get("month") if isinstance(entry, dict) else None
            if isinstance(price, float | int) and price >= 0:
                by_region.setdefault(region, []).append((lo, hi, float(price)))
    out = []
    for region in sorted(by_region):
        tiers = sorted(by_region[region], key=lambda t: t[0])
        if len(tiers) != len(_TIERS):
            continue  # a region without every tier is not priced
        out += [egress_row(NAME, region, "internet", t, source, date) for t in tiers]
        out.append(
            egress_row(
                NAME,
                region,
                "inter-zone",
                (0.0, None, EGRESS_INTER_ZONE),
                INTER_ZONE_SOURCE,
                INTER_ZONE_DATE,
                "charged once, on the sending side",
            )
        )
    return out

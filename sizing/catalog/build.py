"""Build the instance catalog from the providers' public files, read as they are published.

AWS (``--aws-dir``), from ``aws/karpenter-provider-aws``:

- ``instance-types.md``: every instance type's labels (vCPUs, memory in MiB, architecture, CPU
  manufacturer, sustained clock, generation, family, baseline bandwidth, GPUs, accelerators).
- ``zz_generated.pricing_aws.go``: on-demand Linux USD/hour per region ("generated at ...").
- ``zz_generated.bandwidth.go``: sustained baseline bandwidth [Mbit/s] per instance type.

GCP (``--gcp-dir``), from ``Cyclenerd/google-cloud-pricing-cost-calculator`` and
``Cyclenerd/google-cloud-compute-machine-types``:

- ``pricing.yml``: ``compute.instance.<type>``: ``cpu``, ``ram`` [GB] and per region ``hour``
  (on-demand), ``hour_spot``, ``month_1y`` and ``month_3y`` (committed use, 730 h a month).
  Only region keys are read under ``cost``: OS licence costs (rhel, sles, windows) that share
  the machine type names are not machine prices.
- ``series/*.sql``: per series the ``cpuPlatform`` and the per-VM egress ``bandwidth``
  [Gbit/s], as SQL ``UPDATE ... WHERE name LIKE`` statements applied in file order (later
  statements override earlier ones).
- ``series/cpu/coremark.sql`` (or ``cpu/coremark.sql``): CoreMark scores per machine type.

Left out, each with its reason in the build's exclusion list:

- GPU, FPGA and ML-accelerator types (AWS types with GPU or accelerator labels, families
  f, vt, dl, inf, trn; GCP series a2, a3, g2, g4 and any type with an accelerator count):
  their price is for the accelerator, never the cheapest way to run NGINX.
- Bare-metal sizes (AWS ``*.metal*``, GCP ``*-metal``): the same CPUs and price as the largest
  virtualised size of the family, so they add no option, and they boot in many minutes.
- AWS previous-generation types without a published sustained clock (c1, m1, m2, t1): their
  CPU is unknown, so their capacity cannot be related to a platform.
- Types without a price in the region, without a bandwidth number ("Moderate", "High"), or
  without a series file (CPU platform and bandwidth unknown), and GCP's example custom shapes.

Kept and marked: shared-core and credit-based types (AWS t2, t3, t3a, t4g; GCP e2-micro,
e2-small, e2-medium, f1-micro, g1-small) are ``burstable=true``; their ``cpu_baseline`` gives
the sustained vCPUs where the file publishes it. The recommendation leaves them out unless
asked (their burst is not sustained capacity).

Runs with the standard library only.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import math
import re
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from sizing.catalog.load import CATALOG_MAX_BYTES
from sizing.errors import InputError
from sizing.paths import CATALOG_DIR
from trialtable.files import check_output, read_bounded, write_atomic
from trialtable.output import csv_cell, csv_row

#: Every column of a built catalog, in order (``sizing.catalog.load`` reads the same names).
BUILD_COLUMNS = (
    "provider",
    "region",
    "instance_type",
    "family",
    "arch",
    "cpu",
    "vcpus",
    "memory_gib",
    "network_gbps",
    "network_burst",
    "price_usd_hour",
    "source",
    "source_date",
    "threads_per_core",
    "burstable",
    "network_burst_gbps",
    "spot_usd_hour",
    "commit_1y_usd_hour",
    "commit_3y_usd_hour",
    "cpu_baseline",
    "coremark",
)
HOURS_PER_MONTH = 730.0
DEFAULT_BURST_TABLE = CATALOG_DIR / "aws-network-burst.csv"

AWS_FILES = ("instance-types.md", "zz_generated.pricing_aws.go", "zz_generated.bandwidth.go")
GCP_PRICING = "pricing.yml"


@dataclass
class BuildResult:
    """The built rows (each a dict of `BUILD_COLUMNS` as text) and what was left out."""

    rows: list[dict[str, str]] = field(default_factory=list)
    excluded: list[tuple[str, str, str]] = field(default_factory=list)
    inputs: list[Path] = field(default_factory=list)  # the upstream folders and files read

    def exclusion_counts(self) -> dict[str, int]:
        """How many types each reason left out."""
        return dict(Counter(reason for _, _, reason in self.excluded).most_common())


def _num(v: float) -> str:
    """Shortest text that reads back as the same float (10 significant digits at most)."""
    return f"{v:.10g}"


def _read(path: Path) -> str:
    try:
        return read_bounded(path, CATALOG_MAX_BYTES).decode("utf-8")
    except FileNotFoundError:
        raise InputError(f"upstream file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"upstream file {path} cannot be read: {exc}") from None


def _commit_note(readme: Path, repo: str) -> str:
    """``repo@commit`` when the upstream folder's README names the commit, else ``repo``."""
    try:
        text = readme.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return repo
    m = re.search(re.escape(repo) + r"\S* at (?:commit )?([0-9a-f]{7,40})", text)
    return f"{repo}@{m.group(1)}" if m else repo


# ----------------------------------------------------------------------------- AWS


@dataclass(frozen=True)
class _AwsType:
    name: str
    labels: dict[str, str]
    line: int


def parse_instance_types_md(text: str) -> list[_AwsType]:
    """Instance types and their labels from karpenter's ``instance-types.md``."""
    out: list[_AwsType] = []
    name: str | None = None
    labels: dict[str, str] = {}
    start = 0
    label_re = re.compile(r"^\s*\|([a-z0-9./-]+)\|([^|]*)\|\s*$")
    for i, line in enumerate(text.splitlines(), start=1):
        if line.startswith("### `"):
            if name is not None:
                out.append(_AwsType(name, labels, start))
            name, labels, start = line[5:].split("`", 1)[0], {}, i
        elif name is not None:
            m = label_re.match(line)
            if m:
                key = m.group(1).rsplit("/", 1)[-1]
                labels.setdefault(key, m.group(2).strip())
    if name is not None:
        out.append(_AwsType(name, labels, start))
    return out


def parse_pricing_go(text: str) -> tuple[dict[str, dict[str, float]], str]:
    """On-demand prices per region and type, and the generation timestamp of the file."""
    prices: dict[str, dict[str, float]] = {}
    region: str | None = None
    region_re = re.compile(r'^\s*"([a-z]{2}(?:-[a-z]+)+-\d+)":\s*\{')
    pair_re = re.compile(r'"([a-z0-9][a-z0-9.-]*)":\s*([0-9.eE+-]+)')
    for line in text.splitlines():
        m = region_re.match(line)
        if m:
            region = m.group(1)
            prices.setdefault(region, {})
            continue
        if region is None:
            continue
        for name, value in pair_re.findall(line):
            prices[region][name] = float(value)
    gen = re.search(r"generated at (\S+)", text)
    return prices, gen.group(1) if gen else ""


def parse_bandwidth_go(text: str) -> dict[str, float]:
    """Baseline bandwidth [Mbit/s] per instance type (vague entries are comments, skipped)."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.strip().startswith("//"):
            continue
        m = re.match(r'\s*"([^"]+)":\s*(\d+),', line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def read_burst_table(path: Path) -> dict[str, tuple[bool, float | None]]:
    """``instance_type -> (sold as "up to", peak Gbit/s or None)`` from the burst table."""
    out: dict[str, tuple[bool, float | None]] = {}
    try:
        fh = path.open(newline="", encoding="utf-8")
    except FileNotFoundError:
        return out
    with fh:
        for row in csv.DictReader(fh):
            peak = (row.get("burst_peak_gbps") or "").strip()
            flag = (row.get("network_burst") or "").strip().lower() == "true"
            out[row["instance_type"].strip()] = (flag, float(peak) if peak else None)
    return out


#: AWS Graviton generation by instance generation; c7gn and hpc7g carry Graviton3E.
_GRAVITON = {1: "AWS Graviton", 7: "AWS Graviton3", 8: "AWS Graviton4", 9: "AWS Graviton5"}
_GRAVITON3E = {"c7gn", "hpc7g"}
#: Intel platform by instance generation (AWS's current families), overridden per family below.
_INTEL_BY_GEN = {
    1: "Intel Xeon Skylake",
    2: "Intel Xeon Ice Lake",
    3: "Intel Xeon Ivy Bridge",
    4: "Intel Xeon Haswell / Intel Xeon Broadwell",
    5: "Intel Xeon Skylake / Intel Xeon Cascade Lake",
    6: "Intel Xeon Ice Lake",
    7: "Intel Xeon Sapphire Rapids",
    8: "Intel Xeon Granite Rapids",
}
_INTEL_FAMILY = {
    "c4": "Intel Xeon Haswell",
    "d2": "Intel Xeon Haswell",
    "x1": "Intel Xeon Haswell",
    "x1e": "Intel Xeon Haswell",
    "h1": "Intel Xeon Broadwell",
    "i3": "Intel Xeon Broadwell",
    "r4": "Intel Xeon Broadwell",
    "t2": "Intel Xeon Haswell / Intel Xeon Broadwell",
    "c5n": "Intel Xeon Skylake",
    "z1d": "Intel Xeon Skylake",
    "m5zn": "Intel Xeon Cascade Lake",
    "r5b": "Intel Xeon Cascade Lake",
    "d3": "Intel Xeon Cascade Lake",
    "d3en": "Intel Xeon Cascade Lake",
    "x2iezn": "Intel Xeon Cascade Lake",
    "i3en": "Intel Xeon Skylake / Intel Xeon Cascade Lake",
    "t3": "Intel Xeon Skylake / Intel Xeon Cascade Lake",
    "i7i": "Intel Xeon Emerald Rapids",
    "i7ie": "Intel Xeon Emerald Rapids",
    "m3": "Intel Xeon Ivy Bridge / Intel Xeon Sandy Bridge",
    "i2": "Intel Xeon Ivy Bridge",
    "i4i": "Intel Xeon Ice Lake",
}
#: AMD platform by instance generation; first-generation EPYC families overridden below.
_AMD_BY_GEN = {5: "AMD EPYC Rome", 6: "AMD EPYC Milan", 7: "AMD EPYC Genoa", 8: "AMD EPYC Turin"}
_AMD_FAMILY = {
    "m5a": "AMD EPYC Naples",
    "m5ad": "AMD EPYC Naples",
    "r5a": "AMD EPYC Naples",
    "r5ad": "AMD EPYC Naples",
    "t3a": "AMD EPYC Naples",
}
#: Families whose vCPU is a whole core (no SMT): AMD 7th/8th generation and HPC types.
_ONE_THREAD_AMD_GEN = {7, 8}
_ONE_THREAD_FAMILIES = {"hpc6a", "hpc6id", "hpc7a", "hpc8a"}
_AWS_BURSTABLE = {"t2", "t3", "t3a", "t4g"}
_AWS_ACCELERATOR_CATEGORIES = {"f", "vt", "dl", "inf", "trn", "p", "g", "gr"}
_AWS_UNKNOWN_CPU = {"c1", "m1", "m2", "t1"}


def aws_cpu(family: str, manufacturer: str, generation: int) -> str:
    """CPU platform text of an AWS family from its manufacturer and generation labels."""
    if manufacturer == "aws":
        if family in _GRAVITON3E:
            return "AWS Graviton3E"
        return _GRAVITON.get(generation, "AWS Graviton2")
    if manufacturer == "amd":
        if family in _AMD_FAMILY:
            return _AMD_FAMILY[family]
        return _AMD_BY_GEN.get(generation, "AMD EPYC")
    if manufacturer == "intel":
        if family in _INTEL_FAMILY:
            return _INTEL_FAMILY[family]
        if family.startswith("u-") or family.startswith("u7"):
            return "Intel Xeon Sapphire Rapids" if family.startswith("u7") else "Intel Xeon Skylake"
        return _INTEL_BY_GEN.get(generation, "Intel Xeon")
    return manufacturer


def aws_threads_per_core(family: str, manufacturer: str, generation: int) -> int:
    """VCPUs per physical core: 1 on Graviton, AMD 7th/8th generation and HPC types, else 2."""
    if manufacturer == "aws" or family in _ONE_THREAD_FAMILIES:
        return 1
    if manufacturer == "amd" and generation in _ONE_THREAD_AMD_GEN:
        return 1
    return 2


def build_aws(aws_dir: Path, burst_table: Path = DEFAULT_BURST_TABLE) -> BuildResult:
    """Catalog rows for every priced AWS instance type in the files of ``aws_dir``."""
    md, pricing, bandwidth = (aws_dir / name for name in AWS_FILES)
    types = parse_instance_types_md(_read(md))
    if not types:
        raise InputError(f"{md}: no instance types found (expected '### `TYPE`' sections)")
    prices, generated = parse_pricing_go(_read(pricing))
    if not prices:
        raise InputError(f"{pricing}: no prices found")
    mbps = parse_bandwidth_go(_read(bandwidth))
    burst = read_burst_table(burst_table)
    repo = _commit_note(aws_dir.parent / "README.md", "aws/karpenter-provider-aws")
    date = generated[:10] if generated else ""
    result = BuildResult()
    for region in sorted(prices):
        regional = prices[region]
        source = (
            f"{repo} instance-types.md, zz_generated.pricing_aws.go "
            f"({generated or 'date unknown'}, Linux on-demand), zz_generated.bandwidth.go"
        )
        for t in types:
            reason = _aws_exclusion(t, regional, mbps)
            if reason:
                result.excluded.append(("aws", t.name, reason))
                continue
            lab = t.labels
            family = lab["instance-family"]
            maker = lab["instance-cpu-manufacturer"]
            gen = int(lab.get("instance-generation") or 0)
            arch = {"amd64": "x86_64", "arm64": "arm64"}[lab["arch"]]
            vcpus = int(lab["instance-cpu"])
            bw = mbps.get(t.name)
            if bw is None:
                bw = float(lab["instance-network-bandwidth"])
            flag, peak = burst.get(t.name, (False, None))
            row_source = source
            if t.name in burst:
                row_source += f"; burst: {burst_table.name}"
            result.rows.append(
                {
                    "provider": "aws",
                    "region": region,
                    "instance_type": t.name,
                    "family": family,
                    "arch": arch,
                    "cpu": aws_cpu(family, maker, gen),
                    "vcpus": str(vcpus),
                    "memory_gib": _num(float(lab["instance-memory"]) / 1024.0),
                    "network_gbps": _num(bw / 1000.0),
                    "network_burst": "true" if flag else "false",
                    "price_usd_hour": _num(regional[t.name]),
                    "source": row_source,
                    "source_date": date,
                    "threads_per_core": str(aws_threads_per_core(family, maker, gen)),
                    "burstable": "true" if family in _AWS_BURSTABLE else "false",
                    "network_burst_gbps": _num(peak) if peak is not None else "",
                    "spot_usd_hour": "",
                    "commit_1y_usd_hour": "",
                    "commit_3y_usd_hour": "",
                    "cpu_baseline": "",
                    "coremark": "",
                }
            )
    return result


def _aws_exclusion(t: _AwsType, prices: dict[str, float], mbps: dict[str, float]) -> str:
    lab = t.labels
    family = lab.get("instance-family", t.name.split(".", 1)[0])
    if (
        lab.get("instance-gpu-count")
        or lab.get("instance-accelerator-count")
        or lab.get("instance-category") in _AWS_ACCELERATOR_CATEGORIES
    ):
        return "GPU, FPGA or ML accelerator"
    if ".metal" in t.name:
        return "bare metal (same CPUs and price as the largest size)"
    if family in _AWS_UNKNOWN_CPU or lab.get("instance-cpu-sustained-clock-speed-mhz") == "0":
        return "previous generation without a published CPU"
    if t.name not in prices:
        return "no price in the region"
    if lab.get("arch") not in ("amd64", "arm64"):
        return "unknown architecture"
    try:
        vcpus = int(lab["instance-cpu"])
        float(lab["instance-memory"])
        int(lab.get("instance-generation") or 0)
    except (KeyError, ValueError):
        return "missing vCPUs, memory or generation label"
    if vcpus < 1:
        return "missing vCPUs, memory or generation label"
    if t.name not in mbps and not (lab.get("instance-network-bandwidth") or "").isdigit():
        return "no bandwidth number"
    return ""


# ----------------------------------------------------------------------------- GCP


def parse_simple_yaml(text: str, path: str = "pricing.yml") -> dict[str, object]:
    """Nested mappings of scalars as ``pricing.yml`` writes them (list items are skipped).

    Block scalars (``key: |``) are skipped. A key that appears twice at one level has its
    mappings merged, so a second section of the same name adds to the first.
    """
    root: dict[str, object] = {}
    stack: list[tuple[int, dict[str, object]]] = [(-1, root)]
    skip_deeper_than: int | None = None
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip() or raw.lstrip().startswith("#") or raw.strip() == "---":
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        if skip_deeper_than is not None:
            if indent > skip_deeper_than:
                continue
            skip_deeper_than = None
        if raw.lstrip().startswith("- "):
            continue  # list items: not used by the catalog
        key, sep, value = raw.strip().partition(":")
        if not sep:
            raise InputError(f"{path}:{lineno}: expected 'key: value', got {raw.strip()!r}")
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if not stack:
            raise InputError(f"{path}:{lineno}: bad indentation")
        parent = stack[-1][1]
        value = value.strip()
        key = key.strip().strip("'\"")
        if not value:
            child = parent.get(key)
            if not isinstance(child, dict):
                child = {}
                parent[key] = child
            stack.append((indent, child))
        elif value.startswith("|") or value.startswith(">"):
            skip_deeper_than = indent
        else:
            parent[key] = _scalar(value)
    return root


def _scalar(value: str) -> object:
    value = value.strip().strip("'\"")
    try:
        return float(value)
    except ValueError:
        return value


@dataclass
class _SeriesInfo:
    values: dict[str, str] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)


_SQL_RE = re.compile(r"UPDATE\s+instances\s+SET\s+(.*?)\s+WHERE\s+(.*?)\s*;", re.S | re.I)
_SET_RE = re.compile(r"(\w+)\s*=\s*'([^']*)'")
_LIKE_RE = re.compile(r"name\s+LIKE\s+'([^']*)'", re.I)


def like_to_regex(pattern: str) -> re.Pattern[str]:
    """SQL ``LIKE`` (``%`` any run, ``_`` one character, case-insensitive) as a regex."""
    out = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.compile(f"^{out}$", re.I | re.S)


def parse_sql_updates(text: str) -> list[tuple[list[re.Pattern[str]], dict[str, str]]]:
    """``UPDATE instances SET ... WHERE name LIKE ...`` statements, in file order."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    out = []
    for sets, where in _SQL_RE.findall(text + ";"):
        values = {k: v.strip() for k, v in _SET_RE.findall(sets)}
        patterns = [like_to_regex(p) for p in _LIKE_RE.findall(where)]
        if patterns and values:
            out.append((patterns, values))
    return out


def apply_updates(
    names: Iterable[str], files: Iterable[Path]
) -> dict[str, dict[str, tuple[str, str]]]:
    """Per machine type, every column the SQL files set: ``column -> (value, file name)``."""
    names = list(names)
    out: dict[str, dict[str, tuple[str, str]]] = {n: {} for n in names}
    for f in files:
        for patterns, values in parse_sql_updates(_read(f)):
            for n in names:
                if any(p.match(n) for p in patterns):
                    for k, v in values.items():
                        out[n][k] = (v, f.name)
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
    doc = parse_simple_yaml(_read(pricing_path), str(pricing_path))
    compute = doc.get("compute")
    instances = compute.get("instance") if isinstance(compute, dict) else None
    if not isinstance(instances, dict) or not instances:
        raise InputError(f"{pricing_path}: no compute.instance section")
    regions_doc = doc.get("region")
    known_regions = set(regions_doc) if isinstance(regions_doc, dict) else set()
    region_re = re.compile(r"^[a-z]+-[a-z]+\d+$")
    about = doc.get("about")
    stamp = about.get("timestamp") if isinstance(about, dict) else None
    date = (
        dt.datetime.fromtimestamp(float(stamp), dt.UTC).date().isoformat()
        if isinstance(stamp, float)
        else ""
    )
    series_files = sorted((gcp_dir / "series").glob("*.sql"))
    coremark_files = [
        p for p in (gcp_dir / "cpu" / "coremark.sql", gcp_dir / "series/cpu/coremark.sql")
    ]
    coremark_files = [p for p in coremark_files if p.exists()][:1]
    names = sorted(instances)
    attrs = apply_updates(names, series_files)
    coremark = apply_updates(names, coremark_files)
    price_repo = _commit_note(
        gcp_dir.parent / "README.md", "Cyclenerd/google-cloud-pricing-cost-calculator"
    )
    spec_repo = _commit_note(
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
        cpu_raw = float(spec["cpu"])
        platform = gcp_cpu(a["cpuPlatform"][0])
        series = a.get("series", (name.split("-")[0], ""))[0]
        shared = name in _GCP_SHARED_CORE
        score = coremark[name].get("coremarkScore", ("", ""))[0]
        source = (
            f"{price_repo} pricing.yml ({date or 'date unknown'}); "
            f"{spec_repo} series/{a['cpuPlatform'][1]}"
            + (f", {coremark_files[0].name}" if score else "")
        )
        n_regions = 0
        for region in sorted(cost):
            entry = cost[region]
            is_region = region in known_regions or (not known_regions and region_re.match(region))
            if not is_region or not isinstance(entry, dict):
                continue
            hour = entry.get("hour")
            if not isinstance(hour, float) or not hour > 0:
                continue
            n_regions += 1
            result.rows.append(
                {
                    "provider": "gcp",
                    "region": region,
                    "instance_type": name,
                    "family": _family_of(name),
                    "arch": "arm64" if platform in _ARM_PLATFORMS else "x86_64",
                    "cpu": platform,
                    "vcpus": str(max(1, math.ceil(cpu_raw))),
                    "memory_gib": _num(float(spec["ram"])),
                    "network_gbps": _num(float(a["bandwidth"][0])),
                    "network_burst": "false",
                    "price_usd_hour": _num(hour),
                    "source": source,
                    "source_date": date,
                    "threads_per_core": (
                        "" if shared else "1" if series in _GCP_ONE_THREAD else "2"
                    ),
                    "burstable": "true" if shared else "false",
                    "network_burst_gbps": "",
                    "spot_usd_hour": _price(entry.get("hour_spot")),
                    "commit_1y_usd_hour": _price(entry.get("month_1y"), HOURS_PER_MONTH),
                    "commit_3y_usd_hour": _price(entry.get("month_3y"), HOURS_PER_MONTH),
                    "cpu_baseline": _num(cpu_raw) if shared else "",
                    "coremark": score,
                }
            )
        if not n_regions:
            result.excluded.append(("gcp", name, "no price in any region"))
    return result


def _price(value: object, per: float = 1.0) -> str:
    if isinstance(value, float) and value > 0:
        return _num(value / per)
    return ""


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
    if not isinstance(spec.get("cpu"), float) or not isinstance(spec.get("ram"), float):
        return "missing cpu or ram"
    if "cpuPlatform" not in attrs:
        return "no series file (CPU platform unknown)"
    try:
        bw = float(attrs.get("bandwidth", ("", ""))[0])
    except ValueError:
        bw = 0.0
    if not bw > 0:
        return "no bandwidth number"
    return ""


# ----------------------------------------------------------------------------- both


def build_catalog(
    aws_dir: str | Path | None,
    gcp_dir: str | Path | None,
    burst_table: str | Path = DEFAULT_BURST_TABLE,
) -> BuildResult:
    """Build the catalog rows from the upstream folders (either may be None)."""
    if aws_dir is None and gcp_dir is None:
        raise InputError("give --aws-dir, --gcp-dir or both")
    result = BuildResult()
    result.inputs = [Path(p) for p in (aws_dir, gcp_dir, burst_table) if p is not None]
    for part in (
        build_aws(Path(aws_dir), Path(burst_table)) if aws_dir is not None else None,
        build_gcp(Path(gcp_dir)) if gcp_dir is not None else None,
    ):
        if part is not None:
            result.rows += part.rows
            result.excluded += part.excluded
    result.rows.sort(
        key=lambda r: (
            r["provider"],
            r["region"],
            r["family"],
            int(r["vcpus"]),
            float(r["memory_gib"]),
            r["instance_type"],
        )
    )
    # One line per excluded type (AWS repeats per region).
    result.excluded = sorted(set(result.excluded))
    return result


def catalog_csv(rows: Iterable[dict[str, str]]) -> str:
    """The rows as catalog CSV text (header first, Unix line ends)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(BUILD_COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: csv_cell(v) for k, v in r.items()} for r in rows)
    return buf.getvalue()


def excluded_csv(excluded: Iterable[tuple[str, str, str]]) -> str:
    """What the build left out and why, as CSV."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["provider", "instance_type", "reason"])
    writer.writerows(csv_row(e) for e in excluded)
    return buf.getvalue()


def iter_summary(result: BuildResult) -> Iterator[str]:
    """Lines that say what was built and what was left out."""
    by = Counter((r["provider"], r["region"]) for r in result.rows)
    providers = Counter(r["provider"] for r in result.rows)
    regions = {p: sum(1 for (q, _) in by if q == p) for p in providers}
    yield f"{len(result.rows)} rows: " + ", ".join(
        f"{p} {n} in {regions[p]} region(s)" for p, n in sorted(providers.items())
    )
    for reason, n in result.exclusion_counts().items():
        yield f"left out: {n} type(s): {reason}"


def write_catalog(result: BuildResult, out: str | Path) -> tuple[Path, Path, Path]:
    """Write the catalog CSV, validate it by reading it back, and write its companions.

    Returns
    -------
    tuple of Path
        The CSV, its compact form (see `sizing.catalog.load.write_compact`) and the list of what
        was left out (``<name>.excluded.csv``).
    """
    from sizing.catalog.load import compact_path, read_catalog, write_compact

    path = Path(out)
    if not result.rows:
        raise InputError("the upstream files gave no catalog rows")
    excluded = path.with_name(path.name.removesuffix(".csv") + ".excluded.csv")
    inputs = [f for p in result.inputs for f in ([p, *p.rglob("*")] if p.is_dir() else [p])]
    for target in (path, compact_path(path), excluded):  # all three checked before any write
        try:
            check_output(target, inputs=inputs)
        except OSError as exc:
            raise InputError(f"cannot write {target}: it {exc.strerror}") from None
    text = catalog_csv(result.rows)
    try:
        with tempfile.TemporaryDirectory() as tmp:  # checked by reading it back, privately
            items = read_catalog(write_atomic(Path(tmp) / path.name, text))
        write_atomic(path, text, inputs=inputs)
        compact = write_compact(path, [replace(i, catalog_file=str(path)) for i in items])
        write_atomic(excluded, excluded_csv(result.excluded), inputs=inputs)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror}") from None
    return path, compact, excluded

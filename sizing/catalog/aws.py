"""Amazon Web Services: its catalog build, network rules, default regions and egress prices.

The build reads, from ``aws/karpenter-provider-aws`` (``--aws-dir``):

- ``instance-types.md``: every instance type's labels (vCPUs, memory in MiB, architecture, CPU
  manufacturer, sustained clock, generation, family, baseline bandwidth, GPUs, accelerators).
- ``zz_generated.pricing_aws.go``: on-demand Linux USD/hour per region ("generated at ...").
- ``zz_generated.bandwidth.go``: sustained baseline bandwidth [Mbit/s] per instance type.

Left out, each with its reason in the build's exclusion list: GPU, FPGA and ML-accelerator
types (GPU or accelerator labels, categories f, vt, dl, inf, trn, p, g, gr); bare-metal sizes
(``*.metal*``: the same CPUs and price as the largest virtualised size); previous-generation
types without a published sustained clock (c1, m1, m2, t1); types without a price in the
region or a bandwidth number. Credit-based types (t2, t3, t3a, t4g) are kept and marked
``burstable=true``.

A provider module of `sizing.catalog.providers`: it defines ``NAME``, ``TITLE``,
``DEFAULT_REGIONS``, ``UPSTREAM``, ``ESTIMATES``, ``build``, ``network_gbps`` and
``egress_rows``. Runs with the standard library only.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from sizing.catalog.rows import BuildResult, commit_note, egress_row, num, read_upstream
from sizing.catalog.spot import Spot, spot_table
from sizing.errors import InputError
from sizing.paths import CATALOG_DIR
from trialtable.fields import Field, FieldError, Fields

if TYPE_CHECKING:
    from sizing.catalog.load import Instance
    from sizing.workload.value import Workload

NAME = "aws"
TITLE = "Amazon Web Services"
#: Regions compared when the user names none: the one region of the shipped AWS prices.
DEFAULT_REGIONS = ("us-east-1",)
UPSTREAM = "aws/karpenter-provider-aws: instance-types.md, zz_generated.pricing_aws.go, ..."
DEFAULT_BURST_TABLE = CATALOG_DIR / "aws-network-burst.csv"
AWS_FILES = ("instance-types.md", "zz_generated.pricing_aws.go", "zz_generated.bandwidth.go")
#: AWS caps traffic through an internet gateway at 5 Gbps for instances under 32 vCPUs [Gbit/s].
AWS_INTERNET_GATEWAY_GBPS = 5.0
#: Model constants of this provider that are estimates (none: AWS publishes its rules).
ESTIMATES: dict[str, tuple[float, str]] = {}

#: Families of the special groups (`sizing.catalog.providers.FAMILY_GROUPS`), by name.
SPECIAL_FAMILIES = {
    "hpc": r"hpc\d",
    "gpu": r"(p\d|g\d|gr\d)",
    "accelerator": r"(f\d|inf\d|trn\d|dl\d|vt\d)",
}

# ----------------------------------------------------------------------------- build


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


#: The AWS burst table's fields (``aws-network-burst.csv``): bandwidths in the catalog's
#: unit and range (`sizing.catalog.load.CATALOG`).
BURST = Fields(
    "AWS network burst table",
    (
        Field("instance_type", "str"),
        Field("baseline_gbps", "float", "Gbit/s", 0.001, 10000, required=False),
        Field("burst_peak_gbps", "float", "Gbit/s", 0.001, 10000, required=False),
        Field("network_burst", "bool", required=False),
        Field("source", "str", required=False, max_len=2000),
    ),
)


def read_burst_table(path: Path) -> dict[str, tuple[bool, float | None]]:
    """``instance_type -> (sold as "up to", peak Gbit/s or None)`` from the burst table.

    A missing file is an empty table; the file is read bounded, every row checked against
    `BURST`.

    Raises
    ------
    InputError
        For an unreadable file or a row `BURST` refuses, naming file, line and field.
    """
    out: dict[str, tuple[bool, float | None]] = {}
    try:
        text = read_upstream(path)
    except InputError:
        if not path.exists() and not path.is_symlink():
            return out
        raise
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        for i, row in enumerate(reader, start=2):
            try:
                v = BURST.parse_row(row, f"{path}:{i}")
            except FieldError as exc:
                raise InputError(str(exc)) from None
            out[v["instance_type"]] = (v["network_burst"], v["burst_peak_gbps"])
    except csv.Error as exc:
        raise InputError(f"{path}:{reader.line_num}: malformed CSV: {exc}") from None
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
    types = parse_instance_types_md(read_upstream(md))
    if not types:
        raise InputError(f"{md}: no instance types found (expected '### `TYPE`' sections)")
    prices, generated = parse_pricing_go(read_upstream(pricing))
    if not prices:
        raise InputError(f"{pricing}: no prices found")
    mbps = parse_bandwidth_go(read_upstream(bandwidth))
    burst = read_burst_table(burst_table)
    spots = spot_table()
    repo = commit_note(aws_dir.parent / "README.md", "aws/karpenter-provider-aws")
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
                    "memory_gib": num(float(lab["instance-memory"]) / 1024.0),
                    "network_gbps": num(bw / 1000.0),
                    "network_burst": "true" if flag else "false",
                    "price_usd_hour": num(regional[t.name]),
                    "source": row_source,
                    "source_date": date,
                    "threads_per_core": str(aws_threads_per_core(family, maker, gen)),
                    "burstable": "true" if family in _AWS_BURSTABLE else "false",
                    "network_burst_gbps": num(peak) if peak is not None else "",
                    "spot_usd_hour": _spot_price(region, t.name, regional[t.name], spots),
                    "commit_1y_usd_hour": "",
                    "commit_3y_usd_hour": "",
                    "cpu_baseline": "",
                    "coremark": "",
                }
            )
    return result


def _spot_price(region: str, name: str, price: float, spots: dict[tuple[str, str], Spot]) -> str:
    """The spot USD/hour of one type: its on-demand price less the Spot Advisor's savings.

    "" when the feed does not list the type in the region. The rows' ``source`` is left as it
    is (the on-demand answer is unchanged); a spot answer names the feed
    (`sizing.catalog.spot.source`).
    """
    spot = spots.get((region, name))
    if spot is None:
        return ""
    return num(price * (100 - spot.savings_pct) / 100.0)


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


def build(folder: Path, burst_table: Path | None = None) -> BuildResult:
    """Catalog rows from the upstream folder (`build_aws`); the contract's entry point."""
    return build_aws(folder, DEFAULT_BURST_TABLE if burst_table is None else burst_table)


# ----------------------------------------------------------------------------- network


@cache
def _aws_burst() -> dict[str, float]:
    """The shipped burst table's published peaks [Gbit/s] (read as the build reads it)."""
    table = read_burst_table(DEFAULT_BURST_TABLE)
    return {name: peak for name, (_, peak) in table.items() if peak is not None}


def network_gbps(inst: Instance, work: Workload) -> tuple[float, str]:
    """The bandwidth that caps this AWS instance for this workload [Gbit/s], and why.

    ``baseline`` is what AWS sells as sustained; the "up to" peak (``--network burst``) comes
    from the row's burst column or ``aws-network-burst.csv``. ``internet_facing`` applies the
    internet-gateway limit: 5 Gbps under 32 vCPUs, half the bandwidth from 32 up.
    """
    sustained = inst.network_gbps
    peak = inst.network_burst_gbps or _aws_burst().get(inst.instance_type, inst.network_gbps)
    if work.burst_network:
        gbps = max(peak, sustained)
        how = f"{inst.provider.upper()} {gbps:g} Gbps 'up to' peak (--network burst)"
    else:
        gbps, how = sustained, f"{inst.provider.upper()} {sustained:g} Gbps baseline"
    if work.internet_facing:
        cap = AWS_INTERNET_GATEWAY_GBPS if inst.vcpus < 32 else gbps / 2.0
        if cap < gbps:
            gbps = cap
            how += f", internet-facing: AWS internet gateway limit {cap:g} Gbps " + (
                "(under 32 vCPUs)" if inst.vcpus < 32 else "(half the bandwidth at 32+ vCPUs)"
            )
    return gbps, how


# ----------------------------------------------------------------------------- egress

#: Data transfer out of Amazon EC2 to the internet, US East (N. Virginia): the published
#: monthly tiers [GiB, GiB or None, USD/GiB]. AWS bills a "GB" as 2^30 bytes and counts the
#: tiers over the account's whole month; the first 100 GB a month are free, aggregated over
#: all services and regions.
EGRESS_INTERNET = (
    (0.0, 100.0, 0.0),
    (100.0, 10240.0, 0.09),
    (10240.0, 51200.0, 0.085),
    (51200.0, 153600.0, 0.07),
    (153600.0, None, 0.05),
)
#: Data transfer between Availability Zones of one region: 0.01 USD/GB out of the sender and
#: 0.01 USD/GB into the receiver, both charged when both ends are the user's [USD/GiB].
EGRESS_INTER_ZONE = 0.02
EGRESS_SOURCE = (
    "Amazon Web Services, 'Amazon EC2 On-Demand Pricing', section Data Transfer "
    "(aws.amazon.com/ec2/pricing/on-demand/): Data Transfer OUT From Amazon EC2 To Internet, "
    "and Data Transfer within the same AWS Region across Availability Zones; tiers as "
    "restated 2026-04-27 in leanopstech.com/blog/aws-data-transfer-pricing-2026 and "
    "www.egresscost.com/aws"
)
EGRESS_DATE = "2026-04-27"


def egress_rows(folder: Path | None = None) -> list[dict[str, str]]:
    """``egress.csv`` rows of AWS: internet tiers and the inter-zone price per default region.

    Parameters
    ----------
    folder : Path, optional
        The upstream folder; unused (the shipped AWS files hold no transfer prices, so the
        published tiers are kept here with their source).
    """
    del folder
    out = []
    for region in DEFAULT_REGIONS:
        for tier in EGRESS_INTERNET:
            note = "free tier, aggregated over the account" if tier[2] == 0 else ""
            out.append(egress_row(NAME, region, "internet", tier, EGRESS_SOURCE, EGRESS_DATE, note))
        out.append(
            egress_row(
                NAME,
                region,
                "inter-zone",
                (0.0, None, EGRESS_INTER_ZONE),
                EGRESS_SOURCE,
                EGRESS_DATE,
                "0.01 per GB out of one zone plus 0.01 per GB into the other",
            )
        )
    return out

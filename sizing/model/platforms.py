"""CPU platforms: which platform a catalog row runs, and the fallback speeds, with sources.

For static serving, handshakes and proxying, per-vCPU speeds are fitted to published cloud
measurements (`sizing.model.cloud`, `sizing.fitting.cloudfit`); the speeds here serve
gzip-bound workloads and platforms those measurements never saw (calibrated to them there).

The reference core is seed 004's: one Xeon E5-2699 v3 (Haswell) core, hyper-threading off
(speed 1.0). A platform's per-core speed here comes from, in this order of preference:

1. a measured CPU profile (`sizing.evidence.profiles`; it replaces the speed for its platform);
2. Google's CoreMark per machine type (``data/platforms/coremark.csv``, a subset of the public
   table), converted to NGINX speed with one bias measured against seed 000;
3. an estimate relative to another platform, with its reasoning.

CoreMark to NGINX. CoreMark runs on every vCPU, so an x86 vCPU's score is a hyper-thread's
share of a core, and an Arm (or SMT-off) vCPU's score is a whole core. A core's score is
``score_per_vcpu * 2 / HT_COREMARK`` for a hyper-threaded platform and the vCPU score for the
others; speed = core score / the reference core's score (Broadwell E7 per core, taken as
the Haswell reference). NGINX gains more from a core's second thread than CoreMark does, so a
hyper-thread vCPU is worth ``HT_NGINX / 2`` of its core, with ``HT_NGINX`` fitted to seed 000's
T2A/N2 ratio (1.15 at 32 vCPUs): it comes out at about 1.5, the gain seed 004 reports for
hyper-threading on SSL handshakes. That one ratio is an input for gzip-bound workloads; in this
fallback table seed 002's C7gn/C6gn ratio also sets Graviton3 against Graviton2. Every other
published ratio of seeds 000 and 002 is predicted (``benchmarks/bench_fidelity.py``).

Mapping a catalog row (`platform_of`): the ``cpu`` text is searched for the keywords of
`KEYWORDS` (first column; when several platforms are named, e.g. "Cascade Lake / Ice Lake",
the newest is used and the range widened to the slowest); failing that, the instance family's
prefix (`FAMILY_PREFIXES`, e.g. AWS ``c7g`` = Graviton3, GCP ``n2d`` = Zen 3); failing that,
the architecture's default, marked as an estimate.
"""

from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import dataclass, replace
from functools import cache

from sizing.catalog.load import Instance
from sizing.paths import DATA_DIR

COREMARK_PATH = DATA_DIR / "platforms" / "coremark.csv"
HT_COREMARK = (
    1.3,
    "estimate: a second hardware thread adds about 30% to a core's CoreMark score",
)
#: Seed 000's published ratio used to fit the NGINX hyper-thread gain.
HT_FIT_CLAIM = ("000-perf-t2a-vs-n2", 1.15, "t2a-standard-32", "n2-standard-32")
#: Seed 002's published ratio used to place Graviton3 against Graviton2 (mid of 1.52-1.68).
G3_CLAIM = ("002-rp-c7gn-vs-c6gn", 1.52, 1.68)
REFERENCE_COREMARK = (
    "m1-ultramem-40",
    "Broadwell E7 at 2.6 GHz all-core, taken as the seed's "
    "Haswell E5-2699 v3 core (2.8 GHz all-core, about 5% less work per clock)",
)
COREMARK_REL_SD = (
    0.08,
    "estimate: CoreMark is not NGINX; after the seed-000 bias, its platform-to-platform "
    "ratios are taken to hold within 8% (1 sd, log scale)",
)


@dataclass(frozen=True)
class Platform:
    """One CPU platform.

    Attributes
    ----------
    platform_id : str
        Short id, e.g. ``graviton3``, ``ice_lake``, ``zen3``.
    threads_per_core : int
        The usual vCPUs per core in the clouds (1 or 2).
    core_speed : float
        NGINX work per second of one core relative to the reference core [1].
    core_speed_low, core_speed_high : float
        A 95% range of it.
    source : str
        ``profile ...``, ``CoreMark ...``, ``published ...`` or ``estimate: ...``.
    estimate : bool
        Whether the speed rests on an estimate (not a measurement or published NGINX figure).
    """

    platform_id: str
    name: str
    arch: str
    threads_per_core: int
    core_speed: float
    core_speed_low: float
    core_speed_high: float
    source: str
    estimate: bool = True
    matched_by: str = ""

    @property
    def rel_sd(self) -> float:
        """Log-scale sd of the core speed (its 95% range / 1.96)."""
        return (
            max(
                math.log(self.core_speed_high / self.core_speed),
                math.log(self.core_speed / self.core_speed_low),
            )
            / 1.96
        )

    def vcpu_speed(self, threads_per_core: int | None = None) -> float:
        """Reference cores per vCPU: a whole core, or a hyper-thread's share."""
        tpc = threads_per_core or self.threads_per_core
        return self.core_speed * (ht_nginx()[0] / 2.0 if tpc == 2 else 1.0)


# id, name, arch, usual threads per core, derivation
#   ("coremark", machine type)           CoreMark of that GCP machine type
#   ("ref",)                              the reference core
#   ("rel", base id, ratio, low, high, reasoning)
_Rule = tuple[str] | tuple[str, str] | tuple[str, str, float, float, float, str]
_RULES: tuple[tuple[str, str, str, int, _Rule], ...] = (
    ("haswell", "Intel Xeon Haswell", "x86_64", 2, ("ref",)),
    (
        "ivy_bridge",
        "Intel Xeon Ivy Bridge",
        "x86_64",
        2,
        (
            "rel",
            "haswell",
            0.85,
            0.7,
            0.95,
            "estimate: the generation before Haswell, about 10-15% less work per clock",
        ),
    ),
    ("broadwell", "Intel Xeon Broadwell", "x86_64", 2, ("coremark", "m1-ultramem-40")),
    ("skylake", "Intel Xeon Skylake", "x86_64", 2, ("coremark", "n1-standard-32")),
    ("cascade_lake", "Intel Xeon Cascade Lake", "x86_64", 2, ("coremark", "c2-standard-30")),
    ("ice_lake", "Intel Xeon Ice Lake", "x86_64", 2, ("coremark", "n2-standard-32")),
    ("sapphire_rapids", "Intel Xeon Sapphire Rapids", "x86_64", 2, ("coremark", "c3-standard-44")),
    ("emerald_rapids", "Intel Xeon Emerald Rapids", "x86_64", 2, ("coremark", "n4-standard-32")),
    (
        "granite_rapids",
        "Intel Xeon Granite Rapids",
        "x86_64",
        2,
        (
            "rel",
            "emerald_rapids",
            1.1,
            0.95,
            1.25,
            "estimate: Redwood Cove cores at a higher all-core clock (3.9 vs 2.9 GHz on GCP), "
            "about 10% over Emerald Rapids",
        ),
    ),
    ("zen3", "AMD EPYC Milan (Zen 3)", "x86_64", 2, ("coremark", "n2d-standard-32")),
    (
        "zen1",
        "AMD EPYC Naples (Zen)",
        "x86_64",
        2,
        (
            "rel",
            "zen3",
            0.7,
            0.55,
            0.85,
            "estimate: Zen 2 and Zen 3 each added 15-19% work per clock over the first Zen",
        ),
    ),
    (
        "zen2",
        "AMD EPYC Rome (Zen 2)",
        "x86_64",
        2,
        (
            "rel",
            "zen3",
            0.85,
            0.75,
            0.95,
            "estimate: Zen 3 does about 19% more work per clock than Zen 2 at similar clocks",
        ),
    ),
    ("zen4", "AMD EPYC Genoa (Zen 4)", "x86_64", 2, ("coremark", "c3d-standard-30")),
    (
        "zen5",
        "AMD EPYC Turin (Zen 5)",
        "x86_64",
        2,
        (
            "rel",
            "zen4",
            1.15,
            1.0,
            1.3,
            "estimate: Zen 5 does about 16% more integer work per clock than Zen 4",
        ),
    ),
    ("altra", "Ampere Altra (Neoverse N1)", "arm64", 1, ("coremark", "t2a-standard-32")),
    (
        "ampereone",
        "AmpereOne",
        "arm64",
        1,
        (
            "rel",
            "altra",
            1.1,
            0.9,
            1.3,
            "estimate: Ampere's own wider core at 3.0 GHz, about 10% over Altra's N1",
        ),
    ),
    (
        "graviton1",
        "AWS Graviton (Cortex-A72)",
        "arm64",
        1,
        (
            "rel",
            "altra",
            0.45,
            0.3,
            0.6,
            "estimate: the first Graviton's Cortex-A72 cores at 2.3 GHz, about half a Neoverse N1",
        ),
    ),
    (
        "graviton2",
        "AWS Graviton2 (Neoverse N1)",
        "arm64",
        1,
        (
            "rel",
            "altra",
            2.5 / 3.0,
            0.75,
            0.92,
            "estimate: the same Neoverse N1 core as Ampere Altra at 2.5 GHz instead of 3.0 GHz",
        ),
    ),
    (
        "graviton3",
        "AWS Graviton3 (Neoverse V1)",
        "arm64",
        1,
        (
            "rel",
            "graviton2",
            math.sqrt(1.52 * 1.68),
            1.52,
            1.68,
            "published: C7gn 52-68% above C6gn as an NGINX reverse proxy, 002_5bc85ae220f67db4.txt "
            "(an input, not a prediction)",
        ),
    ),
    (
        "graviton3e",
        "AWS Graviton3E (Neoverse V1)",
        "arm64",
        1,
        (
            "rel",
            "graviton3",
            1.0,
            0.95,
            1.05,
            "estimate: Graviton3's cores; the E differs in vector units and network, not in the "
            "integer work NGINX does",
        ),
    ),
    (
        "graviton4",
        "AWS Graviton4 (Neoverse V2)",
        "arm64",
        1,
        (
            "rel",
            "graviton3",
            1.3,
            1.15,
            1.4,
            "estimate: AWS gives Graviton4 up to 30% over Graviton3 for web applications",
        ),
    ),
    (
        "graviton5",
        "AWS Graviton5",
        "arm64",
        1,
        (
            "rel",
            "graviton4",
            1.2,
            1.0,
            1.35,
            "estimate: AWS announces Graviton5 as up to 25% faster than Graviton4",
        ),
    ),
    (
        "axion",
        "Google Axion (Neoverse V2)",
        "arm64",
        1,
        (
            "rel",
            "graviton4",
            1.05,
            0.9,
            1.15,
            "estimate: the same Neoverse V2 core as Graviton4 at 3.0 GHz instead of 2.8 GHz",
        ),
    ),
)

#: cpu-text keyword (lower case, matched as a substring) -> platform id; first match wins
#: within a text, and when several platforms are named the newest is used (range widened).
KEYWORDS: tuple[tuple[str, str], ...] = (
    ("graviton5", "graviton5"),
    ("graviton4", "graviton4"),
    ("graviton3e", "graviton3e"),
    ("graviton3", "graviton3"),
    ("graviton2", "graviton2"),
    ("graviton", "graviton1"),
    ("axion", "axion"),
    ("ampereone", "ampereone"),
    ("ampere one", "ampereone"),
    ("altra", "altra"),
    ("granite rapids", "granite_rapids"),
    ("emerald rapids", "emerald_rapids"),
    ("sapphire rapids", "sapphire_rapids"),
    ("ice lake", "ice_lake"),
    ("icelake", "ice_lake"),
    ("cascade lake", "cascade_lake"),
    ("skylake", "skylake"),
    ("broadwell", "broadwell"),
    ("haswell", "haswell"),
    ("ivy bridge", "ivy_bridge"),
    ("turin", "zen5"),
    ("zen 5", "zen5"),
    ("genoa", "zen4"),
    ("zen 4", "zen4"),
    ("milan", "zen3"),
    ("zen 3", "zen3"),
    ("rome", "zen2"),
    ("zen 2", "zen2"),
    ("naples", "zen1"),
    ("neoverse-v2", "graviton4"),
    ("neoverse-v1", "graviton3"),
    ("neoverse-n1", "altra"),
)
#: /proc/cpuinfo model names: EPYC 7xx2 = Rome, 7xx3 = Milan, 9xx4 = Genoa, 9xx5 = Turin;
#: Xeon Scalable 81xx = Skylake, 82xx = Cascade Lake, 83xx = Ice Lake, 84xx = Sapphire Rapids,
#: 85xx = Emerald Rapids, 69xx/67xx = Granite Rapids.
MODEL_NUMBERS: tuple[tuple[str, str], ...] = (
    (r"epyc\s+7\w\w2", "zen2"),
    (r"epyc\s+7\w\w3", "zen3"),
    (r"epyc\s+9\w\w4", "zen4"),
    (r"epyc\s+9\w\w5", "zen5"),
    (r"xeon.*\b81\d\d", "skylake"),
    (r"xeon.*\b82\d\d", "cascade_lake"),
    (r"xeon.*\b83\d\d", "ice_lake"),
    (r"xeon.*\b84\d\d", "sapphire_rapids"),
    (r"xeon.*\b85\d\d", "emerald_rapids"),
    (r"xeon.*\b6[79]\d\d", "granite_rapids"),
    (r"e5-2\d\d\d\s*v3", "haswell"),
    (r"e5-2\d\d\d\s*v4", "broadwell"),
)
#: Instance family -> platform: GCP series by name; AWS families by generation and letter.
FAMILY_PREFIXES: tuple[tuple[str, str], ...] = (
    ("t2a", "altra"),
    ("c4a", "axion"),
    ("n4a", "axion"),
    ("c4d", "zen5"),
    ("n4d", "zen5"),
    ("c3d", "zen4"),
    ("t2d", "zen3"),
    ("n2d", "zen3"),
    ("c2d", "zen3"),
    ("c4", "emerald_rapids"),
    ("n4", "emerald_rapids"),
    ("c3", "sapphire_rapids"),
    ("h3", "sapphire_rapids"),
    ("n2", "ice_lake"),
    ("c2", "cascade_lake"),
    ("n1", "skylake"),
    ("e2", "skylake"),
    ("m1", "broadwell"),
)
_AWS_FAMILY = re.compile(r"^[a-z]+?(\d)([a-z]*)(?:-[a-z]+)?$")
_AWS_GEN = {
    "g": {"6": "graviton2", "7": "graviton3", "8": "graviton4"},
    "a": {"5": "zen2", "6": "zen3", "7": "zen4", "8": "zen5"},
    "i": {
        "4": "haswell",
        "5": "cascade_lake",
        "6": "ice_lake",
        "7": "sapphire_rapids",
        "8": "granite_rapids",
    },
}
#: Families whose vCPU is a whole core although their platform usually runs two threads.
WHOLE_CORE_FAMILIES = ("t2d", "h3")
ARCH_DEFAULT = {"x86_64": "ice_lake", "arm64": "graviton2"}


def _coremark() -> dict[str, tuple[float, str]]:
    with COREMARK_PATH.open(newline="") as fh:
        return {
            r["machine_type"]: (float(r["coremark"]) / float(r["vcpus"]), r["source"])
            for r in csv.DictReader(fh)
        }


def _core_score(machine: str, ht: bool, cm: dict[str, tuple[float, str]]) -> float:
    per_vcpu = cm[machine][0]
    return per_vcpu * 2.0 / HT_COREMARK[0] if ht else per_vcpu


HT_FIT_PATH = DATA_DIR / "platforms" / "nginx-ht.json"
_HT_OVERRIDE: list[float] = []


def ht_from_coremark() -> float:
    """The hyper-thread gain that makes CoreMark's T2A/N2 per vCPU equal seed 000's ratio."""
    cm = _coremark()
    _, ratio, arm, x86 = HT_FIT_CLAIM
    return 2.0 * _core_score(arm, False, cm) / (_core_score(x86, True, cm) * ratio)


@cache
def ht_nginx() -> tuple[float, str]:
    """NGINX's gain from a core's second thread, fitted to seed 000's T2A/N2 ratio.

    ``python -m sizing precompute`` solves for the gain with the whole capacity model at the
    claim's workload (53 KB gzip over HTTPS, p99 <= 5 ms, 32 vCPUs) and stores it in
    ``data/platforms/nginx-ht.json``; without that file, CoreMark's per-vCPU ratio alone.
    """
    claim, ratio = HT_FIT_CLAIM[0], HT_FIT_CLAIM[1]
    if _HT_OVERRIDE:
        return _HT_OVERRIDE[-1], "trial value (fitting)"
    try:
        ht = float(json.loads(HT_FIT_PATH.read_text())["ht_nginx"])
        how = "the capacity model at the claim's workload"
    except (FileNotFoundError, KeyError, ValueError):
        ht = ht_from_coremark()
        how = "CoreMark's per-vCPU ratio"
    return ht, (
        f"{ht:.2f}: fitted so that {how} reproduces seed 000's NGINX ratio T2A/N2 = "
        f"{ratio:g} (claim {claim}, an input); seed 004 reports about 1.5 for SSL handshakes"
    )


@cache
def platforms() -> dict[str, Platform]:
    """Every known platform with its per-core speed, range and source."""
    cm = _coremark()
    ref_core = _core_score(REFERENCE_COREMARK[0], True, cm)
    rel_sd = COREMARK_REL_SD[0]
    out: dict[str, Platform] = {}
    for pid, name, arch, tpc, rule in _RULES:
        kind = rule[0]
        if kind == "ref":
            out[pid] = Platform(
                pid,
                name,
                arch,
                tpc,
                1.0,
                0.9,
                1.1,
                "reference: seed 004's Xeon E5-2699 v3 core (other Haswell SKUs within 10%)",
                estimate=False,
            )
        elif kind == "coremark":
            assert len(rule) == 2, rule  # the "coremark" rule's shape
            machine = rule[1]
            speed = _core_score(machine, tpc == 2, cm) / ref_core
            k = math.exp(1.96 * rel_sd)
            out[pid] = Platform(
                pid,
                name,
                arch,
                tpc,
                speed,
                speed / k,
                speed * k,
                f"CoreMark of {machine} ({cm[machine][0]:,.0f} per vCPU) / {REFERENCE_COREMARK[0]}"
                f" ({REFERENCE_COREMARK[1]}), bias against NGINX measured on seed 000 "
                f"(claim {HT_FIT_CLAIM[0]}); "
                f"{cm[machine][1]}",
                estimate=False,
            )
        else:
            assert len(rule) == 6, rule  # the "rel" rule's shape
            _, base_id, ratio, lo, hi, reason = rule
            base = out[base_id]
            out[pid] = Platform(
                pid,
                name,
                arch,
                tpc,
                base.core_speed * ratio,
                base.core_speed_low * lo,
                base.core_speed_high * hi,
                f"{reason}: x{ratio:.3g} ({lo:g}-{hi:g}) of {base.platform_id}",
                estimate=reason.startswith("estimate") or base.estimate,
            )
    return out


def match_cpu_text(text: str) -> list[str]:
    """Platform ids named in a CPU text (keywords, then model numbers), in `_RULES` order."""
    low = text.lower()
    found: set[str] = set()
    for kw, pid in KEYWORDS:
        if kw in low:
            found.add(pid)
            low = low.replace(kw, " ")
    if not found:
        low = text.lower()
        found = {pid for rx, pid in MODEL_NUMBERS if re.search(rx, low)}
    order = [r[0] for r in _RULES]
    return sorted(found, key=order.index)


def _family_platform(family: str) -> str | None:
    fam = family.lower()
    for prefix, pid in FAMILY_PREFIXES:
        if fam == prefix or fam.startswith(prefix + "-"):
            return pid
    m = _AWS_FAMILY.match(fam)
    if m:
        gen, letters = m.groups()
        kind = "g" if "g" in letters else "a" if "a" in letters else "i"
        found = _AWS_GEN[kind].get(gen)
        if found == "graviton3" and letters.startswith("gn"):
            return "graviton3e"
        return found
    return None


#: x86 CPUID (vendor, family, model) -> platform, for hosts whose CPU text names no platform
#: (a VM that shows only "AMD EPYC"). Family and model as /proc/cpuinfo prints them (decimal).
#: Sources: AMD's and Intel's published family/model numbers of their server parts.
CPUID_PLATFORMS: dict[tuple[str, int, int], str] = {
    ("GenuineIntel", 6, 62): "ivy_bridge",  # Ivy Bridge-EP
    ("GenuineIntel", 6, 63): "haswell",  # Haswell-EP
    ("GenuineIntel", 6, 79): "broadwell",  # Broadwell-EP
    ("GenuineIntel", 6, 85): "skylake",  # Skylake-SP; stepping >= 5 is Cascade Lake
    ("GenuineIntel", 6, 106): "ice_lake",  # Ice Lake-SP
    ("GenuineIntel", 6, 143): "sapphire_rapids",
    ("GenuineIntel", 6, 207): "emerald_rapids",
    ("GenuineIntel", 6, 173): "granite_rapids",
    ("AuthenticAMD", 23, 1): "zen1",  # Naples
    ("AuthenticAMD", 23, 49): "zen2",  # Rome
    ("AuthenticAMD", 25, 1): "zen3",  # Milan
    ("AuthenticAMD", 25, 17): "zen4",  # Genoa
    ("AuthenticAMD", 25, 160): "zen4",  # Bergamo
    ("AuthenticAMD", 26, 2): "zen5",  # Turin
    ("AuthenticAMD", 26, 17): "zen5",  # Turin dense
}


#: Arm (implementer, part), as /proc/cpuinfo's "CPU implementer" and "CPU part" give them ->
#: platform, for an arm64 host whose CPU text names none (/proc/cpuinfo has no model name
#: there). Source: Arm's published MIDR part numbers (Neoverse N1 0xd0c, V1 0xd40, V2 0xd4f);
#: each placed as its name is in `KEYWORDS`.
ARM_PARTS: dict[tuple[int, int], str] = {
    (0x41, 0xD0C): "altra",  # Neoverse N1
    (0x41, 0xD40): "graviton3",  # Neoverse V1
    (0x41, 0xD4F): "graviton4",  # Neoverse V2
}


def arch_of_text(text: str) -> str:
    """``arm64`` when a CPU text names arm64 platforms only, else ``x86_64``."""
    known = platforms()
    arches = {known[i].arch for i in match_cpu_text(text)}
    return "arm64" if arches == {"arm64"} else "x86_64"


def platform_by_cpuid(vendor: str, family: int, model: int, stepping: int = 0) -> str | None:
    """The platform id of an x86 CPUID vendor/family/model, or None when not in the table."""
    pid = CPUID_PLATFORMS.get((vendor, family, model))
    if pid == "skylake" and stepping >= 5:
        return "cascade_lake"
    return pid


def platform_by_text(
    text: str,
    arch: str,
    cpuid: tuple[str, int, int, int] | None = None,
    arm_part: tuple[int, int] | None = None,
) -> Platform:
    """The platform a CPU text names (e.g. a profile's ``cpu_model``), or the arch default.

    ``cpuid`` (x86: vendor, family, model, stepping) or ``arm_part`` (arm64: implementer,
    part) is used when the text names no platform.
    """
    known = platforms()
    ids = [i for i in match_cpu_text(text) if known[i].arch == arch]
    if ids:
        return _combine([known[i] for i in ids], f"cpu text {text!r}")
    if arm_part is not None and arch == "arm64" and ARM_PARTS.get(arm_part) in known:
        implementer, part = arm_part
        return replace(
            known[ARM_PARTS[arm_part]],
            matched_by=f"Arm implementer {implementer:#x} part {part:#x}"
            f" (cpu text {text!r} names no platform)",
        )
    if cpuid is not None and arch == "x86_64":
        pid = platform_by_cpuid(*cpuid)
        if pid is not None and pid in known:
            vendor, family, model, stepping = cpuid
            return replace(
                known[pid],
                matched_by=f"CPUID {vendor} family {family} model {model} stepping {stepping}"
                f" (cpu text {text!r} names no platform)",
            )
    return _fallback(arch, f"cpu text {text!r} not recognised")


#: Release order, newest last: when a CPU text names several platforms the newest is used.
RELEASE_ORDER = (
    "ivy_bridge",
    "haswell",
    "broadwell",
    "skylake",
    "cascade_lake",
    "ice_lake",
    "sapphire_rapids",
    "emerald_rapids",
    "granite_rapids",
    "zen1",
    "zen2",
    "zen3",
    "zen4",
    "zen5",
    "graviton1",
    "graviton2",
    "altra",
    "graviton3",
    "graviton3e",
    "ampereone",
    "graviton4",
    "axion",
    "graviton5",
)


def _combine(found: list[Platform], how: str) -> Platform:
    newest = max(found, key=lambda p: RELEASE_ORDER.index(p.platform_id))
    if len(found) == 1:
        return replace(newest, matched_by=how)
    return replace(
        newest,
        core_speed_low=min(p.core_speed_low for p in found),
        matched_by=f"{how} (names {', '.join(p.platform_id for p in found)}: the newest is "
        "used, the range reaches down to the oldest)",
    )


def _fallback(arch: str, why: str) -> Platform:
    base = platforms()[ARCH_DEFAULT.get(arch, "ice_lake")]
    return replace(
        base,
        platform_id=f"{arch}-default",
        name=f"unknown {arch} CPU",
        core_speed_low=base.core_speed * 0.6,
        core_speed_high=base.core_speed * 1.5,
        source=f"estimate: {why}; {arch} default = {base.name} with a wide range (x0.6-1.5)",
        estimate=True,
        matched_by=why,
    )


def platform_of(inst: Instance) -> Platform:
    """The CPU platform of a catalog row, and the vCPUs per core it runs.

    The ``cpu`` text by keyword, else the family prefix, else the architecture's default
    (marked as an estimate). ``inst.threads_per_core`` overrides the platform's usual value.
    """
    known = platforms()
    ids = [i for i in match_cpu_text(inst.cpu) if known[i].arch == inst.arch]
    if ids:
        plat = _combine([known[i] for i in ids], f"cpu {inst.cpu!r}")
    else:
        pid = _family_platform(inst.family)
        if pid is not None and known[pid].arch == inst.arch:
            plat = replace(known[pid], matched_by=f"family prefix {inst.family!r}")
        else:
            plat = _fallback(
                inst.arch,
                f"neither cpu {inst.cpu!r} nor family {inst.family!r} is in the platform table",
            )
    tpc = inst.threads_per_core
    if tpc is None and any(inst.family.lower().startswith(f) for f in WHOLE_CORE_FAMILIES):
        tpc = 1
    if tpc is not None and tpc != plat.threads_per_core:
        plat = replace(plat, threads_per_core=tpc)
    return plat

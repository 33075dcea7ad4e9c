"""Carbon per request: grams of CO2e a fleet emits per million requests at the target.

Cloud Carbon Footprint's method (CCF, Apache-2.0; the compact extracts and their sources are in
``data/upstream/ccf/``, README there):

- **operational**: one vCPU draws ``min + u x (max - min)`` watts at CPU utilisation ``u``
  (``min``/``max``: CCF's watts per vCPU of the CPU's microarchitecture, from SPECpower), times
  the provider's PUE, times the region's grid emissions [kgCO2e/kWh]; one watt for an hour at
  1 kgCO2e/kWh is one gram.
- **embodied**: the server's manufacturing emissions (CCF's per-type total [kgCO2e]) spread over
  its vCPUs and over a 4-year life (35,040 h), times the vCPUs the fleet reserves.

``u`` is the CPU load the plan runs at: the target over the fleet's CPU-bound rate
(``count x cpu_peak_rps``). Memory, disks and network energy are not counted (for a web server
they are small beside the CPUs; CCF counts memory only above a large threshold).

Where a coefficient is missing, a labelled stand-in is used and the basis says so: a CPU CCF
has no row for takes the nearest row named in `ARCHITECTURES` (or the mean of the provider's
rows), a region takes the factor of another region on the same grid (``same-grid.csv``) or the
mean of the provider's regions, an instance type takes the median per-vCPU embodied emissions
of the provider's types.
"""

from __future__ import annotations

import csv
import math
import statistics
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from sizing.catalog.load import Instance
from sizing.catalog.rows import read_upstream
from sizing.errors import InputError
from sizing.model.platforms import platform_of
from sizing.paths import DATA_DIR
from trialtable.jsonvalue import JsonObject

if TYPE_CHECKING:  # numpy loads only when many fleets are weighed at once
    import numpy as np
    from numpy.typing import NDArray

CCF_DIR = DATA_DIR / "upstream" / "ccf"
CCF = "Cloud Carbon Footprint"
#: Power usage effectiveness per provider [1] (CCF's methodology, "Power Usage Effectiveness").
PUE = {
    "aws": (1.135, "AWS PUE 1.135 (CCF's conservative reading of AWS's public statements)"),
    "gcp": (1.1, "GCP PUE 1.1 (Google's published fleet PUE, as CCF uses it)"),
    "azure": (1.185, "Azure PUE 1.185 (Microsoft's fleet-wide trailing 12-month PUE, via CCF)"),
}
#: A PUE for a provider CCF does not cover: the highest of the three (an estimate).
PUE_FALLBACK = 1.185
#: Server life over which embodied emissions are spread [h] (CCF: 4 years, Dell R740 LCA).
LIFESPAN_HOURS = 35040.0
#: Platform id (`sizing.model.platforms`) -> CCF microarchitecture, and why where not its own.
ARCHITECTURES: dict[str, tuple[str, str]] = {
    "ivy_bridge": ("Ivy Bridge", ""),
    "haswell": ("Haswell", ""),
    "broadwell": ("Broadwell", ""),
    "skylake": ("Skylake", ""),
    "cascade_lake": ("Cascade Lake", ""),
    "ice_lake": ("Ice Lake", ""),
    "sapphire_rapids": ("Sapphire Rapids", ""),
    "emerald_rapids": ("Emerald Rapids", ""),
    "granite_rapids": ("Granite Rapids", ""),
    "zen1": ("EPYC 1st Gen", ""),
    "zen2": ("EPYC 2nd Gen", ""),
    "zen3": ("EPYC 3rd Gen", ""),
    "zen4": ("EPYC 4th Gen", ""),
    "zen5": (
        "EPYC 4th Gen",
        "Zen 5 taken as EPYC 4th Gen: CCF's EPYC 5th Gen row (3.68-8.96 W per vCPU) is x4-5 "
        "every other generation's, out of line with the parts' published TDP per core",
    ),
    "graviton1": ("Graviton2", "Graviton taken as Graviton2 (CCF: both as EPYC 2nd Gen)"),
    "graviton2": ("Graviton2", ""),
    "graviton3": ("Graviton3", ""),
    "graviton3e": ("Graviton3E", ""),
    "graviton4": ("Graviton4", ""),
    "graviton5": ("Graviton4", "Graviton5 taken as Graviton4 (no CCF row)"),
    "altra": ("Graviton2", "Ampere Altra taken as Graviton2 (no CCF row; the same Neoverse N1)"),
    "ampereone": ("Graviton3", "AmpereOne taken as Graviton3 (no CCF row)"),
    "axion": ("Graviton4", "Axion taken as Graviton4 (no CCF row; the same Neoverse V2)"),
}


@dataclass(frozen=True)
class Carbon:
    """A fleet's emissions per hour, and what they rest on.

    Attributes
    ----------
    operational_g_per_hour : float
        CPU energy x PUE x grid [gCO2e/h].
    embodied_g_per_hour : float
        Manufacturing emissions amortised over the server's life [gCO2e/h].
    watts_per_vcpu : float
        One vCPU's draw at the plan's utilisation [W].
    cpu_utilization : float
        The CPU load the plan runs at [1].
    grid_kg_per_kwh : float
        The region's grid emissions [kgCO2e/kWh].
    basis : tuple of str
        One line per coefficient: its value and source, stand-ins marked as estimates.
    estimate : bool
        Whether any coefficient is a stand-in.
    """

    operational_g_per_hour: float
    embodied_g_per_hour: float
    watts_per_vcpu: float
    cpu_utilization: float
    grid_kg_per_kwh: float
    basis: tuple[str, ...]
    estimate: bool

    @property
    def g_per_hour(self) -> float:
        """Operational plus embodied [gCO2e/h]."""
        return self.operational_g_per_hour + self.embodied_g_per_hour

    def per_million(self, target_rps: float) -> float:
        """Grams per million requests when the fleet serves ``target_rps`` [gCO2e]."""
        return self.g_per_hour / (target_rps * 3600.0) * 1e6


def _rows(name: str, header: str) -> list[list[str]]:
    """The rows of one extract, its header checked (InputError in one line otherwise)."""
    path = CCF_DIR / name
    lines = [x for x in read_upstream(path).splitlines() if x and not x.startswith("#")]
    if not lines or lines[0] != header:
        raise InputError(f"{path}: expected the header {header}")
    rows = list(csv.reader(lines[1:]))
    if any(len(r) != header.count(",") + 1 for r in rows):
        raise InputError(f"{path}: a row has the wrong number of fields")
    return rows


def _number(text: str, name: str, low: float, high: float) -> float:
    try:
        x = float(text)
    except ValueError:
        raise InputError(f"{CCF_DIR / name}: {text!r} is not a number") from None
    if not (math.isfinite(x) and low <= x <= high):
        raise InputError(f"{CCF_DIR / name}: {x!r} is outside [{low:g}, {high:g}]")
    return x


@cache
def cpu_power() -> dict[tuple[str, str], tuple[float, float]]:
    """``(provider, CCF architecture) -> (min, max)`` watts per vCPU."""
    out = {}
    for prov, arch, lo, hi in _rows(
        "cpu-power.csv", "provider,architecture,min_watts_per_vcpu,max_watts_per_vcpu"
    ):
        w = (_number(lo, "cpu-power.csv", 0, 50), _number(hi, "cpu-power.csv", 0, 50))
        out[prov, arch] = w
    return out


@cache
def grid() -> dict[tuple[str, str], tuple[float, str]]:
    """``(provider, region) -> (kgCO2e/kWh, source and year)``."""
    out = {}
    for prov, region, factor, place, source, year in _rows(
        "grid.csv", "provider,region,kgco2e_per_kwh,location,source,year"
    ):
        when = f", {year}" if year else ", year not stated"
        out[prov, region] = (
            _number(factor, "grid.csv", 0, 2),
            f"{source}{when} ({place}; via {CCF})",
        )
    return out


@cache
def same_grid() -> dict[tuple[str, str], tuple[str, str, str]]:
    """``(provider, region) -> (place, provider, region)`` whose factor stands in."""
    rows = _rows("same-grid.csv", "provider,region,place,as_provider,as_region")
    return {(p, r): (place, ap, ar) for p, r, place, ap, ar in rows}


@cache
def embodied() -> dict[tuple[str, str], float]:
    """``(provider, lower-case type) -> embodied kgCO2e per server vCPU``."""
    out = {}
    for prov, name, kg, vcpus in _rows(
        "embodied.csv", "provider,instance_type,kgco2e_server,server_vcpus"
    ):
        per = _number(kg, "embodied.csv", 1, 1e6) / _number(vcpus, "embodied.csv", 1, 4096)
        out[prov, name.lower()] = per
    return out


@cache
def grid_of(provider: str, region: str) -> tuple[float, str, bool]:
    """The region's grid factor [kgCO2e/kWh], its source, and whether it is a stand-in."""
    table = grid()
    if (provider, region) in table:
        return (*table[provider, region], False)
    alias = same_grid().get((provider, region))
    if alias is not None and alias[1:] in table:
        factor, source = table[alias[1:]]
        return factor, f"estimate: {alias[0]} taken as {alias[2]}'s grid: {source}", True
    mine = [f for (p, _), (f, _) in table.items() if p == provider] or [
        f for f, _ in table.values()
    ]
    mean = statistics.fmean(mine)
    return mean, f"estimate: no factor for {provider}/{region}; the mean of {CCF}'s regions", True


@cache
def _power_of(provider: str, platform_id: str) -> tuple[float, float, str, bool]:
    """Min and max watts per vCPU of a platform, the source line, and whether it is a stand-in."""
    table = cpu_power()
    arch, why = ARCHITECTURES.get(platform_id, ("", ""))
    for prov in (provider, "aws"):
        if (prov, arch) in table:
            lo, hi = table[prov, arch]
            where = f"{CCF}'s {prov.upper()} {arch} row"
            text = f"{lo:.2f}-{hi:.2f} W per vCPU idle to full load ({where}, SPECpower)"
            return lo, hi, (f"estimate: {why}; {text}" if why else text), bool(why)
    rows = [w for (p, _), w in table.items() if p == provider] or list(table.values())
    lo = statistics.fmean(w[0] for w in rows)
    hi = statistics.fmean(w[1] for w in rows)
    text = (
        f"estimate: CPU {platform_id} has no {CCF} row; the mean of its rows, {lo:.2f}-{hi:.2f} W"
    )
    return lo, hi, text, True


@cache
def _median_embodied(provider: str) -> float:
    """The median embodied kgCO2e per server vCPU of the provider's types (else of all)."""
    table = embodied()
    mine = [v for (p, _), v in table.items() if p == provider] or list(table.values())
    return statistics.median(mine)


@cache
def _embodied_of(provider: str, instance_type: str) -> tuple[float, str, bool]:
    """Embodied kgCO2e per server vCPU of a type, the source line, and whether a stand-in."""
    table = embodied()
    found = table.get((provider, instance_type.lower()))
    if found is not None:
        return found, f"{found:.1f} kgCO2e per server vCPU ({CCF}'s {instance_type} server)", False
    med = _median_embodied(provider)
    return (
        med,
        (
            f"estimate: {instance_type} has no {CCF} row; the median of its types, "
            f"{med:.1f} kgCO2e per server vCPU"
        ),
        True,
    )


_PLATFORMS: dict[tuple[str, str, str], str] = {}


def _platform_id(inst: Instance) -> str:
    """The platform id of a row, found once per CPU text, family and architecture."""
    key = (inst.cpu, inst.family, inst.arch)
    found = _PLATFORMS.get(key)
    if found is None:
        found = _PLATFORMS[key] = platform_of(inst).platform_id
    return found


def fleet_carbon(inst: Instance, count: int, cpu_utilization: float) -> Carbon:
    """The emissions of ``count`` instances of ``inst`` running at ``cpu_utilization``.

    Parameters
    ----------
    inst : Instance
        The catalog row (provider, region, type, CPU, vCPUs).
    count : int
        Instances in the fleet [1].
    cpu_utilization : float
        The CPU load each runs at, clipped to [0, 1] [1].

    Returns
    -------
    Carbon
    """
    u = min(max(cpu_utilization, 0.0), 1.0) if math.isfinite(cpu_utilization) else 1.0
    lo, hi, power_src, est_p = _power_of(inst.provider, _platform_id(inst))
    pue, pue_src = PUE.get(inst.provider, (PUE_FALLBACK, f"estimate: PUE {PUE_FALLBACK}"))
    factor, grid_src, est_g = grid_of(inst.provider, inst.region)
    kg_vcpu, emb_src, est_e = _embodied_of(inst.provider, inst.instance_type)
    watts = lo + u * (hi - lo)
    vcpus = count * inst.vcpus
    return Carbon(
        operational_g_per_hour=vcpus * watts * pue * factor,
        embodied_g_per_hour=vcpus * kg_vcpu * 1000.0 / LIFESPAN_HOURS,
        watts_per_vcpu=watts,
        cpu_utilization=u,
        grid_kg_per_kwh=factor,
        basis=(
            f"power: {power_src}; at {u:.0%} CPU {watts:.2f} W per vCPU",
            f"PUE: {pue_src}",
            f"grid: {factor * 1000:.0f} gCO2e/kWh, {grid_src}",
            f"embodied: {emb_src}, over {LIFESPAN_HOURS:,.0f} h (4 years, {CCF})",
        ),
        estimate=est_p or est_g or est_e or inst.provider not in PUE,
    )


def option_g_per_hour(
    places: list[tuple[str, str]],
    types: list[str],
    shapes: list[Instance],
    vcpus: NDArray[np.float64],
    count: NDArray[np.float64],
    load: NDArray[np.float64],
) -> NDArray[np.float64]:
    """`Carbon.g_per_hour` of many fleets at once, the same float operations element-wise.

    Parameters
    ----------
    places : list of (str, str)
        Each fleet's provider and region.
    types : list of str
        Each fleet's instance type.
    shapes : list of Instance
        A row of each fleet's CPU (its provider, CPU text, family, architecture).
    vcpus, count, load : numpy.ndarray
        vCPUs per instance, instances, and the CPU load (`Option.carbon`'s) of each fleet.

    Returns
    -------
    numpy.ndarray
        gCO2e/h of each fleet.
    """
    import numpy as np

    power = [_power_of(s.provider, _platform_id(s)) for s in shapes]
    lo = np.array([p[0] for p in power])
    hi = np.array([p[1] for p in power])
    pue = np.array([PUE.get(p, (PUE_FALLBACK, ""))[0] for p, _ in places])
    factor = np.array([grid_of(p, r)[0] for p, r in places])
    kg = np.array([_embodied_of(p, t)[0] for (p, _), t in zip(places, types, strict=True)])
    u = np.where(np.isfinite(load), np.clip(load, 0.0, 1.0), 1.0)
    watts = lo + u * (hi - lo)
    n = count * vcpus
    grams: NDArray[np.float64] = n * watts * pue * factor + n * kg * 1000.0 / LIFESPAN_HOURS
    return grams


def cpu_load(target_rps: float, count: int, cpu_peak_rps: float) -> float:
    """The CPU load a fleet of ``count`` runs at when serving ``target_rps`` [1]."""
    if count <= 0 or not cpu_peak_rps > 0:
        return 1.0
    return target_rps / (count * cpu_peak_rps)


def option_fields(
    inst: Instance,
    target_rps: float,
    cpu_peak_rps: float,
    count: int,
    count_at_confidence: int | None,
) -> JsonObject:
    """An option's carbon columns: per million requests at its count and at the confidence.

    Returns
    -------
    dict
        ``gco2e_per_mreq``, ``gco2e_per_mreq_at_confidence`` (None without that count) and
        ``carbon`` (the split, the utilisation and the basis of the point count).
    """
    point = fleet_carbon(inst, count, cpu_load(target_rps, count, cpu_peak_rps))
    at_conf = (
        None
        if count_at_confidence is None
        else fleet_carbon(
            inst, count_at_confidence, cpu_load(target_rps, count_at_confidence, cpu_peak_rps)
        ).per_million(target_rps)
    )
    return {
        "gco2e_per_mreq": point.per_million(target_rps),
        "gco2e_per_mreq_at_confidence": at_conf,
        "carbon": {
            "operational_g_per_hour": point.operational_g_per_hour,
            "embodied_g_per_hour": point.embodied_g_per_hour,
            "watts_per_vcpu": point.watts_per_vcpu,
            "cpu_utilization": point.cpu_utilization,
            "grid_kgco2e_per_kwh": point.grid_kg_per_kwh,
            "estimate": point.estimate,
            "basis": list(point.basis),
        },
    }

"""CPU profiles (``nginx-sizing/cpu-profile/1`` JSON, written by ``python -m runners calibrate``).

A profile holds the cost coefficients of ONE worker on one vCPU of the measured host, with
their standard errors, and says whether they were measured over loopback or a network. It
becomes a `sizing.model.costmodel.CostProfile`; `sizing.model.capacity` uses it for every catalog
type whose CPU platform (`sizing.model.platforms.platform_by_text` of ``cpu_model``)
matches, adds the NIC packet path to a loopback-measured profile, and takes any coefficient
the profile lacks from the reference, speed-scaled to that platform. A profile from before
``body_us`` fitted ``request_us`` over bodies of 0 B and more: its ``request_us`` and
``byte_ns`` include ``body_us``, which is then 0 (the reference's would count it twice).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from sizing.errors import InputError
from sizing.model.costmodel import UNITS, Coefficient, CostProfile, reference_profile
from trialtable import profile as shared_profile
from trialtable.profile import MEASURED_OVER as MEASURED_OVER  # re-exported

if TYPE_CHECKING:
    from sizing.model.capacity import Capacity
    from sizing.workload.value import Workload

SCHEMA = "nginx-sizing/cpu-profile/1"


def _num(path: str, where: str, v: object, positive: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise InputError(f"{path}: {where}: expected a number, got {v!r}")
    x = float(v)
    if not math.isfinite(x) or (positive and x <= 0):
        raise InputError(f"{path}: {where}: expected a {'positive ' if positive else ''}number")
    return x


def _optional(path: str, where: str, v: object) -> float:
    """An error term that may be absent or null (0), else a finite number (its magnitude)."""
    return 0.0 if v is None else abs(_num(path, where, v))


def _sigma(path: str, scaling: object) -> tuple[float, float] | None:
    """Contention ``sigma`` from the profile's worker scaling (mean over its worker counts)."""
    if not isinstance(scaling, dict):
        return None
    workers, eff = scaling.get("workers"), scaling.get("efficiency")
    if not (isinstance(workers, list) and isinstance(eff, list) and len(workers) == len(eff)):
        return None
    sig = [
        (1.0 / _num(path, "scaling.efficiency", e, True) - 1.0)
        / (_num(path, "scaling.workers", w, True) - 1.0)
        for w, e in zip(workers, eff, strict=True)
        if _num(path, "scaling.workers", w, True) > 1
    ]
    if not sig:
        return None
    mean = max(sum(sig) / len(sig), 0.0)
    spread = math.sqrt(sum((s - mean) ** 2 for s in sig) / (len(sig) - 1)) if len(sig) > 1 else mean
    return mean, spread


def read_profile(path: str | Path) -> CostProfile:
    """Read and validate one CPU profile file.

    Raises
    ------
    InputError
        A missing or unreadable file, bad JSON, another schema, an unknown ``measured_over``,
        or a coefficient without a finite value; the message names the file and field.
    """
    p = str(path)
    try:  # the one schema, with a range per field, that every reader of a profile checks
        doc = shared_profile.read_document(path)
    except shared_profile.ProfileError as exc:
        raise InputError(f"profile {exc}") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise InputError(f'profile {p}: expected "schema": "{SCHEMA}"')
    over = doc.get("measured_over")
    if over not in MEASURED_OVER:
        raise InputError(
            f"profile {p}: field 'measured_over': expected loopback or network, got {over!r}"
        )
    raw = doc.get("coefficients")
    if not isinstance(raw, dict) or not raw:
        raise InputError(f"profile {p}: field 'coefficients': expected an object")
    cpu = str(doc.get("cpu_model") or "")
    runs = doc.get("runs") if isinstance(doc.get("runs"), list) else []
    assert isinstance(runs, list)
    source = f"profile {Path(p).name} ({cpu}; runs {', '.join(map(str, runs)) or 'none named'})"
    coefs: dict[str, Coefficient] = {}
    for name, c in raw.items():
        if name not in UNITS:
            continue  # a coefficient this model does not use
        if not isinstance(c, dict):
            raise InputError(f"profile {p}: coefficient {name!r}: expected an object")
        value = _num(p, f"{name}.value", c.get("value"))
        # A missing or null error is one the campaign could not measure (one round, or no
        # residual degrees of freedom): taken as 0, as the writer leaves it out.
        stderr = _optional(p, f"{name}.stderr", c.get("stderr"))
        spread = _optional(p, f"{name}.spread", c.get("spread"))
        # An interval for capacity should hold the run-to-run spread, not only the mean's error.
        sd = math.sqrt(stderr**2 + (spread * abs(value)) ** 2)
        coefs[name] = Coefficient(
            name,
            value,
            sd,
            UNITS[name],
            "nic" if over == "network" else "loopback",
            source,
        )
    if "request_us" not in coefs:
        raise InputError(f"profile {p}: coefficient 'request_us' is required")
    if "body_us" not in coefs and "byte_ns" in coefs:
        # A profile from before body_us (schema 1 as first written) fitted request_us over
        # bodies of 0 B and more: the bodies' fixed cost is inside request_us and byte_ns,
        # and the reference's body_us on top would count it twice.
        coefs["body_us"] = Coefficient(
            "body_us",
            0.0,
            0.0,
            UNITS["body_us"],
            coefs["request_us"].measured_over,
            f"{source}: not fitted on its own; included in request_us and byte_ns",
        )
    tpc = doc.get("threads_per_core")
    if tpc not in (1, 2, None):
        raise InputError(f"profile {p}: field 'threads_per_core': expected 1, 2 or null")
    arch = doc.get("arch", "x86_64")
    if arch not in ("x86_64", "arm64"):
        raise InputError(f"profile {p}: field 'arch': expected x86_64 or arm64, got {arch!r}")
    ref = reference_profile()
    sig = _sigma(p, doc.get("scaling"))
    sigma, sigma_sd = sig if sig is not None else (ref.sigma, ref.sigma_stderr)
    warns = doc.get("warnings") if isinstance(doc.get("warnings"), list) else []
    cpuid = _cpuid(doc.get("host"))
    assert isinstance(warns, list)
    return CostProfile(
        name=Path(p).name,
        cpu_model=cpu,
        coefficients=coefs,
        sigma=sigma,
        sigma_stderr=sigma_sd,
        source=source,
        measured_over=str(over),
        speed_basis="vcpu",
        threads_per_core=tpc if isinstance(tpc, int) else None,
        arch=str(arch),
        residual_sd=0.0,
        warnings=tuple(str(w) for w in warns),
        virtual_nic_included=over == "network",
        cpuid=cpuid,
    )


def _cpuid(host: object) -> tuple[str, int, int, int] | None:
    """(vendor, family, model, stepping) from a profile's host facts, when all are there."""
    if not isinstance(host, dict):
        return None
    vendor = host.get("cpu_vendor")
    try:
        nums = tuple(int(str(host.get(k))) for k in ("cpu_family", "cpu_model_number"))
        stepping = int(str(host.get("cpu_stepping", 0)))
    except ValueError:
        return None
    if not isinstance(vendor, str) or not vendor:
        return None
    return (vendor, nums[0], nums[1], stepping)


def load_profiles(paths: Iterable[str | Path]) -> list[CostProfile]:
    """Read several profile files (see `read_profile`); two of one platform must agree."""
    from sizing.model.capacity import profile_platform

    profs = [read_profile(p) for p in paths]
    for i, a in enumerate(profs):
        for b in profs[:i]:
            plat = profile_platform(a)
            if plat.platform_id != profile_platform(b).platform_id:
                continue
            sd = [{k: (c.value, c.stderr) for k, c in x.coefficients.items()} for x in (b, a)]
            why = shared_profile.disagreement(sd[0], sd[1])
            if why:
                raise InputError(
                    f"profiles {b.name} and {a.name} are both of {plat.name} and disagree: "
                    f"{why}; give one of them"
                )
    return profs


def describe_profile(prof: CostProfile) -> str:
    """A table of the profile's coefficients, their errors and where they come from."""
    from sizing.model.capacity import profile_platform

    plat = profile_platform(prof)
    lines = [
        f"profile {prof.name}: {prof.cpu_model} ({prof.arch}, "
        f"{prof.threads_per_core or '?'} thread(s) per core), measured over {prof.measured_over}",
        f"platform: {plat.name} ({plat.matched_by})",
        f"scaling: sigma {prof.sigma:.3g} +- {prof.sigma_stderr:.2g}",
        "",
        f"{'coefficient':<30} {'value':>10} {'+- sd':>9}  unit",
    ]
    for c in prof.coefficients.values():
        lines.append(f"{c.name:<30} {c.value:>10.4g} {c.stderr:>9.2g}  {c.unit}")
    if prof.measured_over == "loopback":
        lines.append(
            "note: measured over loopback; on a NIC the model adds nic_packet_us per packet"
        )
    lines += [f"warning: {w}" for w in prof.warnings]
    missing = sorted(set(reference_profile().coefficients) - set(prof.coefficients))
    if missing:
        lines.append("from the reference (speed-scaled): " + ", ".join(missing))
    return "\n".join(lines)


def host_capacity(
    prof: CostProfile, work: Workload, over_nic: bool = False, use_profile: bool = True
) -> Capacity:
    """One worker's capacity on the profile's own host, as ``recommend --profile`` computes it.

    The host is an instance of one vCPU of the profile's platform and threads per core (so
    its coefficients apply as they are, without a speed or thread conversion); ``over_nic``
    False answers over loopback, as the campaign measured. ``cpu_peak_rps`` is the
    requests one worker serves per second of its CPU [1/s]; ``cpu_us_per_request`` [us].
    ``use_profile`` False gives the uncalibrated model's answer for the same vCPU.
    """
    from sizing.catalog.load import Instance
    from sizing.model.capacity import model_capacity, profile_platform

    plat = profile_platform(prof)
    inst = Instance(
        provider="local",
        region="local",
        instance_type=f"one vCPU of the host of profile {prof.name}",
        family="",
        arch=prof.arch,
        cpu=plat.name,
        vcpus=1,
        memory_gib=1.0,
        network_gbps=1000.0,
        network_burst=False,
        price_usd_hour=0.0,
        source=f"profile {prof.name}",
        source_date="",
        threads_per_core=prof.threads_per_core or plat.threads_per_core,
    )
    return model_capacity(inst, work, [prof] if use_profile else [], over_nic=over_nic)

"""What each configuration feature costs on the reference core, from the measured table.

``data/reference/feature-costs.csv`` (written by ``python -m runners features``) holds, per
feature, its extra CPU time per request on the host that measured it [us], user space and
kernel apart, and the reference request's own cost measured in the same pairs. Here each is
carried to the reference core (the cost model's unit): the host's speed relative to the
reference core is the cost model's reference request over the measured one; user-space work
scales by that ratio, kernel work (a new TCP connection, a log write) by an estimate of it
(`KERNEL_SPEED_EXPONENT`), since core speed moves system calls and interrupts less than
compute. The model adds each feature's cost times its count to the request's CPU time
(`trialtable.profile.feature_terms`), and its spread to the capacity's range
(`sizing.model.costmodel.cpu_us_per_request`).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from sizing.errors import InputError
from sizing.model.costmodel import Coefficient
from sizing.paths import REFERENCE_DIR
from trialtable.features import (
    FEATURE_COST_COLUMNS,
    FEATURE_COSTS,
    INGRESS_NGINX,
    INGRESS_NGINX_NO_METRICS,
    MEASURED,
    REFERENCE_WITH,
)
from trialtable.fields import FieldError, printable
from trialtable.files import read_bounded
from trialtable.profile import feature_coefficient

#: The measured table.
FEATURE_COSTS_PATH = REFERENCE_DIR / "feature-costs.csv"
#: The largest table read [B] (15 rows need about 5 KB).
MAX_BYTES = 256 * 1024
#: Kernel work on the reference core = host kernel work x speed ratio ** this.
KERNEL_SPEED_EXPONENT = (
    0.5,
    "estimate: kernel work (TCP connection set-up, a log write) scaled by the square root of "
    "the host/reference speed ratio, anywhere from not at all (exponent 0) to fully (1): "
    "core speed moves system calls and interrupts less than compute",
)
#: A measured Lua or njs handler is minimal; a real one does more: its cost's extra sd.
HANDLER_REL_SD = (
    1.5,
    "estimate: the Lua and njs rows measure a minimal handler (one variable read or a fixed "
    "response); a real handler (a balancer choosing a peer, a log handler building a metric) "
    "runs tens of lines, so its cost has an extra sd of 1.5x the measured one",
)
#: The ingress_nginx rows (metrics on and off) run this project's own Lua doing the
#: controller's per-request work.
STAND_IN_REL_SD = (
    0.25,
    "estimate: the ingress_nginx rows run this project's own Lua doing the ingress-nginx "
    "controller's per-request work (runners.calibrate.ingress), not the controller's code "
    "(its round-robin library, plugins, version differences), so its cost has an extra sd "
    "of 25% of the measured one",
)
#: sd of a 95% interval's half-width.
Z95 = 1.959964


@dataclass(frozen=True)
class FeatureCost:
    """One measured feature, on the host that measured it [us per run].

    Attributes
    ----------
    reference : str
        The scenario the pairs compared against (``static`` or ``reverse_proxy``).
    user_us, kernel_us : float
        Median extra CPU time per run, user space and kernel.
    user_sd_us, kernel_sd_us : float
        Standard errors from the bootstrap 95% intervals (half-width / 1.96).
    ref_us : float
        The reference request's CPU time in the same pairs (user + kernel).
    source : str
        The table, its host and date.
    cpu_model : str
        The measuring host's CPU as recorded (with its CPUID where ``runners features``
        read one).
    """

    name: str
    reference: str
    file_bytes: int
    user_us: float
    kernel_us: float
    user_sd_us: float
    kernel_sd_us: float
    ref_us: float
    source: str
    cpu_model: str = ""


def _row(path: Path, line: int, raw: dict[str, str]) -> FeatureCost | None:
    if None in raw or any(v is None for v in raw.values()):
        raise InputError(f"{path}:{line}: wrong number of fields")
    try:
        v = FEATURE_COSTS.parse_row(raw, f"{path}:{line}")
    except FieldError as exc:
        raise InputError(printable(str(exc))) from None
    if v["status"] != MEASURED:
        return None
    need = ("user_us", "user_low_us", "user_high_us", "kernel_us", "kernel_low_us")
    missing = [n for n in (*need, "kernel_high_us", "ref_user_us", "ref_kernel_us") if v[n] is None]
    if missing or v["pairs"] < 2:
        raise InputError(f"{path}:{line}: a measured row needs 2+ pairs and {', '.join(missing)}")
    ref = v["ref_user_us"] + v["ref_kernel_us"]
    if not ref > 0:
        raise InputError(f"{path}:{line}: field 'ref_user_us': the reference costs nothing")
    return FeatureCost(
        name=v["feature"],
        reference=v["reference"],
        file_bytes=v["file_bytes"],
        user_us=v["user_us"],
        kernel_us=v["kernel_us"],
        user_sd_us=abs(v["user_high_us"] - v["user_low_us"]) / (2 * Z95),
        kernel_sd_us=abs(v["kernel_high_us"] - v["kernel_low_us"]) / (2 * Z95),
        ref_us=ref,
        source=f"{path.name} ({v['pairs']} pairs on {v['cpu_model']}, {v['nginx_version']}, "
        f"{v['measured_at']})",
        cpu_model=v["cpu_model"],
    )


def load_feature_costs(path: str | Path | None = None) -> dict[str, FeatureCost]:
    """The measured features of ``feature-costs.csv`` (or ``path``), validated.

    Rows marked not measured are left out. Raises `InputError` (one line naming the file,
    line and field) for a file that cannot be read, lacks a column or holds a bad value.
    """
    p = Path(path) if path is not None else FEATURE_COSTS_PATH
    try:
        text = read_bounded(p, MAX_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InputError(printable(f"{p}: cannot read the feature costs ({why})")) from None
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in FEATURE_COST_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise InputError(printable(f"{p}:1: missing column(s) {', '.join(missing)}"))
    out: dict[str, FeatureCost] = {}
    for i, raw in enumerate(reader, start=2):
        cost = _row(p, i, raw)
        if cost is not None:
            if cost.name in out:
                raise InputError(f"{p}:{i}: feature {cost.name!r} appears twice")
            out[cost.name] = cost
    return out


@cache
def shipped_feature_costs() -> dict[str, FeatureCost]:
    """The shipped table (empty when it is not shipped)."""
    if not FEATURE_COSTS_PATH.exists():
        return {}
    return load_feature_costs()


@dataclass(frozen=True)
class CoreCost:
    """A feature's cost on the reference core [us per run], user space and kernel apart."""

    user_us: float
    kernel_us: float
    sd_us: float
    speed_ratio: float


def on_reference_core(
    cost: FeatureCost, model_ref_us: float, compute: tuple[float, float] = (1.0, 0.0)
) -> CoreCost:
    """``cost`` on the reference core, given the cost model's reference request [us].

    The speed ratio is ``model_ref_us / cost.ref_us`` (reference-core us per host us); user
    work scales by it times ``compute[0]`` (the target platform's compute against the
    measuring host's, `sizing.model.compute.user_factor`, its relative sd ``compute[1]``), kernel
    work by it ** `KERNEL_SPEED_EXPONENT` (an estimate whose range, exponent 0 to 1, goes
    into the sd), a Lua or njs handler gets `HANDLER_REL_SD` and the ingress-nginx
    stand-ins `STAND_IN_REL_SD`.
    """
    s = model_ref_us / cost.ref_us
    k, k_sd = compute
    user = cost.user_us * s * k
    kernel = cost.kernel_us * s ** KERNEL_SPEED_EXPONENT[0]
    exponent_sd = abs(cost.kernel_us) * abs(s - 1.0) / (2 * Z95)
    parts = [cost.user_sd_us * s * k, cost.kernel_sd_us * s ** KERNEL_SPEED_EXPONENT[0]]
    parts += [exponent_sd, abs(user) * k_sd]
    if cost.name.startswith(("lua_", "njs_")):
        parts.append(HANDLER_REL_SD[0] * abs(user + kernel))
    elif cost.name in (INGRESS_NGINX, INGRESS_NGINX_NO_METRICS):
        parts.append(STAND_IN_REL_SD[0] * abs(user + kernel))
    return CoreCost(user, kernel, math.hypot(*parts), s)


def reference_us(
    cost: FeatureCost, model_ref_us: Callable[[str, int], float], table: Mapping[str, FeatureCost]
) -> float:
    """The cost model's price of the request ``cost``'s pairs measured it against [us].

    The scenario's reference request, plus the features that reference ran with
    (`trialtable.features.REFERENCE_WITH`), each on the reference core.
    """
    base = model_ref_us(cost.reference, cost.file_bytes)
    extra = 0.0
    for name in REFERENCE_WITH.get(cost.name, ()):
        if (under := table.get(name)) is not None:
            core = on_reference_core(under, model_ref_us(under.reference, under.file_bytes))
            extra += core.user_us + core.kernel_us
    return base + extra


def behind_proxy(cost: FeatureCost, keepalive: FeatureCost | None) -> FeatureCost:
    """A ``proxy_*`` feature's cost for a workload whose scenario already proxies.

    Such a scenario already pays for a kept-alive proxy (``proxy_request_us``): a proxy
    feature measured against the static config costs only its difference to
    ``proxy_keepalive`` (zero for ``proxy_keepalive`` itself), with both spreads.
    """
    if keepalive is None or not cost.name.startswith("proxy_") or cost.reference != "static":
        return cost
    return replace(
        cost,
        user_us=cost.user_us - keepalive.user_us,
        kernel_us=cost.kernel_us - keepalive.kernel_us,
        user_sd_us=math.hypot(cost.user_sd_us, keepalive.user_sd_us),
        kernel_sd_us=math.hypot(cost.kernel_sd_us, keepalive.kernel_sd_us),
        source=f"{cost.source}, minus proxy_keepalive (the scenario already proxies)",
    )


def feature_coefficients(
    features: Mapping[str, float],
    model_ref_us: Callable[[str, int], float],
    table: Mapping[str, FeatureCost] | None = None,
    proxied: bool = False,
    compute: Callable[[FeatureCost], tuple[float, float, str]] | None = None,
) -> tuple[dict[str, Coefficient], dict[str, float], list[str]]:
    """Reference-core coefficients of the measured ``features``.

    Parameters
    ----------
    features : mapping of str to float
        Feature name -> times per request.
    model_ref_us : callable
        (scenario, body bytes) -> the cost model's CPU time of that reference request on the
        reference core [us].
    table : mapping, optional
        The measured costs (default: the shipped table).
    proxied : bool
        The workload's scenario already proxies (`behind_proxy`).
    compute : callable, optional
        A measured cost -> the factor on its user-space work for the target platform, the
        factor's relative sd and why (`sizing.model.compute.user_factor`); none: 1.

    Returns
    -------
    coefficients : dict
        Coefficient name -> `Coefficient` for each measured feature.
    user_share : dict
        Coefficient name -> the user-space part of its value [0, 1].
    unmeasured : list of str
        Features with no measured cost here (each widens the range like an uncosted one).
    """
    table = shipped_feature_costs() if table is None else table
    coefs: dict[str, Coefficient] = {}
    user_share: dict[str, float] = {}
    unmeasured: list[str] = []
    for name in features:
        cost = table.get(name)
        key = feature_coefficient(name)
        if proxied and name == "proxy_keepalive":
            why = "proxy_keepalive: already priced by the proxying scenario (proxy_request_us)"
            coefs[key] = Coefficient(key, 0.0, 0.0, "us/request", "none", why)
            continue
        if cost is None:
            unmeasured.append(name)
            continue
        if proxied:
            cost = behind_proxy(cost, table.get("proxy_keepalive"))
        k, k_sd, why = compute(cost) if compute is not None else (1.0, 0.0, "")
        core = on_reference_core(cost, reference_us(cost, model_ref_us, table), (k, k_sd))
        coefs[key] = _coefficient(key, cost, core, why)
        total = abs(core.user_us) + abs(core.kernel_us)
        user_share[key] = abs(core.user_us) / total if total > 0 else 0.0
    return coefs, user_share, unmeasured


def _coefficient(key: str, cost: FeatureCost, core: CoreCost, compute_why: str) -> Coefficient:
    """The model's coefficient of one measured feature, with where its value comes from."""
    return Coefficient(
        key,
        core.user_us + core.kernel_us,
        core.sd_us,
        "us/request",
        "loopback",
        f"{cost.name}: {cost.user_us:.2f} us user + {cost.kernel_us:.2f} us kernel per request "
        f"measured vs the {cost.reference} config in {cost.source}; x{core.speed_ratio:.2f} "
        f"to the reference core (the cost model's {cost.reference} request over the "
        f"measured one), kernel x{core.speed_ratio ** KERNEL_SPEED_EXPONENT[0]:.2f} "
        f"({KERNEL_SPEED_EXPONENT[1]})" + (f"; {compute_why}" if compute_why else ""),
    )

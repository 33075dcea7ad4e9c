"""Capacity of one instance type for one workload, with what it rests on: the pure model.

::

    cpu_us      = CPU time of one worker per request (`sizing.model.costmodel`), on the reference
                  core, or from a measured CPU profile of the instance's platform
    per_worker  = 1e6 x vCPU speed (`sizing.model.platforms`) / cpu_us
    cpu_peak    = vCPUs x scaling_efficiency(vCPUs) x per_worker
    capacity    = min( cpu_peak x SLA utilization,  network Gbps / bytes on the wire per response )

Measured evidence (runs) is applied to this model from outside (`sizing.evidence.measured`), through
the `Evidence` protocol below; this module imports neither pandas nor scipy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cache, lru_cache, partial
from itertools import pairwise
from typing import TYPE_CHECKING, Any, Protocol

from sizing.catalog.load import Instance
from sizing.catalog.providers import estimates as provider_estimates
from sizing.catalog.providers import names as provider_names
from sizing.catalog.providers import provider_of
from sizing.errors import InputError
from sizing.model import costmodel
from sizing.model.costmodel import (
    MSS_BYTES,
    SEED_LINK_GBPS,
    TLS_RECORD_BYTES,
    Coefficient,
    CostProfile,
    cpu_us_per_request,
    current_stack_coefficients,
    reference_profile,
    scaling_efficiency,
)
from sizing.model.inputs import POINT, ModelInputs
from sizing.model.platforms import Platform, ht_nginx, platform_by_text, platform_of
from sizing.model.ports import time_wait_cap
from sizing.workload.value import PROTOCOLS, SCENARIOS, Workload
from trialtable.profile import PROXIED

if TYPE_CHECKING:
    from sizing.model.cloud import CloudModel
    from sizing.model.crypto import Figure
    from sizing.model.features import FeatureCost

__all__ = [
    "ESTIMATES",
    "LARGE_SCALING",
    "MSS_BYTES",
    "PROTOCOLS",
    "REFERENCE_LINK_GBPS",
    "SCENARIOS",
    "TLS_RECORD_BYTES",
    "Capacity",
    "Evidence",
    "Workload",
    "bytes_per_response",
    "instance_capacities",
    "instance_capacity",
    "model_capacities",
    "model_capacity",
    "network_gbps",
    "sla_utilization",
]

REFERENCE_LINK_GBPS = SEED_LINK_GBPS

#: Model constants that are estimates, each with its reasoning (printed with the answer).
ESTIMATES: dict[str, tuple[float, str]] = {
    "base_latency_ms": (
        0.5,
        "p99 of everything but NGINX's queue (network round trip in one zone, client and "
        "kernel stacks): 0.5 ms",
    ),
    **costmodel.ESTIMATES,
    **provider_estimates(),
}


@dataclass
class Capacity:
    """Capacity of one instance for one workload and the constraint that binds.

    Attributes
    ----------
    capacity_rps : float
        Requests per second under the SLA, network cap included [1/s].
    cpu_peak_rps, cpu_sla_rps, network_rps : float
        CPU peak, CPU under the SLA, and the cap outside the CPU [1/s]: the network's
        bandwidth or packet rate, or a container's log path (``outside`` names which).
    rel_sd : float
        Log-normal sd of the CPU capacity.
    cpu_us_per_request : float
        CPU time of one worker per request [us].
    platform : Platform or None
        The CPU platform used.
    """

    instance: Instance
    capacity_rps: float
    cpu_peak_rps: float
    cpu_sla_rps: float
    network_rps: float
    max_utilization: float
    binding_constraint: str
    factor: float
    factor_low: float
    factor_high: float
    basis: list[str] = field(default_factory=list)
    rel_sd: float = 0.0
    measured: str = ""
    cpu_us_per_request: float = math.nan
    platform: Platform | None = None
    profile: str = ""
    network_gbps: float = math.nan
    outside: str = "network"

    def quantile(self, p: float) -> float:
        """Capacity [1/s] at probability ``p``: log-normal CPU capacity, network capped."""
        return min(self.cpu_sla_rps * math.exp(_normal_quantile(p) * self.rel_sd), self.network_rps)

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Central ``level`` interval of the capacity [1/s]."""
        return self.quantile(0.5 - level / 2), self.quantile(0.5 + level / 2)


def binding(cpu_sla_rps: float, outside_rps: float, outside: str = "network") -> str:
    """The constraint that binds: ``latency`` (no load meets the SLA), ``outside`` or ``cpu``."""
    if cpu_sla_rps <= 0:
        return "latency"
    return outside if outside_rps < cpu_sla_rps else "cpu"


class Evidence(Protocol):
    """Measurements applied to the model's capacity from outside (`sizing.evidence.measured`)."""

    def apply(self, cap: Capacity, work: Workload) -> Capacity:
        """The capacity with the evidence applied (or ``cap`` unchanged)."""
        ...


@cache
def _normal_quantile(p: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(p)


# ----------------------------------------------------------------------------- limits


def bytes_per_response(file_bytes: float, protocol: str) -> float:
    """Bytes on the wire per response, headers and framing included [B] (an estimate)."""
    return costmodel.wire_bytes(file_bytes, protocol == "https")


def _wire_per_request(work: Workload) -> float:
    ratio = costmodel.gzip_ratio(work)
    return sum(
        w * bytes_per_response(s * (1 - work.gzip) + s * work.gzip * ratio, work.protocol)
        for s, w in work.sizes
    )


#: Bytes on the wire per request, the size mix and gzip applied [B] (an estimate).
wire_bytes_per_request = _wire_per_request

#: Packets per second, in and out together, a virtual NIC of `PACKET_RATE_GBPS` passes [1/s].
PACKET_RATE = (
    2.2e6,
    "published: 2.2M packets per second, received and sent together, the budget measured on "
    "m5.24xlarge and m5.metal, 25 Gbps (Stressgrid, 'Packets-per-second limits in EC2', 2019); "
    "taken as the ceiling of every cloud instance up to 25 Gbps and as growing with the "
    "bandwidth above it (an estimate: network-optimised NICs pass more)",
)
#: The bandwidth of the instances `PACKET_RATE` was measured on [Gbit/s].
PACKET_RATE_GBPS = 25.0


#: Workers' worth per worker past the seed's 36, relative to 36 (a stand-in's scaling, an
#: estimate for NGINX): vCPUs -> (factor, log sd across instance families).
LARGE_SCALING = (
    {64: (0.88, 0.09), 96: (0.76, 0.20)},
    "estimate from a stand-in: Spare Cores' static_web runs (binserve serving 1 KiB, wrk on "
    "the same VM; data/cloud/measurements.csv), the server's CPU time per request at 64 and 96 "
    "vCPUs against the same family's 32-48 vCPU size, median of 82 and 76 x86 families (log sd "
    "across them 0.09, 0.20). NGINX past 36 workers is unpublished; held at the 96-vCPU value "
    "above it (the stand-in's 128-192 vCPU sizes spread x2-x4 across families and every "
    "Graviton falls x10 from 48 vCPUs: its harness, not a server)",
)


def large_scaling(vcpus: int) -> tuple[float, float]:
    """Efficiency factor past `costmodel.SEED_MAX_WORKERS` and its log sd [1] (`LARGE_SCALING`).

    1 up to 36 workers; between the table's points linear in log2(vCPUs) from (36, 1, 0);
    held at the largest point above it.
    """
    points = [(float(costmodel.SEED_MAX_WORKERS), 1.0, 0.0)]
    points += [(float(n), f, sd) for n, (f, sd) in sorted(LARGE_SCALING[0].items())]
    if vcpus <= points[0][0]:
        return 1.0, 0.0
    for (n0, f0, s0), (n1, f1, s1) in pairwise(points):
        if vcpus <= n1:
            t = math.log2(vcpus / n0) / math.log2(n1 / n0)
            return f0 + t * (f1 - f0), s0 + t * (s1 - s0)
    return points[-1][1], points[-1][2]


def packets_per_request(work: Workload) -> float:
    """Packets on the server's NIC per request, both directions [1] (an estimate).

    Each request counts the request, the server's ACK of it, the response's
    ``n = ceil(bytes / MSS)`` segments and the delayed ACKs (one per two segments):
    ``2 + n + ceil(n / 2)``, 4 for a response of one segment (Stressgrid's count, which its
    packet budget was measured with); weighted over the size mix. A client connection's
    handshake and teardown (`costmodel.connection_packets`) add their share per request
    (none when connections are kept alive for good). A proxy's upstream exchange is not
    counted against the budget: counted, it would cap a 16-vCPU c6gn proxy at 275,000
    requests a second and put seed 002's published c7gn / c6gn proxy ratios (1.52-1.68, and
    1.06-1.17 per dollar) at 2.00 and 1.38 (`benchmarks/bench_fidelity.py`, part 3). With
    ``tcp_nopush`` off (the ``tcp_nopush_off`` feature) the header leaves in a segment of its
    own before the file: one packet more for each response it applies to.
    """
    ratio = costmodel.gzip_ratio(work)
    per_conn = costmodel.connection_packets(work.protocol == "https") * work.connections_per_request
    total = 0.0
    for s, w in work.sizes:
        wire = bytes_per_response(s * (1 - work.gzip) + s * work.gzip * ratio, work.protocol)
        total += w * (_exchange_packets(wire) + per_conn)
    return total + work.feature("tcp_nopush_off")


def _exchange_packets(wire_bytes: float) -> float:
    """One request and its response on the wire: ``2 + n + ceil(n / 2)`` packets [1]."""
    n = max(1, math.ceil(wire_bytes / MSS_BYTES))
    return float(2 + n + math.ceil(n / 2))


SERVICE_CV2 = (
    0.25,
    "estimate: the CPU time of one request of one size varies with a squared coefficient of "
    "variation of about 0.25 (cache misses, interrupts, timers); a size mix adds its own",
)


def sla_utilization(
    per_worker_rps: float,
    sla_p99_ms: float,
    service_cv2: float = -1.0,
    base_latency_ms: float | None = None,
) -> float:
    """Highest utilization at which p99 stays under the SLA, one M/G/1 queue per worker.

    Each worker serves its share of requests with mean service time ``S = 1/mu``. The waiting
    time of M/G/1 has an approximately exponential tail (Kingman) with mean
    ``rho S (1 + cv2) / (2 (1 - rho))`` and ``P(wait > 0) = rho``, so
    ``p99 = base + S + S (1 + cv2) / 2 * ln(100 rho) / (1 - rho)`` (the wait term is 0 while
    ``rho <= 0.01``). The largest ``rho`` meeting the SLA is found by bisection (0 when even
    an idle worker misses it).

    Parameters
    ----------
    per_worker_rps : float
        Peak rate of one worker [1/s].
    sla_p99_ms : float
        SLA [ms].
    service_cv2 : float
        Squared coefficient of variation of the service time [1]; negative: `SERVICE_CV2`.
    base_latency_ms : float, optional
        p99 outside NGINX's queue [ms]; default ``ESTIMATES["base_latency_ms"]``.
    """
    cv2 = SERVICE_CV2[0] if service_cv2 < 0 else service_cv2
    base = ESTIMATES["base_latency_ms"][0] if base_latency_ms is None else base_latency_ms
    if per_worker_rps <= 0:
        return 0.0
    s_ms = 1000.0 / per_worker_rps
    budget = sla_p99_ms - base - s_ms
    if budget <= 0:
        return 0.0

    # p99 wait at rho: scale * max(ln(100 rho), 0) / (1 - rho), infinite at rho >= 1 (a
    # saturated queue); inlined in the loop, which runs once per platform and vCPU count.
    scale = s_ms * (1.0 + cv2) / 2.0
    log = math.log
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        wait = scale * max(log(100.0 * mid), 0.0) / (1.0 - mid) if mid < 1.0 else math.inf
        if wait <= budget:
            lo = mid
        else:
            hi = mid
    return lo


#: `sla_utilization` of arguments seen before in this process, kept: a ``--region all``
#: answer asks it about 850 times for some 280 distinct arguments (floats in, a float out).
_sla_utilization_kept = lru_cache(maxsize=4096, typed=True)(sla_utilization)


def service_cv2(work: Workload, terms_by_size: Sequence[tuple[float, float]]) -> float:
    """Service-time cv^2 of a workload: the per-request estimate plus its size mix's spread."""
    mean = sum(w * t for w, t in terms_by_size)
    var = sum(w * (t - mean) ** 2 for w, t in terms_by_size)
    return SERVICE_CV2[0] + (var / mean**2 if mean > 0 else 0.0)


def network_gbps(inst: Instance, work: Workload) -> tuple[float, str]:
    """The bandwidth that caps this instance for this workload [Gbit/s], and why.

    Each provider's rules live in its module (`sizing.catalog.providers`).
    """
    result: tuple[float, str] = provider_of(inst).network_gbps(inst, work)
    return result


# ----------------------------------------------------------------------------- cloud model

#: Share of bytes gzip-compressed from which a workload is compute-bound (CoreMark speeds).
GZIP_BOUND = 0.5
#: Speeds were measured on static serving; a handshake- or proxy-bound workload carries them
#: with this extra log-scale sd.
CARRIED_CLASS_SD = (
    0.10,
    "estimate: platform speeds fitted on static serving carried to TLS handshakes and "
    "proxying (1 sd 10%, log scale)",
)


@cache
def cloud_model() -> CloudModel | None:
    """The precomputed cloud model (`sizing.fitting.cloudfit`), or None when not shipped."""
    from sizing.model.cloud import load_cloud_model

    return load_cloud_model()


def cloud_speed(plat: Platform, tpc: int, work: Workload) -> tuple[float, float, str] | None:
    """Per-vCPU speed [reference cores], its log-scale sd and its source, from the cloud model.

    Fitted where published measurements place the platform; otherwise CoreMark calibrated
    to them (a labelled fallback); an unknown CPU gets a conservative speed and a wide range
    (`sizing.fitting.cloudfit.speed_for`). None when no cloud model is shipped.
    """
    cm = cloud_model()
    if cm is None:
        return None
    from sizing.model.cloud import speed_for, workload_class

    cls = workload_class(work.file_bytes)
    carried = work.scenario != "static" or (
        work.protocol == "https" and math.isfinite(work.requests_per_connection)
    )
    extra = CARRIED_CLASS_SD[0] if carried else 0.0
    known_cpu = not plat.platform_id.endswith("-default")
    speed, sd, kind, why = speed_for(cm, plat.platform_id, tpc, cls, known_cpu)
    sd = cm.speed_sd(sd, cls, work.environment)
    within = cm.within_sd.get(cls, 0.0)
    spread = math.hypot(cm.spread(cls), extra)
    vcpu = "a whole core" if tpc == 1 else "a hyper-thread"
    return (
        speed,
        math.hypot(sd, spread),
        f"platform {plat.name} ({plat.matched_by}), a vCPU is {vcpu}: {speed:.2f} reference "
        f"cores per vCPU for {cls.replace('_', ' ')} ({kind}, +-{sd:.0%}): {why}; "
        f"instance-to-instance scatter {within:.2f} and disagreement between sources "
        f"{cm.between_source_sd:.2f} (log sd)" + (f"; {CARRIED_CLASS_SD[1]}" if carried else ""),
    )


def environment_profile(prof: CostProfile, work: Workload, relative_to: str = "") -> CostProfile:
    """``prof`` with the environment's per-request and per-packet terms as coefficients.

    ``relative_to`` names the environment ``prof`` was itself measured in (a profile from
    `runners calibrate` on a VM): only the difference is added. Bare metal adds nothing.
    """
    cm = cloud_model()
    if cm is None or (work.environment == "bare-metal" and not relative_to):
        return prof
    env = cm.environments[work.environment]
    base = cm.environments[relative_to] if relative_to else None
    req = env.request_us - (base.request_us if base else 0.0)
    pkt = env.packet_us - (base.packet_us if base else 0.0)
    if req == 0 and pkt == 0:
        return prof
    what = f"{work.environment}" + (f" minus {relative_to} (the profile's own)" if base else "")
    coefs = dict(prof.coefficients)
    coefs["env_request_us"] = Coefficient(
        "env_request_us", req, env.request_stderr, "us/request", "nic", f"{what}: {env.source}"
    )
    coefs["env_packet_us"] = Coefficient(
        "env_packet_us", pkt, env.packet_stderr, "us/packet", "nic", f"{what}: {env.source}"
    )
    return replace(prof, coefficients=coefs)


def jwt_profile(
    prof: CostProfile, plat: Platform, work: Workload, core_speed: float
) -> CostProfile:
    """``prof`` with the JWT check's cost, on the reference core's scale, for ``plat``."""
    if work.jwt == "none" or work.scenario == "static":
        return prof
    from sizing.model import crypto

    figures = _crypto_figures()
    d = crypto.jwt_verify_us(
        figures,
        plat.platform_id
        if plat.platform_id in crypto.ARCH
        else ("ice_lake" if plat.arch == "x86_64" else "graviton3"),
        work.jwt.upper(),
        core_speed=core_speed,
    )
    coefs = dict(prof.coefficients)
    coefs["jwt_verify_us"] = Coefficient(
        "jwt_verify_us",
        d.value * core_speed,
        d.value * core_speed * d.rse,
        "us/request",
        "none",
        f"{work.jwt.upper()} check on {plat.name}: {d.value:.0f} us per core (+-{d.rse:.0%}): "
        f"{d.source}",
    )
    return replace(prof, coefficients=coefs)


#: A hyper-thread's gain for user-space feature work (Lua, njs, a proxy's parsing).
HT_USER_GAIN = (
    1.5,
    'seed 004 (NGINX, web server performance by CPU count): "hyper-threading improved SSL '
    "TPS by about 50%\", user-space compute; used for the user-space share of the request's "
    "feature work (the issue's ingress-controller Lua work gains about x1.6)",
)


@cache
def reference_request_us(scenario: str, file_bytes: int, model: ModelInputs = POINT) -> float:
    """The cost model's CPU time of a reference request on the reference core [us].

    Plain HTTP, connections kept alive, ``file_bytes`` B, no network or environment terms:
    the request ``runners features`` measures in the same pairs as each feature; the
    coefficients as ``model`` moves them.
    """
    work = Workload(
        scenario=scenario, protocol="http", file_bytes=file_bytes, requests_per_connection=math.inf
    )
    return cpu_us_per_request(work, current_stack(reference_profile(), model), over_nic=False).us


def features_profile(
    prof: CostProfile,
    work: Workload,
    model: ModelInputs = POINT,
    target: tuple[Platform, float] | None = None,
) -> tuple[CostProfile, dict[str, float]]:
    """``prof`` with the workload's measured configuration features, on the reference core.

    Returns the profile and each feature coefficient's user-space share (for the thread
    gain). A feature without a measured cost is left out (`cpu_us_per_request` widens the
    range for it). Features cost relative to the reference request as ``model`` moves it;
    with a ``target`` (the platform and its static speed per core [reference cores]) their
    user-space work is carried by compute speed (`sizing.model.compute.user_factor`).
    """
    if not work.features:
        return prof, {}
    from sizing.model.features import feature_coefficients

    coefs, share, _ = feature_coefficients(
        dict(work.features),
        partial(reference_request_us, model=model),
        table=feature_table(),
        proxied=work.scenario in PROXIED,
        compute=None if target is None else partial(_compute_factor, target, work, model),
    )
    return replace(prof, coefficients={**prof.coefficients, **coefs}), share


def feature_table() -> dict[str, FeatureCost]:
    """The shipped feature costs, ``access_log_container`` with the runtime's CPU per line."""
    from sizing.model.features import shipped_feature_costs
    from sizing.model.logpath import shipped_log_path, with_runtime
    from trialtable.logpath import CONTAINER_LOG

    table = dict(shipped_feature_costs())
    if CONTAINER_LOG in table:
        table[CONTAINER_LOG] = with_runtime(table[CONTAINER_LOG], shipped_log_path())
    return table


def container_log_cap(work: Workload, speed: float, model: ModelInputs) -> tuple[float, str]:
    """The cap [RPS] a container's log path sets at ``speed`` per vCPU, and its line.

    ``inf`` and no line when the workload does not log to a container's stdout or nothing
    measured the path (`sizing.model.logpath`).
    """
    from sizing.model.features import shipped_feature_costs
    from sizing.model.logpath import log_cap, shipped_log_path
    from trialtable.logpath import CONTAINER_LOG

    lines = work.feature(CONTAINER_LOG)
    cost, lp = shipped_feature_costs().get(CONTAINER_LOG), shipped_log_path()
    if lines <= 0 or cost is None or lp is None:
        return math.inf, ""
    ratio = reference_request_us(cost.reference, cost.file_bytes, model) / cost.ref_us
    return log_cap(lp, ratio, speed, lines)


def static_thread_gain(tpc: int, fitted: bool) -> float:
    """A core's second thread's gain for small static requests; 1 with one thread per core.

    The cloud model's fitted gain where the platform's speed is fitted, else `ht_nginx`'s.
    """
    if tpc != 2:
        return 1.0
    cm = cloud_model()
    return float(cm.smt_gain["small_static"][0]) if fitted and cm is not None else ht_nginx()[0]


def thread_gain(
    cost: costmodel.Cost, user_share: dict[str, float], base_gain: float
) -> tuple[float, str]:
    """A hyper-thread's speed factor for this request's feature work, and why.

    The platform's gain ``base_gain`` is fitted to small static requests; the user-space share
    ``u`` of the request's feature work gains `HT_USER_GAIN` instead, so the vCPU's speed
    grows by ``(base + (HT_USER_GAIN - base) * u) / base``. 1 without features.
    """
    u = sum(cost.terms.get(k, 0.0) * f for k, f in user_share.items()) / cost.us
    u = min(max(u, 0.0), 1.0)
    if u <= 0 or HT_USER_GAIN[0] <= base_gain:
        return 1.0, ""
    gain = base_gain + (HT_USER_GAIN[0] - base_gain) * u
    return gain / base_gain, (
        f"a hyper-thread gains x{gain:.2f} from its sibling for this request (x{base_gain:.2f} "
        f"for static work, x{HT_USER_GAIN[0]:g} for the {u:.0%} of its CPU time that is "
        f"user-space feature work: {HT_USER_GAIN[1]})"
    )


def crypto_profile(prof: CostProfile, plat: Platform, core: float) -> CostProfile:
    """``prof`` with full-handshake costs from current OpenSSL figures for ``plat``.

    `sizing.model.crypto.handshake_full_us` gives one full handshake's server CPU on one core
    of the platform (a signature, a key agreement and a fixed part); multiplied by the core's
    speed ``core`` [reference cores] it is on the reference core's scale, so dividing by a
    vCPU's speed later gives the vCPU's cost (a hyper-thread's share included).
    """
    from sizing.model import crypto

    pid = (
        plat.platform_id
        if plat.platform_id in crypto.ARCH
        else ("ice_lake" if plat.arch == "x86_64" else "graviton3")
    )
    coefs = dict(prof.coefficients)
    for name, key in (
        ("handshake_full_rsa2048_us", "rsa2048"),
        ("handshake_full_ecdsa_p256_us", "ecdsa_p256"),
    ):
        try:
            d = crypto.handshake_full_us(_crypto_figures(), pid, key, core_speed=core)
        except InputError:
            continue
        value = d.value * core
        coefs[name] = Coefficient(
            name,
            value,
            value * d.rse,
            "us/handshake",
            "none",
            f"current OpenSSL on {plat.name}: {d.value:.0f} us per core (+-{d.rse:.0%}), "
            f"x{core:.2f} reference cores per core: {d.source}",
        )
    return replace(prof, coefficients=coefs)


@cache
def _crypto_figures() -> list[Figure]:
    from sizing.model import crypto

    return crypto.load_figures()


# ----------------------------------------------------------------------------- the model


def _scaled(prof: CostProfile, factor: float, name: str) -> CostProfile:
    """A profile with every coefficient multiplied by ``factor`` (speed conversion)."""
    coefs = {
        k: replace(c, value=c.value * factor, stderr=c.stderr * factor)
        for k, c in prof.coefficients.items()
    }
    return replace(prof, name=name, coefficients=coefs)


THREAD_SHARE_SD = (
    0.10,
    "estimate: a profile measured on hyper-threads and used on whole-core vCPUs (or the "
    "reverse) is converted by the thread gain fitted on one seed-000 ratio, taken to hold "
    "within 10% (1 sd, log scale) on another platform",
)
OPENSSL_HANDSHAKE_FACTOR = (
    0.5,
    0.33,
    1.0,
    "seed 004 (Miscellaneous Notes, claim 004-openssl-102-vs-101; an input): OpenSSL 1.0.2 "
    "gave about 2x over the 1.0.1f the tables used (its optimised P-256 and RSA code); every "
    "current distribution ships a later OpenSSL, so full handshakes on the reference cost "
    "x0.5 (0.33-1.0)",
)
HANDSHAKES = ("handshake_full_rsa2048_us", "handshake_full_ecdsa_p256_us")


def current_stack(ref: CostProfile, model: ModelInputs = POINT) -> CostProfile:
    """The reference with its 2015 build's crypto moved to a current one.

    Full handshakes x`OPENSSL_HANDSHAKE_FACTOR`; TLS's per-byte cost as the project's runs
    measured it on nginx 1.22 and OpenSSL 3.0 (``current_stack`` of ``cost-model.json``,
    `sizing.fitting.runcosts.tls_byte_current`), where the precomputed model holds it.
    """
    f, lo, hi, why = OPENSSL_HANDSHAKE_FACTOR
    rel = max(math.log(hi / f), math.log(f / lo)) / 1.96
    coefs = model.coefficients_of(dict(ref.coefficients) | current_stack_coefficients())
    for name in HANDSHAKES:
        c = coefs[name]
        value = c.value * f
        coefs[name] = replace(
            c,
            value=value,
            stderr=value * math.sqrt(c.rel_sd**2 + rel**2),
            source=f"{c.source}; x{f:g} for a current OpenSSL: {why}",
        )
    return replace(ref, coefficients=coefs)


def profile_platform(prof: CostProfile) -> Platform:
    """The platform a profile's ``cpu_model`` names (arch default if unknown)."""
    return platform_by_text(prof.cpu_model, prof.arch, prof.cpuid)


def _matching_profile(plat: Platform, profiles: Sequence[CostProfile]) -> CostProfile | None:
    for p in profiles:
        if profile_platform(p).platform_id == plat.platform_id:
            return p
    return None


def model_capacity(
    inst: Instance, work: Workload, profiles: Sequence[CostProfile] = (), over_nic: bool = True
) -> Capacity:
    """Capacity of one instance under the SLA from the cost model alone.

    Parameters
    ----------
    inst : Instance
        The instance type.
    work : Workload
        What it serves.
    profiles : sequence of CostProfile
        Measured CPU profiles; one whose ``cpu_model`` maps to the instance's platform gives
        the coefficients (missing ones from the reference, speed-scaled).
    over_nic : bool
        The instance answers over a NIC (False: over loopback, as a calibration host's own
        load generator; see benchmarks/bench_calibrate.py).
    """
    return model_capacities([inst], work, profiles, over_nic)[0]


@dataclass
class _CpuPart:
    """What a capacity shares with every instance of the same platform and provider kind."""

    plat: Platform
    speed: float
    speed_sd: float
    cost: costmodel.Cost
    sigma: float
    sigma_sd: float
    cv2: float
    per_vcpu: float
    head: list[str]
    notes: list[str]
    profile: str
    log_cap: tuple[float, str] = (math.inf, "")
    #: What a core's second thread adds for this request (1: one thread per core).
    gain: float = 1.0


@dataclass
class _Speed:
    """Where a platform's speed and CPU-time basis come from: a profile, a fit or CoreMark."""

    speed: float
    speed_sd: float
    line: str
    fallback: CostProfile | None
    sigma: float
    sigma_sd: float
    used: CostProfile
    notes: list[str]


def _core_speed(
    plat: Platform, work: Workload, model: ModelInputs
) -> tuple[tuple[float, float, str] | None, float, float]:
    """Fitted cloud speed (None if none or gzip-bound), base thread gain, speed per core."""
    tpc = plat.threads_per_core
    # On-the-fly gzip is user-space compute, which no static-serving measurement places:
    # a gzip-bound workload keeps the CoreMark speeds (and the thread gain fitted for them).
    gzip_bound = work.gzip >= GZIP_BOUND
    fitted = None if gzip_bound else model.cloud_speed(plat, cloud_speed(plat, tpc, work))
    core = fitted[0] if fitted else plat.vcpu_speed(tpc)
    base_gain = static_thread_gain(tpc, fitted is not None)
    core *= 2.0 / base_gain if tpc == 2 else 1.0
    return fitted, base_gain, core


def _compute_factor(
    target: tuple[Platform, float], work: Workload, model: ModelInputs, cost: FeatureCost
) -> tuple[float, float, str]:
    """`sizing.model.compute.user_factor` of ``target`` against the host that measured ``cost``."""
    from sizing.model.compute import user_factor

    return user_factor(target, _host_speed(cost.cpu_model, work, model))


@lru_cache(maxsize=256)
def _host_speed(cpu_model: str, work: Workload, model: ModelInputs) -> tuple[Platform, float]:
    """The platform of the host a feature was measured on and its static speed per core.

    Kept per host, workload and model inputs: every platform of an answer asks it of every
    feature, and the rows of a measured table share one host.
    """
    from sizing.model.compute import host_platform

    host = model.platform(host_platform(cpu_model))
    return host, _core_speed(host, work, model)[2]


def _reference(
    plat: Platform, work: Workload, model: ModelInputs
) -> tuple[tuple[float, float, str] | None, float, CostProfile, dict[str, float]]:
    """Fitted cloud speed (None if none or gzip-bound), base thread gain, reference, user share."""
    fitted, base_gain, core = _core_speed(plat, work, model)
    ref = jwt_profile(current_stack(reference_profile(), model), plat, work, core)
    ref, user_share = features_profile(ref, work, model, (plat, core))
    if work.protocol == "https" and math.isfinite(work.requests_per_connection):
        ref = crypto_profile(ref, plat, core)
    return fitted, base_gain, ref, user_share


def _profile_speed(
    plat: Platform, work: Workload, model: ModelInputs, prof: CostProfile, ref: CostProfile
) -> _Speed:
    """Speed from a measured profile, converted to this instance's vCPU."""
    tpc = plat.threads_per_core
    # One worker of the profile = one vCPU of its host; convert to this instance's vCPU.
    host_tpc = prof.threads_per_core or tpc
    ht = ht_nginx()[0]
    share = {(2, 1): 2.0 / ht, (1, 2): ht / 2.0}.get((host_tpc, tpc), 1.0)
    speed = share
    speed_sd = 0.0 if share == 1.0 else THREAD_SHARE_SD[0]
    host_speed = model.cloud_speed(plat, cloud_speed(plat, host_tpc, work))
    ref_speed = host_speed[0] if host_speed else plat.vcpu_speed(host_tpc)
    # A profile from `runners calibrate` measured a VM: only the difference between the
    # target environment and a VM's is added.
    fallback = _scaled(
        environment_profile(ref, work, relative_to="vm"),
        1.0 / ref_speed,
        f"reference / {ref_speed:.2f} ({plat.name})",
    )
    speed_line = (
        f"profile {prof.name} ({prof.cpu_model}, measured over {prof.measured_over}; "
        f"{prof.source})"
        + (
            f"; x{share:.2f} for {tpc} thread(s) per core vs {host_tpc} ({THREAD_SHARE_SD[1]})"
            if share != 1
            else ""
        )
    )
    return _Speed(speed, speed_sd, speed_line, fallback, prof.sigma, prof.sigma_stderr, prof, [])


def _platform_speed(
    plat: Platform, work: Workload, fitted: tuple[float, float, str] | None, ref: CostProfile
) -> _Speed:
    """Speed from the published cloud fit, or else from CoreMark."""
    tpc = plat.threads_per_core
    gzip_bound = work.gzip >= GZIP_BOUND
    notes: list[str] = []
    if fitted is not None:
        speed, speed_sd, speed_line = fitted
        fallback = None
        sigma, sigma_sd = ref.sigma, ref.sigma_stderr
        used = environment_profile(ref, work)
    else:
        speed = plat.vcpu_speed(tpc)
        speed_sd = plat.rel_sd
        fallback = None
        sigma, sigma_sd = ref.sigma, ref.sigma_stderr
        used = environment_profile(ref, work)
        if gzip_bound:
            notes.append(
                f"gzip on {work.gzip:.0%} of bytes: the CPU speed is CoreMark's (compute), not "
                "the static-serving speeds fitted to published cloud measurements"
            )
        vcpu_kind = "a whole core" if tpc == 1 else f"a hyper-thread ({ht_nginx()[1]})"
        speed_line = (
            f"platform {plat.name} ({plat.matched_by}): {plat.core_speed:.2f} reference cores "
            f"per core ({plat.core_speed_low:.2f}-{plat.core_speed_high:.2f}), a vCPU is "
            f"{vcpu_kind}: {speed:.2f} per vCPU; {plat.source}"
        )
    return _Speed(speed, speed_sd, speed_line, fallback, sigma, sigma_sd, used, notes)


def _size_cv2(work: Workload, used: CostProfile, fallback: CostProfile | None) -> float:
    """Squared coefficient of variation of the service time over the response sizes."""
    if len(work.sizes) > 1:
        per_size = [
            (w, cpu_us_per_request(replace(work, size_mix=(), file_bytes=b), used, fallback).us)
            for b, w in work.sizes
        ]
        return service_cv2(work, per_size)
    return SERVICE_CV2[0]


def _head(work: Workload, cost: costmodel.Cost, basis: str, speed_line: str) -> list[str]:
    """The capacity's basis lines: workload, CPU time per request by term, sources, speed."""
    # Each term's contribution [us per request], with the coefficient it comes from.
    terms = ", ".join(
        f"{k} {v:.2f} us"
        + (f" ({cost.sources[k].value:.3g} {cost.sources[k].unit})" if k in cost.sources else "")
        for k, v in sorted(cost.terms.items(), key=lambda t: -t[1])
    )
    return [
        f"workload: {work.describe()}",
        f"CPU time per request {cost.us:.1f} us on "
        + basis
        + f" (+-{cost.rel_sd:.0%}), each coefficient times its amount: {terms}",
        *[
            f"{c.name} = {c.value:.3g} {c.unit}"
            + (f" (measured over {c.measured_over})" if c.measured_over not in ("", "none") else "")
            + f": {c.source}"
            for c in cost.sources.values()
        ],
        speed_line,
    ]


def _cpu_part(
    plat: Platform,
    work: Workload,
    profiles: Sequence[CostProfile],
    over_nic: bool,
    cloud: bool,
    model: ModelInputs = POINT,
) -> _CpuPart:
    """The per-platform half of `model_capacity`: speed, CPU time per request, spread."""
    tpc = plat.threads_per_core
    fitted, base_gain, ref, user_share = _reference(plat, work, model)
    prof = _matching_profile(plat, profiles)
    if prof is not None:
        src = _profile_speed(plat, work, model, prof, ref)
    else:
        src = _platform_speed(plat, work, fitted, ref)
    used, fallback, notes = src.used, src.fallback, src.notes
    cost = cpu_us_per_request(
        work,
        used,
        fallback,
        over_nic=over_nic,
        virtual_nic=cloud and cloud_model() is None,
    )
    notes += cost.notes
    speed, speed_line = src.speed, src.line
    gain = base_gain if tpc == 2 else 1.0
    if tpc == 2 and user_share:
        factor, why = thread_gain(cost, user_share, base_gain)
        speed, speed_line = speed * factor, speed_line + (f"; {why}" if why else "")
        gain *= factor
    basis = f"one worker of profile {used.name}" if prof is not None else "the reference core"
    return _CpuPart(
        plat=plat,
        speed=speed,
        speed_sd=src.speed_sd,
        cost=cost,
        sigma=src.sigma,
        sigma_sd=src.sigma_sd,
        cv2=_size_cv2(work, used, fallback),
        per_vcpu=1e6 * speed / cost.us,
        head=_head(work, cost, basis, speed_line),
        notes=notes,
        profile=prof.name if prof is not None else "",
        log_cap=container_log_cap(work, src.speed, model),
        gain=gain,
    )


#: What `_at_workers` finds: the CPU's peak [RPS], the SLA utilization, the CPU capacity under
#: the SLA [RPS], its log-scale sd, and the basis lines of the workers, the derating and the width.
_AtWorkers = tuple[float, float, float, float, str, str, str]


def _per_vcpus(
    part: _CpuPart, vcpus: int, work: Workload, model: ModelInputs = POINT
) -> _AtWorkers:
    """The half of `model_capacity` that depends on the vCPU count: scaling, SLA, spread.

    Past `costmodel.SEED_MAX_WORKERS` workers, where each added worker costs every worker
    some speed (`large_scaling`), NGINX is run with the worker count of the table's points
    (or all vCPUs) that serves most under the SLA: more vCPUs never serve less. A workload
    that names fewer workers than ``vcpus`` (``worker_processes``) runs those (`_configured`).
    """
    if 0 < work.workers < vcpus:
        return _configured(part, vcpus, work, model)
    best = _at_workers(part, vcpus, work, model)
    for workers in (costmodel.SEED_MAX_WORKERS, *sorted(LARGE_SCALING[0])):
        if workers < vcpus:
            alt = _at_workers(part, workers, work, model)
            if alt[2] > best[2]:
                note = f"; {workers} of the {vcpus} vCPUs run workers (more serve less)"
                best = (*alt[:4], alt[4] + note, *alt[5:])
    return best


def _configured(part: _CpuPart, vcpus: int, work: Workload, model: ModelInputs) -> _AtWorkers:
    """`_per_vcpus` with the workload's ``workers`` on an instance of more vCPUs.

    The other vCPUs serve nothing (the kernel's share of the network work that runs on them
    is not counted: the safe side). With two threads per core the scheduler spreads the
    workers over the cores first: a worker alone on its core runs at ``2 / gain`` of a vCPU
    whose sibling is busy (``gain``: what the second thread adds for this request).
    """
    w = work.workers
    tpc = part.plat.threads_per_core
    paired = 2 * max(0, w - vcpus // tpc) if tpc == 2 else 0
    alone = w - paired
    boost = (alone * 2.0 / part.gain + paired) / w if tpc == 2 else 1.0
    found = _at_workers(replace(part, per_vcpu=part.per_vcpu * boost), w, work, model)
    note = f"; only {w} of the {vcpus} vCPUs run workers (worker_processes)"
    if tpc == 2 and alone:
        note += (
            f", {alone} alone on a core: x{2.0 / part.gain:.2f} the speed of a vCPU whose "
            "sibling is busy"
        )
    return (*found[:4], found[4] + note, *found[5:])


def _at_workers(
    part: _CpuPart, vcpus: int, work: Workload, model: ModelInputs = POINT
) -> _AtWorkers:
    """`_per_vcpus` with ``vcpus`` workers, one per vCPU."""
    base = model.estimate("base_latency_ms", ESTIMATES["base_latency_ms"][0])
    sigma, sigma_sd = part.sigma, part.sigma_sd
    large, large_sd = large_scaling(vcpus)
    eff = scaling_efficiency(vcpus, sigma, cap=True) * large
    per_worker = part.per_vcpu
    cpu_peak = vcpus * eff * per_worker
    rho = _sla_utilization_kept(per_worker * eff, work.sla_p99_ms, part.cv2, base)
    cpu_sla = cpu_peak * rho
    seed_eff = eff / large
    eff_sd = (
        (1.0 - seed_eff) * sigma_sd / sigma if sigma > 0 else 0.0
    )  # d log(eff) = -(1-eff) d log(sigma)
    beyond = max(math.log2(vcpus / costmodel.SEED_MAX_WORKERS), 0.0)
    beyond_sd = costmodel.BEYOND_SEED_SD_PER_DOUBLING[0] * beyond
    unc_sd = costmodel.UNCOSTED_SD[0] * math.sqrt(len(work.uncosted))
    terms = {
        "CPU time per request (coefficients, features)": math.sqrt(
            max(part.cost.rel_sd**2 - unc_sd**2, 0.0)
        ),
        "directives not costed": unc_sd,
        "platform speed": part.speed_sd,
        "worker scaling": math.hypot(eff_sd, beyond_sd, large_sd),
    }
    rel_sd = math.sqrt(
        part.cost.rel_sd**2 + part.speed_sd**2 + eff_sd**2 + beyond_sd**2 + large_sd**2
    )
    workers = (
        f"{vcpus} worker{'' if vcpus == 1 else 's'} x scaling efficiency {eff:.2f} "
        f"(sigma {sigma:.2g}, fitted to the "
        "seed's worker counts; its 50-connection closed-loop cap is not carried)"
    )
    if large < 1.0:
        workers += f"; x{large:.2f} past {costmodel.SEED_MAX_WORKERS} workers ({LARGE_SCALING[1]})"
    derating = (
        f"estimate: SLA derating to {rho:.1%} of peak (M/G/1 per worker, service cv^2 "
        f"{part.cv2:.2f}, base latency {base:g} ms)"
    )
    return cpu_peak, rho, cpu_sla, rel_sd, workers, derating, width_line(rel_sd, terms)


def width_line(rel_sd: float, terms: dict[str, float]) -> str:
    """The basis line saying how wide the CPU capacity's 95% range is and which term leads.

    ``terms`` are the independent log-scale sds whose root sum of squares is ``rel_sd``.
    """
    name, sd = max(terms.items(), key=lambda t: t[1])
    share = sd**2 / rel_sd**2 if rel_sd > 0 else 0.0
    wide = math.exp(2 * 1.96 * rel_sd)
    return (
        f"the model's 95% range of the CPU capacity x{wide:.2f} wide (log sd {rel_sd:.2f}); "
        f"its widest term: {name} ({sd:.2f}, {share:.0%} of the variance)"
    )


def _network_cap(
    inst: Instance, work: Workload, wire: float, packets: float
) -> tuple[float, float, str]:
    """The network's cap [RPS], the bandwidth [Gbit/s] and the basis line.

    Bandwidth over ``wire`` bytes per response; with ``packets`` per request (0: not a cloud
    VM), also `PACKET_RATE` over them, named in the line when it is the lower, and the
    provider's ``connection_cap`` where its module has one (`sizing.catalog.azure`).
    """
    gbps, how = network_gbps(inst, work)
    net = gbps * 1e9 / 8.0 / wire
    line = f"network {how} / {wire:.0f} B per response (estimate of framing) = {net:,.0f} RPS"
    pps = PACKET_RATE[0] * max(1.0, gbps / PACKET_RATE_GBPS)
    if packets > 0 and pps / packets < net:
        net = pps / packets
        line += (
            f"; the packet rate caps it lower: {pps:,.0f} packets/s / {packets:.1f} "
            f"packets per request (estimate) = {net:,.0f} RPS ({PACKET_RATE[1]})"
        )
    # A provider that publishes its connection path (Azure) caps new connections too.
    connection_cap = getattr(provider_of(inst), "connection_cap", None)
    if packets > 0 and connection_cap is not None:
        cap, why = connection_cap(inst, work)
        if cap < net:
            net, why = cap, f"the connection rate caps it lower: {why}"
        line += f"; {why}"
    return net, gbps, line


def model_capacities(
    instances: Sequence[Instance],
    work: Workload,
    profiles: Sequence[CostProfile] = (),
    over_nic: bool = True,
    model: ModelInputs = POINT,
) -> list[Capacity]:
    """`model_capacity` of each instance, in one pass that shares what instances share.

    The CPU time per request, the vCPU's speed and their spread are computed once per CPU
    platform (and provider kind); the scaling efficiency, the SLA derating and the spread
    once per platform and vCPU count; only the network cap and the catalog line per row.
    Each result equals ``model_capacity(inst, work, profiles, over_nic)``
    (tests/test_speed_paths.py compares them on the whole shipped catalog).

    Parameters
    ----------
    instances : sequence of Instance
        The instance types.
    work : Workload
        What they serve.
    profiles : sequence of CostProfile
        Measured CPU profiles (see `model_capacity`).
    over_nic : bool
        The instances answer over a NIC (see `model_capacity`).
    model : ModelInputs
        Uncertain inputs moved from their point values (`sizing.model.inputs`).
    """
    plats: dict[tuple[Any, ...], Platform] = {}
    cloud_providers = set(provider_names())
    parts: dict[tuple[Platform, bool], _CpuPart] = {}
    sized: dict[tuple[Platform, bool, int], _AtWorkers] = {}
    wire = _wire_per_request(work)
    packets = packets_per_request(work)
    ports = time_wait_cap(work)
    out: list[Capacity] = []
    for inst in instances:
        pkey = (inst.cpu, inst.arch, inst.family, inst.threads_per_core)
        plat = plats.get(pkey)
        if plat is None:
            plat = plats[pkey] = model.platform(platform_of(inst))
        # A provider module's rows are cloud VMs (the virtual-NIC term); rows of a provider
        # without one (a user's own catalog) are not.
        cloud = inst.provider in cloud_providers
        part = parts.get((plat, cloud))
        if part is None:
            part = parts[(plat, cloud)] = _cpu_part(plat, work, profiles, over_nic, cloud, model)
        found = sized.get((plat, cloud, inst.vcpus))
        if found is None:
            found = sized[(plat, cloud, inst.vcpus)] = _per_vcpus(part, inst.vcpus, work, model)
        cpu_peak, rho, cpu_sla, rel_sd, workers, derating, width = found
        net, gbps, net_line = _network_cap(inst, work, wire, packets if cloud else 0.0)
        outside = "network"
        caps = ((part.log_cap, "log path"), (ports, "ports"))
        for (cap, _), label in caps:
            if cap < net:
                net, outside = cap, label
        capacity = min(cpu_sla, net)
        basis = [
            *part.head,
            workers,
            *part.notes,
            derating,
            width,
            net_line,
            *(line for (_, line), _ in caps if line),
            f"catalog {inst.instance_type}: {inst.source} ({inst.source_date})",
        ]
        speed = part.speed
        k95 = math.exp(1.96 * rel_sd)
        out.append(
            Capacity(
                instance=inst,
                capacity_rps=capacity,
                cpu_peak_rps=cpu_peak,
                cpu_sla_rps=cpu_sla,
                network_rps=net,
                max_utilization=rho,
                binding_constraint=binding(cpu_sla, net, outside),
                factor=speed,
                factor_low=speed / k95,
                factor_high=speed * k95,
                basis=basis,
                rel_sd=rel_sd,
                cpu_us_per_request=part.cost.us,
                platform=plat,
                profile=part.profile,
                network_gbps=gbps,
                outside=outside,
            )
        )
    return out


def instance_capacity(
    inst: Instance,
    work: Workload,
    evidence: Evidence | None = None,
    profiles: Sequence[CostProfile] = (),
) -> Capacity:
    """Capacity of one instance under the SLA, the binding constraint, and its basis.

    Parameters
    ----------
    inst : Instance
        The instance type.
    work : Workload
        What it serves.
    evidence : Evidence, optional
        Measurements applied to the model from outside (`sizing.evidence.measured.Evidence`).
    profiles : sequence of CostProfile
        Measured CPU profiles (`sizing.evidence.profiles`).

    Notes
    -----
    ``rel_sd`` is the log-scale standard deviation of the CPU capacity: the coefficients'
    standard errors and the fit's residual scatter, the platform speed's range (read as a
    95% range) and the scaling's error; or, with evidence, what the measurements say.
    """
    return instance_capacities([inst], work, evidence, profiles)[0]


def instance_capacities(
    instances: Sequence[Instance],
    work: Workload,
    evidence: Evidence | None = None,
    profiles: Sequence[CostProfile] = (),
    model: ModelInputs = POINT,
) -> list[Capacity]:
    """`instance_capacity` of each instance, the model's part in one shared pass.

    ``model`` moves uncertain inputs from their point values (`sizing.model.inputs`), a
    measured family's level among them.
    """
    caps = model_capacities(instances, work, profiles, model=model)
    if evidence is not None:
        caps = [evidence.apply(cap, work) for cap in caps]
    if model.measured:  # measurements are already at the SLA: the level scales it
        for i, cap in enumerate(caps):
            scale = model.measured_factor(cap.instance.family)
            if cap.measured and scale != 1.0:
                cpu = cap.cpu_sla_rps * scale
                caps[i] = replace(cap, cpu_sla_rps=cpu, capacity_rps=min(cpu, cap.network_rps))
    return caps

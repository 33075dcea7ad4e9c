"""What one request costs in CPU time, and how many workers deliver it.

CPU time of one worker per request [us] (the formula is `trialtable.profile.cost_terms`, which
calibration fits with; this module adds the deployment's terms after ``scenario extra``)::

    request_us + body_us [body > 0] + byte_ns * B / 1000
    + [https] (tls_request_us + [body > 0] tls_body_us + tls_byte_ns * B / 1000)
    + (connection_us + [https] handshake_us) / requests_per_connection
    + gzip_byte_ns * B_gzipped / 1000 + scenario extra (+ http2_request_us)
    + nic_packet_us * packets      (only when the coefficients were measured over loopback
                                    and the server answers over a NIC)

One coefficient set describes one CPU (one core of it, one worker). The reference set is fitted
jointly (`sizing.fitting.fits.fit_cost_model`) to every RPS and CPS table of seed 004 (Xeon
E5-2699 v3,
nginx 1.9.7, OpenSSL 1.0.1f, RSA 2048, over 2x 40 GbE), with standard errors; it is stored in
``data/fits/cost-model.json`` so that this module needs neither scipy nor pandas.

Multi-worker scaling is separate from the per-request cost: ``n`` workers deliver
``n / (1 + sigma (n - 1))`` workers' worth of requests (contention for shared caches, memory
and kernel locks). The seed's own measurements also carry a closed-loop cap that belongs to
the test, not to the server: one client machine held 50 connections (HTTP/1.1, one request in
flight per connection) over 2x 40 GbE. With ``n`` workers each worker owns about ``50 / n``
connections; while a connection's next request is still on the client or the wire (the delay
``z_us``), a worker with one or two connections idles. That is a machine-repairman queue
(`closed_loop_utilization`) and it is why the seed's curves flatten above 16 CPUs. The delay
has the parts the published setup implies: per request (``z_us``: the client writes the request
and parses the response), per response byte (``z_byte_ns``: the client reads every byte, and
the wire carries it), per new connection (``z_connection_us``: connect and close on the
client) and per full TLS handshake (``z_handshake_us``: the client's side of ECDHE-RSA on the
same CPU and OpenSSL, key agreement and signature verification). It is fitted so that the
per-request costs are not biased by it, and it is never applied to a cloud instance, whose
clients are many.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from sizing.errors import InputError
from sizing.paths import DATA_DIR
from trialtable.profile import (
    COEFFICIENTS,
    PROXIED,
    NewConnections,
    cost_terms,
    feature_terms,
)

if TYPE_CHECKING:
    from sizing.workload.value import Workload

COST_MODEL_PATH = DATA_DIR / "fits" / "cost-model.json"
REFERENCE_CPU = "Intel Xeon E5-2699 v3 (Haswell) core, hyper-threading off"
REFERENCE_STACK = "nginx 1.9.7, OpenSSL 1.0.1f, ECDHE-RSA-AES256-GCM-SHA384, RSA 2048"
REFERENCE_SOURCE = "004_2a50d35d485b581a.txt (NGINX, web server performance by CPU count)"
SEED_CONNECTIONS = 50  # seed 004: 50 end-to-end connections from one client machine
SEED_LINK_GBPS = 80.0  # seed 004: 2x Intel XL710 40 GbE
MSS_BYTES = 1448.0
TLS_RECORD_BYTES = 16384.0

#: The coefficients fitted to seed 004 (names as in the CPU profile schema, plus body_us).
FITTED = (
    "request_us",
    "body_us",
    "byte_ns",
    "tls_request_us",
    "tls_byte_ns",
    "connection_us",
    "handshake_full_rsa2048_us",
)
#: The scaling and test-setup parameters fitted with them.
SETUP = ("sigma", "z_us", "z_connection_us", "z_handshake_us", "z_byte_ns", "link_fraction")
#: Unit of every coefficient: a CPU profile's (`trialtable.profile.COEFFICIENTS`), then the
#: deployment's terms and the seed's setup parameters this model adds.
UNITS = {name: unit for name, (unit, _) in COEFFICIENTS.items()} | {
    "nic_packet_us": "us/packet",
    "env_request_us": "us/request",
    "env_packet_us": "us/packet",
    "jwt_verify_us": "us/request",
    "sigma": "1",
    "z_us": "us",
    "z_connection_us": "us",
    "z_handshake_us": "us",
    "z_byte_ns": "ns/byte",
    "link_fraction": "1",
}

#: Constants that are estimates, each with its reasoning (printed with the answer).
ESTIMATES: dict[str, tuple[float, str]] = {
    "response_header_bytes": (
        250.0,
        "HTTP response status line and headers of a static file from NGINX: about 250 B",
    ),
    "segment_overhead_bytes": (
        66.0,
        "Ethernet (14), IPv4 (20) and TCP with timestamps (32) per segment of 1448 B",
    ),
    "tls_record_overhead_bytes": (
        29.0,
        "TLS 1.2/1.3 AES-GCM record header, nonce and tag per 16 KiB record",
    ),
    "gzip_ratio": (
        0.3,
        "gzip at NGINX's default level 1 shrinks text (HTML, CSS, JS, JSON) to about 30% "
        "of its size",
    ),
}


def gzip_ratio(work: Workload) -> float:
    """The share of its size a response gzipped on the fly keeps, at the workload's level."""
    from sizing.model.gzip import level_effect

    return ESTIMATES["gzip_ratio"][0] * level_effect(work.gzip_level).output


#: Log-scale sd the CPU time's range widens by per directive or feature the model cannot cost.
UNCOSTED_SD = (
    0.10,
    "estimate: a directive the model cannot cost (a map, a header rewrite, a sub_filter) adds "
    "up to about a tenth of a small static request's CPU time, so each widens the range by a "
    "log sd of 0.10",
)


@dataclass(frozen=True)
class Coefficient:
    """One cost coefficient with its uncertainty and where it comes from.

    Attributes
    ----------
    value : float
        In ``unit``.
    stderr : float
        Standard error (fits) or the half-width of a 95% range / 1.96 (estimates), same unit.
    measured_over : str
        ``nic`` (the packet path of a real or virtual NIC is included), ``loopback``, or
        ``none`` (not a measurement: an estimate or a published ratio).
    source : str
        A run, a profile, a published table (title and publisher) or ``estimate: ...``.
    """

    name: str
    value: float
    stderr: float
    unit: str
    measured_over: str
    source: str

    @property
    def rel_sd(self) -> float:
        """Relative standard deviation (0 when the value is 0)."""
        return abs(self.stderr / self.value) if self.value else 0.0


@dataclass(frozen=True)
class CostProfile:
    """The coefficients of one CPU, with its multi-worker scaling.

    Attributes
    ----------
    speed_basis : str
        What one worker is: ``core`` (the reference's one core, speed-scaled by a platform) or
        ``vcpu`` (a worker on one vCPU of the measured host, used as it is).
    correlation : dict
        Correlations between fitted coefficients, by pair ``"a|b"`` (absent pairs: 0).
    residual_sd : float
        Log-scale sd of the fit's residuals: scatter the coefficients do not explain.
    """

    name: str
    cpu_model: str
    coefficients: Mapping[str, Coefficient]
    sigma: float
    sigma_stderr: float
    source: str
    measured_over: str
    speed_basis: str = "core"
    threads_per_core: int | None = None
    arch: str = "x86_64"
    residual_sd: float = 0.0
    correlation: Mapping[str, float] = field(default_factory=dict)
    cpuid: tuple[str, int, int, int] | None = None
    warnings: tuple[str, ...] = ()
    virtual_nic_included: bool = False

    def coef(self, name: str) -> Coefficient | None:
        """The coefficient ``name``, or None when this profile does not have it."""
        return self.coefficients.get(name)

    def corr(self, a: str, b: str) -> float:
        """Correlation between two coefficients' errors."""
        if a == b:
            return 1.0
        return self.correlation.get(f"{a}|{b}", self.correlation.get(f"{b}|{a}", 0.0))


@dataclass
class Cost:
    """CPU time per request of one worker, its terms and its uncertainty.

    Attributes
    ----------
    us : float
        Mean CPU time per request [us].
    terms : dict
        The contribution of each coefficient [us/request].
    rel_sd : float
        Log-scale sd of ``us`` from the coefficients' errors and the fit's residual scatter.
    sources : dict
        Coefficient name -> its `Coefficient` (only those used).
    notes : list of str
        What was assumed (estimates used, packet path added).
    """

    us: float
    terms: dict[str, float]
    rel_sd: float
    sources: dict[str, Coefficient]
    notes: list[str] = field(default_factory=list)


# ----------------------------------------------------------------------------- wire


def wire_bytes(body_bytes: float, https: bool) -> float:
    """Bytes on the wire per response, headers and framing included [B] (an estimate)."""
    payload = body_bytes + ESTIMATES["response_header_bytes"][0]
    if https:
        payload += ESTIMATES["tls_record_overhead_bytes"][0] * max(
            1.0, math.ceil(payload / TLS_RECORD_BYTES)
        )
    segments = max(1.0, math.ceil(payload / MSS_BYTES))
    return payload + segments * ESTIMATES["segment_overhead_bytes"][0]


def connection_packets(https: bool) -> float:
    """Packets of one connection's handshake and teardown [1] (an estimate of TCP's behaviour).

    SYN, SYN-ACK, ACK, FIN, ACK: 5, plus 4 TLS handshake records over HTTPS.
    """
    return 5.0 + (4.0 if https else 0.0)


def packets_per_request(body_bytes: float, https: bool, requests_per_connection: float) -> float:
    """Packets a server's NIC handles per request [1] (an estimate of TCP's behaviour).

    The request (1), the response's segments, about one ACK received per two segments, and per
    new connection its `connection_packets`.
    """
    segments = max(1.0, math.ceil((wire_bytes(body_bytes, https)) / (MSS_BYTES + 66.0)))
    per_conn = connection_packets(https)
    reuse = requests_per_connection if math.isfinite(requests_per_connection) else math.inf
    return 1.0 + segments + math.ceil(segments / 2.0) + (per_conn / reuse if reuse else 0.0)


# ----------------------------------------------------------------------------- cost


def _get(prof: CostProfile, name: str, fallback: CostProfile | None) -> Coefficient | None:
    c = prof.coef(name)
    if c is None and fallback is not None:
        c = fallback.coef(name)
    return c


def cpu_us_per_request(
    work: Workload,
    prof: CostProfile,
    fallback: CostProfile | None = None,
    over_nic: bool = True,
    virtual_nic: bool = False,
) -> Cost:
    """CPU time of one worker per request of ``work`` [us], with its terms and spread.

    Parameters
    ----------
    work : Workload
        What is served (size mix, protocol, reuse, resumption, key, gzip, scenario).
    prof : CostProfile
        The CPU's coefficients.
    fallback : CostProfile, optional
        Where coefficients ``prof`` lacks come from (the reference, speed-scaled by the
        caller); they are named in ``notes``.
    over_nic : bool
        The server answers over a (real or virtual) NIC. A profile measured over loopback
        then gets ``nic_packet_us`` per packet added.
    virtual_nic : bool
        The NIC is a cloud VM's virtual NIC: a profile whose packet path did not include one
        gets ``vnic_packet_us`` per packet added.
    """
    terms: dict[str, float] = {}
    used: dict[str, Coefficient] = {}
    notes: list[str] = []
    # d(us)/d(coefficient), for the error propagation
    grads: dict[str, float] = {}

    def add(name: str, amount: float) -> None:
        if amount == 0:
            return
        c = _get(prof, name, fallback)
        if c is None:
            raise InputError(f"profile {prof.name!r} has no {name} and no fallback")
        if prof.coef(name) is None:
            notes.append(f"{name} taken from {fallback.name if fallback else '?'}")
        terms[name] = terms.get(name, 0.0) + c.value * amount
        grads[name] = grads.get(name, 0.0) + amount
        used[name] = c

    amounts, packets = _amounts(work, notes)
    for name, amount in amounts.items():
        if name == "tls_body_us" and prof.coef(name) is None:
            # Only a calibrated profile separates it (HTTPS reads and encrypts a body that
            # HTTP sends with sendfile); elsewhere body_us holds both.
            continue
        add(name, amount)
    if over_nic and prof.measured_over == "loopback":
        add("nic_packet_us", packets)
        notes.append(
            f"{prof.name} was measured over loopback: the NIC packet path is added "
            f"({packets:.1f} packets per request)"
        )
    if virtual_nic and not prof.virtual_nic_included:
        add("vnic_packet_us", packets)
    if _get(prof, "env_request_us", fallback) is not None:
        add("env_request_us", 1.0)
        add("env_packet_us", packets)
    if work.jwt != "none" and work.scenario in ("reverse_proxy", "api_gateway"):
        add("jwt_verify_us", 1.0)
    unpriced = _add_features(work, prof, fallback, add)
    total = sum(terms.values())
    if total <= 0:
        raise InputError(f"profile {prof.name!r} gives no positive CPU time for this workload")
    var = 0.0
    names = list(grads)
    for a in names:
        for b in names:
            ca, cb = used[a], used[b]
            var += grads[a] * grads[b] * ca.stderr * cb.stderr * prof.corr(a, b)
    rel = math.sqrt(max(var, 0.0)) / total
    rel_sd = _widened(math.sqrt(rel**2 + prof.residual_sd**2), unpriced, notes)
    return Cost(total, terms, rel_sd, used, notes)


def _add_features(
    work: Workload,
    prof: CostProfile,
    fallback: CostProfile | None,
    add: Callable[[str, float], None],
) -> list[str]:
    """Add each configuration feature with a cost in ``prof`` (or ``fallback``) times its count.

    Returns what is not costed: the workload's uncosted directives and its features with no
    measured cost.
    """
    unpriced = list(work.uncosted)
    amounts = feature_terms(dict(work.features))
    for (feature, _), (name, times) in zip(work.features, amounts.items(), strict=True):
        if _get(prof, name, fallback) is None:
            unpriced.append(f"feature {feature} (no measured cost)")
        else:
            add(name, times)
    return unpriced


def _amounts(work: Workload, notes: list[str]) -> tuple[dict[str, float], float]:
    """Each coefficient's amount per request over the size mix, and the packets per request.

    On-the-fly gzip sends the compressed bytes (and cannot use sendfile); its CPU per byte
    follows the workload's level (`sizing.model.gzip`, named in ``notes``). A proxy's upstream
    leg adds its packets: plain HTTP over a keep-alive pool, the body uncompressed.
    """
    https = work.protocol == "https"
    gz, ratio = work.gzip, gzip_ratio(work)
    conns = NewConnections(work.connections_per_request, work.tls_key, work.tls_resumption)
    packets = 0.0
    amounts: dict[str, float] = {}
    for size, weight in work.sizes:
        out_bytes = size * (1.0 - gz) + size * gz * ratio
        row = cost_terms(
            size,
            https=https,
            wire_bytes=out_bytes,
            connections=conns,
            gzip=gz,
            scenario=work.scenario,
            http_version=work.http_version,
        )
        for name, x in row.items():
            amounts[name] = amounts.get(name, 0.0) + weight * x
        packets += weight * packets_per_request(out_bytes, https, work.requests_per_connection)
        if work.scenario in PROXIED:
            packets += weight * packets_per_request(size, False, math.inf)
    if amounts.get("gzip_byte_ns") and work.gzip_level != 1:
        from sizing.model.gzip import level_effect

        effect = level_effect(work.gzip_level)
        amounts["gzip_byte_ns"] *= effect.cpu
        notes.append(f"gzip_byte_ns x{effect.cpu:.2f}: {effect.source}")
    return amounts, packets


def _widened(rel_sd: float, unpriced: list[str], notes: list[str]) -> float:
    """``rel_sd`` widened by `UNCOSTED_SD` for each of ``unpriced`` (named in ``notes``)."""
    if not unpriced:
        return rel_sd
    notes.append(
        f"{len(unpriced)} not costed, each widening the range: {', '.join(unpriced)} "
        f"({UNCOSTED_SD[1]})"
    )
    return math.hypot(rel_sd, UNCOSTED_SD[0] * math.sqrt(len(unpriced)))


#: Largest worker count of the seed's tables: the contention term is not extrapolated past it.
SEED_MAX_WORKERS = 36
BEYOND_SEED_SD_PER_DOUBLING = (
    0.05,
    "estimate: past the 36 workers seed 004 measured, the scaling efficiency is held at its "
    "36-worker value (NGINX since 1.11.3 runs without the accept mutex that 1.9.7 used; "
    "reuseport spreads connections) and gains 5% (1 sd, log scale) of uncertainty per doubling",
)


def scaling_efficiency(workers: float, sigma: float, cap: bool = False) -> float:
    """Workers' worth of requests per worker when ``workers`` run at once [1].

    ``cap`` holds the efficiency at its value for `SEED_MAX_WORKERS` past that count (the
    model is not extrapolated beyond the measured worker counts).
    """
    n = min(workers, SEED_MAX_WORKERS) if cap else workers
    return 1.0 / (1.0 + sigma * max(n - 1.0, 0.0))


# ----------------------------------------------------------------------------- seed's test


def machine_repairman_utilization(k: int, rho: float) -> float:
    """Busy fraction of one server with ``k`` closed-loop customers [1].

    Each customer alternates between service (mean ``s``) and a delay (mean ``z``) outside
    the server; ``rho = s / z``. Exponential times: ``P0 = 1 / sum_j k!/(k-j)! rho^j``.
    """
    if k <= 0:
        return 0.0
    total, term = 1.0, 1.0
    for j in range(1, k + 1):
        term *= (k - j + 1) * rho
        total += term
        if total > 1e300:
            return 1.0
    return 1.0 - 1.0 / total


def closed_loop_utilization(
    workers: int, service_us: float, z_us: float, connections: int = SEED_CONNECTIONS
) -> float:
    """Busy workers (sum of utilizations) when ``connections`` are spread over ``workers``."""
    q, r = divmod(connections, workers)
    rho = service_us / z_us
    return r * machine_repairman_utilization(q + 1, rho) + (
        workers - r
    ) * machine_repairman_utilization(q, rho)


def seed_cost_us(params: Mapping[str, float], terms: Mapping[str, float]) -> float:
    """One request's CPU time from the seed's coefficients and `cost_terms`' multipliers [us].

    The seed's ``body_us`` holds HTTPS's fixed body cost too: no ``tls_body_us`` is fitted,
    so its multiplier is left out.
    """
    return sum(params[k] * x for k, x in terms.items() if k != "tls_body_us")


def seed_prediction(
    params: Mapping[str, float],
    metric: str,
    protocol: str,
    file_bytes: float,
    cpus: int,
) -> float:
    """What seed 004's test would measure with the coefficients ``params`` [1/s].

    The per-request cost at ``cpus`` workers, the closed loop of 50 connections with the
    client-side delay ``z_us`` + ``z_byte_ns`` per response byte on the wire (plus
    ``z_connection_us`` for a new connection and ``z_handshake_us`` for a full TLS handshake),
    and the 80 Gbps link times ``link_fraction`` (a smooth minimum: the link queues as it
    fills).
    """
    https = protocol == "https"
    cps = metric == "connections_per_s"
    terms = cost_terms(
        file_bytes, https=https, connections=NewConnections(1.0 if cps else 0.0, "rsa2048")
    )
    s = seed_cost_us(params, terms)
    z = params["z_us"] + params["z_byte_ns"] * wire_bytes(file_bytes, https) / 1000.0
    if cps:
        z += params["z_connection_us"]
        if https:
            z += params["z_handshake_us"]
    s_n = s / scaling_efficiency(cpus, params["sigma"])
    x = closed_loop_utilization(int(cpus), s_n, z) / s_n * 1e6
    if metric == "requests_per_s":
        link = params["link_fraction"] * SEED_LINK_GBPS * 1e9 / 8.0 / wire_bytes(file_bytes, https)
        x = (x**-8 + link**-8) ** (-1.0 / 8.0)
    return x


# ----------------------------------------------------------------------------- stored fit


def _number(x: object) -> float:
    """``float(x)`` of a JSON value; `TypeError` for one that is neither a number nor text."""
    if isinstance(x, (int, float, str)):
        return float(x)
    raise TypeError(f"{type(x).__name__} is not a number")


def _coef(name: str, d: Mapping[str, object]) -> Coefficient:
    try:
        value = _number(d["value"])
        stderr = _number(d.get("stderr") or 0.0)
    except (KeyError, TypeError, ValueError):
        raise InputError(f"coefficient {name!r}: expected a number in 'value'") from None
    if not (math.isfinite(value) and math.isfinite(stderr) and stderr >= 0):
        raise InputError(f"coefficient {name!r}: value and stderr must be finite")
    return Coefficient(
        name,
        value,
        stderr,
        str(d.get("unit", UNITS.get(name, ""))),
        str(d.get("measured_over", "none")),
        str(d.get("source", "")),
    )


def profile_from_doc(doc: Mapping[str, object], name: str) -> CostProfile:
    """Build a `CostProfile` from the stored JSON form (``cost-model.json``)."""
    coefs_raw = doc.get("coefficients")
    if not isinstance(coefs_raw, dict):
        raise InputError(f"{name}: no 'coefficients' object")
    coefs = {k: _coef(k, v) for k, v in coefs_raw.items() if isinstance(v, dict)}
    scaling = doc.get("scaling") if isinstance(doc.get("scaling"), dict) else {}
    assert isinstance(scaling, dict)
    corr = doc.get("correlation") if isinstance(doc.get("correlation"), dict) else {}
    assert isinstance(corr, dict)
    return CostProfile(
        name=name,
        cpu_model=str(doc.get("cpu_model", "")),
        coefficients=coefs,
        sigma=float(scaling.get("sigma", 0.0)),
        sigma_stderr=float(scaling.get("sigma_stderr", 0.0)),
        source=str(doc.get("source", "")),
        measured_over=str(doc.get("measured_over", "nic")),
        speed_basis=str(doc.get("speed_basis", "core")),
        threads_per_core=None,
        arch=str(doc.get("arch", "x86_64")),
        residual_sd=_number(doc.get("residual_sd", 0.0)),
        correlation={str(k): float(v) for k, v in corr.items()},
    )


@cache
def load_cost_model(path: Path = COST_MODEL_PATH) -> dict[str, object]:
    """The precomputed reference fit (``python -m sizing precompute`` writes it)."""
    try:
        return dict(json.loads(path.read_text()))
    except FileNotFoundError:
        raise InputError(
            f"precomputed cost model {path} is missing; run: python -m sizing precompute"
        ) from None


@cache
def current_stack_coefficients() -> dict[str, Coefficient]:
    """The precomputed model's coefficients for a current stack (``current_stack``), if any."""
    raw = load_cost_model().get("current_stack")
    if not isinstance(raw, dict):
        return {}
    return {k: _coef(k, v) for k, v in raw.items() if isinstance(v, dict) and k in UNITS}


@cache
def reference_profile() -> CostProfile:
    """Seed 004's coefficient set with the estimates for what it did not measure."""
    return profile_from_doc(load_cost_model(), "reference (seed 004)")

"""What the user serves: the traffic, not a lab test.

The defaults reproduce the static keep-alive case (HTTPS, 1 KB, p99 <= 5 ms, every connection
reused without end, no gzip).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from sizing.errors import InputError
from trialtable.features import check_features
from trialtable.schema import HTTP_VERSIONS as HTTP_VERSIONS  # re-exported
from trialtable.schema import PROTOCOLS as PROTOCOLS  # re-exported
from trialtable.schema import SCENARIOS as TRIAL_SCENARIOS
from trialtable.tls import DEFAULT_TLS_KEY
from trialtable.tls import TLS_KEYS as TLS_KEYS  # re-exported: sizing.request reads it here
from trialtable.zlib import GZIP_LEVELS

#: The scenarios a fleet serves: the trial table's, less its lab tests (``cps``: one request
#: per connection; ``throughput``: large bodies), which a workload states by its own fields.
SCENARIOS = tuple(s for s in TRIAL_SCENARIOS if s not in ("cps", "throughput"))
#: Where NGINX runs: on the host's own kernel and NIC, in a VM behind a virtual NIC, or in a
#: container behind a Kubernetes Service (the model's per-request and per-packet terms differ).
ENVIRONMENTS = ("bare-metal", "vm", "kubernetes")
#: JSON Web Token check per request at a reverse proxy or gateway (njs), by signature.
JWT_KINDS = ("none", "rs256", "es256")


#: The most NGINX worker processes a workload may name (nginx's own limit is memory).
MAX_WORKERS = 4096


@dataclass(frozen=True)
class Workload:
    """The traffic one fleet serves.

    Attributes
    ----------
    scenario : str
        ``static``, ``reverse_proxy`` or ``api_gateway``.
    protocol : str
        ``http`` or ``https``.
    file_bytes : int
        Response body size [B]; with ``size_mix`` the mix's mean (set from it).
    sla_p99_ms : float
        p99 latency the fleet must stay under [ms].
    requests_per_connection : float
        Requests served on one connection before it closes [1]; ``inf`` (default): keep-alive
        reuse without end; 1: every request opens a connection (seed 004's CPS test).
    tls_resumption : float
        Share of new TLS connections that resume a session instead of a full handshake [1].
    tls_key : str
        Server key type for full handshakes: ``ecdsa-p256`` or ``rsa2048``.
    gzip : float
        Share of the response bytes gzip-compressed on the fly by NGINX [1].
    size_mix : tuple of (int, float)
        Response sizes [B] with their shares of requests (shares sum to 1); empty means one
        size, ``file_bytes``.
    http_version : str
        ``1.1`` or ``2``.
    burst_network : bool
        Size against the providers' "up to" network peaks instead of the sustained rates.
    internet_facing : bool
        Traffic goes through AWS's internet gateway (5 Gbps under 32 vCPUs).
    environment : str
        Where NGINX runs: ``bare-metal``, ``vm`` (default) or ``kubernetes``.
    jwt : str
        JWT signature checked per request: ``none`` (default), ``rs256`` or ``es256``.
    features : tuple of (str, float)
        Configuration features (`trialtable.features`) with the times each runs per request
        [1]; empty (default): the reference static config's.
    uncosted : tuple of str
        Directives of the user's config that the model cannot cost, as ``name (file:line)``:
        each widens the capacity's range.
    upstream_time_wait : int
        Upstream addresses a proxy closes its new connections to itself, so that it holds
        their TIME_WAIT (`sizing.model.ports`); 0 (default): none.
    gzip_level : int
        zlib's level for ``gzip`` (``gzip_comp_level``, 1-9; default 1, NGINX's): its CPU per
        byte and output size against level 1 are measured (`sizing.model.gzip`).
    workers : int
        NGINX worker processes per instance (``worker_processes``); 0 (default): one per vCPU
        (``auto``). Fewer than an instance's vCPUs leave the others idle.
    """

    scenario: str = "static"
    protocol: str = "https"
    file_bytes: int = 1024
    sla_p99_ms: float = 5.0
    requests_per_connection: float = math.inf
    tls_resumption: float = 0.0
    tls_key: str = DEFAULT_TLS_KEY
    gzip: float = 0.0
    size_mix: tuple[tuple[int, float], ...] = field(default=())
    http_version: str = "1.1"
    burst_network: bool = False
    internet_facing: bool = False
    environment: str = "vm"
    jwt: str = "none"
    features: tuple[tuple[str, float], ...] = ()
    uncosted: tuple[str, ...] = ()
    upstream_time_wait: int = 0
    workers: int = 0
    gzip_level: int = 1

    def __post_init__(self) -> None:
        if self.scenario not in SCENARIOS:
            raise InputError(
                f"unknown scenario {self.scenario!r}; expected one of: {', '.join(SCENARIOS)}"
            )
        if self.protocol not in PROTOCOLS:
            raise InputError(
                f"unknown protocol {self.protocol!r}; expected one of: {', '.join(PROTOCOLS)}"
            )
        if self.file_bytes < 0:
            raise InputError(f"file size must be >= 0 bytes, got {self.file_bytes}")
        if not (math.isfinite(self.sla_p99_ms) and self.sla_p99_ms > 0):
            raise InputError(f"SLA p99 must be a positive duration, got {self.sla_p99_ms} ms")
        rpc = self.requests_per_connection
        if not (isinstance(rpc, int | float) and not math.isnan(rpc) and rpc >= 1):
            raise InputError(f"requests per connection must be >= 1, got {rpc!r}")
        tw = self.upstream_time_wait
        if not (isinstance(tw, int) and not isinstance(tw, bool) and 0 <= tw <= 1_000_000):
            raise InputError(f"upstream addresses must be a count >= 0, got {tw!r}")
        g = self.gzip_level
        if not (isinstance(g, int) and not isinstance(g, bool) and g in GZIP_LEVELS):
            raise InputError(f"the gzip level must be a whole number from 1 to 9, got {g!r}")
        w = self.workers
        if not (isinstance(w, int) and not isinstance(w, bool) and 0 <= w <= MAX_WORKERS):
            raise InputError(f"workers must be a count from 0 (one per vCPU) to {MAX_WORKERS}")
        for name in ("tls_resumption", "gzip"):
            v = getattr(self, name)
            if not (isinstance(v, int | float) and 0 <= v <= 1):
                raise InputError(
                    f"{name.replace('_', ' ')} must be a fraction in [0, 1], got {v!r}"
                )
        if self.tls_key not in TLS_KEYS:
            raise InputError(
                f"unknown TLS key {self.tls_key!r}; expected one of: {', '.join(TLS_KEYS)}"
            )
        if self.http_version not in HTTP_VERSIONS:
            raise InputError(
                f"unknown HTTP version {self.http_version!r}; expected one of: "
                + ", ".join(HTTP_VERSIONS)
            )
        if self.environment not in ENVIRONMENTS:
            raise InputError(
                f"unknown environment {self.environment!r}; expected one of: "
                + ", ".join(ENVIRONMENTS)
            )
        if self.jwt not in JWT_KINDS:
            raise InputError(
                f"unknown JWT kind {self.jwt!r}; expected one of: {', '.join(JWT_KINDS)}"
            )
        try:
            checked = check_features(dict(self.features))
        except ValueError as err:
            raise InputError(str(err)) from None
        object.__setattr__(self, "features", tuple(checked.items()))
        if self.size_mix:
            total = sum(w for _, w in self.size_mix)
            if any(s < 0 for s, _ in self.size_mix) or any(
                not (math.isfinite(w) and w > 0) for _, w in self.size_mix
            ):
                raise InputError("a size mix needs sizes >= 0 B and positive shares")
            if not math.isclose(total, 1.0, abs_tol=1e-6):
                raise InputError(f"the shares of a size mix must sum to 1, got {total:g}")
            mean = round(sum(s * w for s, w in self.size_mix))
            object.__setattr__(self, "file_bytes", mean)

    @property
    def connections_per_request(self) -> float:
        """New client connections per request [1]: 0 when connections are reused without end."""
        rpc = self.requests_per_connection
        return 0.0 if math.isinf(rpc) else 1.0 / rpc

    def feature(self, name: str) -> float:
        """How many times the feature ``name`` runs per request [1] (0 when it is not on)."""
        return dict(self.features).get(name, 0.0)

    @property
    def sizes(self) -> tuple[tuple[int, float], ...]:
        """Response sizes [B] with their shares of requests."""
        return self.size_mix or ((self.file_bytes, 1.0),)

    def describe(self) -> str:
        """One line: what this workload is."""
        sizes = (
            ", ".join(f"{s:,} B x{w:g}" for s, w in self.size_mix)
            if self.size_mix
            else f"{self.file_bytes:,} B"
        )
        parts = [f"{self.scenario} {self.protocol.upper()}/{self.http_version} {sizes} responses"]
        if math.isfinite(self.requests_per_connection):
            parts.append(f"{self.requests_per_connection:g} requests per connection")
            if self.protocol == "https":
                parts.append(f"{self.tls_key} key, {self.tls_resumption:.0%} resumed")
        if self.gzip:
            level = f" at level {self.gzip_level}" if self.gzip_level != 1 else ""
            parts.append(f"gzip on {self.gzip:.0%} of bytes{level}")
        if self.jwt != "none":
            parts.append(f"JWT {self.jwt.upper()} checked per request")
        if self.features:
            parts.append("with " + ", ".join(f"{n} x{c:g}" for n, c in self.features))
        if self.uncosted:
            parts.append(f"{len(self.uncosted)} directive(s) not costed")
        if self.upstream_time_wait:
            parts.append(
                f"the proxy closes its upstream connections ({self.upstream_time_wait} "
                "address(es)) and holds their TIME_WAIT"
            )
        if self.workers:
            parts.append(f"{self.workers} NGINX worker(s) per instance")
        parts.append(f"on {self.environment}")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready fields (``requests_per_connection`` None for unlimited reuse)."""
        out: dict[str, object] = {
            "scenario": self.scenario,
            "protocol": self.protocol,
            "file_bytes": self.file_bytes,
            "sla_p99_ms": self.sla_p99_ms,
            "requests_per_connection": (
                None if math.isinf(self.requests_per_connection) else self.requests_per_connection
            ),
            "tls_resumption": self.tls_resumption,
            "tls_key": self.tls_key,
            "gzip": self.gzip,
            "size_mix": [list(p) for p in self.size_mix],
            "http_version": self.http_version,
            "network": "burst" if self.burst_network else "baseline",
            "internet_facing": self.internet_facing,
            "environment": self.environment,
            "jwt": self.jwt,
        }
        if self.features or self.uncosted:
            out["features"] = dict(self.features)
            out["uncosted"] = list(self.uncosted)
        if self.upstream_time_wait:
            out["upstream_time_wait"] = self.upstream_time_wait
        if self.workers:
            out["workers"] = self.workers
        if self.gzip_level != 1:
            out["gzip_level"] = self.gzip_level
        return out


def parse_size_mix(
    text: str, parse_size: Callable[[str], int]
) -> tuple[int, tuple[tuple[int, float], ...]]:
    """Parse ``1KB`` or ``1KB:0.7,50KB:0.3`` into (mean bytes, mix).

    ``parse_size`` is the size parser of `sizing.units` (one word -> bytes). A single size
    gives an empty mix.
    """
    if ":" not in text and "," not in text:
        return int(parse_size(text)), ()
    mix: list[tuple[int, float]] = []
    for part in text.split(","):
        size, sep, share = part.partition(":")
        if not sep:
            raise InputError(f"{part!r}: each part of a size mix is SIZE:SHARE, e.g. 1KB:0.7")
        try:
            w = float(share)
        except ValueError:
            raise InputError(f"{share!r} is not a share; expected e.g. 0.7") from None
        mix.append((int(parse_size(size)), w))
    Workload(size_mix=tuple(mix))  # validates
    return round(sum(s * w for s, w in mix)), tuple(mix)

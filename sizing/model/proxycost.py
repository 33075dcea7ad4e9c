"""A reverse proxy's extra CPU per request, from measured pairs of runs.

``data/reference/proxy-vs-static-trials.csv`` holds trials of the runners (one pinned nginx
worker, wrk over loopback, 3 s each) in rounds: in each round, every protocol and body size is
served once as a static file and once through a reverse proxy (``proxy_pass`` to a second
nginx that serves the same file, keep-alive upstream). Each pair gives the proxy's extra CPU
time per request, measured as CPU time of the proxy's worker over requests, on one host:

    extra(B) = proxy CPU per request - static CPU per request = a + b B

per protocol, least squares over rounds and sizes. ``a`` is the fixed part (the request sent
upstream, its response parsed, the upstream connection's events) and ``b`` the per-byte part
(the body read from the upstream socket and written to the client's, where a static file goes
out with ``sendfile``; over HTTPS the static file is read and encrypted too, so ``b`` is
smaller there). Both are moved to the reference core's scale by the ratio of the reference's
static 1 KB HTTP request to the host's, measured in the same rounds: the proxy's costs are
taken to scale between machines as a static request's do.

`proxy_terms` returns the two coefficients for ``data/fits/cost-model.json``: the fixed part is
the mean of the two protocols (1 sd: half their difference); the per-byte part is HTTP's, the
proxied body a static server would have sent with ``sendfile`` (over HTTPS the measured
per-byte extra is smaller: there the cost is overstated, on the safe side).
"""

from __future__ import annotations

import csv
import io
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sizing.errors import InputError
from sizing.paths import REFERENCE_DIR
from trialtable.files import read_bounded

TRIALS_PATH = REFERENCE_DIR / "proxy-vs-static-trials.csv"
MAX_BYTES = 4 * 1024 * 1024
COLUMNS = (
    "round",
    "run_id",
    "trial_id",
    "started_at",
    "cpu_model",
    "scenario",
    "protocol",
    "file_bytes",
    "connections",
    "duration_s",
    "requests",
    "rps",
    "server_cpu_pct",
    "latency_p99_ms",
)
#: The size whose static request moves the host's costs to the reference core's scale [B].
SCALE_BYTES = 1024


@dataclass(frozen=True)
class Pair:
    """One round's static and proxied trial of one protocol and body size."""

    round_: int
    protocol: str
    body_bytes: int
    static_us: float
    proxy_us: float

    @property
    def extra_us(self) -> float:
        """The proxy's extra CPU time per request over the static file [us]."""
        return self.proxy_us - self.static_us


@dataclass(frozen=True)
class Line:
    """``extra = a + b * bytes`` of one protocol, with standard errors."""

    a_us: float
    a_se: float
    b_ns: float
    b_se: float
    n: int


def read_pairs(path: Path = TRIALS_PATH) -> list[Pair]:
    """The static/proxy pairs of the trials file (one line per trial)."""
    try:
        text = read_bounded(path, MAX_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read ({exc})") from None
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise InputError(f"{path}: missing column(s) {', '.join(missing)}")
    cpu: dict[tuple[int, str, int, str], float] = {}
    for i, row in enumerate(reader, start=2):
        try:
            key = (int(row["round"]), row["protocol"], int(row["file_bytes"]), row["scenario"])
            requests = float(row["requests"])
            cpu_s = float(row["server_cpu_pct"]) / 100.0 * float(row["duration_s"])
        except (TypeError, ValueError):
            raise InputError(
                f"{path}:{i}: round, file_bytes, requests, server_cpu_pct and "
                "duration_s must be numbers"
            ) from None
        if key[1] not in ("http", "https") or key[3] not in ("static", "reverse_proxy"):
            raise InputError(
                f"{path}:{i}: protocol must be http or https and scenario static or reverse_proxy"
            )
        if not (requests > 0 and math.isfinite(cpu_s) and cpu_s > 0):
            raise InputError(f"{path}:{i}: a trial needs requests and the worker's CPU time")
        if key in cpu:
            raise InputError(
                f"{path}:{i}: a second trial of round {key[0]}, {key[1]} {key[2]} B {key[3]}"
            )
        cpu[key] = cpu_s / requests * 1e6
    pairs = []
    for (r, proto, body, scenario), us in sorted(cpu.items()):
        if scenario == "static" and (r, proto, body, "reverse_proxy") in cpu:
            pairs.append(Pair(r, proto, body, us, cpu[(r, proto, body, "reverse_proxy")]))
    if not pairs:
        raise InputError(f"{path}: no round holds both a static and a proxied trial")
    return pairs


def fit_line(pairs: Sequence[Pair]) -> Line:
    """Least squares ``extra = a + b * bytes`` [us, ns/byte] with standard errors."""
    x = np.array([p.body_bytes / 1000.0 for p in pairs])
    y = np.array([p.extra_us for p in pairs])
    if len(set(x.tolist())) < 2 or len(y) < 3:
        raise InputError("the proxy trials need at least two body sizes and three pairs")
    X = np.column_stack([np.ones_like(x), x])
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ coef
    s2 = float(resid @ resid) / max(len(y) - 2, 1)
    cov = s2 * np.linalg.inv(X.T @ X)
    return Line(float(coef[0]), math.sqrt(cov[0, 0]), float(coef[1]), math.sqrt(cov[1, 1]), len(y))


def proxy_terms(
    reference: Mapping[str, float], path: Path = TRIALS_PATH
) -> dict[str, tuple[float, float, float, str]]:
    """``proxy_request_us`` and ``proxy_byte_ns`` on the reference core: value, 95% range, why.

    ``reference`` holds the reference's ``request_us``, ``body_us`` and ``byte_ns``.
    """
    pairs = read_pairs(path)
    lines = {
        proto: fit_line([p for p in pairs if p.protocol == proto])
        for proto in ("http", "https")
        if sum(p.protocol == proto for p in pairs) >= 3
    }
    if "http" not in lines:
        raise InputError(f"{path}: no HTTP pairs at two body sizes")
    host_static = statistics.median(
        p.static_us for p in pairs if p.protocol == "http" and p.body_bytes == SCALE_BYTES
    )
    ref_static = (
        reference["request_us"] + reference["body_us"] + reference["byte_ns"] * SCALE_BYTES / 1000
    )
    scale = ref_static / host_static
    rounds = len({p.round_ for p in pairs})
    where = (
        f"{len(pairs)} pairs in {rounds} rounds of runners trials on {_host(path)} "
        "(data/reference/proxy-vs-static-trials.csv)"
    )
    to_ref = (
        f"x{scale:.2f} to the reference core (its static 1 KB request {ref_static:.1f} us / the "
        f"host's {host_static:.1f} us)"
    )
    fixed = {proto: (ln.a_us, ln.a_se) for proto, ln in lines.items()}
    values = [v for v, _ in fixed.values()]
    mid = statistics.fmean(values) * scale
    # 1 sd: half the protocols' difference, with their own errors.
    sd = (
        math.hypot(
            (max(values) - min(values)) / 2,
            math.sqrt(statistics.fmean(se**2 for _, se in fixed.values())),
        )
        * scale
    )
    rel = sd / mid
    lo, hi = mid * math.exp(-1.96 * rel), mid * math.exp(1.96 * rel)
    each = "; ".join(f"{proto} {v:.3g} +- {se:.2g} us" for proto, (v, se) in fixed.items())
    http = lines["http"]
    per_byte = (
        f"; HTTPS measured {lines['https'].b_ns:.2g} +- {lines['https'].b_se:.1g} ns/byte (its "
        "static file is read and encrypted, not sent with sendfile, so a proxy copies less "
        "beside it): HTTPS proxies of large bodies are sized on the safe side"
        if "https" in lines
        else ""
    )
    return {
        "proxy_request_us": (
            mid,
            lo,
            hi,
            f"measured: a reverse proxy's extra CPU per request over a static file of the same "
            f"size, fixed part a of extra = a + b x bytes ({each}), {where}; the mean of the "
            f"protocols, {to_ref}; 1 sd: half their difference",
        ),
        "proxy_byte_ns": (
            http.b_ns * scale,
            max(http.b_ns - 1.96 * http.b_se, 0.2 * http.b_ns) * scale,
            (http.b_ns + 1.96 * http.b_se) * scale,
            f"measured: a reverse proxy's extra CPU per body byte over a static file served "
            f"with sendfile, b of extra = a + b x bytes over HTTP ({http.b_ns:.3g} +- "
            f"{http.b_se:.2g} ns/byte), {where}, {to_ref}" + per_byte,
        ),
    }


def _host(path: Path) -> str:
    """The trials' CPU model and date (from the file: the first trial's)."""
    text = read_bounded(path, MAX_BYTES).decode("utf-8")
    row = next(csv.DictReader(io.StringIO(text)), {})
    return f"{row.get('cpu_model') or 'an unnamed CPU'} ({str(row.get('started_at', ''))[:10]})"

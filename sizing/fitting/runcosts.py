"""Costs of the current NGINX stack that the project's own runs measure, as pairs of trials.

Each file under ``data/reference/`` holds trials of the runners (one pinned nginx worker, the
load generator on the other CPU, over loopback, 3 s each) in rounds; in each round a pair of
settings that differ in one thing is served back to back at each body size, so the pair's
difference in CPU time per request is what that one thing costs, with the machine's state
shared (the CPU time of the nginx under test over its requests, `runners`' ``server_cpu_pct``):

- ``proxy-vs-static-trials.csv``: a static file against the same file through ``proxy_pass``
  to a second nginx (keep-alive upstream), over HTTP and HTTPS: `proxy_terms`. Its static
  half, HTTPS against HTTP, gives TLS's per-byte cost on a current OpenSSL:
  `tls_byte_current`.
- ``http2-trials.csv``: static HTTPS over HTTP/2 (one stream per connection) against
  HTTP/1.1, both from h2load: `http2_term`.

Each difference is fitted as a straight line in the body size, ``extra = a + b x bytes``
(least squares over rounds and sizes). The host's costs are moved to the reference core's
scale by the ratio of the reference's static 1 KB HTTP request to the host's, measured in the
same rounds: a cost is taken to scale between machines as a static request does.
"""

from __future__ import annotations

import csv
import io
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from sizing.errors import InputError
from sizing.model.costmodel import seed_cost_us
from sizing.paths import REFERENCE_DIR
from trialtable.files import read_bounded
from trialtable.profile import cost_terms

PROXY_TRIALS = REFERENCE_DIR / "proxy-vs-static-trials.csv"
HTTP2_TRIALS = REFERENCE_DIR / "http2-trials.csv"
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
SCENARIOS = ("static", "reverse_proxy")
#: A setting: (scenario, protocol, HTTP version, streams per connection).
Setting = tuple[str, str, str, int]


@dataclass(frozen=True)
class Pair:
    """One round's trials of two settings at one body size [us per request]."""

    round_: int
    body_bytes: int
    base_us: float
    other_us: float

    @property
    def extra_us(self) -> float:
        """What the second setting adds per request [us]."""
        return self.other_us - self.base_us


@dataclass(frozen=True)
class Line:
    """``extra = a + b * bytes`` with standard errors [us, ns/byte]."""

    a_us: float
    a_se: float
    b_ns: float
    b_se: float


@dataclass(frozen=True)
class Trials:
    """CPU time per request of every trial of a file, by round, setting and body."""

    path: Path
    cpu_us: dict[tuple[int, Setting, int], float]
    host: str

    def pairs(self, base: Setting, other: Setting) -> list[Pair]:
        """The rounds' pairs of ``base`` and ``other`` at each body size."""
        out = []
        for (r, setting, body), us in sorted(self.cpu_us.items()):
            if setting == base and (r, other, body) in self.cpu_us:
                out.append(Pair(r, body, us, self.cpu_us[(r, other, body)]))
        if not out:
            raise InputError(f"{self.path}: no round holds both {base} and {other}")
        return out

    def static_1kb_us(self, protocol: str) -> float:
        """The host's static 1 KB HTTP/1.1 request over ``protocol``, median over rounds [us]."""
        values = [
            us
            for (_, setting, body), us in self.cpu_us.items()
            if setting == ("static", protocol, "1.1", 1) and body == SCALE_BYTES
        ]
        if not values:
            raise InputError(f"{self.path}: no static 1 KB {protocol.upper()} trial to scale by")
        return statistics.median(values)


@cache
def read_trials(path: Path) -> Trials:
    """The trials of ``path`` (one line per trial; HTTP/1.1, one stream unless stated)."""
    try:
        text = read_bounded(path, MAX_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read ({exc})") from None
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise InputError(f"{path}: missing column(s) {', '.join(missing)}")
    cpu: dict[tuple[int, Setting, int], float] = {}
    host = ""
    for i, row in enumerate(reader, start=2):
        try:
            r = int(row["round"])
            body = int(row["file_bytes"])
            streams = int(row.get("streams") or 1)
            requests = float(row["requests"])
            cpu_s = float(row["server_cpu_pct"]) / 100.0 * float(row["duration_s"])
        except (TypeError, ValueError):
            raise InputError(
                f"{path}:{i}: round, file_bytes, streams, requests, server_cpu_pct and "
                "duration_s must be numbers"
            ) from None
        version = row.get("http_version") or "1.1"
        setting = (row["scenario"], row["protocol"], version, streams)
        if setting[0] not in SCENARIOS or setting[1] not in ("http", "https"):
            raise InputError(
                f"{path}:{i}: protocol must be http or https and scenario static or reverse_proxy"
            )
        if version not in ("1.1", "2") or streams < 1:
            raise InputError(f"{path}:{i}: http_version must be 1.1 or 2, streams >= 1")
        if not (requests > 0 and math.isfinite(cpu_s) and cpu_s > 0):
            raise InputError(f"{path}:{i}: a trial needs requests and the worker's CPU time")
        key = (r, setting, body)
        if key in cpu:
            raise InputError(f"{path}:{i}: a second trial of round {r}, {setting}, {body} B")
        cpu[key] = cpu_s / requests * 1e6
        host = host or f"{row.get('cpu_model') or 'an unnamed CPU'} ({row['started_at'][:10]})"
    if not cpu:
        raise InputError(f"{path}: no trials")
    return Trials(path, cpu, host)


def fit_line(pairs: Sequence[Pair]) -> Line:
    """Least squares ``extra = a + b * bytes`` [us, ns/byte] with standard errors."""
    x = np.array([p.body_bytes / 1000.0 for p in pairs])
    y = np.array([p.extra_us for p in pairs])
    if len(set(x.tolist())) < 2 or len(y) < 3:
        raise InputError("a cost from pairs of trials needs two body sizes and three pairs")
    X = np.column_stack([np.ones_like(x), x])
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ coef
    s2 = float(resid @ resid) / max(len(y) - 2, 1)
    cov = s2 * np.linalg.inv(X.T @ X)
    return Line(float(coef[0]), math.sqrt(cov[0, 0]), float(coef[1]), math.sqrt(cov[1, 1]))


def _scale(
    trials: Trials, reference: Mapping[str, float], protocol: str = "http"
) -> tuple[float, str]:
    """Host -> reference factor, by the static 1 KB request over ``protocol``, and how."""
    host = trials.static_1kb_us(protocol)
    ref = seed_cost_us(reference, cost_terms(SCALE_BYTES, https=protocol == "https"))
    what = "request" if protocol == "http" else "HTTPS request"
    return ref / host, (
        f"x{ref / host:.2f} to the reference core (its static 1 KB {what} {ref:.1f} us / the "
        f"host's {host:.1f} us)"
    )


def _where(trials: Trials, n: int) -> str:
    rounds = len({r for r, _, _ in trials.cpu_us})
    return (
        f"{n} pairs in {rounds} rounds of runners trials on {trials.host} "
        f"(data/reference/{trials.path.name})"
    )


def _log_range(mid: float, sd: float) -> tuple[float, float]:
    rel = sd / mid
    return mid * math.exp(-1.96 * rel), mid * math.exp(1.96 * rel)


Term = tuple[float, float, float, str]  # value, 95% low, 95% high, source


def proxy_terms(reference: Mapping[str, float], path: Path = PROXY_TRIALS) -> dict[str, Term]:
    """``proxy_request_us`` and ``proxy_byte_ns`` on the reference core.

    The fixed part is the mean of HTTP's and HTTPS's (1 sd: half their difference, with their
    own errors); the per-byte part is HTTP's: the proxied body a static server would have sent
    with ``sendfile`` (over HTTPS the static file is already read and encrypted, so a proxy
    copies less beside it: there the cost is overstated, on the safe side).
    """
    trials = read_trials(path)
    lines = {}
    n = 0
    for proto in ("http", "https"):
        pairs = trials.pairs(("static", proto, "1.1", 1), ("reverse_proxy", proto, "1.1", 1))
        lines[proto] = fit_line(pairs)
        n += len(pairs)
    scale, to_ref = _scale(trials, reference)
    where = _where(trials, n)
    values = [ln.a_us for ln in lines.values()]
    mid = statistics.fmean(values) * scale
    sd = (
        math.hypot(
            (max(values) - min(values)) / 2,
            math.sqrt(statistics.fmean(ln.a_se**2 for ln in lines.values())),
        )
        * scale
    )
    lo, hi = _log_range(mid, sd)
    each = "; ".join(f"{p} {ln.a_us:.3g} +- {ln.a_se:.2g} us" for p, ln in lines.items())
    http, https = lines["http"], lines["https"]
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
            f"{http.b_se:.2g} ns/byte), {where}, {to_ref}; HTTPS measured {https.b_ns:.2g} +- "
            f"{https.b_se:.1g} ns/byte (its static file is read and encrypted, not sent with "
            "sendfile, so a proxy copies less beside it): HTTPS proxies of large bodies are "
            "sized on the safe side",
        ),
    }


def tls_byte_current(reference: Mapping[str, float], path: Path = PROXY_TRIALS) -> Term:
    """TLS's extra CPU per body byte on a current OpenSSL, on the reference core [ns/byte].

    The slope of static HTTPS minus static HTTP against the body size: reading the file,
    encrypting it and writing the records, where HTTP hands the file to ``sendfile``.
    """
    trials = read_trials(path)
    pairs = trials.pairs(("static", "http", "1.1", 1), ("static", "https", "1.1", 1))
    ln = fit_line(pairs)
    scale, to_ref = _scale(trials, reference)
    lo, hi = _log_range(ln.b_ns * scale, ln.b_se * scale)
    return (
        ln.b_ns * scale,
        lo,
        hi,
        f"measured: static HTTPS minus HTTP per body byte on a current stack (nginx 1.22, "
        f"OpenSSL 3.0), {ln.b_ns:.3g} +- {ln.b_se:.2g} ns/byte, {_where(trials, len(pairs))}, "
        f"{to_ref}",
    )


def http2_term(reference: Mapping[str, float], path: Path = HTTP2_TRIALS) -> Term:
    """``http2_request_us``: HTTP/2 minus HTTP/1.1 per request on the reference core [us].

    Static HTTPS over HTTP/2 against HTTP/1.1 keep-alive, both from h2load: one stream per
    connection (each request alone: framing, HPACK and stream bookkeeping on top) and 4
    streams (requests share reads and writes, which can make HTTP/2 cheaper). The value is the
    mean of the two lines' fixed parts, 1 sd half their difference: how many streams a
    client keeps open is the deployment's, not the server's. The 95% range is linear, not
    on the log scale as the other terms': the value may be zero or negative.
    """
    trials = read_trials(path)
    lines = {}
    n = 0
    for streams in (1, 4):
        pairs = trials.pairs(("static", "https", "1.1", 1), ("static", "https", "2", streams))
        lines[streams] = fit_line(pairs)
        n += len(pairs)
    scale, to_ref = _scale(trials, reference, "https")
    a = [ln.a_us for ln in lines.values()]
    mid = statistics.fmean(a) * scale
    sd = math.hypot((max(a) - min(a)) / 2, max(ln.a_se for ln in lines.values())) * scale
    each = "; ".join(
        f"{k} stream{'s' if k > 1 else ''} {ln.a_us:+.3g} +- {ln.a_se:.2g} us (per byte "
        f"{ln.b_ns:+.2g} ns)"
        for k, ln in lines.items()
    )
    return (
        mid,
        mid - 1.96 * sd,
        mid + 1.96 * sd,
        f"measured: static HTTPS over HTTP/2 minus HTTP/1.1, both h2load, fixed part a of "
        f"extra = a + b x bytes ({each}), {_where(trials, n)}, {to_ref}; the mean of 1 and 4 "
        "streams per connection, 1 sd half their difference",
    )

"""CPU profiles: what a request costs on one CPU, as measured by ``python -m runners calibrate``.

A profile is one JSON file (schema ``nginx-sizing/cpu-profile/1``). ``runners`` writes it,
``sizing`` reads it; this module holds the schema, the writer, the reader and the validation,
and imports neither package.

Every coefficient is the CPU time of ONE nginx worker (one vCPU of the measured host):

=============================== ============== ==================================================
name                            unit           meaning
=============================== ============== ==================================================
``request_us``                  us/request     one HTTP/1.1 keep-alive request, 0-byte body
``body_us``                     us/request     extra per response with a body (> 0 B), fixed part
``byte_ns``                     ns/byte        per response body byte, plaintext
``tls_request_us``              us/request     extra per request over HTTPS (keep-alive)
``tls_byte_ns``                 ns/byte        extra per body byte over HTTPS (encryption)
``tls_body_us``                 us/request     HTTPS minus HTTP fixed part of a body (may be < 0)
``connection_us``               us/connection  a new TCP connection (accept, close), HTTP
``handshake_full_ecdsa_p256_us`` us/handshake  a full TLS handshake, ECDSA P-256 certificate
``handshake_full_rsa2048_us``   us/handshake   a full TLS handshake, RSA 2048 certificate
``handshake_resumed_us``        us/handshake   a resumed TLS handshake
``gzip_byte_ns``                ns/byte        per uncompressed body byte compressed by gzip
``proxy_request_us``            us/request     reverse_proxy's extra work over static
``gateway_request_us``          us/request     api_gateway's extra work over reverse_proxy
``http2_request_us``            us/request     HTTP/2 minus HTTP/1.1 per request (may be < 0)
=============================== ============== ==================================================

The cost model the coefficients fill (`cost_terms`, the one place it is written: calibration
fits the coefficients with it in ``runners`` and the capacity model predicts with it in
``sizing``)::

    cpu_us_per_request = request_us + [B > 0]body_us + byte_ns*B/1000
                         + [https](tls_request_us + [B > 0]tls_body_us + tls_byte_ns*B/1000)
                         + (connection_us + [https]handshake_us) / requests_per_connection
                         + gzip_byte_ns*B_gzipped/1000 + scenario extra (+ http2_request_us)
    capacity per worker = 1e6 / cpu_us_per_request   [requests/s]

Request and connection costs include the packet path they were measured over: see
``measured_over`` (``loopback`` or ``network``).
"""

from __future__ import annotations

import datetime
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trialtable.files import MB, FileRefused, loads_json, read_bounded, write_atomic
from trialtable.jsonvalue import JsonObject
from trialtable.tls import DEFAULT_TLS_KEY, HANDSHAKE_FULL

SCHEMA = "nginx-sizing/cpu-profile/1"
#: Largest profile file read [B]: 16 MB (a campaign's profile is a few kB); a larger file, a
#: device or a folder is refused before it is read, and a pipe is read up to it.
PROFILE_MAX_BYTES = 16 * MB

#: name -> (unit, meaning); the coefficients a profile may hold (any may be absent).
COEFFICIENTS: dict[str, tuple[str, str]] = {
    "request_us": ("us/request", "one HTTP/1.1 keep-alive request with a 0-byte body"),
    "body_us": (
        "us/request",
        "extra per response with a non-empty body (opening and sending the file), fixed part",
    ),
    "byte_ns": ("ns/byte", "per response body byte, plaintext"),
    "tls_request_us": ("us/request", "extra per request over HTTPS (keep-alive)"),
    "tls_byte_ns": ("ns/byte", "extra per body byte over HTTPS (encryption)"),
    "tls_body_us": (
        "us/request",
        "HTTPS minus HTTP fixed part of a response with a body (may be negative: plain HTTP "
        "sends the file with sendfile, HTTPS reads and encrypts it)",
    ),
    "connection_us": ("us/connection", "a new TCP connection (accept, close), HTTP"),
    "handshake_full_ecdsa_p256_us": (
        "us/handshake",
        "a full TLS handshake with an ECDSA P-256 key, on top of connection_us",
    ),
    "handshake_full_rsa2048_us": (
        "us/handshake",
        "a full TLS handshake with an RSA 2048 key, on top of connection_us",
    ),
    "handshake_resumed_us": ("us/handshake", "a resumed TLS handshake, on top of connection_us"),
    "gzip_byte_ns": ("ns/byte", "per uncompressed body byte compressed by gzip"),
    "proxy_request_us": ("us/request", "reverse_proxy's extra work over static, fixed part"),
    "proxy_byte_ns": (
        "ns/byte",
        "reverse_proxy's extra per body byte: read from the upstream and copied to the client "
        "(a static file goes out with sendfile)",
    ),
    "gateway_request_us": ("us/request", "api_gateway's extra work over reverse_proxy"),
    "http2_request_us": ("us/request", "HTTP/2 minus HTTP/1.1 per request (may be negative)"),
}
#: Scenarios that proxy (``proxy_request_us``, ``proxy_byte_ns``) and the one that also rewrites
#: (``gateway_request_us``).
PROXIED = ("reverse_proxy", "api_gateway")


@dataclass(frozen=True)
class NewConnections:
    """How often a request opens a connection, and the TLS handshake it then costs.

    Attributes
    ----------
    per_request : float
        New connections per request [1]: 0 for connections reused without end, 1 for one
        request per connection.
    tls_key : str
        Certificate key of a full handshake (`HANDSHAKE_FULL`).
    tls_resumption : float
        Share of new HTTPS connections that resume a session [0, 1].
    """

    per_request: float = 0.0
    tls_key: str = DEFAULT_TLS_KEY
    tls_resumption: float = 0.0


#: Connections reused without end: no connection cost.
REUSED = NewConnections()


def cost_terms(
    file_bytes: float,
    *,
    https: bool = False,
    wire_bytes: float | None = None,
    connections: NewConnections = REUSED,
    gzip: float = 0.0,
    scenario: str = "static",
    http_version: str = "1.1",
) -> dict[str, float]:
    """The cost formula: each coefficient's multiplier for one request.

    ``cpu_us_per_request = sum(value[name] * x for name, x in cost_terms(...).items())``, with
    each coefficient in its unit (us or ns per byte; a multiplier of a ``*_ns`` coefficient is
    in thousands of bytes, so the sum is in us). Calibration uses it as its design row, the
    capacity model as its prediction; no other place writes the formula.

    Parameters
    ----------
    file_bytes : float
        Response body size before compression [B].
    https : bool
        Served over TLS.
    wire_bytes : float, optional
        Body bytes sent [B] (the compressed size with gzip); ``file_bytes`` when omitted.
    connections : NewConnections
        New connections per request and their TLS handshakes (default: none).
    gzip : float
        Share of responses compressed on the fly [0, 1]; the cost is per uncompressed byte.
    scenario : str
        ``static`` (or any scenario that does not proxy), ``reverse_proxy`` or ``api_gateway``.
    http_version : str
        ``1.1`` or ``2``.

    Returns
    -------
    dict
        Coefficient name -> multiplier [requests, connections, handshakes or thousands of
        bytes per request]; a coefficient with no part in this request is absent.
        ``tls_body_us`` is present for any HTTPS body: a profile without it holds that cost
        in ``body_us`` and ``tls_request_us``.
    """
    body = file_bytes if wire_bytes is None else wire_bytes
    x = {"request_us": 1.0, "byte_ns": body / 1000.0}
    if file_bytes > 0:
        x["body_us"] = 1.0
    if https:
        x["tls_request_us"] = 1.0
        x["tls_byte_ns"] = body / 1000.0
        if file_bytes > 0:
            x["tls_body_us"] = 1.0
    if gzip > 0 and file_bytes > 0:
        x["gzip_byte_ns"] = gzip * file_bytes / 1000.0
    per_request, resumed = connections.per_request, connections.tls_resumption
    if per_request > 0:
        x["connection_us"] = per_request
        if https and resumed < 1.0:
            x[HANDSHAKE_FULL[connections.tls_key]] = per_request * (1.0 - resumed)
        if https and resumed > 0.0:
            x["handshake_resumed_us"] = per_request * resumed
    if scenario in PROXIED:
        x["proxy_request_us"] = 1.0
        if file_bytes > 0:
            # The upstream's body before compression is what the proxy reads and copies.
            x["proxy_byte_ns"] = file_bytes / 1000.0
    if scenario == "api_gateway":
        x["gateway_request_us"] = 1.0
    if http_version == "2":
        x["http2_request_us"] = 1.0
    return x


def feature_coefficient(name: str) -> str:
    """The coefficient of a configuration feature (`trialtable.features`): its CPU per run [us]."""
    return f"feature_{name}_us"


def feature_terms(features: Mapping[str, float]) -> dict[str, float]:
    """The cost formula's configuration-feature part: each feature's multiplier per request.

    ``cpu_us_per_request`` adds ``sum(value[feature_coefficient(name)] * times)`` to the sum of
    `cost_terms`; a feature runs ``times`` per request (`trialtable.features.check_features`).
    """
    return {feature_coefficient(name): float(times) for name, times in features.items() if times}


#: Coefficients that may be negative (a difference between two protocols).
SIGNED = frozenset({"http2_request_us", "tls_body_us"})

#: Largest size of a cost, by unit: 1 s of CPU per request, connection or handshake, and
#: 1 ms per byte. A cost beyond it (1e308 us) is a broken file, not a slow CPU; a signed
#: coefficient may be as negative as it may be positive. A standard error is bounded the
#: same way; a relative spread (over the mean) by `MAX_SPREAD`.
UNIT_MAX = {
    "us/request": 1e6,
    "us/connection": 1e6,
    "us/handshake": 1e6,
    "ns/byte": 1e6,
}
MAX_SPREAD = 1e3
#: Scaling: at most this many workers, requests per second and efficiency.
SCALING_MAX = {"workers": 1_000_000, "rps": 1e12, "efficiency": 1e3}
#: Most vCPUs per physical core a profile may name.
MAX_THREADS_PER_CORE = 8
#: SLA bounds [ms] (the trial table's, `trialtable.read.RANGES`).
SLA_RANGE_MS = (1e-6, 1e12)
MEASURED_OVER = ("loopback", "network")
ARCHES = ("x86_64", "arm64")
_REQUIRED = (
    "schema",
    "created",
    "cpu_model",
    "arch",
    "threads_per_core",
    "measured_over",
    "load_generator",
    "host",
    "coefficients",
    "scaling",
    "sla_p99_ms",
    "runs",
    "configs",
    "warnings",
)
_CREATED = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")


class ProfileError(ValueError):
    """A profile file that cannot be read or does not follow the schema (one clear line)."""


@dataclass(frozen=True)
class Coefficient:
    """One fitted cost.

    Attributes
    ----------
    value : float
        The estimate, in ``unit``.
    stderr : float or None
        Its standard error from the joint least-squares fit, in ``unit`` (None when the fit
        has no residual degrees of freedom: as many settings as coefficients, one round).
    spread : float or None
        Relative spread across the campaign's repeats: the standard deviation of the
        per-repeat estimates over the absolute mean (None with fewer than 2 repeats).
    unit : str
        The unit of ``value`` and ``stderr`` (fixed per name, see `COEFFICIENTS`).
    note : str
        How it was obtained when that differs from a plain fit (e.g. held at zero).
    """

    value: float
    stderr: float | None
    spread: float | None
    unit: str
    note: str = ""

    def to_dict(self) -> JsonObject:
        """Plain data for the JSON file."""
        d: dict[str, Any] = {"value": self.value}
        # An error that was not measured is left out (readers take its absence as unknown).
        if self.stderr is not None:
            d["stderr"] = self.stderr
        if self.spread is not None:
            d["spread"] = self.spread
        d["unit"] = self.unit
        if self.note:
            d["note"] = self.note
        return d


@dataclass(frozen=True)
class Scaling:
    """Multi-worker scaling on the measured host.

    Attributes
    ----------
    workers : list of int
        Worker counts measured.
    rps : list of float
        Median RPS at each count (limited by the load generator when it shares the host).
    efficiency : list of float
        CPU time per request with one worker over CPU time per request with n workers (1.0 =
        no extra cost per request with more workers).
    """

    workers: list[int] = field(default_factory=list)
    rps: list[float] = field(default_factory=list)
    efficiency: list[float] = field(default_factory=list)

    def to_dict(self) -> JsonObject:
        """Plain data for the JSON file."""
        return {"workers": self.workers, "rps": self.rps, "efficiency": self.efficiency}


@dataclass(frozen=True)
class Profile:
    """A CPU profile; see the module docstring for the meaning of each coefficient.

    Attributes
    ----------
    created : str
        UTC time, ``YYYY-mm-ddTHH:MM:SSZ``.
    cpu_model : str
        ``model name`` of /proc/cpuinfo on the measured host.
    arch : str
        ``x86_64`` or ``arm64``.
    threads_per_core : int or None
        vCPUs per physical core on the measured host (None when unknown).
    measured_over : str
        ``loopback`` (client on the same host) or ``network``.
    load_generator : str
        The load generator used (``wrk``, ...).
    host : dict
        The runners' host facts (kernel, nginx and OpenSSL versions, CPU flags, ...).
    coefficients : dict of str to Coefficient
    scaling : Scaling
    sla_p99_ms : float
        The p99 SLA each setting was measured under [ms].
    runs : list of str
        Run ids the profile rests on.
    configs : dict of str to str
        Setting name -> the exact nginx.conf it ran.
    warnings : list of str
        Noise flags and everything else a reader should know.
    extra : dict
        Further keys (campaign details, per-setting measurements), kept as they are.
    """

    created: str
    cpu_model: str
    arch: str
    threads_per_core: int | None
    measured_over: str
    load_generator: str
    host: dict[str, Any]
    coefficients: dict[str, Coefficient]
    scaling: Scaling
    sla_p99_ms: float
    runs: list[str]
    configs: dict[str, str]
    warnings: list[str]
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> JsonObject:
        """The JSON document, with ``schema`` first."""
        d: dict[str, Any] = {
            "schema": SCHEMA,
            "created": self.created,
            "cpu_model": self.cpu_model,
            "arch": self.arch,
            "threads_per_core": self.threads_per_core,
            "measured_over": self.measured_over,
            "load_generator": self.load_generator,
            "host": self.host,
            "coefficients": {k: c.to_dict() for k, c in self.coefficients.items()},
            "scaling": self.scaling.to_dict(),
            "sla_p99_ms": self.sla_p99_ms,
            "runs": self.runs,
            "configs": self.configs,
            "warnings": self.warnings,
        }
        for key, value in self.extra.items():
            d.setdefault(key, value)
        return d


def _fail(where: str, what: str) -> ProfileError:
    return ProfileError(f"{where}: {what}")


def _number(value: object) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )


#: How far past this machine's clock a profile's ``created`` may lie (the measuring host's
#: clock may run ahead of the reader's) [s].
CLOCK_SLACK_S = 86_400


def _utc_time(value: object) -> bool:
    """Whether ``value`` is a real, past UTC time ``YYYY-mm-ddTHH:MM:SSZ``.

    Month 13 is not real; a time more than `CLOCK_SLACK_S` past now is not past (a profile
    from the year 9999 is not a measurement).
    """
    if not isinstance(value, str) or not _CREATED.fullmatch(value):
        return False
    try:
        when = datetime.datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return False
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    return (when - now).total_seconds() <= CLOCK_SLACK_S


def from_dict(d: object, where: str = "profile") -> Profile:
    """Validate a decoded JSON document and return the `Profile`.

    Raises `ProfileError` with one line naming the first problem (``where`` prefixes it).
    """
    if not isinstance(d, dict):
        raise _fail(where, "is not a JSON object")
    if d.get("schema") != SCHEMA:
        raise _fail(where, f"schema is {d.get('schema')!r}, expected {SCHEMA!r}")
    missing = [k for k in _REQUIRED if k not in d]
    if missing:
        raise _fail(where, f"missing keys: {', '.join(missing)}")
    if not _utc_time(d["created"]):
        raise _fail(where, f"created {d['created']!r} is not a past UTC time YYYY-mm-ddTHH:MM:SSZ")
    if not isinstance(d["cpu_model"], str):
        raise _fail(where, "cpu_model must be a string")
    if d["arch"] not in ARCHES:
        raise _fail(where, f"arch {d['arch']!r} is not one of {', '.join(ARCHES)}")
    tpc = d["threads_per_core"]
    if tpc is not None and (
        not isinstance(tpc, int) or isinstance(tpc, bool) or not 1 <= tpc <= MAX_THREADS_PER_CORE
    ):
        raise _fail(where, f"threads_per_core {tpc!r} is not an integer from 1 to 8 or null")
    if d["measured_over"] not in MEASURED_OVER:
        raise _fail(where, f"measured_over {d['measured_over']!r} is not loopback or network")
    if not isinstance(d["load_generator"], str) or not d["load_generator"]:
        raise _fail(where, "load_generator must be a non-empty string")
    if not isinstance(d["host"], dict):
        raise _fail(where, "host must be an object")
    low, high = SLA_RANGE_MS
    if not _number(d["sla_p99_ms"]) or not low <= d["sla_p99_ms"] <= high:
        raise _fail(
            where, f"sla_p99_ms {d['sla_p99_ms']!r} is not a number from {low:g} to {high:g}"
        )
    for key in ("runs", "warnings"):
        if not isinstance(d[key], list) or not all(isinstance(x, str) for x in d[key]):
            raise _fail(where, f"{key} must be a list of strings")
    configs = d["configs"]
    if not isinstance(configs, dict) or not all(isinstance(v, str) for v in configs.values()):
        raise _fail(where, "configs must map setting names to nginx.conf text")
    coefficients = _coefficients(d["coefficients"], where)
    scaling = _scaling(d["scaling"], where)
    extra = {k: v for k, v in d.items() if k not in _REQUIRED}
    return Profile(
        created=d["created"],
        cpu_model=d["cpu_model"],
        arch=d["arch"],
        threads_per_core=tpc,
        measured_over=d["measured_over"],
        load_generator=d["load_generator"],
        host=d["host"],
        coefficients=coefficients,
        scaling=scaling,
        sla_p99_ms=float(d["sla_p99_ms"]),
        runs=list(d["runs"]),
        configs=dict(configs),
        warnings=list(d["warnings"]),
        extra=extra,
    )


def _coefficients(raw: object, where: str) -> dict[str, Coefficient]:
    if not isinstance(raw, dict):
        raise _fail(where, "coefficients must be an object")
    out = {}
    for name, c in raw.items():
        at = f"{where}: coefficient {name}"
        if name not in COEFFICIENTS:
            raise ProfileError(f"{at} is unknown; known: {', '.join(COEFFICIENTS)}")
        if not isinstance(c, dict):
            raise ProfileError(f"{at} must be an object with value, stderr, spread, unit")
        unit = COEFFICIENTS[name][0]
        if c.get("unit") != unit:
            raise ProfileError(f"{at} has unit {c.get('unit')!r}, expected {unit!r}")
        top = UNIT_MAX[unit]
        if not _number(c.get("value")):
            raise ProfileError(f"{at}: value {c.get('value')!r} is not a finite number")
        if name not in SIGNED and c["value"] < 0:
            raise ProfileError(f"{at}: value {c['value']} is negative (a cost cannot be)")
        if abs(c["value"]) > top:
            raise ProfileError(f"{at}: value {c['value']:.6g} is larger than {top:g} {unit}")
        stderr = c.get("stderr")
        if stderr is not None and (not _number(stderr) or not 0 <= stderr <= top):
            raise ProfileError(f"{at}: stderr {stderr!r} is not a number from 0 to {top:g} or null")
        spread = c.get("spread")
        if spread is not None and (not _number(spread) or not 0 <= spread <= MAX_SPREAD):
            raise ProfileError(
                f"{at}: spread {spread!r} is not a number from 0 to {MAX_SPREAD:g} or null"
            )
        note = c.get("note", "")
        if not isinstance(note, str):
            raise ProfileError(f"{at}: note must be a string")
        out[name] = Coefficient(
            float(c["value"]),
            None if stderr is None else float(stderr),
            None if spread is None else float(spread),
            unit,
            note,
        )
    if "request_us" in out and out["request_us"].value <= 0:
        raise _fail(where, "coefficient request_us: value is 0 (a request cannot cost nothing)")
    if out and all(c.value == 0 for c in out.values()):
        raise _fail(where, "every coefficient is 0 (a request cannot cost nothing)")
    return out


def errors(profile: Profile) -> dict[str, tuple[float, float]]:
    """``{name: (value, sd)}``: each coefficient and its error (stderr and spread together)."""
    return {
        k: (c.value, math.hypot(c.stderr or 0.0, (c.spread or 0.0) * abs(c.value)))
        for k, c in profile.coefficients.items()
    }


def disagreement(
    a: Mapping[str, tuple[float, float]], b: Mapping[str, tuple[float, float]], k: float = 3.0
) -> str | None:
    """Why two profiles of one CPU platform cannot both be right, or None.

    ``a`` and ``b`` map coefficient names to (value, standard deviation) (see `errors`). A
    coefficient both hold disagrees when the two values differ by more than ``k`` times
    their combined error (at least 1 % of the larger value when neither has one).
    """
    for name in sorted(set(a) & set(b)):
        (x, sx), (y, sy) = a[name], b[name]
        err = math.hypot(sx, sy) or 0.01 * max(abs(x), abs(y))
        if abs(x - y) > k * err:
            return (
                f"{name} is {x:.4g} in one and {y:.4g} in the other, more than {k:g} times "
                f"their combined error ({err:.2g})"
            )
    return None


def _scaling(raw: object, where: str) -> Scaling:
    if not isinstance(raw, dict):
        raise _fail(where, "scaling must be an object with workers, rps, efficiency")
    workers, rps, eff = raw.get("workers"), raw.get("rps"), raw.get("efficiency")
    if not all(isinstance(x, list) for x in (workers, rps, eff)):
        raise _fail(where, "scaling needs lists workers, rps and efficiency")
    assert isinstance(workers, list) and isinstance(rps, list) and isinstance(eff, list)
    if not len(workers) == len(rps) == len(eff):
        raise _fail(where, "scaling's workers, rps and efficiency differ in length")
    top = SCALING_MAX
    if not all(
        isinstance(w, int) and not isinstance(w, bool) and 1 <= w <= top["workers"] for w in workers
    ):
        raise _fail(where, f"scaling workers must be integers from 1 to {top['workers']}")
    if not all(_number(x) and 0 < x <= top["rps"] for x in rps):
        raise _fail(where, f"scaling rps must be numbers above 0, at most {top['rps']:g}")
    if not all(_number(x) and 0 < x <= top["efficiency"] for x in eff):
        raise _fail(
            where, f"scaling efficiency must be numbers above 0, at most {top['efficiency']:g}"
        )
    return Scaling(list(workers), [float(x) for x in rps], [float(x) for x in eff])


def read_profile(path: str | os.PathLike[str]) -> Profile:
    """Read and validate a profile file.

    Raises `ProfileError` (one line naming the file and the problem) for a missing or
    unreadable file, invalid JSON or a document that does not follow the schema.
    """
    return from_dict(read_document(path), str(path))


def read_document(path: str | os.PathLike[str]) -> JsonObject:
    """A profile file's decoded JSON, once `from_dict` has checked it (see `read_profile`)."""
    p = Path(path)
    try:
        text = read_bounded(p, PROFILE_MAX_BYTES).decode("utf-8")
    except FileNotFoundError:
        raise ProfileError(f"{p}: no such profile file") from None
    except FileRefused as exc:
        raise ProfileError(f"{p}: cannot read it: it {exc.strerror}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(f"{p}: cannot read it ({exc})") from None
    try:
        d = loads_json(text)
    except (ValueError, RecursionError) as exc:
        raise ProfileError(f"{p}: not valid JSON ({exc})") from None
    if not isinstance(d, dict):
        raise _fail(str(p), "is not a JSON object")  # as from_dict says it
    from_dict(d, str(p))
    return dict(d)


def write_profile(profile: Profile, path: str | os.PathLike[str]) -> Path:
    """Validate ``profile`` and write it as JSON (atomically: write, then rename)."""
    d = profile.to_dict()
    from_dict(json.loads(json.dumps(d)), "profile to write")
    return write_atomic(path, json.dumps(d, indent=1, allow_nan=False) + "\n")


def validate(d: Mapping[str, object]) -> None:
    """Raise `ProfileError` if ``d`` (a decoded profile document) breaks the schema."""
    from_dict(dict(d))

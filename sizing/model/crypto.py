"""Server CPU cost of TLS and JWT work on current CPUs, from published per-core figures.

``data/reference/crypto-current.csv`` holds one row per published figure (``openssl speed``
style results on named CPUs, NGINX's published handshake rates), each with its source, the
CPU, the crypto library and the quoted text. `load_figures` validates it; the functions below
derive, per CPU platform (``sizing.platforms`` ids), the server-side cost of:

- a full TLS 1.2 / 1.3 handshake with an RSA-2048 or an ECDSA P-256 certificate: one
  signature + one ECDHE key agreement + a fixed per-handshake part (TLS protocol work beside
  the public-key operations), `handshake_full_us`;
- a resumed handshake, `handshake_resumed_us` (an estimate: no published figure);
- TLS bulk encryption, AES-128-GCM [ns/byte], `tls_bulk_ns_per_byte`;
- a JSON Web Token check, RS256 or ES256, `jwt_verify_us`: the signature verification, the
  public key's import (the project's njs check imports the key on every request) and an njs
  term (a marked estimate).

A platform without a figure for an operation gets the median of the platforms of its
architecture that have one, with their spread as its uncertainty, and says so in its source.
Every value is a `Derived`: value, relative standard error and the published tables it comes
from, by title and publisher.
"""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from sizing.errors import InputError
from sizing.paths import DATA_DIR, REFERENCE_DIR
from trialtable.fields import Field, FieldError, Fields
from trialtable.files import read_bounded

CSV_PATH = REFERENCE_DIR / "crypto-current.csv"
COST_MODEL_PATH = DATA_DIR / "fits" / "cost-model.json"
MAX_BYTES = 1024 * 1024

COLUMNS = (
    "source_id",
    "title",
    "publisher",
    "cpu_platform",
    "cpu_model",
    "instance_type",
    "clock_ghz",
    "software",
    "operation",
    "threads",
    "value",
    "unit",
    "url",
    "quote",
)

#: How each unit turns into a cost: "op" -> us per operation, "byte" -> ns per byte.
UNIT_TO_COST: dict[str, tuple[str, Callable[[float], float]]] = {
    "ops_per_s": ("op", lambda v: 1e6 / v),
    "us_per_op": ("op", lambda v: v),
    "handshakes_per_s": ("op", lambda v: 1e6 / v),
    "gbit_per_s": ("byte", lambda v: 8.0 / v),
    "mbyte_per_s": ("byte", lambda v: 1e3 / v),
    "kbyte_per_s": ("byte", lambda v: 1e6 / v),
    "bytes_per_s": ("byte", lambda v: 1e9 / v),
    "records16k_per_s": ("byte", lambda v: 1e9 / (v * 16384.0)),
    "ratio": ("ratio", lambda v: v),
}

#: Operations and the range a cost must fall in [us, ns/byte or 1]: beyond it, a typo.
OPERATIONS: dict[str, tuple[str, float, float]] = {
    "rsa2048_sign": ("op", 50.0, 20000.0),
    "rsa2048_verify": ("op", 1.0, 1000.0),
    "rsa2048_public_key_load": ("op", 0.1, 5000.0),
    "ecdsa_p256_sign": ("op", 1.0, 2000.0),
    "ecdsa_p256_verify": ("op", 5.0, 5000.0),
    "x25519_derive": ("op", 5.0, 5000.0),
    "ecdhe_p256_derive": ("op", 5.0, 5000.0),
    "aes128gcm_16k": ("byte", 0.01, 20.0),
    "aes256gcm_16k": ("byte", 0.01, 20.0),
    "chacha20poly1305_16k": ("byte", 0.01, 20.0),
    "nginx_full_handshake_rsa2048": ("op", 50.0, 50000.0),
    "nginx_full_handshake_ecdsa_p256": ("op", 20.0, 50000.0),
    "nginx_handshakes_per_rsa_sign_low": ("ratio", 0.05, 1.0),
    "nginx_handshakes_per_rsa_sign_high": ("ratio", 0.05, 1.0),
}

#: Architecture of each platform id the table uses (``sizing.platforms`` ids, plus chips the
#: catalog does not sell: Cobalt 100, Sierra Forest, the 2014 virtual core).
ARCH = {
    "haswell": "x86_64",
    "virtual_intel_2014": "x86_64",
    "cascade_lake": "x86_64",
    "ice_lake": "x86_64",
    "sapphire_rapids": "x86_64",
    "emerald_rapids": "x86_64",
    "granite_rapids": "x86_64",
    "sierra_forest": "x86_64",
    "zen3": "x86_64",
    "zen4": "x86_64",
    "zen5": "x86_64",
    "altra": "arm64",
    "graviton2": "arm64",
    "graviton3": "arm64",
    "graviton3e": "arm64",
    "graviton4": "arm64",
    "axion": "arm64",
    "cobalt100": "arm64",
}
#: Platforms whose figures are those of another platform with the same core.
SAME_CORE = {
    "graviton2": "altra",  # Neoverse N1
    "graviton3e": "graviton3",  # Neoverse V1
    "axion": "graviton4",  # Neoverse V2
}
#: Platforms of the figures that stand for the current generation (older cores and the 2014
#: and 2016 NGINX rows are kept in the table but never stand in for another platform).
CURRENT = frozenset(ARCH) - {"haswell", "virtual_intel_2014"}

#: A single published figure's relative standard error (run-to-run and build differences of
#: ``openssl speed`` style results on one CPU are about 5-15%): an assumption.
SINGLE_SOURCE_RSE = 0.10

#: Estimate: njs work per JWT-checked request besides the crypto (cloning the request's VM,
#: the regular expression, two base64url decodes and JSON.parse calls, the WebCrypto promise
#: chain and the internal redirect), on the reference (Haswell) core: 20 us (10-40).
NJS_OVERHEAD_REF_US = 20.0
NJS_OVERHEAD_RSE = 0.35
#: Estimate kept from the cost model: an abbreviated handshake (session ticket) on the
#: reference core, 40 us (20-80).
RESUMED_REF_US = 40.0
RESUMED_RSE = 0.35
#: Estimate: relative standard error of the fixed per-handshake part derived below ("over
#: 2,000" per core is a lower bound on the rate; the reference core's clock under load lies
#: between its 2.3 GHz base and 3.6 GHz turbo).
HANDSHAKE_FIXED_RSE = 0.30


@dataclass(frozen=True)
class Figure:
    """One published figure (one row of the table).

    Attributes
    ----------
    cost : float
        The figure as a cost: us per operation, ns per byte, or the ratio itself.
    line : int
        Its line in the file (the header is line 1).
    """

    source_id: str
    title: str
    publisher: str
    platform: str
    cpu_model: str
    instance_type: str
    clock_ghz: float | None
    software: str
    operation: str
    threads: int
    value: float
    unit: str
    url: str
    quote: str
    cost: float
    line: int

    @property
    def cited(self) -> str:
        """Title and publisher, as sources are named."""
        return f"{self.title} ({self.publisher})"


@dataclass(frozen=True)
class Derived:
    """A derived cost with its uncertainty and sources.

    Attributes
    ----------
    value : float
        In ``unit`` (``us`` per handshake or check, ``ns/byte``).
    rse : float
        Relative standard error [1]: the spread across sources (one platform) or platforms
        (a fallback), at least `SINGLE_SOURCE_RSE`; estimates carry their stated range.
    unit : str
        ``us`` or ``ns/byte``.
    source : str
        The published tables by title and publisher, and ``estimate: ...`` for any estimated
        part.
    """

    value: float
    rse: float
    unit: str
    source: str

    @property
    def stderr(self) -> float:
        """Absolute standard error, in ``unit``."""
        return self.value * self.rse


#: The fields of a figures row: type, unit and sane range of each (a value's range in its
#: unit is wide; the cost it gives is then held to its operation's range, `OPERATIONS`).
FIGURES = Fields(
    "crypto figures",
    (
        Field("source_id", "str"),
        Field("title", "str", max_len=500),
        Field("publisher", "str"),
        Field("cpu_platform", "str", choices=tuple(ARCH)),
        Field("cpu_model", "str", required=False),
        Field("instance_type", "str", required=False),
        Field("clock_ghz", "float", "GHz", 0.5, 6.0, required=False),
        Field("software", "str", required=False),
        Field("operation", "str", choices=tuple(OPERATIONS)),
        Field("threads", "int", "threads", 1, 1, required=False),
        Field("value", "float", "in the row's unit", 1e-9, 1e15),
        Field("unit", "str", choices=tuple(UNIT_TO_COST)),
        Field("url", "str", max_len=2000),
        Field("quote", "str", required=False, max_len=4000),
    ),
)


def _problem(path: Path, line: int, field: str, what: str) -> InputError:
    return InputError(f"{path}:{line}: field {field!r}: {what}")


def _row(path: Path, line: int, row: dict[str, str]) -> Figure:
    if None in row or any(v is None for v in row.values()):
        raise InputError(f"{path}:{line}: wrong number of fields")
    try:
        v = FIGURES.parse_row(row, f"{path}:{line}")
    except FieldError as exc:
        raise InputError(str(exc)) from None
    op, unit, value = v["operation"], v["unit"], v["value"]
    kind, to_cost = UNIT_TO_COST[unit]
    want, lo, hi = OPERATIONS[op]
    if kind != want:
        raise _problem(path, line, "unit", f"{unit!r} does not measure {op!r}")
    cost = to_cost(value)
    if not lo <= cost <= hi:
        raise _problem(
            path, line, "value", f"{value:g} {unit} is out of range for {op} ({lo:g}-{hi:g})"
        )
    return Figure(
        source_id=v["source_id"],
        title=v["title"],
        publisher=v["publisher"],
        platform=v["cpu_platform"],
        cpu_model=v["cpu_model"] or "",
        instance_type=v["instance_type"] or "",
        clock_ghz=v["clock_ghz"],
        software=v["software"] or "",
        operation=op,
        threads=v["threads"] or 1,
        value=value,
        unit=unit,
        url=v["url"],
        quote=v["quote"] or "",
        cost=cost,
        line=line,
    )


def load_figures(path: str | Path | None = None) -> list[Figure]:
    """The published figures of ``crypto-current.csv`` (or ``path``), validated.

    Raises
    ------
    InputError
        A file that cannot be read, lacks a column, or a row without a source or with a
        value out of range (the message names the file, the line and the field).
    """
    p = Path(path) if path is not None else CSV_PATH
    try:
        text = read_bounded(p, MAX_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InputError(f"{p}: cannot read the crypto figures ({why})") from None
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise InputError(f"{p}:1: missing column(s) {', '.join(missing)}")
    figures = [_row(p, i, row) for i, row in enumerate(reader, start=2)]
    if not figures:
        raise InputError(f"{p}: no figures")
    return figures


def _rse(costs: Sequence[float]) -> float:
    """Log-scale sd of ``costs`` (0 for fewer than two)."""
    if len(costs) < 2:
        return 0.0
    return statistics.stdev(math.log(c) for c in costs)


def _names(figs: Sequence[Figure]) -> str:
    return "; ".join(dict.fromkeys(f.cited for f in figs))


def operation_cost(figures: Sequence[Figure], operation: str, platform: str) -> Derived:
    """Per-core cost of one operation on ``platform`` [us per op, or ns/byte for ciphers].

    The median of the platform's published figures, with their spread over sqrt(n) (at least
    `SINGLE_SOURCE_RSE`). A platform without one gets the median of the per-platform medians
    of the current platforms of its architecture (all architectures when none has it), with
    their spread across platforms as its error.

    Raises
    ------
    InputError
        No figure for ``operation`` at all, or an unknown platform.
    """
    if platform not in ARCH:
        raise InputError(f"unknown CPU platform {platform!r}")
    kind = OPERATIONS[operation][0]
    unit = "ns/byte" if kind == "byte" else "us"
    own = SAME_CORE.get(platform, platform)
    rows = [f for f in figures if f.operation == operation and f.platform == own]
    if rows:
        costs = [f.cost for f in rows]
        rse = max(_rse(costs) / math.sqrt(len(costs)), SINGLE_SOURCE_RSE)
        via = f" (figures of {own}, the same core)" if own != platform else ""
        return Derived(
            statistics.median(costs), rse, unit, f"{operation} on {own}{via}: {_names(rows)}"
        )
    pool = [f for f in figures if f.operation == operation and f.platform in CURRENT]
    same_arch = [f for f in pool if ARCH[f.platform] == ARCH[platform]]
    pool = same_arch or pool
    if not pool:
        raise InputError(f"no published figure for {operation}")
    by_platform: dict[str, list[float]] = {}
    for f in pool:
        by_platform.setdefault(f.platform, []).append(f.cost)
    medians = [statistics.median(v) for v in by_platform.values()]
    rse = max(_rse(medians), SINGLE_SOURCE_RSE)
    scope = ARCH[platform] if same_arch else "all architectures"
    return Derived(
        statistics.median(medians),
        rse,
        unit,
        f"{operation}: no figure for {platform}; median of {', '.join(sorted(by_platform))} "
        f"({scope}): {_names(pool)}",
    )


def _sum(parts: Sequence[Derived], unit: str, extra: str = "") -> Derived:
    value = sum(p.value for p in parts)
    var = sum((p.value * p.rse) ** 2 for p in parts)
    source = " + ".join(p.source for p in parts)
    return Derived(value, math.sqrt(var) / value, unit, source + extra)


def tls_bulk_ns_per_byte(figures: Sequence[Figure], platform: str) -> Derived:
    """AES-128-GCM encryption cost on one core of ``platform`` [ns/byte], at 16 KB records.

    The cipher alone (``openssl speed -evp`` style, one core); NGINX's whole per-byte TLS
    cost also copies each record and writes it to the socket.
    """
    return operation_cost(figures, "aes128gcm_16k", platform)


def ecdhe_us(figures: Sequence[Figure], platform: str) -> Derived:
    """Server-side ECDHE (P-256 or X25519) of one handshake on ``platform`` [us].

    An estimate: no published per-core key-agreement figure on a named current CPU was
    found, so one key generation plus one shared-secret derivation (a fixed-base and a
    variable-base scalar multiplication) is taken as costing one ECDSA P-256 verification (a
    double scalar multiplication). X25519 is usually a little cheaper than P-256.
    """
    v = operation_cost(figures, "ecdsa_p256_verify", platform)
    return Derived(
        v.value,
        max(v.rse, 0.25),
        "us",
        f"estimate: ECDHE key generation + derivation = one P-256 verification ({v.source})",
    )


def _seed_connection_us() -> tuple[float, str]:
    """Seed 004's per-connection costs besides the handshake (TCP, one request, TLS record)."""
    try:
        model = json.loads(read_bounded(COST_MODEL_PATH, MAX_BYTES))
        c = model["coefficients"]
        total = sum(c[k]["value"] for k in ("connection_us", "request_us", "tls_request_us"))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{COST_MODEL_PATH}: cannot read the cost model ({exc})") from None
    return float(total), "connection_us + request_us + tls_request_us of data/fits/cost-model.json"


def handshake_fixed_ref_us(figures: Sequence[Figure]) -> Derived:
    """Per-handshake work besides the signature and key agreement, on the reference core [us].

    Derived from the published NGINX rate "over 2,000 SSL transactions per second per core"
    (ECDHE-ECDSA P-256, 2016, on the Xeon E5-2699 v3 named in "How We Tested"): 500 us per
    new HTTPS connection, less one P-256 signature and one key agreement on that core (the
    cycles per operation published for Cascade Lake, whose P-256 code is the same, at the
    reference core's 2.3 GHz) and less the plain connection, request and TLS record costs of
    seed 004's fit. An estimate (`HANDSHAKE_FIXED_RSE`): the rate is a lower bound and the
    clock under load is not published.
    """
    rate = [f for f in figures if f.operation == "nginx_full_handshake_ecdsa_p256"]
    if not rate:
        raise InputError("no published NGINX ECDSA handshake rate")
    total_us = statistics.median(f.cost for f in rate)
    ref_ghz = statistics.median(f.clock_ghz or 2.3 for f in rate)
    cycles = []
    used = []
    for op in ("ecdsa_p256_sign", "ecdsa_p256_verify"):
        rows = [
            f for f in figures if f.operation == op and f.platform == "cascade_lake" and f.clock_ghz
        ]
        if not rows:
            raise InputError(f"no Cascade Lake {op} figure with its clock")
        cycles.append(statistics.median(f.cost * (f.clock_ghz or 0.0) * 1e3 for f in rows))
        used += rows
    public_key_us = sum(cycles) / (ref_ghz * 1e3)
    seed_us, seed_src = _seed_connection_us()
    fixed = total_us - public_key_us - seed_us
    return Derived(
        fixed,
        HANDSHAKE_FIXED_RSE,
        "us",
        f"estimate: {total_us:.0f} us per ECDHE-ECDSA connection ({_names(rate)}) - "
        f"{public_key_us:.0f} us of P-256 sign + key agreement ({_names(used)}, cycles at "
        f"{ref_ghz:g} GHz) - {seed_us:.1f} us ({seed_src})",
    )


def handshake_full_us(
    figures: Sequence[Figure], platform: str, key: str, core_speed: float = 1.0
) -> Derived:
    """Server CPU of one full TLS 1.2 or 1.3 handshake on one core of ``platform`` [us].

    One signature with the certificate's key (``rsa2048`` or ``ecdsa_p256``), one ECDHE key
    agreement (`ecdhe_us`) and the fixed part (`handshake_fixed_ref_us`) divided by
    ``core_speed``, the platform's per-core NGINX speed relative to the reference Haswell core
    (``sizing.platforms``). TLS 1.2 (ECDHE) and TLS 1.3 do the same public-key work on the
    server.
    """
    if key not in ("rsa2048", "ecdsa_p256"):
        raise InputError(f"unknown key {key!r}; expected rsa2048 or ecdsa_p256")
    if not core_speed > 0:
        raise InputError(f"core speed must be positive (got {core_speed})")
    sign = operation_cost(figures, f"{key}_sign", platform)
    fixed = handshake_fixed_ref_us(figures)
    fixed_here = Derived(fixed.value / core_speed, fixed.rse, "us", fixed.source)
    return _sum([sign, ecdhe_us(figures, platform), fixed_here], "us")


def handshake_rule_us(figures: Sequence[Figure], platform: str) -> tuple[float, float]:
    """NGINX's published rule for an ECDHE-RSA handshake on ``platform``: (low, high) [us].

    "The number of full SSL handshakes (using ECDHE-RSA) that a single core can sustain is
    between 45% and 60%" of its RSA-2048 signs per second (NGINX SSL Performance, 2014): a
    cross-check of `handshake_full_us`, from older software.
    """
    sign = operation_cost(figures, "rsa2048_sign", platform).value
    lo = [f.cost for f in figures if f.operation == "nginx_handshakes_per_rsa_sign_low"]
    hi = [f.cost for f in figures if f.operation == "nginx_handshakes_per_rsa_sign_high"]
    if not lo or not hi:
        raise InputError("no published NGINX handshake-to-sign ratio")
    return sign / max(hi), sign / min(lo)


def handshake_resumed_us(core_speed: float = 1.0) -> Derived:
    """Server CPU of one resumed (session ticket) handshake [us]: an estimate.

    No published per-core figure on current hardware was found; the cost model's estimate
    (40 us, 20-80, on the reference core) divided by ``core_speed``.
    """
    if not core_speed > 0:
        raise InputError(f"core speed must be positive (got {core_speed})")
    return Derived(
        RESUMED_REF_US / core_speed,
        RESUMED_RSE,
        "us",
        "estimate: an abbreviated handshake skips the signature and key agreement; 40 us "
        "(20-80) on the reference core",
    )


def jwt_verify_us(
    figures: Sequence[Figure],
    platform: str,
    alg: str = "RS256",
    core_speed: float = 1.0,
    import_key: bool = True,
) -> Derived:
    """CPU of one JWT check in NGINX (njs, WebCrypto) on one core of ``platform`` [us].

    The signature verification (RSA-2048 PKCS#1 v1.5 for RS256, P-256 for ES256), the public
    key's import when ``import_key`` (``runners/jwt_verify.js`` imports the key on every
    request; OpenSSL 3.0's key decoders make that cost tens to hundreds of us, OpenSSL 1.1.1
    about 1 us: the figures name their version) and `NJS_OVERHEAD_REF_US` divided by
    ``core_speed`` (an estimate). Hashing the token (a few hundred bytes) is negligible.
    ES256's key import is taken at the RSA figure (an estimate: both go through the same
    decoder; no EC figure was found).
    """
    ops = {"RS256": "rsa2048_verify", "ES256": "ecdsa_p256_verify"}
    if alg not in ops:
        raise InputError(f"unknown JWT algorithm {alg!r}; expected RS256 or ES256")
    if not core_speed > 0:
        raise InputError(f"core speed must be positive (got {core_speed})")
    parts = [operation_cost(figures, ops[alg], platform)]
    if import_key:
        load = operation_cost(figures, "rsa2048_public_key_load", platform)
        if alg == "ES256":
            load = Derived(load.value, max(load.rse, 0.5), "us", "estimate: " + load.source)
        parts.append(load)
    parts.append(
        Derived(
            NJS_OVERHEAD_REF_US / core_speed,
            NJS_OVERHEAD_RSE,
            "us",
            "estimate: njs per-request work (VM clone, token parsing, promise chain, internal "
            "redirect) 20 us (10-40) on the reference core",
        )
    )
    return _sum(parts, "us")

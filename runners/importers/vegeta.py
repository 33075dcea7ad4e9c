"""vegeta results in its JSON encoding (``vegeta encode --to json``): one result per line.

Each line is ``{"attack", "seq", "code", "timestamp", "latency", "bytes_out", "bytes_in",
"error", ...}`` with ``latency`` in nanoseconds and ``timestamp`` (RFC 3339) when the request
was sent. Latencies are kept to the microsecond. The trial lasts from the first request sent
to the last response (vegeta's "attack" plus "wait"); ``bytes_in`` counts bodies only, so
the bytes columns are left empty.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime

from runners.importers.base import (
    MAX_LATENCY_US,
    PER_REQUEST_EXACT,
    Imported,
    Importer,
    Tally,
    error_kind,
    from_requests,
    iso_utc,
    json_value,
    lines,
    number,
    refuse,
)


def rfc3339(text: object, where: str) -> float:
    """An RFC 3339 time (nanoseconds allowed) as seconds since the epoch."""
    if not isinstance(text, str) or not 19 <= len(text) <= 40:
        raise refuse(where, f"timestamp {str(text)[:40]!r} is not an RFC 3339 time")
    head, _, rest = text.partition(".")
    frac = ""
    if rest:
        digits = len(rest) - len(rest.lstrip("0123456789"))
        frac, rest = rest[:digits], rest[digits:]
    try:
        stamp = datetime.fromisoformat(head + (rest or "Z").replace("Z", "+00:00"))
    except ValueError:
        raise refuse(where, f"timestamp {text[:40]!r} is not an RFC 3339 time") from None
    if stamp.tzinfo is None:
        raise refuse(where, f"timestamp {text[:40]!r} has no time zone")
    return stamp.timestamp() + (float("0." + frac) if frac else 0.0)


class Vegeta(Importer):
    """vegeta's JSON-encoded results."""

    name = "vegeta"
    tool = "vegeta"

    def parse(self, text: str, where: str, options: Mapping[str, object]) -> Imported:
        """Every result line into a 1 us histogram, errors by status and message."""
        tally = Tally()
        first, last = math.inf, -math.inf
        for n, line in lines(text, where):
            at = f"{where}:{n}"
            r = json_value(line, at)
            if not isinstance(r, dict) or "latency" not in r or "code" not in r:
                raise refuse(at, 'is not a vegeta result ({... "code", "latency" ...})')
            us = round(number(r["latency"], at, "latency", MAX_LATENCY_US * 1000.0) / 1000.0)
            sent = rfc3339(r.get("timestamp"), at)
            first, last = min(first, sent), max(last, sent + us / 1e6)
            code = int(number(r["code"], at, "code", 999))
            tally.add(us, error_kind(code, str(r.get("error") or "")))
        if not tally.histogram_us:
            raise refuse(where, "holds no vegeta results")
        return Imported(
            measurement=from_requests(tally.histogram_us, tally.errors, last - first),
            exact=(*PER_REQUEST_EXACT, "duration_s", "rps"),
            approximated={},
            started_at=iso_utc(first),
        )


IMPORTER = Vegeta()

"""k6's JSON output (``k6 run --out json=FILE``): one metric declaration or sample per line.

Lines are ``{"type": "Metric"|"Point", "metric": NAME, "data": {...}}``. Every ``Point`` of
``http_req_duration`` is one request: ``data.value`` its latency [ms], ``data.tags.status``
its HTTP status (0 when no response came), ``data.time`` when k6 took the sample (RFC 3339).
Latencies are kept to the microsecond. ``data_received`` points add up the bytes read,
headers included. The trial lasts from the first sample to the last, so its rate is
approximated by one request's latency at most.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from runners.importers.base import (
    PER_REQUEST_EXACT,
    Imported,
    Importer,
    Tally,
    error_kind,
    from_requests,
    iso_utc,
    json_value,
    latency_us,
    lines,
    number,
    refuse,
)
from runners.importers.vegeta import rfc3339

#: The k6 metric whose samples are the requests.
DURATION = "http_req_duration"


class K6Json(Importer):
    """k6 ``--out json`` lines."""

    name = "k6"
    tool = "k6"

    def parse(self, text: str, where: str, options: Mapping[str, object]) -> Imported:
        """Every ``http_req_duration`` point into a 1 us histogram."""
        tally = Tally()
        read = 0
        first, last = math.inf, -math.inf
        for n, line in lines(text, where):
            at = f"{where}:{n}"
            doc = json_value(line, at)
            if not (isinstance(doc, dict) and doc.get("type") in ("Metric", "Point")):
                raise refuse(at, 'is not a k6 JSON line ({"type": "Point", ...})')
            data = doc.get("data")
            if doc["type"] != "Point" or not isinstance(data, dict):
                continue
            if doc.get("metric") == "data_received":
                read += int(number(data.get("value"), at, "data_received", 2**62))
                continue
            if doc.get("metric") != DURATION:
                continue
            us = latency_us(data.get("value"), at)
            t = rfc3339(data.get("time"), at)
            first, last = min(first, t), max(last, t)
            tags = data.get("tags")
            tags = tags if isinstance(tags, dict) else {}
            status = str(tags.get("status", "0"))
            code = int(status) if status.isdigit() and len(status) < 4 else 0
            tally.add(us, error_kind(code, str(tags.get("error", ""))))
        if not tally.histogram_us:
            raise refuse(where, f"holds no {DURATION} points (not k6 --out json?)")
        return Imported(
            measurement=from_requests(tally.histogram_us, tally.errors, last - first, read),
            exact=PER_REQUEST_EXACT,
            approximated={
                "duration_s": "from the first sample to the last (k6 stamps each at its end)",
                "rps": "requests over that duration",
            },
            started_at=iso_utc(first),
            bytes_known=read > 0,
        )


IMPORTER = K6Json()

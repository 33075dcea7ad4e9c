"""hey's CSV output (``hey -o csv``): one line per request.

Columns ``response-time,DNS+dialup,DNS,Request-write,Response-delay,Response-read,
status-code,offset``, times in seconds printed with four decimals, ``offset`` the request's
start since the run began. Latencies are therefore known to 0.1 ms: percentiles are exact for
that resolution, approximated below it. hey writes no byte counts and no failed requests.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping

from runners.importers.base import (
    LATENCY_COLUMNS,
    Imported,
    Importer,
    Tally,
    error_kind,
    from_requests,
    latency_us,
    lines,
    number,
    refuse,
)

HEADER = (
    "response-time",
    "DNS+dialup",
    "DNS",
    "Request-write",
    "Response-delay",
    "Response-read",
    "status-code",
    "offset",
)


class Hey(Importer):
    """hey ``-o csv``."""

    name = "hey"
    tool = "hey"

    def parse(self, text: str, where: str, options: Mapping[str, object]) -> Imported:
        """Every request line into a histogram (0.1 ms steps, stored in us)."""
        rows = lines(text, where)
        header = next(rows, (1, ""))[1]
        if tuple(c.strip() for c in header.split(",")) != HEADER:
            raise refuse(f"{where}:1", "is not hey's CSV header (" + ",".join(HEADER) + ")")
        tally = Tally()
        end = 0.0
        for n, line in rows:
            at = f"{where}:{n}"
            cells = next(csv.reader([line]))
            if len(cells) != len(HEADER):
                raise refuse(at, f"has {len(cells)} fields, hey writes {len(HEADER)}")
            us = latency_us(number(cells[0], at, "response-time") * 1000.0, at)
            end = max(end, number(cells[7], at, "offset", 1e9) + us / 1e6)
            tally.add(us, error_kind(int(number(cells[6], at, "status-code", 999)), ""))
        if not tally.histogram_us:
            raise refuse(where, "holds a header and no requests")
        step = "to hey's 0.1 ms resolution"
        return Imported(
            measurement=from_requests(tally.histogram_us, tally.errors, end),
            exact=("requests", "error_rate"),
            approximated={
                **{c: step for c in LATENCY_COLUMNS.values()},
                "duration_s": "from the run's start to the last response (hey's own total)",
            },
        )


IMPORTER = Hey()

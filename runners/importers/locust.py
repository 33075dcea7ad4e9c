"""Locust's CSV statistics (``locust --headless --csv PREFIX``: ``PREFIX_stats.csv``).

The ``Aggregated`` row gives ``Request Count``, ``Failure Count``, ``Requests/s``,
``Average``/``Max Response Time`` [ms] and percentile columns ``50%`` ... ``99.9%``. Locust
rounds response times into buckets (to 10 ms above 100 ms, 100 ms above 1 s) before its
percentiles, and writes the file once a second while running, so the last second before it
stopped may be missing from it (the table it prints at the end holds it).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Mapping

from runners.importers.base import Imported, Importer, from_summary, number, refuse

#: Trial column key -> Locust's column.
PERCENTILE_COLUMNS = {"p50": "50%", "p90": "90%", "p99": "99%", "p999": "99.9%"}
REQUIRED = ("Name", "Request Count", "Failure Count", "Requests/s", "Average Response Time")
MAX_ROWS = 100_000


class Locust(Importer):
    """Locust ``_stats.csv``."""

    name = "locust"
    tool = "locust"

    def parse(self, text: str, where: str, options: Mapping[str, object]) -> Imported:
        """The ``Aggregated`` row as one trial."""
        reader = csv.DictReader(io.StringIO(text, newline=""))
        try:
            missing = [c for c in REQUIRED if c not in (reader.fieldnames or ())]
            if missing:
                raise refuse(f"{where}:1", f"is not Locust's stats CSV (no {missing[0]!r})")
            row = next((r for r in _rows(reader) if r.get("Name") == "Aggregated"), None)
        except csv.Error as exc:
            raise refuse(f"{where}:{reader.line_num}", f"is not CSV ({exc})") from None
        if row is None:
            raise refuse(where, "has no Aggregated row (the file was cut short?)")
        at = f"{where}:{reader.line_num}"
        requests = int(number(row["Request Count"], at, "Request Count", 2**62))
        failures = int(number(row["Failure Count"], at, "Failure Count", requests))
        rps = number(row["Requests/s"], at, "Requests/s", 1e15)
        if requests == 0 or rps == 0:
            raise refuse(at, "counts no requests")
        latency = {k: number(row.get(c), at, c, 1e12) for k, c in PERCENTILE_COLUMNS.items()}
        latency["max"] = number(row.get("Max Response Time"), at, "Max Response Time", 1e12)
        latency["mean"] = number(row["Average Response Time"], at, "Average", 1e12)
        rounded = "Locust's percentile of response times rounded into its buckets"
        return from_summary(
            requests,
            rps,
            latency,
            ("status", failures),
            {
                **{f"latency_{k}_ms": rounded for k in PERCENTILE_COLUMNS},
                "duration_s": "Request Count / Requests/s",
                "errors_status": "Locust's failures, of every kind",
            },
        )


def _rows(reader: csv.DictReader[str]) -> Iterator[dict[str, str]]:
    for n, row in enumerate(reader):
        if n >= MAX_ROWS:
            raise csv.Error(f"more than {MAX_ROWS} rows")
        yield row


IMPORTER = Locust()

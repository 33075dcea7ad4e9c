"""k6's end-of-test summary as JSON (``k6 run --summary-export FILE``, or ``handleSummary``).

``metrics.http_req_duration`` holds the trend statistics k6 was asked for
(``--summary-trend-stats``, default ``avg,min,med,max,p(90),p(95)``) in milliseconds, and
``metrics.http_reqs`` the request ``count`` and ``rate``. ``handleSummary``'s data nests them
under ``values``. k6 computes a percentile by linear interpolation between the two nearest
samples, not wrk's rank rule, so percentiles are approximated; without ``p(99)`` in the
trend statistics the trial has no p99 and is invalid.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from runners.importers.base import (
    Imported,
    Importer,
    from_summary,
    json_value,
    number,
    refuse,
)
from trialtable.jsonvalue import JsonValue

#: Trial column key -> k6's trend statistic.
TREND_STATS = {"p50": "med", "p90": "p(90)", "p99": "p(99)", "p999": "p(99.9)"}


def _metric(doc: Mapping[str, JsonValue], name: str, where: str) -> Mapping[str, JsonValue]:
    metrics = doc.get("metrics")
    got = metrics.get(name) if isinstance(metrics, dict) else None
    if isinstance(got, dict) and isinstance(got.get("values"), dict):
        got = got["values"]  # handleSummary's form
    if not isinstance(got, dict):
        raise refuse(where, f"has no metrics.{name} (not a k6 summary export?)")
    return got


class K6Summary(Importer):
    """k6 ``--summary-export`` JSON."""

    name = "k6-summary"
    tool = "k6"

    def parse(self, text: str, where: str, options: Mapping[str, object]) -> Imported:
        """``http_reqs`` and ``http_req_duration`` as one trial."""
        doc = json_value(text, where)
        if not isinstance(doc, dict):
            raise refuse(where, "is not a k6 summary (a JSON object with metrics)")
        reqs, trend = _metric(doc, "http_reqs", where), _metric(doc, "http_req_duration", where)
        requests = int(number(reqs.get("count"), where, "http_reqs.count", 2**62))
        rate = number(reqs.get("rate"), where, "http_reqs.rate", 1e15)
        if requests == 0 or rate == 0:
            raise refuse(where, "counts no requests")
        trend_keys = [k for k, s in TREND_STATS.items() if s in trend]
        latency = {
            k: number(trend[s], where, f"http_req_duration.{s}", 1e12) if s in trend else math.nan
            for k, s in TREND_STATS.items()
        }
        latency["max"] = number(trend.get("max"), where, "http_req_duration.max", 1e12)
        latency["mean"] = number(trend.get("avg"), where, "http_req_duration.avg", 1e12)
        failed = 0
        if "http_req_failed" in (doc.get("metrics") or {}):
            f = _metric(doc, "http_req_failed", where)
            failed = int(number(f.get("passes", 0), where, "http_req_failed.passes", requests))
        interpolated = "k6's percentile, interpolated between the two nearest samples"
        return from_summary(
            requests,
            rate,
            latency,
            ("read", failed),
            {
                **{f"latency_{k}_ms": interpolated for k in TREND_STATS if k in trend_keys},
                "duration_s": "http_reqs count / rate",
                "errors_read": "k6's failed requests (http_req_failed), of every kind",
            },
        )


IMPORTER = K6Summary()

"""HdrHistogram interval logs (``HistogramLogWriter``: wrk2 forks, Java tools, ``hdrhistogram``).

Each interval line is ``[Tag=T,]START,LENGTH,MAX,PAYLOAD``: the payload is a compressed
histogram, decoded with the `hdrhistogram` package (``hdrh``); every interval is added, so
the trial covers the whole log. HdrHistogram keeps values to its significant digits (3 in
wrk2): each bucket is read at its highest equivalent value, as HdrHistogram reports
percentiles, so percentiles are approximated to that precision. The log does not say the
recorded unit: microseconds (wrk2's) unless ``--unit`` says otherwise.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import zlib
from collections.abc import Mapping

from hdrh.histogram import HdrHistogram

from runners.importers.base import (
    LATENCY_COLUMNS,
    MAX_LATENCY_US,
    Imported,
    Importer,
    from_requests,
    iso_utc,
    lines,
    refuse,
)

#: Microseconds per recorded unit, by ``--unit``.
UNITS = {"ns": 0.001, "us": 1.0, "ms": 1000.0}
#: Largest decompressed interval histogram [B] (a 3-digit histogram of a day in ns is ~300 kB).
MAX_PAYLOAD_BYTES = 64 << 20
_INTERVAL = re.compile(r"^(?:Tag=[^,]*,)?([0-9.]+),([0-9.]+),([0-9.]+),([A-Za-z0-9+/=]+)$")
_VERSION = re.compile(r"^#\[Histogram log format version ([0-9.]{1,10})\]")
_START = re.compile(r"^#\[StartTime: ([0-9.]{1,30}) ")


def _decode(payload: str, where: str) -> HdrHistogram:
    """One interval's histogram, its size checked before it is built."""
    try:
        raw = base64.b64decode(payload, validate=True)
        inflater = zlib.decompressobj()
        inflater.decompress(raw[8:], MAX_PAYLOAD_BYTES)
        if inflater.unconsumed_tail:
            raise refuse(where, f"histogram larger than {MAX_PAYLOAD_BYTES >> 20} MB unpacked")
        return HdrHistogram.decode(payload)
    except (binascii.Error, zlib.error, ValueError, TypeError, RuntimeError) as exc:
        raise refuse(where, f"is not an HdrHistogram payload ({str(exc)[:60]})") from None
    except Exception as exc:  # hdrh's own HdrCookieException, HdrLengthException
        raise refuse(where, f"is not an HdrHistogram payload ({type(exc).__name__})") from None


class HdrhLog(Importer):
    """HdrHistogram interval logs."""

    name = "hdrh"
    tool = "hdrhistogram"

    def parse(self, text: str, where: str, options: Mapping[str, object]) -> Imported:
        """All intervals of the log added into one histogram in microseconds."""
        scale = UNITS[str(options.get("unit") or "us")]
        hist: dict[int, int] = {}
        version, start, first, end = "", "", math.inf, 0.0
        for n, line in lines(text, where):
            if line.startswith("#") or line.startswith('"'):
                version = version or (m.group(1) if (m := _VERSION.match(line)) else "")
                start = start or (m.group(1) if (m := _START.match(line)) else "")
                continue
            m = _INTERVAL.match(line.strip())
            if m is None:
                raise refuse(f"{where}:{n}", "is not an interval line START,LENGTH,MAX,HISTOGRAM")
            t0, length = float(m.group(1)), float(m.group(2))
            first, end = min(first, t0), max(end, t0 + length)
            h = _decode(m.group(4), f"{where}:{n}")
            for item in h.get_recorded_iterator():
                us = round(h.get_highest_equivalent_value(item.value_iterated_to) * scale)
                if us > MAX_LATENCY_US:
                    raise refuse(f"{where}:{n}", f"a latency of {us} us is over a day: --unit?")
                hist[us] = hist.get(us, 0) + item.count_added_in_this_iter_step
        if not hist:
            raise refuse(where, "holds no interval histogram (not an HdrHistogram log?)")
        duration = end - first if math.isfinite(first) else 0.0
        measured = from_requests(hist, {}, duration)
        precise = "to HdrHistogram's significant digits (a bucket's highest value)"
        return Imported(
            measurement=measured,
            exact=("requests",),
            approximated={
                **{c: precise for c in LATENCY_COLUMNS.values()},
                "error_rate": "not in the log (counted as none)",
                "duration_s": "from the first interval's start to the last interval's end",
            },
            started_at=iso_utc(float(start)) if start else "",
            version=f"log format {version}" if version else "",
        )


IMPORTER = HdrhLog()

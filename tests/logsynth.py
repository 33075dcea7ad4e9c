"""Access logs with known traffic, for the workload tests and benchmark.

`write_combined` writes a ``combined``-format log whose per-second request counts and
response sizes are given, and returns the truth a reader must find: total requests,
per-second counts (zero-request seconds included), the peak at a percentile by nearest rank
and the share of each size.
"""

from __future__ import annotations

import gzip
import math
import time
from bisect import bisect_right
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

START = 1_700_000_000  # 2023-11-14T22:13:20Z
#: Response sizes in turn [B]: 1 KiB 70 %, 40,000 and 60,000 B 20 % (mean 50,000 B), empty 10 %.
SIZES = (1024,) * 7 + (40_000, 60_000, 0)
UA = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/120.0.0.0 Safari/537.36"
)


@dataclass
class Truth:
    """What a log holds, by construction."""

    counts: list[int]  # requests in each second from START [1]
    sizes: Counter[int]  # requests per response size [B]
    text_bytes: int = 0  # bytes of log text, before any compression [B]

    @property
    def requests(self) -> int:
        return sum(self.counts)

    def peak(self, percentile: float) -> int:
        """Nearest-rank percentile of the per-second counts (the reader's definition)."""
        ordered = sorted(self.counts)
        rank = max(1, math.ceil(percentile / 100 * len(ordered) - 1e-9))
        return ordered[rank - 1]

    def share(self, size: int) -> float:
        return self.sizes[size] / self.requests

    def bucket_shares(self, edges: Sequence[int]) -> list[float]:
        """Share of requests in each size bucket (upper ``edges`` [B], the last unbounded)."""
        shares = [0.0] * (len(edges) + 1)
        for size, n in self.sizes.items():
            shares[bisect_right(edges, size)] += n / self.requests
        return shares


def local_time(sec: int, offset_min: int = 0) -> str:
    """``$time_local`` of second ``sec`` in a zone ``offset_min`` minutes east of UTC."""
    t = time.gmtime(sec + offset_min * 60)
    sign = "+" if offset_min >= 0 else "-"
    hh, mm = divmod(abs(offset_min), 60)
    return time.strftime("%d/%b/%Y:%H:%M:%S", t) + f" {sign}{hh:02d}{mm:02d}"


def combined_lines(
    counts: Sequence[int], pattern: Sequence[int], *, offset_min: int = 0, start: int = START
):
    """Yield (line, size) for the per-second ``counts``; sizes cycle through ``pattern``."""
    i = 0
    n = len(pattern)
    versions = ("HTTP/1.1", "HTTP/1.1", "HTTP/2.0", "HTTP/1.0")
    for s, count in enumerate(counts):
        ts = local_time(start + s, offset_min)
        for _ in range(count):
            size = pattern[i % n]
            line = (
                f"10.{i % 7}.{i % 251}.{i % 253} - - [{ts}] "
                f'"GET /static/f{i % 1000}.bin {versions[i % 4]}" {200 if i % 50 else 404} '
                f'{size} "https://example.com/p/{i % 97}" "{UA}"\n'
            )
            i += 1
            yield line, size


def write_combined(
    path: Path,
    counts: Sequence[int],
    pattern: Sequence[int],
    *,
    offset_min: int = 0,
    compress: bool = False,
) -> Truth:
    """Write a combined-format log (gzip when ``compress``) and return its `Truth`."""
    sizes: Counter[int] = Counter()
    text_bytes = 0
    opener = gzip.open if compress else open
    with opener(path, "wt", encoding="ascii") as fh:
        buf: list[str] = []
        for line, size in combined_lines(counts, pattern, offset_min=offset_min):
            buf.append(line)
            sizes[size] += 1
            if len(buf) >= 20_000:
                text = "".join(buf)
                text_bytes += len(text)
                fh.write(text)
                buf.clear()
        text = "".join(buf)
        text_bytes += len(text)
        fh.write(text)
    return Truth(list(counts), sizes, text_bytes)

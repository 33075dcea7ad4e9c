"""wrk2 (a user-supplied build; Debian has none): HTTP/1.1 at a constant rate, open loop.

wrk2 sends on a fixed schedule (``-R``) and counts each latency from the request's intended
send time, so a server that falls behind shows its queueing in the latency (no coordinated
omission). Its ``--latency`` output ends with HdrHistogram's "Detailed Percentile spectrum",
parsed into a histogram at the spectrum's resolution (`runners.wrk.parse_wrk2`). A trial under
95% of the asked rate does not count (`rate_shortfall`, as for every open-loop generator).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from runners import wrk
from runners.errors import RunnerError
from runners.loadgen.h2load import rate_shortfall

NAME = "wrk2"
HTTP_VERSIONS = ("1.1",)

__all__ = ["HTTP_VERSIONS", "NAME", "command", "parse", "rate_shortfall"]


def command(
    url: str,
    *,
    threads: int,
    connections: int,
    duration_s: int,
    rate_rps: float,
    timeout_s: int = 2,
    headers: Sequence[str] = (),
    cpus: Sequence[int] = (),
    wrk2: str = "wrk2",
) -> list[str]:
    """The argv of one wrk2 run at ``rate_rps`` requests/s in total [1/s].

    wrk2 takes whole requests per second (at least 1) and whole seconds; it prints its own
    percentile spectrum, so no Lua reporter is used.
    """
    if not (math.isfinite(rate_rps) and rate_rps > 0):
        raise RunnerError(f"wrk2 needs a positive rate (got {rate_rps})")
    return wrk.command(
        url,
        threads=threads,
        connections=connections,
        duration_s=duration_s,
        timeout_s=timeout_s,
        headers=headers,
        cpus=cpus,
        wrk=wrk2,
        rate_rps=rate_rps,
    )


def parse(text: str) -> wrk.WrkResult:
    """Counts, errors and the spectrum's histogram of one wrk2 run's output."""
    return wrk.parse_wrk2(text)

"""wrk2 (a user-supplied build; Debian has none): HTTP/1.1 at a constant rate, open loop.

wrk2 sends on a fixed schedule (``-R``) and counts each latency from the request's intended
send time, so a server that falls behind shows its queueing in the latency (no coordinated
omission). Its ``--latency`` output ends with HdrHistogram's "Detailed Percentile spectrum",
parsed into a histogram at the spectrum's resolution (`runners.loadgen.wrk.parse_wrk2`). A
trial under 95% of the asked rate does not count (`rate_shortfall`, as for every open-loop
generator).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from runners.errors import RunnerError
from runners.loadgen import wrk
from runners.loadgen.base import OPEN, Load, LoadGenerator, Measurement
from runners.loadgen.h2load import rate_shortfall
from runners.tools import TOOLS, tool_path

NAME = "wrk2"
HTTP_VERSIONS = ("1.1",)

__all__ = ["GENERATOR", "HTTP_VERSIONS", "NAME", "Wrk2", "command", "parse", "rate_shortfall"]


def command(load: Load, *, binary: str = TOOLS["wrk2"]) -> list[str]:
    """The argv of one wrk2 run at the load's ``rate_rps`` requests/s in total [1/s].

    wrk2 takes whole requests per second (at least 1) and whole seconds; it prints its own
    percentile spectrum, so no Lua reporter is used.
    """
    rate_rps = load.rate_rps
    if rate_rps is None or not (math.isfinite(rate_rps) and rate_rps > 0):
        raise RunnerError(f"wrk2 needs a positive rate (got {rate_rps})")
    return wrk.command(load, binary=binary)


def parse(text: str) -> Measurement:
    """Counts, errors and the spectrum's histogram of one wrk2 run's output."""
    return wrk.parse_wrk2(text)


class Wrk2(LoadGenerator):
    """wrk2 on its own: HTTP/1.1 at a constant rate only (``--load-generator wrk2``)."""

    name = NAME
    http_versions = HTTP_VERSIONS
    modes = (OPEN,)

    def tool(self, binaries: Mapping[str, str], mode: str) -> str:
        """``wrk2`` as the user named it (``--wrk2 PATH``)."""
        return tool_path("wrk2", binaries)

    def command(self, load: Load, *, binary: str, workdir: str) -> list[str]:
        """wrk2's argv at the load's rate."""
        if load.rate_rps is None:
            raise RunnerError("wrk2 runs at a constant rate only (use --strategy rate)")
        return command(load, binary=binary)

    def parse(self, stdout: str, load: Load) -> Measurement:
        """Counts, errors and the percentile spectrum's histogram."""
        return parse(stdout)

    def no_result(self, text: str) -> str:
        """wrk2's first line, or that it printed its usage."""
        return wrk.no_result_message(text).removeprefix("wrk gave no result: ")


GENERATOR = Wrk2()

"""CPU time as the runners read it: the shell's ``times`` and ``/proc/PID/stat``.

A load generator runs under ``sh``; after it, the shell prints `TIMES_MARKER` and its
``times`` (the second line is its children's user and system time). nginx's CPU time is read
from ``/proc/PID/stat`` of its master and workers.
"""

from __future__ import annotations

import math

TIMES_MARKER = "NGINX_SIZING_TIMES"


def times_seconds(text: str) -> float:
    """CPU time [s] of the shell's children from the ``times`` printed after `TIMES_MARKER`.

    Parameters
    ----------
    text : str
        Output that holds `TIMES_MARKER`, then ``times``' two lines (``0m1.500s 0m0.250s``).

    Returns
    -------
    float
        User plus system time of the children [s]; NaN when the lines are missing or unreadable.
    """
    lines = text.split(TIMES_MARKER, 1)[-1].strip().splitlines()
    if len(lines) < 2:
        return math.nan
    total = 0.0
    for part in lines[1].split():
        minutes, _, seconds = part.rstrip("s").partition("m")
        try:
            total += float(minutes) * 60 + float(seconds)
        except ValueError:
            return math.nan
    return total


def stat_ticks(line: str) -> int:
    """Utime + stime from one ``/proc/PID/stat`` line [clock ticks]; 0 when it is short."""
    return sum(stat_user_system(line))


def stat_user_system(line: str) -> tuple[int, int]:
    """(utime, stime) from one ``/proc/PID/stat`` line [clock ticks]; (0, 0) when it is short.

    utime is the time the process ran in user space, stime in the kernel on its behalf.
    """
    fields = line.rpartition(")")[2].split()
    if len(fields) < 13:
        return 0, 0
    return int(fields[11]), int(fields[12])

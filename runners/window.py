"""One measurement window across several clients: clock offsets, a common start, late clients.

With more than one client, a trial's clients do not start when their commands arrive: the
coordinator measures each client's clock offset once (`clock_offset`), sets a common start a
little ahead (`common_start`), and each client waits for that instant on its own clock, then
stamps when its load generator started and ended (read back by `window_of`). A load generator
that waits itself (wrk with ``report.lua``: `START_ENV`) is launched at once and does its
start-up before the common start; any other waits in a shell (`BARRIER`) and starts at it.
The lead is what the clients' start-up needs: ample on a run's first trial, then a multiple
of the longest time a client took to be ready (its ``READY`` stamp) in the trial before.
`window_problems` says why the clients did not measure one window (a client that started
late or ended early, windows that do not overlap, an offset larger than the trial, a client
short of its share of a constant rate); any problem makes the trial invalid with the reason,
never merged silently. Every client's window and offset go into the run's ``run.json``.

Load generators report one histogram per run, without time stamps: the window is checked,
not cut, so a late client invalidates the trial rather than shortening it.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from trialtable.jsonvalue import JsonObject

#: Stamps a client writes on standard error: ready to start, started, ended.
READY_MARKER = "NGINX_SIZING_WINDOW_READY"
START_MARKER, END_MARKER = "NGINX_SIZING_WINDOW_START", "NGINX_SIZING_WINDOW_END"
#: The environment variable a load generator that waits itself reads the start from
#: (seconds since the epoch, the client's clock); it then stamps its own window.
START_ENV = "NGINX_SIZING_START"
#: The shell program that stamps that it is ready, waits for ``$1`` (seconds since the
#: epoch, the client's clock), stamps the start, runs the rest of its arguments and stamps
#: the end.
BARRIER = (
    f't=$1; shift; n=$(date +%s.%N); echo "{READY_MARKER} $n" >&2; '
    'd=$(awk -v t="$t" -v n="$n" '
    "'BEGIN { x = t - n; if (x > 0) printf \"%.6f\", x; else print 0 }'); "
    'sleep "$d"; '
    f'echo "{START_MARKER} $(date +%s.%N)" >&2; "$@"; rc=$?; '
    f'echo "{END_MARKER} $(date +%s.%N)" >&2; exit $rc'
)
#: Lead from setting the start to the start itself when no client's start-up is known yet
#: (a run's first multi-client trial) [s] ...
FIRST_LEAD_S = 0.2
#: ... and afterwards this multiple of the longest time a client took to be ready in the
#: trial before (from the start being set to its ``READY`` stamp) ...
READY_FACTOR = 1.5
#: ... but never shorter than this (nginx's first CPU sample is taken in the lead) ...
MIN_LEAD_S = 0.1
#: ... nor, from the clients' start-up, longer than this [s] (one stale stamp, e.g. a clock
#: stepped mid-run, must not push a trial past its clients' timeouts).
MAX_LEAD_S = 2.0
#: A client starting or ending later than this past the common instants is late [s] ...
LATE_S = 0.25
#: ... or this fraction of the trial, whichever is larger.
LATE_FRACTION = 0.05
#: Fraction of its share of a constant rate a client must reach.
RATE_SHARE = 0.95
_STAMP = re.compile(r"^(NGINX_SIZING_WINDOW_(?:READY|START|END)) ([0-9]{1,12}\.[0-9]+)$")


@dataclass(frozen=True)
class Offset:
    """One client's clock against the coordinator's.

    Attributes
    ----------
    offset_s : float
        Client clock minus coordinator clock [s].
    uncertainty_s : float
        Half the round trip of the best sample [s].
    """

    offset_s: float
    uncertainty_s: float


@dataclass(frozen=True)
class Window:
    """What one client measured, on the coordinator's clock.

    Attributes
    ----------
    host : str
        The client.
    offset_s, uncertainty_s : float
        Its clock offset and the offset's uncertainty [s].
    start_s, end_s : float
        When its load generator started and ended [s since the epoch], NaN if not stamped.
    rps : float
        Its achieved rate [1/s].
    asked_rps : float or None
        Its share of a constant rate [1/s] (None: closed loop, or an even share).
    ready_s : float
        When it was ready to start, waiting for the common start [s since the epoch], NaN
        if not stamped.
    """

    host: str
    offset_s: float
    uncertainty_s: float
    start_s: float
    end_s: float
    rps: float
    asked_rps: float | None = None
    ready_s: float = math.nan

    def to_dict(self) -> JsonObject:
        """The window as ``run.json`` records it (times rounded to the microsecond)."""
        return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def clock_offset(run_date: Callable[[], str], samples: int = 3) -> Offset:
    """The offset of a clock read by ``run_date`` (``date +%s.%N`` on the client).

    The sample with the shortest round trip is kept: the client's reading is taken as made
    at the midpoint of the round trip.

    Raises
    ------
    ValueError
        When the client's answer is not a time.
    """
    best: tuple[float, float] | None = None
    for _ in range(samples):
        t0 = time.time()
        text = run_date().strip()
        t1 = time.time()
        if not re.fullmatch(r"[0-9]{1,12}\.[0-9]+", text):
            raise ValueError(f"the client's clock read {text[:40]!r}, not seconds")
        sample = (float(text) - (t0 + t1) / 2, (t1 - t0) / 2)
        if best is None or sample[1] < best[1]:
            best = sample
    assert best is not None
    return Offset(*best)


def common_start(
    offsets: Sequence[Offset], now: float | None = None, ready_s: float | None = None
) -> float:
    """The common start [s since the epoch, coordinator clock]: far enough ahead to reach all.

    ``ready_s``: the longest a client took, in the trial before, from the start being set to
    being ready [s] (None: not known yet, the lead is `FIRST_LEAD_S`). The lead is at least
    4 times each offset's uncertainty, and at least `MIN_LEAD_S`; what the start-up asks is
    held to `MAX_LEAD_S`.
    """
    known = ready_s is not None and math.isfinite(ready_s)
    need = min(READY_FACTOR * max(ready_s or 0.0, 0.0), MAX_LEAD_S) if known else FIRST_LEAD_S
    lead = max(MIN_LEAD_S, need, *(4 * o.uncertainty_s for o in offsets))
    return (time.time() if now is None else now) + lead


def barrier(
    argv: Sequence[str], start_s: float, offset: Offset, *, waits: bool = False
) -> list[str]:
    """``argv`` run at ``start_s`` (coordinator clock) on a client with ``offset``.

    ``waits``: the load generator waits for `START_ENV` itself and stamps its own window
    (it is launched at once and starts up before the common start); else a shell waits.
    """
    at = f"{start_s + offset.offset_s:.6f}"
    if waits:
        return ["env", f"{START_ENV}={at}", *argv]
    return ["sh", "-c", BARRIER, "sh", at, *argv]


def ready_after(windows: Sequence[Window], set_s: float) -> float | None:
    """The longest a client took from ``set_s`` (when the start was set) to be ready [s].

    None when no client stamped that it was ready.
    """
    ready = [w.ready_s for w in windows if math.isfinite(w.ready_s)]
    return max(ready) - set_s if ready else None


def window_of(
    host: str, stderr: str, offset: Offset, rps: float, asked_rps: float | None = None
) -> Window:
    """A client's window from the stamps in its standard error, on the coordinator's clock.

    ``asked_rps``: the client's share of a constant rate [1/s], when it has one.
    """
    stamps = {m.group(1): float(m.group(2)) for m in map(_STAMP.match, stderr.splitlines()) if m}
    start, end, ready = (
        stamps.get(k, math.nan) - offset.offset_s for k in (START_MARKER, END_MARKER, READY_MARKER)
    )
    return Window(host, offset.offset_s, offset.uncertainty_s, start, end, rps, asked_rps, ready)


def window_problems(
    windows: Sequence[Window], start_s: float, duration_s: float, rate_rps: float | None
) -> list[str]:
    """Why the clients did not measure one common window (empty: they did).

    Parameters
    ----------
    windows : sequence of Window
        Every client's window.
    start_s : float
        The common start [s since the epoch, coordinator clock].
    duration_s : float
        The trial's length [s].
    rate_rps : float or None
        The constant rate asked of all clients together [1/s] (None: closed loop); a
        client's own ``asked_rps``, when set, is its share, else the rate split evenly.
    """
    out = []
    share = rate_rps / len(windows) if rate_rps is not None and windows else None
    for w in windows:
        if abs(w.offset_s) > duration_s:
            out.append(f"{w.host}'s clock is {w.offset_s:+.1f} s off, more than the trial")
        if missed := _missed(w, start_s, duration_s):
            out.append(missed)
        own = w.asked_rps if w.asked_rps is not None else share
        if own is not None and w.rps < RATE_SHARE * own:
            out.append(f"{w.host} achieved {w.rps:.0f} of its {own:.0f} rps share")
    starts = [w.start_s for w in windows if math.isfinite(w.start_s)]
    ends = [w.end_s for w in windows if math.isfinite(w.end_s)]
    if starts and ends and min(ends) <= max(starts):
        out.append("the clients' windows do not overlap")
    return out


def off_window(windows: Sequence[Window], start_s: float, duration_s: float) -> list[str]:
    """The clients whose window missed the common one (started late, ended early, unstamped).

    Their clocks are read again before the next trial: offsets are read once a run, and
    again only for a client whose window a check failed.
    """
    return [w.host for w in windows if _missed(w, start_s, duration_s)]


def _missed(w: Window, start_s: float, duration_s: float) -> str | None:
    """Why ``w`` missed the common window, or None."""
    slack = max(LATE_S, LATE_FRACTION * duration_s) + w.uncertainty_s
    if not (math.isfinite(w.start_s) and math.isfinite(w.end_s)):
        return f"{w.host} did not stamp its window"
    if w.start_s > start_s + slack:
        return f"{w.host} started {w.start_s - start_s:.1f} s after the common start"
    if w.end_s < start_s + duration_s - slack:
        return f"{w.host} ended {start_s + duration_s - w.end_s:.1f} s before the common end"
    return None


def sample_problem(sampled_s: float, start_s: float, duration_s: float) -> str | None:
    """Why nginx's first CPU sample, taken during the lead, misses part of the window.

    ``sampled_s``: when the sample's answer arrived [s since the epoch, coordinator clock];
    it may come after the common start by as much as a client may start late (what nginx
    used before the sample is then left out of the trial's server CPU).
    """
    late = max(LATE_S, LATE_FRACTION * duration_s)
    if not math.isfinite(sampled_s) or sampled_s <= start_s + late:
        return None
    return f"nginx's CPU was sampled {sampled_s - start_s:.1f} s after the common start"

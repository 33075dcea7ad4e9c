"""Many clients: the list ``--clients`` reads, each client's share of a rate, what it did.

``--clients @FILE`` reads one client host a line (``HOST [WEIGHT]``; ``#`` starts a comment),
``--clients A,B,C`` takes them inline. WEIGHT is the client's share of a constant rate
(open loop) relative to the others' (default 1): ``shares`` splits a rate by it, so a
client machine twice as large can be asked twice the rate. A list with a host twice, a
host that does not parse, or a weight that is not a positive number is refused before any
host is reached (`BadHosts`, exit status 2).

After each multi-client trial, `client_lines` says what each client did (its rate against
its share, its p99, its window against the common start): a lagging client is seen on the
progress output, not only in the row's reason. `per_client` reads the same from a run
folder afterwards, one row per client and trial, for the notebook view
(`sizing.report.plots.clients_figure`). A client lost mid-run is tried again before each
later trial, at most `MAX_RETRIES` times a run, and rejoins with its share when it answers.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict

from runners.errors import BadHosts, RunnerError
from runners.hosts import HostSpec
from runners.loadgen import latency_summary
from runners.window import Window
from trialtable.files import read_bounded
from trialtable.folder import RunFolder
from trialtable.jsonvalue import JsonValue
from trialtable.read import read_rows

#: Largest hosts file read [B].
MAX_HOSTS_BYTES = 1024 * 1024
#: Most clients one run drives.
MAX_CLIENTS = 64
#: Largest weight a client may have (relative to the others').
MAX_WEIGHT = 1e6
#: Times a lost client is tried again in one run: once before each later trial, until it
#: answers or this many tries have failed (`runners.session.Session.trial`).
MAX_RETRIES = 3


@dataclass(frozen=True)
class ClientList:
    """The clients of a run and their shares of a constant rate.

    Attributes
    ----------
    hosts : tuple of str
        Host specs (`runners.hosts.HostSpec`), in the order given.
    weights : tuple of float
        Each host's relative share of a constant rate; empty when every share is equal.
    """

    hosts: tuple[str, ...]
    weights: tuple[float, ...] = ()


def parse_clients(text: str) -> ClientList:
    """``@FILE`` (a hosts file) or ``A,B,C``; raise `BadHosts` naming what is wrong."""
    if text.startswith("@"):
        path = os.path.expanduser(text[1:])
        try:
            data = read_bounded(path, MAX_HOSTS_BYTES)
        except OSError as exc:
            raise BadHosts(f"cannot read hosts file {path}: {exc.strerror or exc}") from None
        try:
            body = data.decode("utf-8")
        except UnicodeDecodeError:
            raise BadHosts(f"hosts file {path} is not UTF-8 text") from None
        return _client_list(body.splitlines(), f"hosts file {path}")
    return _client_list(text.split(","), "--clients")


def _client_list(lines: Sequence[str], where: str) -> ClientList:
    hosts: list[str] = []
    weights: list[float] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        at = f"{where} line {number}" if where != "--clients" else where
        if len(words) > 2:
            raise BadHosts(f"{at}: {line.strip()[:80]!r} is not 'HOST [WEIGHT]'")
        try:
            spec = str(HostSpec.parse(words[0]))
        except RunnerError as exc:
            raise BadHosts(f"{at}: {exc}") from None
        if spec in seen:
            raise BadHosts(f"{at}: client {spec} is listed twice (first on line {seen[spec]})")
        seen[spec] = number
        hosts.append(words[0])
        weights.append(_weight(words[1], at) if len(words) == 2 else 1.0)
    if not hosts:
        raise BadHosts(f"{where} names no client host")
    if len(hosts) > MAX_CLIENTS:
        raise BadHosts(f"{where} names {len(hosts)} clients; at most {MAX_CLIENTS} are driven")
    even = all(w == weights[0] for w in weights)
    return ClientList(tuple(hosts), () if even else tuple(weights))


def _weight(text: str, at: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= MAX_WEIGHT:  # also NaN and inf
        raise BadHosts(f"{at}: weight {text[:40]!r} is not a number above 0 and at most 1e6")
    return value


def shares(rate_rps: float | None, weights: Sequence[float], n: int) -> list[float | None]:
    """Each of ``n`` clients' share of ``rate_rps`` [1/s] (None each for a closed loop).

    ``weights`` (one per client, or empty for equal shares) split the rate in proportion.
    """
    if rate_rps is None:
        return [None] * n
    w = list(weights) if len(weights) == n else [1.0] * n
    total = sum(w)
    return [rate_rps * x / total for x in w]


def client_lines(
    windows: Sequence[Window], p99_ms: Mapping[str, float], start_s: float
) -> list[str]:
    """One progress line per client: its rate (against its share), p99, window and offset."""
    out = []
    for w in windows:
        asked = f" of {w.asked_rps:,.0f}" if w.asked_rps is not None else ""
        window = (
            f"{w.start_s - start_s:+.3f}..{w.end_s - start_s:+.3f} s"
            if math.isfinite(w.start_s) and math.isfinite(w.end_s)
            else "not stamped"
        )
        out.append(
            f"  client {w.host}: {w.rps:,.0f}{asked} rps, p99 {p99_ms.get(w.host, math.nan):.2f} "
            f"ms, window {window}, clock {w.offset_s:+.3f} s"
        )
    return out


def check_offsets(offsets: Mapping[str, float], duration_s: float) -> None:
    """Refuse (`BadHosts`) a client whose clock is further off than the trial is long [s]."""
    far = {h: o for h, o in offsets.items() if abs(o) > duration_s}
    if far:
        host, off = max(far.items(), key=lambda kv: abs(kv[1]))
        raise BadHosts(
            f"{host}'s clock is {off:+.1f} s off, more than the {duration_s:g} s trial: "
            "set its time (NTP) before measuring"
        )


class ClientWindow(TypedDict):
    """What one client did in one trial (`per_client`): its window, rate, latency, verdict."""

    trial_id: str
    host: str
    start_s: float
    end_s: float
    common_start_s: float
    common_end_s: float
    rps: float
    asked_rps: float | None
    p50_ms: float
    p99_ms: float
    valid: bool
    invalid_reason: str


def per_client(run_dir: str | os.PathLike[str]) -> list[ClientWindow]:
    """What each client did in each multi-client trial of a run folder, on one time axis.

    Returns one dict per client and trial: ``trial_id``, ``host``, ``start_s`` and ``end_s``
    (its window), ``common_start_s`` and ``common_end_s`` (the trial's), all [s] since the
    run's first common start on the coordinator's clock; ``rps`` and ``asked_rps`` [1/s];
    ``p50_ms`` and ``p99_ms`` from its own histogram; ``valid`` and ``invalid_reason`` of the
    trial. Trials with one client (no window) are left out.

    Raises
    ------
    trialtable.errors.RunFolderError
        For a folder that is not a readable run folder.
    """
    folder = RunFolder.read_only(run_dir)
    rows = {str(r["trial_id"]): r for r in read_rows(folder.path)}
    hists = {h["trial_id"]: h["clients"] for h in folder.histograms()}
    windows = [w for w in folder.meta.get("windows", []) if str(w.get("trial_id")) in rows]
    if not windows:
        return []
    zero = min(float(w["common_start_s"]) for w in windows)
    out: list[ClientWindow] = []
    for w in windows:
        row = rows[str(w["trial_id"])]
        start = float(w["common_start_s"]) - zero
        for c in w["clients"]:
            pairs = hists.get(w["trial_id"], {}).get(c["host"], [])
            lat = latency_summary({int(us): int(n) for us, n in pairs})
            out.append(
                {
                    "trial_id": str(w["trial_id"]),
                    "host": str(c["host"]),
                    "start_s": _seconds(c.get("start_s")) - zero,
                    "end_s": _seconds(c.get("end_s")) - zero,
                    "common_start_s": start,
                    "common_end_s": start + float(row["duration_s"]),
                    "rps": float(c["rps"]),
                    "asked_rps": c.get("asked_rps"),
                    "p50_ms": lat["p50"],
                    "p99_ms": lat["p99"],
                    "valid": bool(row["valid"]),
                    "invalid_reason": str(row.get("invalid_reason") or ""),
                }
            )
    return out


def _seconds(value: JsonValue) -> float:
    """A recorded time [s]; NaN for a window the client did not stamp."""
    return float(value) if isinstance(value, (int, float)) else math.nan

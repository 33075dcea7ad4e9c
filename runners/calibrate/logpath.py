"""The container log path's own cost and line rate: ``data/reference/container-log-path.csv``.

``python -m runners features --only access_log_container`` runs nginx in containers of a
private containerd (`runners.deploy.container`) and, after each pair, floods the log path
with one ``write()`` per line from a writer in a container. This module turns those trials
into rows: per log line, the user and kernel CPU time of ``containerd-shim-runc-v2``, of the
reader (``ctr``) and of the daemon, at nginx's request rate (``nginx``) and at the highest
rate the path took (``flood``), with the lines per second and the CPUs each process kept
busy. A run appends its rows; the notes beside the table (``.md``) are made from every row,
with the spread over runs.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from runners.deploy.container import Flood
from trialtable.fields import FieldValue
from trialtable.files import write_atomic
from trialtable.jsonvalue import as_float
from trialtable.logpath import (
    LOG_PATH,
    LOG_PATH_COLUMNS,
    MEASUREMENTS,
    NGINX_EXTRA,
    PATHS,
    PROCESSES,
    read_table,
)
from trialtable.output import table_csv


class Trial(Protocol):
    """What the rows read of a campaign's trial (`runners.calibrate.features.Trial`)."""

    @property
    def requests(self) -> int:
        """Requests the trial served."""
        ...

    @property
    def user_us(self) -> float:
        """The workers' user CPU time per request [us]."""
        ...

    @property
    def kernel_us(self) -> float:
        """The workers' kernel CPU time per request [us]."""
        ...

    @property
    def side(self) -> Mapping[str, tuple[float, float]]:
        """The log path's processes: (user, kernel) CPU time per request [us]."""
        ...


def _row(
    measurement: str,
    process: str,
    per_line: Sequence[tuple[float, float]],
    rates: Sequence[float],
    common: Mapping[str, FieldValue],
) -> dict[str, FieldValue]:
    """One row: medians over trials of a process's (user, kernel) CPU per line [us]."""
    totals = [u + k for u, k in per_line]
    rate = statistics.median(rates)
    user = statistics.median(u for u, _ in per_line)
    kernel = statistics.median(k for _, k in per_line)
    return {
        **common,
        "measurement": measurement,
        "process": process,
        "trials": len(per_line),
        "lines_per_s": rate,
        "user_us": user,
        "kernel_us": kernel,
        "total_min_us": min(totals),
        "total_max_us": max(totals),
        "cpu_share": statistics.median(t * r / 1e6 for t, r in zip(totals, rates, strict=True)),
    }


def rows(
    pairs: tuple[Sequence[Trial], Sequence[Trial]],
    seconds: float,
    floods: Sequence[Flood],
    common: Mapping[str, FieldValue],
) -> list[dict[str, FieldValue]]:
    """The run's rows, from the feature's pairs and the floods.

    ``pairs`` holds the reference's and the feature's `features.Trial` values (``seconds`` s
    each, in pair order); ``common`` the columns every row shares (date, host, versions).
    """
    out = []
    ref, on = pairs
    if on and len(ref) == len(on) and all(t.side for t in on):
        rates = [t.requests / seconds for t in on]
        diffs = zip(ref, on, strict=True)
        extra = [(f.user_us - r.user_us, f.kernel_us - r.kernel_us) for r, f in diffs]
        out.append(_row("nginx", NGINX_EXTRA, extra, rates, common))
        for p in PROCESSES:
            out.append(_row("nginx", p, [t.side[p] for t in on], rates, common))
    for kind in ("flood", "flood_batched"):
        got = [f for f in floods if (f.per_write > 1) == (kind == "flood_batched")]
        if not got:
            continue
        rates = [f.lines_per_s for f in got]
        each = {**common, "line_bytes": got[0].line_bytes, "lines_per_write": got[0].per_write}
        for p in PROCESSES:
            out.append(_row(kind, p, [f.side[p] for f in got], rates, each))
    return out


def to_csv(table: Sequence[Mapping[str, FieldValue]]) -> str:
    """The table as CSV text (`trialtable.output.table_csv`)."""
    return table_csv(table, LOG_PATH_COLUMNS)


def spread(table: Sequence[Mapping[str, FieldValue]]) -> list[str]:
    """Per path, measurement and process, the runs' CPU per line and rate: median, min..max."""
    out = []
    for path in PATHS:
        for m in MEASUREMENTS:
            for p in (NGINX_EXTRA, *PROCESSES):
                got = [
                    r
                    for r in table
                    if (r["container_path"], r["measurement"], r["process"]) == (path, m, p)
                ]
                if got:
                    out.append(_spread_line(path, m, p, got))
    return out


def _spread_line(path: str, m: str, p: str, got: Sequence[Mapping[str, FieldValue]]) -> str:
    cpu = [as_float(r["user_us"]) + as_float(r["kernel_us"]) for r in got]
    rate = [as_float(r["lines_per_s"]) for r in got]
    med = statistics.median(cpu)
    rel = (max(cpu) - min(cpu)) / abs(med) if med else 0.0
    return (
        f"| {path} | {m} | {p} | {len(got)} | {med:.3f} ({min(cpu):.3f}..{max(cpu):.3f}, "
        f"{rel:.0%}) | {statistics.median(rate):,.0f} ({min(rate):,.0f}..{max(rate):,.0f}) |"
    )


def notes_md(table: Sequence[Mapping[str, FieldValue]], command: str) -> str:
    """The notes beside the table: what was measured and how, every row, the spread."""
    lines = [
        "# The container log path: CPU per access-log line and line rate",
        "",
        f"- Command (appends one run's rows): `{command}`",
        *(f"- Path `{k}`: {v}" for k, v in PATHS.items()),
        "- Setup: a private containerd (own root, state, socket and config); nginx as the "
        "container's init, in a pod made over the CRI API (path `cri`) or by `ctr run "
        "--rootfs` (path `ctr`), the host's /usr and /etc mounted read-only, the node's "
        "network, one worker pinned to the measured CPU, `access_log /dev/stdout` (the "
        "combined format)",
        "- `nginx`: during the feature's trials (wrk on loopback, one line per request); "
        "`lines_per_s` is that trial's request rate, not the path's limit; `nginx_extra` is "
        "the nginx worker's own extra (log on - log off in the same pair, both in containers)",
        "- `flood`: a writer in a container (`yes | dd bs=LINE iflag=fullblock`: one write() "
        "a line, as nginx logs) pinned to the same CPU, as fast as the path takes it; "
        "`lines_per_s` from the writer's start to the last byte in the reader's file. "
        "`flood_batched`: the same with many lines a write(), so the writer does less and "
        "the shim and reader are loaded harder. A process whose `cpu_share` is near 1 is the "
        "path's limit (each copies one stream in one goroutine); below that the writer or "
        "the host's other work was",
        "- CPU time: /proc/PID/stat of exactly the shim, the reader and the daemon "
        "(utime = user, stime = kernel; clock ticks), per line; each row the median over "
        "its trials, `total_*` the smallest and largest trial. On the CRI path the reader "
        "is the daemon (its CRI logger): `reader` and `containerd` are the same process",
        "- B/line: bytes a line in the reader's file (on the CRI path with the logger's "
        "timestamp and stream prefix, about 40 B more than nginx wrote)",
        "- The shim and the reader batch: the more lines wait in the pipe, the less CPU each "
        "line costs, so per-line costs at nginx's rate exceed those of the flood",
        "",
        "| run (UTC) | path | measurement | process | trials | lines/s | B/line | lines/write "
        "| user us | kernel us | total us (min..max) | CPUs busy | load average |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table:
        size = "" if r.get("line_bytes") is None else f"{r['line_bytes']:.0f}"
        lines.append(
            f"| {r['measured_at']} | {r['container_path']} | {r['measurement']} | {r['process']} "
            f"| {r['trials']} | "
            f"{r['lines_per_s']:,.0f} | {size} | {r['lines_per_write']} | {r['user_us']:.3f} | "
            f"{r['kernel_us']:.3f} | "
            f"{r['total_min_us']:.3f}..{r['total_max_us']:.3f} | {r['cpu_share']:.2f} | "
            f"{r['loadavg']} |"
        )
    lines += [
        "",
        "## Spread over runs",
        "",
        "| path | measurement | process | runs | CPU us/line: median (min..max, range/median) "
        "| lines/s: median (min..max) |",
        "|---|---|---|---|---|---|",
        *spread(table),
    ]
    hosts = sorted(
        {
            f"{r['cpu_model']} ({r['cpus']} CPUs), {r['containerd_version']}, {r['nginx_version']}"
            for r in table
        }
    )
    lines += ["", "Hosts and versions: " + "; ".join(hosts)] if hosts else []
    return "\n".join(lines) + "\n"


def append(
    out: Path, new: Sequence[Mapping[str, FieldValue]], command: str
) -> list[dict[str, FieldValue]]:
    """Append ``new`` to the table at ``out``; rewrite its notes (``.md``); all rows."""
    table = [*read_table(out), *(LOG_PATH.check_row(r, "new row") for r in new)]
    write_atomic(out, to_csv(table))
    write_atomic(out.with_suffix(".md"), notes_md(table, command))
    return table

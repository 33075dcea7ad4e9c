"""Append-only trial store: one folder per run, a row flushed to disk as each trial ends.

``DIR/<run_id>/`` holds

- ``trials.csv``: one row per trial, the columns of `TRIAL_COLUMNS` (units in the names);
- ``histograms.jsonl``: one line per trial, ``{"trial_id", "clients": {host: [[us, n], ...]}}``,
  every client's full latency histogram, so that clients merge exactly later;
- ``run.json``: the plan, host facts, the exact nginx.conf per vCPU count, the command lines
  and the run's status. It is rewritten atomically (write, then rename).

A crash loses at most the trial in flight: rows are written whole, flushed and fsynced, and a
torn last line (power loss) is cut off when the run is opened again.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import re
import secrets
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from runners.errors import RunnerError
from runners.wrk import ERROR_KINDS, WrkResult

TRIAL_COLUMNS = (
    "run_id",
    "trial_id",
    "started_at",
    "kind",
    "simulated",
    "server_host",
    "client_hosts",
    "clients",
    "instance_label",
    "arch",
    "cpu_model",
    "vcpus",
    "server_cpus",
    "client_cpus",
    "placement",
    "scenario",
    "protocol",
    "file_bytes",
    "gzip",
    "keepalive",
    "upstreams",
    "threads",
    "connections",
    "rate_rps",
    "warmup_s",
    "duration_s",
    "requests",
    "rps",
    "bytes_per_s",
    "throughput_gbps",
    "bytes_per_response",
    "errors_connect",
    "errors_read",
    "errors_write",
    "errors_status",
    "errors_timeout",
    "error_rate",
    "latency_p50_ms",
    "latency_p90_ms",
    "latency_p99_ms",
    "latency_p999_ms",
    "latency_max_ms",
    "latency_mean_ms",
    "client_cpu_pct",
    "server_cpu_pct",
    "sla_p99_ms",
    "meets_sla",
    "valid",
    "invalid_reason",
)


def saturation_note(cpu_pct: float, allotted: int, saturation: float, host: str) -> str | None:
    """Why a load generator counts as saturated (CPU at ``saturation`` of its CPUs), or None."""
    if cpu_pct >= saturation * 100.0 * allotted:
        return f"wrk used {cpu_pct:.0f}% of its {allotted} CPU on {host}"
    return None


def trial_row(
    ids: Mapping[str, Any],
    scenario: Any,
    m: WrkResult,
    *,
    vcpus: int,
    threads: int,
    connections: int,
    rate_rps: float | None,
    warmup_s: float,
    client_cpu_pct: float,
    server_cpu_pct: float,
    sla_p99_ms: float,
    max_error_rate: float,
    saturated: Sequence[str] = (),
    size_problem: Callable[[float], str | None] | None = None,
) -> dict[str, Any]:
    """One row of the trial table from a measurement, judged valid or not.

    Parameters
    ----------
    ids : mapping
        The identity and placement columns (``run_id``, ``trial_id``, ``started_at``, ``kind``,
        ``simulated``, hosts, ``instance_label``, ``arch``, ``cpu_model``, CPUs, placement).
    scenario : runners.nginx.Scenario
        What was served.
    m : runners.wrk.WrkResult
        The (merged) measurement.
    saturated : sequence of str
        One note per saturated load generator.
    size_problem : callable, optional
        Bytes per response -> why they do not fit the scenario, or None.

    A trial is invalid with no responses, errors above ``max_error_rate``, a wrong response
    size, a saturated load generator, or (constant rate) under 95% of the rate asked.
    """
    per_response = m.bytes / m.requests if m.requests else math.nan
    error_rate = m.error_count / max(m.requests, 1)
    reasons = []
    if m.requests == 0:
        reasons.append("no responses")
    if error_rate > max_error_rate:
        reasons.append(f"errors {error_rate:.2%} > {max_error_rate:.2%}")
    if m.requests and size_problem is not None and (problem := size_problem(per_response)):
        reasons.append(problem)
    if saturated:
        reasons.append("load generator saturated: " + ", ".join(saturated))
    if rate_rps is not None and m.rps < 0.95 * rate_rps:
        reasons.append(f"achieved {m.rps:.0f} of the {rate_rps:.0f} rps asked")
    p99 = m.latency_ms.get("p99", math.nan)
    valid = not reasons
    return {
        **ids,
        "vcpus": vcpus,
        "scenario": scenario.name,
        "protocol": scenario.protocol,
        "file_bytes": scenario.file_bytes,
        "gzip": scenario.gzip,
        "keepalive": scenario.keepalive,
        "upstreams": scenario.upstreams if scenario.proxied else None,
        "threads": threads,
        "connections": connections,
        "rate_rps": rate_rps,
        "warmup_s": warmup_s,
        "duration_s": m.duration_s,
        "requests": m.requests,
        "rps": m.rps,
        "bytes_per_s": m.bytes_per_s,
        "throughput_gbps": m.bytes_per_s * 8 / 1e9,
        "bytes_per_response": per_response,
        **{f"errors_{k}": m.errors[k] for k in ERROR_KINDS},
        "error_rate": error_rate,
        "latency_p50_ms": m.latency_ms.get("p50"),
        "latency_p90_ms": m.latency_ms.get("p90"),
        "latency_p99_ms": p99,
        "latency_p999_ms": m.latency_ms.get("p999"),
        "latency_max_ms": m.latency_ms.get("max"),
        "latency_mean_ms": m.latency_ms.get("mean"),
        "client_cpu_pct": client_cpu_pct,
        "server_cpu_pct": server_cpu_pct,
        "sla_p99_ms": sla_p99_ms,
        "meets_sla": valid and p99 <= sla_p99_ms,
        "valid": valid,
        "invalid_reason": "; ".join(reasons),
    }


_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


def new_run_id(label: str = "") -> str:
    """``YYYYmmddTHHMMSSZ[-label]-xxxx``: sortable by time, unique, safe as a folder name."""
    slug = re.sub(r"[^A-Za-z0-9]+", "-", label).strip("-")[:40]
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return "-".join(p for p in (stamp, slug, secrets.token_hex(2)) if p)


class RunStore:
    """The folder of one run. Use `create` for a new run and `open` to resume one."""

    def __init__(self, path: Path, meta: dict[str, Any]) -> None:
        self.path = path
        self.meta = meta

    @property
    def run_id(self) -> str:
        """The run's id, which is also its folder name."""
        return str(self.meta["run_id"])

    @property
    def trials_path(self) -> Path:
        """``trials.csv``."""
        return self.path / "trials.csv"

    @property
    def histograms_path(self) -> Path:
        """``histograms.jsonl``."""
        return self.path / "histograms.jsonl"

    @classmethod
    def create(cls, out: str | os.PathLike[str], meta: Mapping[str, Any]) -> RunStore:
        """Make ``out/<run_id>/`` with an empty trial table and ``run.json``."""
        run_id = str(meta["run_id"])
        if not _RUN_ID.match(run_id):
            raise RunnerError(f"run id {run_id!r} is not a plain folder name")
        path = Path(out) / run_id
        try:
            path.mkdir(parents=True, exist_ok=False)
        except FileExistsError:
            raise RunnerError(f"{path} already exists; use --resume {run_id}") from None
        except OSError as exc:
            raise RunnerError(f"cannot create the run folder {path}: {exc.strerror}") from None
        store = cls(path, dict(meta))
        with store.trials_path.open("w", newline="") as fh:
            csv.writer(fh, lineterminator="\n").writerow(TRIAL_COLUMNS)
        store.histograms_path.touch()
        store.save_meta()
        return store

    @classmethod
    def open(cls, out: str | os.PathLike[str], run_id: str) -> RunStore:
        """Open ``out/<run_id>/`` to resume it; repairs a torn last line."""
        if not _RUN_ID.match(run_id):
            raise RunnerError(f"run id {run_id!r} is not a plain folder name")
        path = Path(out) / run_id
        meta_path = path / "run.json"
        if not meta_path.is_file():
            raise RunnerError(f"no run {run_id!r} in {out} (no {meta_path})")
        try:
            meta = json.loads(meta_path.read_text())
        except json.JSONDecodeError as exc:
            raise RunnerError(f"{meta_path} is not valid JSON: {exc}") from None
        store = cls(path, meta)
        for p in (store.trials_path, store.histograms_path):
            _cut_torn_line(p)
        header = store.trials_path.read_text().partition("\n")[0].split(",")
        if tuple(header) != TRIAL_COLUMNS:
            raise RunnerError(f"{store.trials_path} does not have this version's trial columns")
        return store

    @contextlib.contextmanager
    def recording_status(self) -> Iterator[None]:
        """Mark the run running, then complete, interrupted or failed, in ``run.json``."""
        self.meta["status"] = "running"
        self.save_meta()
        try:
            yield
        except KeyboardInterrupt:
            self.meta["status"] = "interrupted"
            raise
        except BaseException as exc:
            self.meta["status"] = f"failed: {exc}"
            raise
        else:
            self.meta["status"] = "complete"
        finally:
            self.save_meta()

    def save_meta(self) -> None:
        """Write ``run.json`` atomically."""
        tmp = self.path / "run.json.tmp"
        tmp.write_text(json.dumps(self.meta, indent=1, sort_keys=False, default=str) + "\n")
        os.replace(tmp, self.path / "run.json")

    def append(self, row: Mapping[str, Any], histograms: Mapping[str, Any] | None = None) -> None:
        """Append one trial: its histograms first, then its row, each flushed and fsynced."""
        unknown = set(row) - set(TRIAL_COLUMNS)
        if unknown:
            raise RunnerError(f"unknown trial columns: {sorted(unknown)}")
        if bool(row.get("simulated")) != bool(self.meta.get("simulated")):
            kinds = ("measured", "simulated")
            raise RunnerError(
                f"run {self.run_id} holds {kinds[bool(self.meta.get('simulated'))]} trials; "
                f"a {kinds[bool(row.get('simulated'))]} row cannot join it"
            )
        if histograms is not None:
            line = json.dumps(
                {"trial_id": row["trial_id"], "clients": histograms}, separators=(",", ":")
            )
            _append_line(self.histograms_path, line + "\n")
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow(_cell(row.get(c)) for c in TRIAL_COLUMNS)
        _append_line(self.trials_path, buf.getvalue())

    def rows(self) -> list[dict[str, str]]:
        """The trial rows written so far, as strings."""
        with self.trials_path.open(newline="") as fh:
            return list(csv.DictReader(fh))

    def histograms(self) -> Iterator[dict[str, Any]]:
        """Each trial's per-client histograms: ``{"trial_id", "clients": {host: pairs}}``."""
        with self.histograms_path.open() as fh:
            for line in fh:
                if line.strip():
                    yield json.loads(line)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if not math.isfinite(value):
            return ""
        return f"{value:.12g}"
    if isinstance(value, (list, tuple)):
        return " ".join(map(str, value))
    return str(value)


def _append_line(path: Path, text: str) -> None:
    with path.open("a", newline="") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())


def _cut_torn_line(path: Path) -> None:
    if not path.exists():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with path.open("r+b") as fh:
            fh.truncate(data.rfind(b"\n") + 1)


def load_trials(run_dir: str | os.PathLike[str]) -> Any:
    """A run folder's ``trials.csv`` as a pandas DataFrame with typed columns.

    The reader is `sizing.datasets.read_trials`, the one the fit and sizing stages use.
    """
    from sizing.datasets import read_trials
    from sizing.errors import InputError

    try:
        return read_trials(Path(run_dir))
    except InputError as exc:
        raise RunnerError(str(exc)) from None

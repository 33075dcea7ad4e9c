"""A run's lifecycle: new or resumed, locked, its status, progress, and its ``run.json``.

`Run` is the one writer of ``run.json``: sessions, searches and the simulator tell it what to
record (host facts, configs, commands, results) and it saves. `open_run` creates a run or
resumes one whose plan matches, and on resume stops what an earlier, killed process of the
same run left on its hosts. `cleanup` does the same for a run (or every run) on demand.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Protocol

from runners.errors import BadInput, RunnerError
from runners.hosts import Host, connect
from runners.plan import Access, Plan
from trialtable.errors import RunFolderError
from trialtable.folder import (
    RunFolder,
    RunInUse,
    append_state_line,
    check_run_id,
    new_run_id,
)
from trialtable.folder import outstanding as outstanding_in
from trialtable.jsonvalue import JsonObject, JsonValue, as_float
from trialtable.schema import utc_now
from trialtable.values import printable


class Simulated(Protocol):
    """What a run records of its simulated server (`runners.sim.SimServer`): its settings."""

    def to_dict(self) -> JsonObject:
        """The server's settings as run.json records them."""
        ...


class Run:
    """One open run: its locked folder and everything it records.

    Parameters
    ----------
    folder : trialtable.folder.RunFolder
        The run's folder, locked by this process.
    """

    def __init__(self, folder: RunFolder) -> None:
        self.folder = folder

    @property
    def run_id(self) -> str:
        """The run's id (its folder name)."""
        return self.folder.run_id

    @property
    def path(self) -> Path:
        """The run folder."""
        return self.folder.path

    @property
    def meta(self) -> Mapping[str, JsonValue]:
        """``run.json`` as recorded so far (read-only: record through the methods)."""
        return self.folder.meta

    def rows(self) -> list[dict[str, str]]:
        """The trial rows written so far, as strings."""
        return self.folder.rows()

    def append(
        self, row: Mapping[str, object], histograms: Mapping[str, object] | None = None
    ) -> None:
        """Append one trial's row (and its clients' histograms)."""
        self.folder.append(row, histograms)

    # -- run.json ---------------------------------------------------------------------------
    def record(self, **fields: JsonValue) -> None:
        """Set top-level fields of ``run.json`` and save it."""
        self.folder.meta.update(fields)
        self.folder.save_meta()

    def record_more(self, key: str, items: Sequence[JsonValue]) -> None:
        """Add ``items`` to the list ``run.json[key]`` (started if absent) and save it."""
        held = self.folder.meta.get(key)
        self.folder.meta[key] = [*(held if isinstance(held, list) else []), *items]
        self.folder.save_meta()

    def record_in(self, key: str, name: str, value: JsonValue) -> None:
        """Set ``run.json[key][name]`` and save it."""
        self.folder.meta.setdefault(key, {})[name] = value
        self.folder.save_meta()

    def record_command(self, trial_id: str, hosts: Mapping[str, str]) -> None:
        """Add the command line each client ran for a trial."""
        self.folder.meta.setdefault("commands", []).append(
            {"trial_id": trial_id, "hosts": dict(hosts)}
        )
        self.folder.save_meta()

    def record_windows(
        self,
        trial_id: str,
        start_s: float,
        clients: Sequence[Mapping[str, JsonValue]],
        *,
        save: bool = True,
    ) -> None:
        """Add a trial's common start [s since the epoch] and each client's window and offset.

        ``save=False`` leaves the saving to the next record (one write of ``run.json``
        for a trial's windows and commands).
        """
        self.folder.meta.setdefault("windows", []).append(
            {"trial_id": trial_id, "common_start_s": round(start_s, 6), "clients": clients}
        )
        if save:
            self.folder.save_meta()

    @contextlib.contextmanager
    def status(self) -> Iterator[None]:
        """Running, then complete, interrupted or failed (see `RunFolder.recording_status`)."""
        with self.folder.recording_status():
            yield

    # -- what the run started on its hosts --------------------------------------------------
    def started(
        self,
        host: str,
        what: str,
        path: str,
        pids: list[int],
        starts: Mapping[int, str] | None = None,
    ) -> None:
        """Record a prefix, a process or a work folder on ``host``, before it is used.

        ``starts``: each pid's start time (``/proc/PID/stat`` field 22), by which a later
        cleanup tells the process from another that reuses its pid.
        """
        entry: dict[str, Any] = {"host": host, "what": what, "path": path, "pids": pids}
        if starts:
            entry["starts"] = {str(p): str(t) for p, t in starts.items()}
        self.folder.record_started(entry)

    def removed(self, host: str, path: str) -> None:
        """Record that ``path`` on ``host`` is stopped and removed."""
        self.folder.record_removed(host, path)

    def close(self) -> None:
        """Release the run's lock."""
        self.folder.close()


@contextlib.contextmanager
def recording(out: str | os.PathLike[str], label: str) -> Iterator[Run]:
    """A run folder in ``out`` that records only what a command starts on its hosts.

    For a command without trials of its own (``features``' private containerd): what a
    killed process of it left, ``cleanup`` finds there; once everything it started is
    recorded as removed, the folder is removed too. `RunnerError` when it cannot be made.
    """
    meta = {
        "run_id": new_run_id(label),
        "created_at": utc_now(),
        "status": "running",
        "simulated": False,
    }
    try:
        folder = RunFolder.create(out, meta)
    except RunFolderError as exc:
        raise RunnerError(str(exc)) from None
    run = Run(folder)
    try:
        yield run
    finally:
        left = outstanding_in(folder.path)
        run.close()
        if not left:
            shutil.rmtree(folder.path, ignore_errors=True)


def open_run(
    plan: Plan,
    out: str | os.PathLike[str],
    resume: str | None,
    sim: Simulated | None = None,
    extra: Mapping[str, JsonValue] | None = None,
) -> tuple[Plan, Run]:
    """A new run for ``plan``, or the run ``resume``, whose plan must match.

    ``extra`` holds more of what defines the run (a search's options); it is stored in
    ``run.json`` and must match too on resume. The returned run is locked by this process.
    """
    extra = json.loads(json.dumps(dict(extra or {})))
    if resume is None:
        meta = {
            "run_id": new_run_id(plan.label or ("sim" if sim is not None else "")),
            "created_at": utc_now(),
            "status": "running",
            "simulated": sim is not None,
            "plan": plan.to_dict(),
            "sim": sim.to_dict() if sim is not None else None,
            **extra,
        }
        return plan, Run(RunFolder.create(out, meta))
    try:
        folder = RunFolder.open(out, resume)
    except RunInUse:
        raise
    except RunFolderError as exc:  # no such run, or one that cannot be resumed
        raise BadInput(str(exc)) from None
    try:
        return _check_resumed(folder, plan, resume, sim, extra), Run(folder)
    except BaseException:
        folder.close()
        raise


def _check_resumed(
    folder: RunFolder,
    plan: Plan,
    resume: str,
    sim: Simulated | None,
    extra: Mapping[str, JsonValue],
) -> Plan:
    """The stored plan, when it and ``extra`` match what the resumed run was planned with."""
    meta = folder.meta
    if not isinstance(meta.get("simulated", False), bool):
        raise BadInput(
            f"run {resume}: run.json field 'simulated' is {meta.get('simulated')!r}, "
            "not true or false"
        )
    if bool(meta.get("simulated")) != (sim is not None):
        held = "simulated" if meta.get("simulated") else "measured"
        way = "with --server sim" if held == "simulated" else "against real hosts"
        raise BadInput(f"run {resume} holds {held} trials; resume it {way}")
    if sim is not None and meta.get("sim") != json.loads(json.dumps(sim.to_dict())):
        raise BadInput(
            f"run {resume} simulated another server (--seed/--sim-*); resume it with the same "
            "options"
        )
    try:
        stored = Plan.from_dict(meta["plan"])
    except (TypeError, ValueError, KeyError, AttributeError, RunnerError) as exc:
        error = folder.error("run.json", f"has a plan this version cannot use ({exc})")
        raise BadInput(str(error)) from None
    if stored != plan or any(meta.get(k) != v for k, v in extra.items()):
        diff = _differences(stored.to_dict(), plan.to_dict())
        diff += [k for k, v in extra.items() if meta.get(k) != v]
        raise BadInput(
            f"run {resume} was planned with other settings ({', '.join(diff)}); resume it "
            "with the same options, or start a new run"
        )
    return stored


def _differences(
    a: Mapping[str, JsonValue], b: Mapping[str, JsonValue], prefix: str = ""
) -> list[str]:
    """Keys whose values differ between two plans' data, nested ones as ``scenario.protocol``."""
    out: list[str] = []
    for k in [*a, *(k for k in b if k not in a)]:
        x, y = a.get(k), b.get(k)
        if isinstance(x, dict) and isinstance(y, dict):
            out += _differences(x, y, f"{prefix}{k}.")
        elif x != y:
            out.append(f"{prefix}{k}")
    return out


def name_run(exc: BaseException, run_id: str) -> None:
    """Attach ``run_id`` to an exception leaving a run, for the message that resumes it."""
    with contextlib.suppress(AttributeError):
        if not hasattr(exc, "run_id"):
            exc.run_id = run_id  # type: ignore[attr-defined]


# -- what a killed process left behind ------------------------------------------------------
def stop_left_behind(
    run_dir: str | os.PathLike[str],
    access: Access | None = None,
    log: IO[str] | None = None,
    record: Run | None = None,
) -> list[str]:
    """Stop and remove what a run's earlier processes started and never removed.

    Reads the run's ``started.jsonl``; for each prefix or work folder still outstanding,
    connects to its host, stops the nginx of that prefix and removes it; for a private
    containerd's folder, its daemon, shims, containers, mounts and shim sockets
    (`runners.deploy.container.stop_leftover`). Returns one line per
    thing found (also written to ``log`` as a warning). ``record``: the open run, told what
    was removed.
    """
    from runners.deploy.container import RECORD_WHAT, stop_leftover
    from runners.deploy.nginx import stop_leftovers

    access = access or Access()
    found = outstanding_in(run_dir)
    lines: list[str] = []
    hosts: dict[str, Host] = {}
    try:
        for entry in found:
            name, path = str(entry.get("host", "")), str(entry["path"])
            pids = [int(p) for p in entry.get("pids", [])]
            by = entry.get("by_pid", "?")
            line = (
                f"warning: run {os.path.basename(os.fspath(run_dir))}: an earlier process "
                f"(pid {by if isinstance(by, int) else '?'}) left {path} on {name}"
                + (f" (pids {' '.join(map(str, pids))})" if pids else "")
                + "; stopping and removing it"
            )
            try:
                host = hosts.get(name) or connect(
                    name,
                    accept_new_host_keys=access.accept_new_host_keys,
                    ssh_config=access.ssh_config,
                )
                hosts[name] = host
                stop = stop_leftover if entry.get("what") == RECORD_WHAT else stop_leftovers
                done, notes = stop(host, path, pids, entry.get("starts"))
            except RunnerError as exc:
                line = f"{line}: failed ({exc})"
                done, notes = False, []
            if not done and "failed" not in line:
                line = f"{line}: not provably this run's ({'; '.join(notes)}), left alone"
            elif notes:
                line = f"{line}; left alone: {'; '.join(notes)}"
            line = printable(line)
            lines.append(line)
            if log is not None:
                print(line, file=log, flush=True)
            if done:
                if record is not None:
                    record.removed(name, path)
                else:
                    _append_removed(run_dir, name, path)
    finally:
        for host in hosts.values():
            with contextlib.suppress(Exception):
                host.close()
    return lines


def _append_removed(run_dir: str | os.PathLike[str], host: str, path: str) -> None:
    line = {"event": "removed", "host": host, "path": path, "at": utc_now()}
    with contextlib.suppress(OSError):  # a planted link or pipe there is not written to
        append_state_line(
            Path(run_dir) / "started.jsonl", json.dumps(line, separators=(",", ":")) + "\n"
        )


def cleanup(
    out: str | os.PathLike[str],
    run_id: str | None,
    access: Access | None = None,
    log: IO[str] | None = sys.stderr,
) -> list[str]:
    """Stop what run ``run_id`` (or, with None, every run in ``out``) left on its hosts.

    Touches only prefixes and work folders the runs recorded in their ``started.jsonl``,
    and of those only what `runners.deploy.nginx.stop_leftovers` can prove the run started; a run
    another live process holds is left alone (and said so). ``--all`` also looks into the
    calibration campaigns in ``out`` (``CAMPAIGN/runs/RUN``).
    """
    if run_id is not None:
        check_run_id(run_id)
        if not os.path.isfile(os.path.join(out, run_id, "run.json")):
            raise BadInput(f"no run {run_id!r} in {out}")
        runs = [Path(out) / run_id]
    else:
        try:
            runs = run_folders(out)
        except OSError as exc:
            raise RunnerError(f"cannot list {out}: {exc.strerror}") from None
    lines: list[str] = []
    for run_dir in runs:
        folder = RunFolder(run_dir, {"run_id": run_dir.name})
        try:
            folder.lock()
        except RunInUse as exc:
            line = printable(f"{exc}; left alone")
            lines.append(line)
            if log is not None:
                print(line, file=log, flush=True)
            continue
        except RunFolderError:
            continue
        try:
            lines += stop_left_behind(folder.path, access, log)
        finally:
            folder.close()
    return lines


def run_folders(out: str | os.PathLike[str]) -> list[Path]:
    """Run folders with a ``started.jsonl`` in ``out`` and in its campaigns' ``runs/``.

    Symbolic links are not followed: a folder planted as a link is no run of ``out``.
    """

    def runs_in(parent: Path) -> list[Path]:
        return sorted(
            d
            for d in (parent / n for n in os.listdir(parent))
            if not d.is_symlink() and d.is_dir() and (d / "started.jsonl").is_file()
        )

    base = Path(out)
    found = runs_in(base)
    for d in sorted(base.iterdir()):
        if d.is_symlink() or not (d / "campaign.json").is_file():
            continue
        runs = d / "runs"
        if runs.is_dir() and not runs.is_symlink():
            found += runs_in(runs)
    return found


class Progress:
    """A progress line with an ETA on a terminal, one line per trial otherwise."""

    def __init__(self, total: int, seconds_each: float, stream: IO[str] | None) -> None:
        self.total, self.seconds_each, self.stream = total, seconds_each, stream
        self.done = 0
        self.start = time.monotonic()
        self.tty = bool(stream and stream.isatty())

    def update(self, row: Mapping[str, JsonValue]) -> None:
        """Record one finished trial and redraw."""
        self.done += 1
        if self.stream is None:
            return
        elapsed = time.monotonic() - self.start
        left = self.total - self.done
        eta = elapsed / self.done * left if self.done else left * self.seconds_each
        width = 24
        filled = round(width * self.done / self.total) if self.total else width
        text = (
            f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
            f"v{row['vcpus']} t{row['threads']} c{row['connections']}: "
            f"{row['rps']:,.0f} rps, p99 {row['latency_p99_ms']:.2f} ms, {verdict(row)}; "
            f"ETA {int(eta // 60)}:{int(eta % 60):02d}"
        )
        if self.tty:
            end = "\n" if left == 0 else ""
            self.stream.write("\r\033[K" + text + end)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()


def verdict(row: Mapping[str, JsonValue]) -> str:
    """``pass`` (valid, p99 within the SLA), ``over SLA`` or ``invalid``."""
    if not row.get("valid"):
        return "invalid"
    return "pass" if as_float(row["latency_p99_ms"]) <= as_float(row["sla_p99_ms"]) else "over SLA"

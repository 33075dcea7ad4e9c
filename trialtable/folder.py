"""The run folder: append-only rows, histograms, ``run.json``, a lock and a cleanup record.

``DIR/<run_id>/`` holds

- ``trials.csv``: one row per trial, the columns of `trialtable.schema.COLUMNS`;
- ``histograms.jsonl``: one line per trial, ``{"trial_id", "clients": {host: [[us, n], ...]}}``,
  every client's full latency histogram, so that clients merge exactly later;
- ``run.json``: the plan, host facts, exact configs, commands and the run's status, rewritten
  atomically (write, fsync, rename);
- ``started.jsonl``: what the run started on each host (nginx prefixes and pids, client work
  folders), one line when started and one when removed, so that what a killed process left
  behind can be found and stopped later;
- ``run.lock``: an exclusive lock (``flock``) held by the one process writing the run, with
  its pid. The kernel releases it when that process dies, even by SIGKILL.

A crash loses at most the trial in flight: rows are written whole, flushed and fsynced, and a
torn last line (power loss) is cut off when the run is opened again.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import fcntl
import io
import json
import math
import os
import re
import secrets
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from trialtable.files import MB, read_bounded
from trialtable.schema import TRIAL_COLUMNS, utc_now

#: Largest ``run.json`` read [B]: 64 MB (a run's is tens of kB); larger is refused unread.
META_MAX_BYTES = 64 * MB

_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
# Locks this process holds: folder -> (open lock file descriptor, holders).
_HELD: dict[Path, list[int]] = {}


class RunFolderError(RuntimeError):
    """A run folder that cannot be used; the message names the folder, the file and why."""


class RunInUse(RunFolderError):
    """Another live process holds the run's lock."""


def new_run_id(label: str = "") -> str:
    """``YYYYmmddTHHMMSSZ[-label]-xxxx``: sortable by time, unique, safe as a folder name."""
    slug = re.sub(r"[^A-Za-z0-9]+", "-", label).strip("-")[:40]
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return "-".join(p for p in (stamp, slug, secrets.token_hex(2)) if p)


def check_run_id(run_id: str) -> str:
    """``run_id`` if it is a plain folder name, else `RunFolderError`."""
    if not _RUN_ID.match(run_id):
        raise RunFolderError(f"run id {run_id!r} is not a plain folder name")
    return run_id


def cell(value: Any) -> str:
    """One value as stored in ``trials.csv`` (booleans ``true``/``false``, NaN empty)."""
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


class RunFolder:
    """The folder of one run, locked by this process. `create` a new run, `open` to resume."""

    def __init__(self, path: Path, meta: dict[str, Any]) -> None:
        self.path = path
        self.meta = meta
        self._locked = False

    # -- paths ------------------------------------------------------------------------------
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

    @property
    def meta_path(self) -> Path:
        """``run.json``."""
        return self.path / "run.json"

    @property
    def started_path(self) -> Path:
        """``started.jsonl``."""
        return self.path / "started.jsonl"

    # -- opening ----------------------------------------------------------------------------
    @classmethod
    def create(cls, out: str | os.PathLike[str], meta: Mapping[str, Any]) -> RunFolder:
        """Make ``out/<run_id>/`` with an empty trial table and ``run.json``, and lock it."""
        run_id = check_run_id(str(meta["run_id"]))
        path = Path(out) / run_id
        try:
            path.mkdir(parents=True, exist_ok=False)
        except FileExistsError:
            raise RunFolderError(f"{path} already exists; use --resume {run_id}") from None
        except OSError as exc:
            raise RunFolderError(f"cannot create the run folder {path}: {exc.strerror}") from None
        folder = cls(path, dict(meta))
        folder.lock()
        try:
            with folder.trials_path.open("w", newline="") as fh:
                csv.writer(fh, lineterminator="\n").writerow(TRIAL_COLUMNS)
            folder.histograms_path.touch()
        except OSError as exc:
            raise folder.error("trials.csv", f"cannot be written ({exc.strerror})") from None
        folder.save_meta()
        return folder

    @classmethod
    def open(cls, out: str | os.PathLike[str], run_id: str) -> RunFolder:
        """Open ``out/<run_id>/`` to resume it: lock it, check it, repair a torn last line.

        Raises `RunFolderError` (one line naming the folder, the file and the problem) and
        changes nothing when the folder is damaged beyond a torn last line; `RunInUse` when
        another process holds it.
        """
        check_run_id(run_id)
        path = Path(out) / run_id
        meta_path = path / "run.json"
        if not meta_path.is_file():
            raise RunFolderError(f"no run {run_id!r} in {out} (no {meta_path})")
        folder = cls(path, {"run_id": run_id})
        folder.lock()
        try:
            folder.meta = folder._read_meta()
            folder._check_table()
        except BaseException:
            folder.close()
            raise
        return folder

    def _read_meta(self) -> dict[str, Any]:
        try:
            meta = json.loads(read_bounded(self.meta_path, META_MAX_BYTES).decode("utf-8"))
        except UnicodeDecodeError:
            raise self.error("run.json", "is not UTF-8 text") from None
        except json.JSONDecodeError as exc:
            raise self.error(
                "run.json", f"is not valid JSON ({exc.msg}, line {exc.lineno})"
            ) from None
        except RecursionError:
            raise self.error("run.json", "is not valid JSON (nested too deeply)") from None
        except OSError as exc:
            raise self.error("run.json", f"cannot be read ({exc.strerror})") from None
        if not isinstance(meta, dict):
            raise self.error("run.json", "is not a JSON object")
        if meta.get("run_id") != self.path.name:
            raise self.error("run.json", f"names run {meta.get('run_id')!r}, not the folder's")
        if not isinstance(meta.get("plan"), dict):
            raise self.error("run.json", "has no plan (a run.json without 'plan' cannot resume)")
        return meta

    def _check_table(self) -> None:
        from trialtable.read import check_header, check_text, read_rows

        path = self.trials_path
        if not path.is_file():
            raise self.error("trials.csv", "is missing")
        data = path.read_bytes()
        hist = self.histograms_path.read_bytes() if self.histograms_path.exists() else b""
        check_text(self.path, "histograms.jsonl", hist)
        if not data.strip():
            if hist.strip():
                raise self.error(
                    "trials.csv",
                    "is empty but histograms.jsonl holds trials: the table was lost",
                )
            # Nothing was ever recorded: start the table again.
            self._rewrite(path, (",".join(TRIAL_COLUMNS) + "\n").encode())
            data = path.read_bytes()
        check_text(self.path, "trials.csv", data)
        header = data.partition(b"\n")[0].decode("utf-8").split(",")
        added = check_header(self.path, header, TRIAL_COLUMNS, older=True)
        _cut_torn_line(path)
        rows = read_rows(self.path)  # every row whole and typed, or one line saying where not
        if added:
            # Written before columns were added: the same rows, with what their absence meant.
            buf = io.StringIO()
            out = csv.writer(buf, lineterminator="\n")
            out.writerow(TRIAL_COLUMNS)
            out.writerows([cell(r[c]) for c in TRIAL_COLUMNS] for r in rows)
            tmp = path.with_name("trials.csv.tmp")
            self._rewrite(tmp, buf.getvalue().encode())
            os.replace(tmp, path)
        if self.histograms_path.exists():
            _cut_torn_line(self.histograms_path)
        else:
            self.histograms_path.touch()

    def _rewrite(self, path: Path, data: bytes) -> None:
        try:
            with path.open("wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            raise self.error(path.name, f"cannot be written ({exc.strerror})") from None

    def error(self, file: str, problem: str) -> RunFolderError:
        """A `RunFolderError` naming this folder, ``file`` and ``problem``."""
        return RunFolderError(f"run folder {self.path}: {file} {problem}")

    # -- the lock ---------------------------------------------------------------------------
    def lock(self) -> None:
        """Take the run's exclusive lock (re-entrant within this process).

        Raises `RunInUse` ("run RUN_ID is in use by pid N") when another process holds it.
        """
        if self._locked:
            return
        key = self.path.resolve()
        held = _HELD.get(key)
        if held is not None:
            held[1] += 1
            self._locked = True
            return
        lock_path = self.path / "run.lock"
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise self.error("run.lock", f"cannot be opened ({exc.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EACCES, errno.EAGAIN):
                raise self.error("run.lock", f"cannot be locked ({exc.strerror})") from None
            try:
                pid = lock_path.read_text().strip() or "?"
            except OSError:
                pid = "?"
            raise RunInUse(f"run {self.path.name} is in use by pid {pid}") from None
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        _HELD[key] = [fd, 1]
        self._locked = True

    def close(self) -> None:
        """Release this holder's share of the lock."""
        if not self._locked:
            return
        self._locked = False
        key = self.path.resolve()
        held = _HELD.get(key)
        if held is None:
            return
        held[1] -= 1
        if held[1] <= 0:
            del _HELD[key]
            with contextlib.suppress(OSError):
                os.ftruncate(held[0], 0)
            os.close(held[0])

    def __enter__(self) -> RunFolder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ----------------------------------------------------------------------------
    def save_meta(self) -> None:
        """Write ``run.json`` atomically; on failure no ``run.json.tmp`` is left behind."""
        tmp = self.path / "run.json.tmp"
        text = json.dumps(self.meta, indent=1, sort_keys=False, default=str) + "\n"
        try:
            with tmp.open("w") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.meta_path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise self.error("run.json", f"cannot be written ({exc.strerror})") from None

    @contextlib.contextmanager
    def recording_status(self) -> Iterator[None]:
        """Mark the run running, then complete, interrupted or failed, in ``run.json``.

        When the final status cannot be written (a full disk), the original error still
        propagates; ``run.json`` keeps its last good state.
        """
        self.meta["status"] = "running"
        self.save_meta()
        try:
            yield
        except KeyboardInterrupt:
            self.meta["status"] = "interrupted"
            self._try_save()
            raise
        except BaseException as exc:
            self.meta["status"] = f"failed: {exc}"
            self._try_save()
            raise
        self.meta["status"] = "complete"
        self.save_meta()

    def _try_save(self) -> None:
        with contextlib.suppress(RunFolderError):
            self.save_meta()

    def append(self, row: Mapping[str, Any], histograms: Mapping[str, Any] | None = None) -> None:
        """Append one trial: its histograms first, then its row, each flushed and fsynced."""
        unknown = set(row) - set(TRIAL_COLUMNS)
        if unknown:
            raise RunFolderError(f"unknown trial columns: {sorted(unknown)}")
        if bool(row.get("simulated")) != bool(self.meta.get("simulated")):
            kinds = ("measured", "simulated")
            raise RunFolderError(
                f"run {self.run_id} holds {kinds[bool(self.meta.get('simulated'))]} trials; "
                f"a {kinds[bool(row.get('simulated'))]} row cannot join it"
            )
        if histograms is not None:
            line = json.dumps(
                {"trial_id": row["trial_id"], "clients": histograms}, separators=(",", ":")
            )
            self._append(self.histograms_path, line + "\n")
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow(cell(row.get(c)) for c in TRIAL_COLUMNS)
        self._append(self.trials_path, buf.getvalue())

    def _append(self, path: Path, text: str) -> None:
        size = path.stat().st_size if path.exists() else 0
        try:
            _append_line(path, text)
        except OSError as exc:
            # A line written in part (a full disk) is taken back, so the file stays whole.
            with contextlib.suppress(OSError), path.open("r+b") as fh:
                fh.truncate(size)
            raise self.error(path.name, f"cannot be written ({exc.strerror})") from None

    # -- reading back -----------------------------------------------------------------------
    def rows(self) -> list[dict[str, str]]:
        """The trial rows written so far, as strings."""
        with self.trials_path.open(newline="", encoding="utf-8") as fh:
            return list(csv.DictReader(fh))

    def histograms(self) -> Iterator[dict[str, Any]]:
        """Each trial's per-client histograms: ``{"trial_id", "clients": {host: pairs}}``."""
        with self.histograms_path.open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    yield json.loads(line)

    # -- what the run started ---------------------------------------------------------------
    def record_started(self, entry: Mapping[str, Any]) -> None:
        """Record something started on a host (before it can be used), fsynced.

        ``entry`` holds at least ``host`` (the host spec), ``what`` (``nginx`` or
        ``client-workdir``) and ``path``; ``pids`` when known.
        """
        line = {**entry, "event": "started", "by_pid": os.getpid(), "at": utc_now()}
        self._append(self.started_path, json.dumps(line, separators=(",", ":")) + "\n")

    def record_removed(self, host: str, path: str) -> None:
        """Record that what was started at ``path`` on ``host`` is stopped and removed."""
        line = {"event": "removed", "host": host, "path": path, "at": utc_now()}
        self._append(self.started_path, json.dumps(line, separators=(",", ":")) + "\n")

    def outstanding(self) -> list[dict[str, Any]]:
        """What was started and not recorded as removed, pids merged per (host, path)."""
        return outstanding(self.path)


def outstanding(run_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The started-but-not-removed entries of a run folder's ``started.jsonl``.

    Torn or unreadable lines are skipped (the record is best effort; the cleanup matches
    prefixes by name as well).
    """
    path = Path(run_dir) / "started.jsonl"
    live: dict[tuple[str, str], dict[str, Any]] = {}
    try:
        data = path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return []
    for line in data.splitlines():
        try:
            e = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(e, dict) or not isinstance(e.get("path"), str):
            continue
        key = (str(e.get("host", "")), e["path"])
        if e.get("event") == "removed":
            live.pop(key, None)
        elif e.get("event") == "started":
            entry = live.setdefault(key, {**e, "pids": []})
            pids = e.get("pids") or []
            entry["pids"] = sorted({*entry["pids"], *(int(p) for p in pids if str(p).isdigit())})
    return list(live.values())


def _append_line(path: Path, text: str) -> None:
    with path.open("a", newline="", encoding="utf-8") as fh:
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

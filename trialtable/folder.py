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
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypedDict

from trialtable.errors import RunFolderError
from trialtable.fields import Field, FieldError, Fields, printable
from trialtable.files import MB, open_state, read_bounded, write_atomic
from trialtable.output import csv_cell
from trialtable.read import TRIALS_MAX_BYTES, check_header, check_text, read_rows
from trialtable.schema import TRIAL_COLUMNS, utc_now

#: Largest ``run.json`` read [B]: 64 MB (a run's is tens of kB); larger is refused unread.
META_MAX_BYTES = 64 * MB
#: Largest ``started.jsonl`` read [B]: 16 MB (a run's holds a few lines per trial).
STARTED_MAX_BYTES = 16 * MB
#: Largest ``histograms.jsonl`` read [B].
HISTOGRAMS_MAX_BYTES = 1024 * MB

_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
# Locks this process holds: folder -> (open lock file descriptor, holders).
_HELD: dict[Path, list[int]] = {}


class RunInUse(RunFolderError):
    """Another live process holds the run's lock."""


def new_run_id(label: str = "") -> str:
    """``YYYYmmddTHHMMSSZ[-label]-xxxx``: sortable by time, unique, safe as a folder name."""
    import secrets  # here: its OpenSSL import is a tenth of `recommend`'s start, unused there

    slug = re.sub(r"[^A-Za-z0-9]+", "-", label).strip("-")[:40]
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return "-".join(p for p in (stamp, slug, secrets.token_hex(2)) if p)


def check_run_id(run_id: str) -> str:
    """``run_id`` if it is a plain folder name, else `RunFolderError`."""
    if not _RUN_ID.match(run_id):
        raise RunFolderError(f"run id {run_id!r} is not a plain folder name")
    return run_id


def cell(value: object) -> str:
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
    if isinstance(value, str):
        return str(csv_cell(value))  # a label such as =HYPERLINK(...) stays text
    return str(value)


class TrialHistograms(TypedDict):
    """One line of ``histograms.jsonl``: each client's latency histogram of one trial.

    ``clients`` maps a client host to its ``[latency_us, count]`` pairs.
    """

    trial_id: str
    clients: dict[str, list[list[float]]]


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
    def create(cls, out: str | os.PathLike[str], meta: Mapping[str, object]) -> RunFolder:
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
            write_atomic(folder.trials_path, ",".join(TRIAL_COLUMNS) + "\n")
            write_atomic(folder.histograms_path, b"")
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
        if not meta_path.is_file() or meta_path.is_symlink():
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

    @classmethod
    def read_only(cls, run_dir: str | os.PathLike[str]) -> RunFolder:
        """``run_dir`` to read back: its ``run.json`` checked, nothing locked or repaired.

        Raises `RunFolderError` (one line) for a folder without a readable ``run.json``.
        """
        path = Path(run_dir)
        if not (path / "run.json").is_file():
            raise RunFolderError(f"{path} is not a run folder (no run.json)")
        folder = cls(path, {"run_id": path.name})
        folder.meta = folder._read_meta()
        return folder

    def _read_meta(self) -> dict[str, Any]:
        try:
            meta = json.loads(_read_state(self.meta_path, META_MAX_BYTES).decode("utf-8"))
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
        path = self.trials_path
        if not os.path.lexists(path):
            raise self.error("trials.csv", "is missing")
        try:
            data = _read_state(path, TRIALS_MAX_BYTES)
            hist = (
                _read_state(self.histograms_path, HISTOGRAMS_MAX_BYTES)
                if os.path.lexists(self.histograms_path)
                else b""
            )
        except OSError as exc:
            raise self.error(
                "trials.csv or histograms.jsonl", f"cannot be read ({exc.strerror})"
            ) from None
        check_text(self.path, "histograms.jsonl", hist)
        if not data.strip():
            if hist.strip():
                raise self.error(
                    "trials.csv",
                    "is empty but histograms.jsonl holds trials: the table was lost",
                )
            # Nothing was ever recorded: start the table again.
            self._rewrite(path, (",".join(TRIAL_COLUMNS) + "\n").encode())
            data = _read_state(path, TRIALS_MAX_BYTES)
        check_text(self.path, "trials.csv", data)
        header = data.partition(b"\n")[0].decode("utf-8").split(",")
        added = check_header(self.path, header, TRIAL_COLUMNS, older=True)
        self._cut(path)
        rows = read_rows(self.path)  # every row whole and typed, or one line saying where not
        if added:
            # Written before columns were added: the same rows, with what their absence meant.
            buf = io.StringIO()
            out = csv.writer(buf, lineterminator="\n")
            out.writerow(TRIAL_COLUMNS)
            out.writerows([cell(r[c]) for c in TRIAL_COLUMNS] for r in rows)
            self._rewrite(path, buf.getvalue().encode())
        if os.path.lexists(self.histograms_path):
            self._cut(self.histograms_path)
        else:
            self._rewrite(self.histograms_path, b"")

    def _rewrite(self, path: Path, data: bytes) -> None:
        try:
            write_atomic(path, data)
        except OSError as exc:
            raise self.error(path.name, f"cannot be written ({exc.strerror})") from None

    def _cut(self, path: Path) -> None:
        try:
            _cut_torn_line(path)
        except OSError as exc:
            raise self.error(path.name, f"cannot be repaired ({exc.strerror})") from None

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
            # Never through a planted link, never truncated on opening (see open_state).
            fd = open_state(lock_path, os.O_RDWR | os.O_CREAT)
        except OSError as exc:
            raise self.error("run.lock", f"cannot be opened ({exc.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            try:
                pid = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
            except OSError:
                pid = "?"
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EACCES, errno.EAGAIN):
                raise self.error("run.lock", f"cannot be locked ({exc.strerror})") from None
            pid = printable_pid(pid)
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
        """Write ``run.json`` atomically; on failure no temporary file is left behind."""
        text = json.dumps(self.meta, indent=1, sort_keys=False, default=str) + "\n"
        try:
            write_atomic(self.meta_path, text)
        except OSError as exc:
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

    def append(
        self, row: Mapping[str, object], histograms: Mapping[str, object] | None = None
    ) -> None:
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
            clients = ",".join(
                f"{json.dumps(host)}:{v if isinstance(v, EncodedHistogram) else _json(v)}"
                for host, v in histograms.items()
            )
            line = f'{{"trial_id":{json.dumps(row["trial_id"])},"clients":{{{clients}}}}}'
            self._append(self.histograms_path, line + "\n")
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow(cell(row.get(c)) for c in TRIAL_COLUMNS)
        self._append(self.trials_path, buf.getvalue())

    def _append(self, path: Path, text: str) -> None:
        try:
            append_state_line(path, text)
        except OSError as exc:
            raise self.error(path.name, f"cannot be written ({exc.strerror})") from None

    # -- reading back -----------------------------------------------------------------------
    def rows(self) -> list[dict[str, str]]:
        """The trial rows written so far, as strings."""
        text = _read_state(self.trials_path, TRIALS_MAX_BYTES).decode("utf-8")
        return list(csv.DictReader(io.StringIO(text, newline="")))

    def histograms(self) -> Iterator[TrialHistograms]:
        """Each trial's per-client histograms: ``{"trial_id", "clients": {host: pairs}}``.

        Every pair is checked against `HISTOGRAM` (latency and count in range).

        Raises
        ------
        RunFolderError
            For a line that is not such an object, naming ``histograms.jsonl:LINE``.
        """
        data = _read_state(self.histograms_path, HISTOGRAMS_MAX_BYTES).decode("utf-8")
        for n, line in enumerate(data.splitlines(), start=1):
            if line.strip():
                yield self._histogram(line, f"histograms.jsonl:{n}:")

    def _histogram(self, line: str, where: str) -> TrialHistograms:
        try:
            doc = json.loads(line)
        except (ValueError, RecursionError):
            raise self.error(where, "is not a JSON line") from None
        checked: TrialHistograms = doc  # returned once every check below holds
        if not (isinstance(doc, dict) and isinstance(doc.get("trial_id"), str)):
            raise self.error(where, 'is not {"trial_id": ..., "clients": {...}}')
        clients = doc.get("clients")
        if not isinstance(clients, dict):
            raise self.error(where, "field 'clients' is not an object of histograms")
        try:
            for pairs in clients.values():
                if not isinstance(pairs, list):
                    raise FieldError("field 'clients': a histogram is a list of [us, count]")
                for pair in pairs:
                    if not (isinstance(pair, list) and len(pair) == 2):
                        raise FieldError(
                            f"field 'clients': {printable(str(pair)[:40])!r} is not [us, count]"
                        )
                    HISTOGRAM["latency_us"].check(pair[0], "")
                    HISTOGRAM["count"].check(pair[1], "")
        except FieldError as exc:
            raise self.error(where, str(exc).removeprefix(": ")) from None
        return checked

    # -- what the run started ---------------------------------------------------------------
    def record_started(self, entry: Mapping[str, object]) -> None:
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

    Torn or unreadable lines are skipped. The file is read as every state file is: at most
    `STARTED_MAX_BYTES`, never through a link, a pipe or a device (those read as empty).
    ``starts`` maps each pid (as text) to its recorded start time (``/proc/PID/stat`` field
    22), when the record has one.
    """
    path = Path(run_dir) / "started.jsonl"
    live: dict[tuple[str, str], dict[str, Any]] = {}
    try:
        data = _read_state(path, STARTED_MAX_BYTES).decode("utf-8", errors="replace")
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
            entry = live.setdefault(key, {**e, "pids": [], "starts": {}})
            pids = e.get("pids")
            pids = pids if isinstance(pids, list) else []
            ok = [int(p) for p in pids if _field_ok(STARTED["pid"], p)]
            entry["pids"] = sorted({*entry["pids"], *ok})
            starts = e.get("starts")
            starts = starts if isinstance(starts, dict) else {}
            entry["starts"].update(
                {
                    str(k): str(v)
                    for k, v in starts.items()
                    if _field_ok(STARTED["pid"], k) and _field_ok(STARTED["start_ticks"], v)
                }
            )
    return list(live.values())


#: The numbers of ``started.jsonl`` (pids as numbers or text, start times as text): what
#: cleanup acts on, so anything else on a line is left out, never acted on.
STARTED = Fields(
    "started.jsonl",
    (
        Field("pid", "int", "", 1, 2**22),  # Linux's pid_max at most 4194304
        Field("start_ticks", "int", "clock ticks since boot", 0, 2**63 - 1),
    ),
)
#: The numbers of ``histograms.jsonl``: each client's ``[latency_us, count]`` pairs.
HISTOGRAM = Fields(
    "histograms.jsonl",
    (
        Field("latency_us", "int", "us", 0, 1e15),
        Field("count", "int", "requests", 1, 2**63 - 1),
    ),
)


def _field_ok(field: Field, value: object) -> bool:
    """Whether ``value`` (a number, or its digits as text) is one ``field`` takes."""
    if isinstance(value, str):
        if not re.fullmatch(r"[0-9]{1,20}", value):
            return False
        value = int(value)
    try:
        field.check(value, "")
    except FieldError:
        return False
    return True


def printable_pid(text: str) -> str:
    """A pid read from a lock file, or ``?`` when it is not one (never raw bytes)."""
    return text if re.fullmatch(r"[0-9]{1,9}", text) else "?"


def _read_state(path: Path, limit: int) -> bytes:
    """A state file of the run folder: regular, not through a link, at most ``limit`` bytes."""
    return read_bounded(path, limit, regular_only=True, follow=False)


class EncodedHistogram(str):
    """A client's histogram encoded as ``histograms.jsonl`` holds it (`encode_histogram`)."""


def encode_histogram(pairs: Iterable[tuple[int, int]]) -> EncodedHistogram:
    """``[[us, n], ...]`` as `RunFolder.append` writes it, encoded ahead (in a client's thread)."""
    return EncodedHistogram(_json(list(pairs)))


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def append_state_line(path: Path, text: str) -> None:
    """Append ``text`` whole, never through a link (see `open_state`).

    A line written in part (a full disk) is taken back.
    """
    fd = open_state(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        size = os.fstat(fd).st_size
        try:
            data = memoryview(text.encode("utf-8"))
            while data:
                data = data[os.write(fd, data) :]
            os.fsync(fd)
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)


def _cut_torn_line(path: Path) -> None:
    if not os.path.lexists(path):
        return
    fd = open_state(path, os.O_RDWR)
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return
        if os.pread(fd, 1, size - 1) == b"\n":
            return
        # The last newline: read backwards in blocks.
        end = size
        while end > 0:
            start = max(0, end - MB)
            block = os.pread(fd, end - start, start)
            i = block.rfind(b"\n")
            if i >= 0:
                os.ftruncate(fd, start + i + 1)
                return
            end = start
        os.ftruncate(fd, 0)
    finally:
        os.close(fd)

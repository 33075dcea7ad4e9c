"""Hosts: this machine (``local``), a network namespace on it (``netns:NAME``), or SSH.

Every command is an argv list. Locally it runs without a shell; over SSH it is joined with
POSIX shell quoting, so a label or path with spaces or metacharacters stays one argument and
cannot inject anything. Shell snippets are passed as ``sh -c SCRIPT sh ARG...`` with their
inputs as positional parameters, never pasted into the script.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import shlex
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from runners.errors import BadInput, RunnerError
from runners.tools import SEARCH_DIRS, TOOLS

if TYPE_CHECKING:  # paramiko loads only when an SSH host is used
    import paramiko

_SPEC = re.compile(
    r"^(?:(?P<user>[^@\s:]+)@)?(?P<host>\[[^\]]+\]|[^@\s:\[\]]+)(?::(?P<port>\d+))?$"
)
_NETNS = re.compile(r"^netns:(?P<name>[A-Za-z0-9_.-]+)$")


#: Longest wait for one command [s]: 2e6 s (23 days), under the 2**31 ms that poll() and
#: the SSH library's timers take; a longer trial (``--duration 1e9s``) waits this long.
MAX_WAIT_S = 2e6

T = TypeVar("T")


@dataclass(frozen=True)
class HostSpec:
    """Where a host is: ``local``, ``netns:NAME`` or ``[user@]host[:port]``."""

    kind: str
    host: str = ""
    user: str | None = None
    port: int | None = None

    @classmethod
    def parse(cls, text: str) -> HostSpec:
        """Parse a host argument; raise `RunnerError` naming the bad text."""
        text = text.strip()
        if text in ("", "local"):
            return cls("local")
        if m := _NETNS.match(text):
            return cls("netns", m["name"])
        m = _SPEC.match(text)
        if not m:
            raise BadInput(f"host {text!r} is not 'local', 'netns:NAME' or '[user@]host[:port]'")
        port = int(m["port"]) if m["port"] else None
        if port is not None and not 0 < port < 65536:
            raise BadInput(f"host {text!r}: port {port} is outside 1-65535")
        return cls("ssh", m["host"].strip("[]"), m["user"], port)

    def __str__(self) -> str:
        if self.kind == "local":
            return "local"
        if self.kind == "netns":
            return f"netns:{self.host}"
        host = f"[{self.host}]" if ":" in self.host else self.host
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port else ""
        return f"{user}{host}{port}"


@dataclass
class Result:
    """What a command returned."""

    stdout: str
    stderr: str
    exited: int

    @property
    def ok(self) -> bool:
        """Whether it exited 0."""
        return self.exited == 0


class Host:
    """A place to run commands. Subclasses implement `_exec`."""

    spec: HostSpec
    _interrupted = False

    @property
    def name(self) -> str:
        """The host as the user wrote it."""
        return str(self.spec)

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float | None = None,
        check: bool = True,
        what: str | None = None,
    ) -> Result:
        """Run ``argv``; with ``check``, a non-zero exit raises `RunnerError`.

        Parameters
        ----------
        argv : sequence of str
            The program and its arguments.
        timeout : float, optional
            Give up after this many seconds [s].
        check : bool
            Raise on a non-zero exit.
        what : str, optional
            What the command does, for the error message.
        """
        if timeout is not None and not timeout <= MAX_WAIT_S:  # also inf and NaN
            timeout = MAX_WAIT_S  # a wait the system's timers can hold (poll takes int ms)
        if self._interrupted:
            result = Result("", "interrupted", 130)  # see `interrupt`: start nothing more
        else:
            result = self._exec(list(argv), timeout)
        if check and not result.ok:
            detail = _last_line(result.stderr) or _last_line(result.stdout) or "no output"
            raise RunnerError(
                f"{what or shlex.join(argv)} failed on {self.name} (exit {result.exited}): {detail}"
            )
        return result

    def sh(
        self,
        script: str,
        *args: str,
        timeout: float | None = None,
        check: bool = True,
        what: str | None = None,
    ) -> Result:
        """Run a POSIX shell snippet whose inputs are the positional parameters ``args``."""
        return self.run(["sh", "-c", script, "sh", *args], timeout=timeout, check=check, what=what)

    def write_text(self, path: str, text: str, mode: int = 0o644) -> None:
        """Create or replace a text file on the host with the given permission bits."""
        self.sh(
            'umask 077; printf "%s" "$1" > "$2" && chmod "$3" "$2"',
            text,
            path,
            f"{mode:o}",
            what=f"writing {path}",
        )

    def close(self) -> None:
        """Release the connection, if any."""

    def reconnect(self) -> None:
        """Open the connection again when it was lost (nothing to do for a local host)."""

    def interrupt(self) -> None:
        """Stop the commands running on this host now; start none until `resume`.

        Called from the main thread on Ctrl-C while other threads wait on commands here:
        their commands end at once (with exit 130 for one not yet started), not with their
        trials.
        """
        self._interrupted = True
        self._stop_running()

    def resume(self) -> None:
        """Run commands again (after `interrupt`)."""
        self._interrupted = False

    def _stop_running(self) -> None:
        """Stop the commands that run now (each kind of host its own way)."""

    def _exec(self, argv: list[str], timeout: float | None) -> Result:
        raise NotImplementedError


class LocalHost(Host):
    """The local machine, or a network namespace on it (``netns:NAME``, via ``ip netns``)."""

    def __init__(self, spec: HostSpec | None = None) -> None:
        self.spec = spec or HostSpec("local")
        self._running: set[subprocess.Popen[str]] = set()
        self._lock = threading.Lock()

    def _exec(self, argv: list[str], timeout: float | None) -> Result:
        if self.spec.kind == "netns":
            argv = ["ip", "netns", "exec", self.spec.host, *argv]
        try:
            # Its own session, so a timeout or Ctrl-C stops the command's children too.
            proc = subprocess.Popen(
                argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                text=True,
                start_new_session=True,
            )
        except FileNotFoundError:
            return Result("", f"{argv[0]}: not found", 127)
        # On Ctrl-C, `communicate` first waits 0.25 s for the child to end of the terminal's
        # SIGINT; in its own session it never gets one: no wait, it is killed at once.
        proc._sigint_wait_secs = 0.0  # type: ignore[attr-defined]
        with self._lock:
            self._running.add(proc)
            if self._interrupted:  # `interrupt` may have listed them before this one
                _kill_members(proc.pid)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_session(proc)
            return Result("", f"timed out after {timeout:g} s", 124)
        except BaseException:
            _kill_session(proc)
            raise
        finally:
            with self._lock:
                self._running.discard(proc)
        return Result(out, err, proc.returncode)

    def _stop_running(self) -> None:
        with self._lock:
            running = list(self._running)
        for proc in running:
            _kill_members(proc.pid)


def side_by_side(calls: Sequence[Callable[[], T]], hosts: Iterable[Host]) -> list[Future[T]]:
    """Run ``calls`` at the same time, each in a thread; their futures, all done.

    A Ctrl-C (or any exception) while waiting interrupts ``hosts`` first (`Host.interrupt`),
    so the threads end with their commands stopped, not after them, then propagates.
    """
    hosts = list(hosts)
    pool = ThreadPoolExecutor(len(calls))
    try:
        futures = [pool.submit(call) for call in calls]
        wait(futures)
    except BaseException:
        for host in hosts:
            host.interrupt()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        for host in hosts:
            host.resume()
    return futures


def _kill_session(proc: subprocess.Popen[str]) -> None:
    """Kill every process of ``proc``'s session, then collect its output."""
    _kill_members(proc.pid)
    proc.communicate()


def _kill_members(sid: int) -> None:
    """SIGKILL every process of session ``sid`` (a command started with its own session).

    Its process group is not enough: ``timeout`` puts the load generator in a group of its
    own, which then outlived the command (and held its output open for the whole trial).
    """
    for _ in range(2):  # a child forked during the first pass is found in the second
        members = [pid for pid in _pids() if _session_of(pid) == sid]
        for pid in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if not members:
            return


def _pids() -> list[int]:
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def _session_of(pid: int) -> int | None:
    """The session id of ``pid`` (``/proc/PID/stat`` field 6), None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rpartition(b")")[2].split()
        return int(fields[3])
    except (OSError, IndexError, ValueError):
        return None


class SSHHost(Host):
    """A host reached over SSH through Fabric, with the user's ssh config and keys.

    Unknown host keys are refused unless ``accept_new_host_keys`` (or the ssh config's
    ``StrictHostKeyChecking accept-new|no``); an accepted key is saved to the user's
    known_hosts file. A changed key is always refused.

    One connection serves every command. The commands run one after another in one remote
    ``sh`` (`_Shell`), started once: a new SSH session per command would start the user's
    login shell again each time, with its startup files (a ``~/.bashrc`` that sets up a
    version manager takes 300 ms on the project's test machine). A command that arrives
    while the shell is busy (another thread's) gets its own session, as does every command
    after the shell was lost. A command that outlives its timeout, or that Ctrl-C
    interrupts, is killed on the host with every process of its remote session
    (`_kill`), not left to the host's ``timeout`` wrapper.
    """

    def __init__(
        self,
        spec: HostSpec,
        *,
        accept_new_host_keys: bool = False,
        ssh_config: str | None = None,
        connect_timeout: float = 10.0,
    ) -> None:
        from fabric import Config, Connection

        self.spec = spec
        if ssh_config:
            ssh_config = os.path.expanduser(ssh_config)
            if not os.path.isfile(ssh_config):
                raise BadInput(f"ssh config {ssh_config} does not exist")
        config = Config(runtime_ssh_path=ssh_config) if ssh_config else Config()
        self.conn = Connection(
            spec.host,
            user=spec.user,
            port=spec.port,
            config=config,
            connect_timeout=int(connect_timeout),
        )
        ssh_cfg = self.conn.ssh_config
        strict = str(ssh_cfg.get("stricthostkeychecking", "yes")).lower()
        accept = accept_new_host_keys or strict in ("no", "accept-new", "off")
        known = [
            os.path.expanduser(p)
            for p in str(ssh_cfg.get("userknownhostsfile", "~/.ssh/known_hosts")).split()
        ]
        client = self.conn.client
        for path in known:
            if os.path.exists(path):
                client.load_host_keys(path)
        client.set_missing_host_key_policy(_HostKeyPolicy(self.name, accept, known[0]))
        self._open()
        self._shell: _Shell | None = None
        self._shell_lock = threading.Lock()
        self._running: set[_Shell] = set()
        self._lock = threading.Lock()
        #: Commands run and remote sessions opened (one per command outside the shell).
        self.commands = 0
        self.sessions = 0

    def _open(self) -> None:
        import paramiko

        target = f"{self.conn.user}@{self.conn.host}:{self.conn.port}"
        try:
            self.conn.open()
        except _UnknownHostKey as exc:
            raise RunnerError(str(exc)) from None
        except paramiko.BadHostKeyException:
            raise RunnerError(
                f"{self.name}: the host key of {target} has CHANGED since it was recorded in "
                "known_hosts; refusing to connect (remove the old entry only if you know why)"
            ) from None
        except paramiko.AuthenticationException as exc:
            raise RunnerError(
                f"{self.name}: authentication as {self.conn.user} failed ({exc}); check the "
                "key in your ssh config or agent"
            ) from None
        except (OSError, paramiko.SSHException, EOFError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            if isinstance(exc, paramiko.ssh_exception.NoValidConnectionsError):
                reason = "connection refused"
            elif isinstance(exc, socket.gaierror):
                reason = f"cannot resolve host name ({exc.strerror})"
            raise RunnerError(f"cannot connect to {self.name} ({target}): {reason}") from None

    def _exec(self, argv: list[str], timeout: float | None) -> Result:
        self.commands += 1
        if self._shell_lock.acquire(blocking=False):
            try:
                return self._in_shell(argv, timeout)
            finally:
                self._shell_lock.release()
        return self._in_session(argv, timeout)

    def _new_shell(self) -> _Shell:
        """A new remote shell on the connection (a remote session of its own)."""
        transport = self.conn.client.get_transport()
        if transport is None or not transport.is_active():
            raise EOFError("the connection is closed")
        self.sessions += 1
        return _Shell(transport)

    def _in_shell(self, argv: list[str], timeout: float | None) -> Result:
        """Run ``argv`` in the connection's remote shell (started on first use)."""
        import paramiko

        try:
            shell = self._shell = self._shell or self._new_shell()
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise RunnerError(f"lost the connection to {self.name}: {exc}") from None
        return self._run_in(shell, argv, timeout)

    def _in_session(self, argv: list[str], timeout: float | None) -> Result:
        """Run ``argv`` in a remote shell of its own, closed after it."""
        import paramiko

        try:
            shell = self._new_shell()
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise RunnerError(f"lost the connection to {self.name}: {exc}") from None
        try:
            return self._run_in(shell, argv, timeout)
        finally:
            shell.close()

    def _run_in(self, shell: _Shell, argv: list[str], timeout: float | None) -> Result:
        """Run ``argv`` in ``shell``; a timeout or Ctrl-C stops its processes on the host."""
        import paramiko

        with self._lock:
            self._running.add(shell)
            # `interrupt` may have listed the running commands before this one was added.
            interrupted = self._interrupted
        try:
            if interrupted:
                raise EOFError("interrupted")
            result = shell.run(shlex.join(argv), timeout)
        except (OSError, EOFError, paramiko.SSHException) as exc:
            self._end([shell])
            if self._interrupted:  # `interrupt` closed the shell: its command was stopped
                return Result("", "interrupted", 130)
            raise RunnerError(f"lost the connection to {self.name}: {exc}") from None
        except BaseException:
            self._end([shell], kill=True)  # interrupted mid-command: stop it there too
            raise
        finally:
            with self._lock:
                self._running.discard(shell)
        if shell.timed_out:
            self._end([shell], kill=True)
        return result

    def _stop_running(self) -> None:
        with self._lock:
            running = list(self._running)
        self._end(running, kill=True)

    def _end(self, shells: Sequence[_Shell], *, kill: bool = False) -> None:
        """Close ``shells`` (the connection's own shell is then started again when needed).

        With ``kill``, first kill the processes of their remote sessions (`_kill`).
        """
        try:
            if kill:
                self._kill(shells)
        finally:
            for shell in shells:
                with contextlib.suppress(Exception):
                    shell.close()
                if shell is self._shell:
                    self._shell = None

    def _kill(self, shells: Sequence[_Shell], timeout: float = 10.0) -> None:
        """Kill, on the host, the processes of the remote sessions of ``shells``.

        Only what is proved theirs (`_KILL_SESSIONS`); a shell that does not lead its own
        session (``leader`` empty) is left to the host's ``timeout`` wrapper and ``cleanup``.
        The kill runs in a new shell, kept as the connection's next one (a session costs a
        login shell's start-up, which the commands that stop nginx would pay again).
        """
        leaders = [s.leader for s in shells if s.leader]
        if not leaders:
            return
        with contextlib.suppress(Exception):
            fresh = self._new_shell()
            fresh.run(shlex.join(["sh", "-c", _KILL_SESSIONS, "sh", *leaders]), timeout)
            # Only the thread that holds `_shell_lock` runs commands in `_shell`; this one
            # does not use ``fresh`` again once it is there.
            if not fresh.timed_out and (self._shell is None or self._shell in shells):
                self._shell = fresh
            else:
                fresh.close()

    def _drop_shell(self) -> None:
        if self._shell is not None:
            self._end([self._shell])

    def close(self) -> None:
        """Close the remote shell and the SSH connection."""
        self._drop_shell()
        self.conn.close()

    def reconnect(self) -> None:
        """A new SSH connection when the last one was lost; raise `RunnerError` if none opens."""
        self._drop_shell()
        if not self.conn.is_connected:
            self.conn.client.close()  # the lost transport's threads and socket
            self._open()


class _Shell:
    """One remote ``sh`` that runs command lines one at a time, sent on its standard input.

    Each command runs in a subshell with its standard input from ``/dev/null`` (so it
    cannot read the lines meant for the shell), then the shell prints a marker with the exit
    status on standard output and a marker on standard error. The marker holds a random token
    made for this shell, so no output can end a command early; the newline printed before
    each marker is taken off again.

    sshd starts the shell in a session of its own, which its commands' processes stay in
    (``timeout`` gives its command a process group of its own, not a session): the shell's
    pid, session id and start time, read once as it starts (``leader``), are what
    `SSHHost._kill` needs to stop them on the host.
    """

    def __init__(self, transport: paramiko.Transport, timeout: float = 30.0) -> None:
        self.token = os.urandom(16).hex()
        self.channel = transport.open_session(timeout=timeout)
        self.channel.exec_command("exec sh")
        self._end_out = re.compile(rf"\n{self.token} (\d+)\n\Z".encode())
        self._end_err = f"\n{self.token}\n".encode()
        #: ``SID:START`` of the shell when it leads its own session, else "".
        self.leader = self._identify(timeout)
        #: Whether the last command outlived its timeout (and still runs on the host).
        self.timed_out = False

    def _identify(self, timeout: float) -> str:
        """The shell's ``SID:START`` (`_IDENTIFY`), "" when it does not lead its session."""
        self.channel.sendall(_IDENTIFY.replace("@TOKEN@", self.token).encode())
        # Whatever a login script printed before the shell started comes first: skipped.
        line = re.compile(rf"(?:\A|\n){self.token} (\S*)\n".encode())
        out = bytearray()
        deadline = time.monotonic() + timeout
        while not (m := line.search(out)):
            if self.channel.closed or self.channel.exit_status_ready():
                raise EOFError("the remote shell ended as it started")
            if time.monotonic() > deadline:
                raise EOFError(f"the remote shell did not start in {timeout:g} s")
            select.select([self.channel], [], [], 0.5)
            while self.channel.recv_ready():
                out += self.channel.recv(4096)
        return m.group(1).decode() if _LEADER.fullmatch(m.group(1).decode()) else ""

    @property
    def closed(self) -> bool:
        """Whether the shell's session is closed."""
        return bool(self.channel.closed)

    def run(self, line: str, timeout: float | None) -> Result:
        """Run ``line`` (an argv joined with shell quoting): its stdout, stderr, exit status.

        ``exec`` runs the program ``line`` names, found on the ``PATH``, never a builtin of
        the shell (whose ``echo``, say, differs from one ``sh`` to another), as a local argv is.
        A command that outlives ``timeout`` is left running (``timed_out``): exit 124.
        """
        t = self.token
        markers = f"printf '\\n{t} %s\\n' \"$?\"; printf '\\n{t}\\n' >&2"
        self.channel.sendall(f"( exec {line}\n) </dev/null; {markers}\n".encode())
        out, err = bytearray(), bytearray()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self.channel.closed:
                raise EOFError("the remote shell was closed")
            while self.channel.recv_ready():
                out += self.channel.recv(65536)
            while self.channel.recv_stderr_ready():
                err += self.channel.recv_stderr(65536)
            # The marker is the last thing on each stream: look only at the tail.
            end = self._end_out.search(out, max(0, len(out) - 80))
            if end and err.endswith(self._end_err):
                break
            if self.channel.exit_status_ready() and not (
                self.channel.recv_ready() or self.channel.recv_stderr_ready()
            ):
                raise EOFError("the remote shell ended")
            wait = 0.5 if deadline is None else min(0.5, deadline - time.monotonic())
            if wait <= 0:
                self.timed_out = True
                return Result("", f"timed out after {timeout:g} s", 124)
            select.select([self.channel], [], [], wait)
        stdout = out[: end.start()].decode("utf-8", "replace")
        stderr = err[: -len(self._end_err)].decode("utf-8", "replace")
        return Result(stdout, stderr, int(end.group(1)))

    def close(self) -> None:
        """End the shell's session."""
        self.channel.close()


# The shell's session id and start time (in clock ticks since boot), from /proc/$$/stat
# (fields 6 and 22; the name in parentheses may hold spaces), when it leads its session.
_IDENTIFY = r"""{ read -r s < /proc/$$/stat; } 2>/dev/null
s=${s##*") "}; set -- $s
if [ "$4" = "$$" ]; then echo "@TOKEN@ $4:${20}"; else echo "@TOKEN@ "; fi
"""
_LEADER = re.compile(r"[1-9]\d*:\d+")

# Kill the processes of remote sessions given as SID:START: the shell that made the session
# (its leader, pid SID) is still the one started at START (field 22 of its stat line), so every
# process of session SID is one of its commands'. With pkill, in one pass (twice, for a child
# forked meanwhile); without, by reading each process's stat line.
_KILL_SESSIONS = r"""
of() { s=${1##*") "}; set -- $s; state=$1 sess=$4 began=${20}; }
for t in "$@"; do
  sid=${t%%:*}
  { read -r line < "/proc/$sid/stat"; } 2>/dev/null || { echo "GONE $sid"; continue; }
  of "$line"
  if [ "$state" = Z ] || [ "$sess" != "$sid" ] || [ "$began" != "${t#*:}" ]; then
    echo "GONE $sid"; continue
  fi
  if command -v pkill >/dev/null 2>&1; then
    pkill -KILL -s "$sid"; pkill -KILL -s "$sid"
  else
    for pass in 1 2; do
      for d in /proc/[0-9]*; do
        { read -r line < "$d/stat"; } 2>/dev/null || continue
        of "$line"
        [ "$sess" = "$sid" ] && kill -KILL "${d#/proc/}" 2>/dev/null
      done
    done
  fi
  echo "KILLED $sid"
done
exit 0
"""


class _UnknownHostKey(Exception):
    pass


class _HostKeyPolicy:
    """Refuse unknown host keys, or accept and save them (``accept-new`` semantics)."""

    def __init__(self, name: str, accept: bool, known_hosts: str) -> None:
        self.name, self.accept, self.known_hosts = name, accept, known_hosts

    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> None:
        fingerprint = key.fingerprint
        if not self.accept:
            raise _UnknownHostKey(
                f"{self.name}: host key for {hostname} is unknown ({fingerprint}, not in "
                f"{self.known_hosts}); check it and rerun with --accept-new-host-keys to "
                "trust and record it"
            )
        client.get_host_keys().add(hostname, key.get_name(), key)
        record_host_key(Path(self.known_hosts), f"{hostname} {key.get_name()} {key.get_base64()}")


#: The largest known_hosts file added to [B] (OpenSSH's own lines are under 1 kB each).
KNOWN_HOSTS_MAX = 16 * 1024 * 1024


def record_host_key(path: Path, line: str) -> None:
    """Add ``line`` to the known_hosts file ``path`` through the one writer.

    The file is read (bounded, no link followed) and written whole as a new file
    (`trialtable.files.write_atomic`: no link, device or pipe written through), with its own
    permissions, or 0600 when new. A file that cannot be used ends the connection with one
    line naming it.
    """
    from trialtable.files import FileRefused, read_bounded, write_atomic

    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        old = (
            read_bounded(path, KNOWN_HOSTS_MAX, regular_only=True, follow=False)
            if path.exists()
            else b""
        )
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
        sep = b"" if not old or old.endswith(b"\n") else b"\n"
        write_atomic(path, old + sep + line.encode() + b"\n", mode=mode)
    except (OSError, FileRefused) as exc:
        why = getattr(exc, "strerror", None) or str(exc)
        raise _UnknownHostKey(f"cannot record the host key in {path}: {why}") from None


def connect(
    text: str | HostSpec,
    *,
    accept_new_host_keys: bool = False,
    ssh_config: str | None = None,
) -> Host:
    """A `Host` for ``local``, ``netns:NAME`` or ``[user@]host[:port]``."""
    spec = text if isinstance(text, HostSpec) else HostSpec.parse(text)
    if spec.kind in ("local", "netns"):
        return LocalHost(spec)
    return SSHHost(spec, accept_new_host_keys=accept_new_host_keys, ssh_config=ssh_config)


# One round trip: resolve the tools and read the facts a run records.
_FACTS = r"""
find_tool() {
  case "$1" in */*) [ -x "$1" ] && echo "$1"; return;; esac
  p=$(command -v "$1" 2>/dev/null) && { echo "$p"; return; }
  for d in @SEARCH_DIRS@; do
    [ -x "$d/$1" ] && { echo "$d/$1"; return; }
  done
}
for t in "$@"; do echo "tool.$t=$(find_tool "$t")"; done
echo "hostname=$(hostname 2>/dev/null || cat /proc/sys/kernel/hostname)"
echo "kernel=$(uname -r)"
echo "arch=$(uname -m)"
echo "cores=$(getconf _NPROCESSORS_ONLN)"
echo "clk_tck=$(getconf CLK_TCK)"
echo "cpus_allowed=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)"
m=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -n 1)
[ -n "$m" ] || m=$(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -n 1)
echo "cpu_model=$m"
c() { sed -n "s/^$1[[:space:]]*:[[:space:]]*//p" /proc/cpuinfo | head -n 1; }
v=$(c vendor_id) f=$(c "cpu family") mo=$(c model) st=$(c stepping)
[ -z "$v$f" ] || echo "cpu_id=$v family $f model $mo stepping $st"
i=$(c "CPU implementer") p=$(c "CPU part")
[ -n "$v$f" ] || [ -z "$i$p" ] || echo "cpu_id=ARM implementer $i part $p"
echo "mem_kb=$(sed -n 's/^MemTotal:[[:space:]]*\([0-9]*\).*/\1/p' /proc/meminfo)"
for s in net.core.somaxconn net.ipv4.ip_local_port_range net.ipv4.tcp_tw_reuse \
         net.ipv4.tcp_max_syn_backlog fs.file-max; do
  f=/proc/sys/$(echo "$s" | tr . /)
  echo "sysctl.$s=$(tr '\t' ' ' < "$f" 2>/dev/null)"
done
echo "nofile=$(ulimit -n)"
# Versions of the binaries asked for (by name or path), else of those on PATH.
nginx=@nginx@ openssl=@openssl@ wrk=@wrk@
for t in "$@"; do
  case "${t##*/}" in
    nginx*) nginx=$t;; openssl*) openssl=$t;; wrk2*) ;; wrk*) wrk=$t;;
  esac
done
n=$(find_tool "$nginx"); [ -n "$n" ] && echo "nginx_version=$("$n" -v 2>&1 | head -n 1)"
o=$(find_tool "$openssl"); [ -n "$o" ] && echo "openssl_version=$("$o" version 2>&1 | head -n 1)"
w=$(find_tool "$wrk"); [ -n "$w" ] && echo "wrk_version=$("$w" -v 2>&1 | head -n 1)"
echo "user=$(id -un)"
echo "nobody_group=$(id -gn nobody 2>/dev/null)"
"""
_FACTS = (
    _FACTS.replace("@SEARCH_DIRS@", " ".join(map(shlex.quote, SEARCH_DIRS)))
    .replace("@nginx@", shlex.quote(TOOLS["nginx"]))
    .replace("@openssl@", shlex.quote(TOOLS["openssl"]))
    .replace("@wrk@", shlex.quote(TOOLS["wrk"]))
)


def facts(host: Host, tools: Sequence[str] = ()) -> dict[str, Any]:
    """Host facts for ``run.json`` and the resolved path of each tool (empty if missing).

    Returns a dict with ``cpu_model``, ``cpu_id`` (x86: ``<vendor> family <n> model <n>
    stepping <n>``; arm64: ``ARM implementer <0x..> part <0x..>``), ``cores``,
    ``cpus_allowed`` (list of int), ``arch``, ``kernel``, the nginx, OpenSSL and wrk
    versions, ``user``, ``nobody_group`` (the group nginx workers run in under root),
    ``sysctl`` (somaxconn, local port range and a few more), and ``tools`` (name -> path or
    "").
    """
    out = host.sh(_FACTS, *tools, what="reading host facts", timeout=30)
    info: dict[str, Any] = {"host": host.name, "tools": {}, "sysctl": {}}
    for line in out.stdout.splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        if key.startswith("tool."):
            info["tools"][key[5:]] = value.strip()
        elif key.startswith("sysctl."):
            info["sysctl"][key[7:]] = value.strip()
        else:
            info[key] = value.strip()
    info["cores"] = int(info.get("cores") or 1)
    info["clk_tck"] = int(info.get("clk_tck") or 100)
    info["cpus_allowed"] = parse_cpu_list(info.get("cpus_allowed", "")) or list(
        range(info["cores"])
    )
    return info


def parse_cpu_list(text: str) -> list[int]:
    """``"0-3,6"`` -> ``[0, 1, 2, 3, 6]``."""
    cpus: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


def require_tools(found: dict[str, dict[str, str]]) -> None:
    """Raise one `RunnerError` naming every missing tool on every host.

    Parameters
    ----------
    found : dict
        host name -> tool name -> resolved path ("" when missing).
    """
    missing = [
        f"{tool} on {host}"
        for host, tools in found.items()
        for tool, path in tools.items()
        if not path
    ]
    if missing:
        raise RunnerError(
            "missing before any load: "
            + ", ".join(missing)
            + " (install it, or give its path with --nginx/--wrk/--openssl)"
        )


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""

"""A private containerd, and a private nginx in one of its containers (stdout: the log path).

`Containerd` starts containerd with its own folder (``mktemp -d``: root, state, socket,
config, FIFOs, runc's state), so no system containerd is read or touched; its CRI plugin is
off (no kubelet here). `ContainerDeployment` is a `Deployment` whose server runs as
``ctr run --rm --net-host --rootfs`` in that containerd: a root folder of read-only bind
mounts of the host's ``/usr`` and ``/etc`` (with the host's ``/bin``, ``/lib``... links),
the deployment's prefix mounted read-write at the same path, no image and no registry. nginx
runs in the foreground as the container's init, so an ``access_log /dev/stdout`` line goes
nginx ``write()`` -> a pipe -> ``containerd-shim-runc-v2`` (copies it) -> a FIFO -> ``ctr``
(copies it) -> a file in the prefix. That is the path of ``ctr run``; the kubelet's path
differs in its last step (containerd's CRI logger reads the FIFO line by line and writes each
line with a timestamp): `runners.deploy.cri` makes that one.

containerd 1.6 puts each shim's socket under ``/run/containerd/s`` whatever the daemon's
folders are; the shim removes it when it exits.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from runners.cputime import stat_user_system
from runners.deploy.nginx import (
    ALIVE_FN,
    Deployment,
    NginxHost,
    NginxInstance,
    NginxProcess,
    Recorder,
)
from runners.errors import RunnerError
from runners.hosts import Host
from runners.scenario import Scenario

#: The programs the container path needs on the host.
CONTAINERD_TOOLS = ("containerd", "ctr", "containerd-shim-runc-v2", "runc")
#: containerd's namespace for the project's containers.
NAMESPACE = "nginx-sizing"
#: The file the reader (``ctr``) copies the container's stdout to, in the prefix.
STDOUT_FILE = "container-stdout.log"

# Which of the tools are missing (one a line), and whether this user is root.
_MISSING = r"""
for t; do command -v "$t" >/dev/null 2>&1 || echo "MISSING $t"; done
[ "$(id -u)" = 0 ] || echo NOT_ROOT
exit 0
"""

#: The private folder's name (``mktemp``'s eight characters follow), in ``$TMPDIR`` or /tmp.
FOLDER_NAME = "nginx-sizing-ctr"
#: What a run's ``started.jsonl`` calls a private containerd's folder (see `stop_leftover`).
RECORD_WHAT = "containerd"
#: Where containerd 1.6 puts each shim's socket, whatever the daemon's folders.
SHIM_SOCKETS = "/run/containerd/s"

# The private folder, made and printed before anything is started in it (recorded first).
_MKDIR = r"""
umask 022
mktemp -d "${TMPDIR:-/tmp}/@NAME@.XXXXXXXX"
""".replace("@NAME@", FOLDER_NAME)

# A private containerd in its folder $3: the container root folder, the config, the daemon
# in a session of its own (its pid and start time printed); waits for its socket.
_START = r"""
set -e
umask 022
d=$3
mkdir -p "$d/root" "$d/state" "$d/fifo" "$d/runc" "$d/rootfs/usr" "$d/rootfs/etc" "$d/rootfs/tmp"
for x in bin lib lib64 sbin; do
  if [ -L "/$x" ]; then ln -s "$(readlink "/$x")" "$d/rootfs/$x"
  elif [ -d "/$x" ]; then mkdir -p "$d/rootfs/$x"; echo "MOUNT /$x"; fi
done
# $2: the CRI plugin's sandbox image, or "" to turn the CRI plugin off.
if [ -n "$2" ]; then off='"io.containerd.internal.v1.opt"'; else
  off='"io.containerd.grpc.v1.cri", "io.containerd.internal.v1.opt"'; fi
mkdir -p "$d/cni/bin" "$d/cni/conf"
cat > "$d/config.toml" <<EOF
version = 2
root = "$d/root"
state = "$d/state"
disabled_plugins = [$off]
[grpc]
  address = "$d/containerd.sock"
[ttrpc]
  address = "$d/containerd.sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$2"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$d/cni/bin"
    conf_dir = "$d/cni/conf"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      Root = "$d/runc"
EOF
setsid "$1" --config "$d/config.toml" > "$d/containerd.log" 2>&1 < /dev/null &
pid=$!
read -r st < "/proc/$pid/stat"
set -- ${st##*") "}
echo "PID $pid ${20}"
i=0
while [ ! -S "$d/containerd.sock" ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done
[ -S "$d/containerd.sock" ] && echo READY && exit 0
echo NOT_READY
tail -n 3 "$d/containerd.log"
"""

# Stop the daemon (TERM, KILL after 5 s) once no task of ours runs; remove its folder unless
# something is still mounted under it.
_STOP = r"""
d=$1 pid=$2 ctr=$3
for t in $("$ctr" -a "$d/containerd.sock" -n @NS@ task ls -q 2>/dev/null); do
  "$ctr" -a "$d/containerd.sock" -n @NS@ task kill -s KILL "$t" >/dev/null 2>&1
done
if [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null; then
  i=0
  # Alive and not a zombie (its parent, the host's init, may be slow to reap it).
  while s=$(sed 's/.*) \(.\).*/\1/' "/proc/$pid/stat" 2>/dev/null) && [ "$s" != Z ] \
    && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
  kill -KILL "$pid" 2>/dev/null
fi
# What the CRI plugin mounted on the host under $d (a pod's /dev/shm): deepest first.
for m in $(awk -v d="$d/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r); do
  umount "$m" 2>/dev/null
done
if grep -qF " $d/" /proc/mounts; then echo "MOUNTED $d"; exit 0; fi
rm -rf -- "$d"
exit 0
""".replace("@NS@", NAMESPACE)

# Test the config on the host (the paths are the same inside), start nginx as the container's
# init in the foreground, wait for its workers; print its host pids, the shim's and ctr's.
_RUN = r"""
d=$1 ctr=$2 nginx=$3 p=$4 conf=$5 id=$6 want=$7
shift 7
umask 022
out=$("$nginx" -t -q -p "$p" -c "$conf" 2>&1) || { echo TEST_FAILED; echo "$out"; exit 0; }
set -- "$@" --mount "type=bind,src=$p,dst=$p,options=rbind:rw"
setsid "$ctr" -a "$d/containerd.sock" -n @NS@ run --rm --net-host --rootfs \
  --fifo-dir "$d/fifo" --runc-root "$d/runc" "$@" "$d/rootfs" "$id" \
  "$nginx" -p "$p" -c "$conf" -e "$p/error.log" -g 'daemon off;' \
  > "$p/@OUT@" 2> "$p/ctr.err" < /dev/null &
reader=$!
echo "READER $reader"
i=0 m=
while [ $i -lt 1500 ]; do
  m=$("$ctr" -a "$d/containerd.sock" -n @NS@ task ls 2>/dev/null |
    awk -v id="$id" '$1 == id {print $2}')
  [ -n "$m" ] && [ "$m" != 0 ] && break
  kill -0 "$reader" 2>/dev/null || break
  sleep 0.02; i=$((i+1)); m=
done
if [ -z "$m" ]; then
  echo NOT_STARTED; tail -q -n 3 "$p/ctr.err" "$p/error.log" 2>/dev/null
  kill -KILL "$reader" 2>/dev/null; exit 0
fi
i=0
while :; do
  w=$(cat "/proc/$m/task/$m/children" 2>/dev/null)
  set -- $w
  if [ $# -ge "$want" ] || [ $i -ge 1500 ] || ! kill -0 "$m" 2>/dev/null; then break; fi
  sleep 0.02; i=$((i+1))
done
if [ $# -lt "$want" ]; then
  echo NOT_STARTED; tail -n 3 "$p/error.log" 2>/dev/null
  kill -KILL "$m" 2>/dev/null; exit 0
fi
echo "SHIM $(sed 's/.*) . \([0-9]*\).*/\1/' "/proc/$m/stat")"
echo STARTED "$m" $w
""".replace("@NS@", NAMESPACE).replace("@OUT@", STDOUT_FILE)


# A flood of the log path: a container whose init waits for "go", then writes $n lines of
# $len bytes, $per lines a write() (dd), as fast as the path takes them, on CPU $cpu. The host
# side reads the shim's, the reader's and the daemon's CPU time, says go, waits until the
# reader's file holds every byte, reads them again; then ends the container.
_FLOOD = r"""
d=$1 ctr=$2 id=$3 n=$4 len=$5 cpu=$6 daemon=$7 per=$8
shift 8
w=$d/flood
rm -rf -- "$w" && mkdir -p "$w" || exit 1
line=$(printf "%*s" $((len - 1)) "" | tr " " x)
# runc finds a bare name before the container's mounts hold it: full paths.
ts=$(command -v taskset) || { echo "NOT_STARTED taskset not found"; exit 0; }
setsid "$ctr" -a "$d/containerd.sock" -n @NS@ run --rm --net-host --rootfs \
  --fifo-dir "$d/fifo" --runc-root "$d/runc" "$@" \
  --mount "type=bind,src=$w,dst=$w,options=rbind:rw" "$d/rootfs" "$id" \
  "$ts" -c "$cpu" /bin/sh -c 'while [ ! -e "$1/go" ]; do sleep 0.01; done
yes "$2" | dd bs=$(($3 * $5)) iflag=fullblock count=$(($4 / $5)) status=none
exec sleep 100000' sh "$w" "$line" "$len" "$n" "$per" > "$w/out" 2> "$w/ctr.err" < /dev/null &
reader=$!
i=0 m=
while [ $i -lt 1500 ] && kill -0 "$reader" 2>/dev/null; do
  m=$("$ctr" -a "$d/containerd.sock" -n @NS@ task ls 2>/dev/null |
    awk -v id="$id" '$1 == id {print $2}')
  [ -n "$m" ] && [ "$m" != 0 ] && break
  sleep 0.02; i=$((i+1)); m=
done
[ -n "$m" ] || { echo NOT_STARTED; tail -n 3 "$w/ctr.err"; kill -KILL "$reader"; exit 0; }
shim=$(sed 's/.*) . \([0-9]*\).*/\1/' "/proc/$m/stat")
stats() { for p in "$shim" "$reader" "$@"; do echo "STAT $(cat "/proc/$p/stat")"; done; }
want=$((n * len))
stats "$daemon"; echo "T0 $(date +%s%N)"
: > "$w/go"
i=0
while [ "$(stat -c %s "$w/out")" -lt "$want" ] && [ $i -lt 6000 ]; do sleep 0.01; i=$((i+1)); done
echo "T1 $(date +%s%N)"; stats "$daemon"
echo "BYTES $(stat -c %s "$w/out")"
kill -KILL "$m"
i=0
while kill -0 "$reader" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
kill -KILL "$reader" 2>/dev/null
rm -rf -- "$w"
exit 0
""".replace("@NS@", NAMESPACE)


@dataclass(frozen=True)
class FloodSettings:
    """One flood of the log path: lines, bytes a line (newline included), lines a write().

    ``lines`` is a multiple of ``per_write``: one line a write() is how nginx logs; more
    lines a write() load the shim and the reader with less work for the writer.
    """

    lines: int = 400_000
    line_bytes: int = 100
    per_write: int = 1


@dataclass(frozen=True)
class Flood:
    """What one flood measured.

    Attributes
    ----------
    lines : int
        Lines the reader's file received.
    line_bytes : int
        Bytes a line [B].
    per_write : int
        Lines a ``write()`` of the writer.
    seconds : float
        From "go" to the last byte in the reader's file [s].
    side : dict of str to (float, float)
        ``shim``, ``reader``, ``containerd`` -> (user, kernel) CPU time per line [us].
    """

    lines: int
    line_bytes: int
    per_write: int
    seconds: float
    side: dict[str, tuple[float, float]]

    @property
    def lines_per_s(self) -> float:
        """Lines through the path per second [1/s]."""
        return self.lines / self.seconds if self.seconds > 0 else math.nan

    def cpu_share(self, name: str) -> float:
        """CPUs ``name`` kept busy during the flood (its CPU time over the wall time) [1]."""
        user, kernel = self.side[name]
        return (user + kernel) * self.lines / 1e6 / self.seconds if self.seconds > 0 else math.nan


def read_flood(text: str, flood: FloodSettings, clk_tck: int) -> Flood:
    """A `Flood` from `_FLOOD`'s output; `RunnerError` when it did not run through."""
    lines = text.strip().splitlines()
    if not lines or lines[0].startswith("NOT_STARTED"):
        detail = " ".join(lines[1:]) or "no output"
        raise RunnerError(f"the log-path flood's container did not start: {detail}")
    tags = {ln.split(" ", 1)[0]: ln.split(" ", 1)[1] for ln in lines if " " in ln}
    stat_lines = [ln.split(" ", 1)[1] for ln in lines if ln.startswith("STAT ")]
    need = ("T0", "T1", "BYTES")
    if any(k not in tags for k in need) or len(stat_lines) != 6:
        raise RunnerError("the log-path flood stopped before its second reading")
    got = int(tags["BYTES"])
    if got < flood.lines * flood.line_bytes:
        raise RunnerError(f"the log path delivered {got} of {flood.lines * flood.line_bytes} B")
    seconds = (int(tags["T1"]) - int(tags["T0"])) / 1e9
    per = 1e6 / clk_tck / flood.lines
    side = {}
    names = ("shim", "reader", "containerd")
    for name, a, b in zip(names, stat_lines[:3], stat_lines[3:], strict=True):
        (u0, k0), (u1, k1) = stat_user_system(a), stat_user_system(b)
        side[name] = ((u1 - u0) * per, (k1 - k0) * per)
    return Flood(flood.lines, flood.line_bytes, flood.per_write, seconds, side)


def mean_line_bytes(host: Host, path: str) -> float:
    """Mean bytes a line of the file at ``path`` (NaN when it is empty or unreadable)."""
    out = host.run(["wc", "-lc", path], check=False).stdout.split()
    try:
        lines, size = int(out[0]), int(out[1])
    except (IndexError, ValueError):
        return math.nan
    return size / lines if lines else math.nan


def missing(host: Host) -> list[str]:
    """Why the container path cannot run on ``host``: missing tools, not root; [] when it can."""
    out = host.sh(_MISSING, *CONTAINERD_TOOLS, check=False, what="looking for containerd")
    why = [ln.split(" ", 1)[1] for ln in out.stdout.splitlines() if ln.startswith("MISSING ")]
    if "NOT_ROOT" in out.stdout.split():
        why.append("root (containerd runs containers as root)")
    return why


@dataclass
class Containerd:
    """A private containerd on ``host``; a context manager that stops it and removes its folder.

    Attributes
    ----------
    host : Host
        Where it runs (as root).
    folder : str
        Its own folder (root, state, socket, config, FIFOs, the container root), once started.
    pid : int
        The daemon's pid, once started.
    mounts : list of str
        Host folders that are real folders (not links to ``/usr``) and are mounted too.
    record : Recorder, optional
        Where the folder and the daemon's pid (with its start time) are recorded.
    """

    host: Host
    folder: str = ""
    pid: int = 0
    mounts: list[str] = field(default_factory=list)
    _floods: int = 0
    #: The CRI plugin's sandbox image ("": the CRI plugin off), for `runners.deploy.cri`.
    sandbox_image: str = ""
    #: Told what is started (the folder, the daemon) and removed, for a later ``cleanup``.
    record: Recorder | None = None

    def start(self) -> None:
        """Start the daemon and wait for its socket; `RunnerError` when it does not come up.

        With ``record``, the folder is recorded before anything starts in it, and the
        daemon's pid with its start time once it runs (for `stop_leftover`).
        """
        made = self.host.sh(_MKDIR, check=False, timeout=60, what="containerd's folder")
        folder = made.stdout.strip()
        if not folder.startswith("/") or "\n" in folder:
            detail = made.stderr.strip() or "no output"
            raise RunnerError(f"no folder for a private containerd on {self.host.name}: {detail}")
        self.folder = folder
        self._record([], {})
        out = self.host.sh(
            _START,
            "containerd",
            self.sandbox_image,
            folder,
            check=False,
            timeout=60,
            what="containerd",
        )
        lines = out.stdout.strip().splitlines()
        for ln in lines:
            if ln.startswith("PID "):
                pid, start = ln.split()[1:3]
                self.pid = int(pid)
                self._record([self.pid], {self.pid: start})
            elif ln.startswith("MOUNT "):
                self.mounts.append(ln.split(" ", 1)[1])
        if "READY" not in lines:
            detail = (lines[-1] if lines else "") or out.stderr.strip() or "no output"
            raise RunnerError(f"a private containerd did not start on {self.host.name}: {detail}")

    def flood(self, flood: FloodSettings, cpu: int, clk_tck: int) -> Flood:
        """Push ``flood.lines`` lines through a new container's stdout; what it cost.

        The writer runs on ``cpu``; the shim and the reader wherever the host puts them.
        """
        self._floods += 1
        out = self.host.sh(
            _FLOOD,
            self.folder,
            "ctr",
            f"{NAMESPACE}-flood-{self._floods}",
            str(flood.lines),
            str(flood.line_bytes),
            str(cpu),
            str(self.pid),
            str(flood.per_write),
            *mount_args(self.mounts),
            check=False,
            timeout=180,
            what="the log-path flood",
        )
        return read_flood(out.stdout, flood, clk_tck)

    def version(self) -> str:
        """``containerd --version`` (empty when it does not answer)."""
        return self.host.run(["containerd", "--version"], check=False).stdout.strip()

    def _record(self, pids: list[int], starts: dict[int, str]) -> None:
        if self.record is not None:
            self.record.started(self.host.name, RECORD_WHAT, self.folder, pids, starts or None)

    def stop(self) -> None:
        """Kill its tasks, stop the daemon, remove its folder (kept if something is mounted)."""
        if not self.folder:
            return
        out = self.host.sh(_STOP, self.folder, str(self.pid or ""), "ctr", check=False, timeout=60)
        if "MOUNTED" in out.stdout:
            raise RunnerError(f"{self.folder} still has mounts: left in place")
        if self.record is not None:
            self.record.removed(self.host.name, self.folder)
        self.folder, self.pid = "", 0

    def __enter__(self) -> Containerd:
        try:
            self.start()
        except BaseException:
            with contextlib.suppress(RunnerError):
                self.stop()  # what a start that failed half-way made
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ContainerDeployment(Deployment):
    """A `Deployment` whose server runs in a container of ``runtime`` (upstreams do not).

    `side_pids` names the processes the log path adds: the shim and the reader (``ctr``),
    and the daemon. Stopping the master ends the container; ``ctr run --rm`` removes it.
    """

    def __init__(
        self,
        server: NginxHost,
        scenario: Scenario,
        runtime: Containerd,
        record: Recorder | None = None,
    ) -> None:
        super().__init__(server, scenario, record=record)
        self.runtime = runtime
        self.shim = self.reader = 0

    def side_pids(self) -> dict[str, int]:
        """The log path's processes: ``shim``, ``reader`` (ctr), ``containerd`` -> pid."""
        if self.server is None:
            return {}
        return {"shim": self.shim, "reader": self.reader, "containerd": self.runtime.pid}

    def stdout_path(self) -> str:
        """The file the reader writes the container's stdout to."""
        return f"{self.prefix}/{STDOUT_FILE}"

    def _launch(
        self, inst: NginxInstance, prefix: str, conf: str, role: str, want: int
    ) -> NginxProcess | None:
        if role != "server":
            return super()._launch(inst, prefix, conf, role, want)
        host = inst.at.host
        conf_path = f"{prefix}/nginx.conf"
        host.write_text(conf_path, conf)
        out = host.sh(
            _RUN,
            self.runtime.folder,
            "ctr",
            inst.at.nginx,
            prefix,
            conf_path,
            f"{NAMESPACE}-{prefix.rsplit('.', 1)[-1]}-{len(inst.pids)}",
            str(want),
            *mount_args(self.runtime.mounts),
            check=False,
            timeout=120,
            what="starting nginx in a container",
        )
        return self._started(inst, prefix, conf_path, out.stdout)

    def _started(
        self, inst: NginxInstance, prefix: str, conf_path: str, stdout: str
    ) -> NginxProcess | None:
        """The started server from `_RUN`'s output; None when its port was taken meanwhile."""
        lines = stdout.strip().splitlines()
        tags = dict((ln + " ").split(" ", 1) for ln in lines)
        if tags.get("READER", "").strip():
            self.reader = int(tags["READER"])
        detail = " ".join(ln for ln in lines if ln.split(" ", 1)[0] not in _TAGS)
        if "TEST_FAILED" in tags:
            raise RunnerError(
                f"nginx -t rejected the server config on {inst.at.host.name}: {detail}"
            )
        if "STARTED" not in tags or not tags.get("SHIM", "").strip():
            if "Address already in use" in detail:
                return None
            raise RunnerError(f"nginx did not start in a container: {detail or 'no output'}")
        self.shim = int(tags["SHIM"])
        master, *workers = (int(p) for p in tags["STARTED"].split())
        inst.pids.update([master, *workers])
        return NginxProcess(prefix, conf_path, master, workers)

    def teardown(self) -> None:
        """Stop nginx (which ends the container), then the reader if it is still there."""
        try:
            super().teardown()
        finally:
            if self.reader:
                self.host.sh(_END_READER, str(self.reader), check=False, timeout=30)
            self.shim = self.reader = 0


#: The words `_RUN` starts its own lines with.
_TAGS = ("READER", "SHIM", "STARTED", "TEST_FAILED", "NOT_STARTED")

# The reader (ctr run) ends once the container's init has ended: wait 5 s for it, then KILL.
_END_READER = r"""
i=0
while kill -0 "$1" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
kill -KILL "$1" 2>/dev/null
exit 0
"""


def mount_args(extra: Sequence[str]) -> list[str]:
    """``ctr run`` mount options: the host's ``/usr``, ``/etc`` and ``extra`` read-only."""
    out: list[str] = []
    for src in ("/usr", "/etc", *extra):
        out += ["--mount", f"type=bind,src={src},dst={src},options=rbind:ro"]
    return out


# What a killed run left of a private containerd in folder $1 (recorded pids as PID:START
# after it), touched only when provably the run's: the folder is one `_MKDIR` makes (the
# project's name, directly in this host's temporary folder, a folder of this user, not a
# link); a process only while it is the daemon, a shim or a ctr whose command line names the
# folder (a recorded pid also with its recorded start time), or a container's init that
# runc's state in the folder names with its start time (its PID namespace ends with it); a
# mount only under the folder; a shim socket only under the name containerd gives it
# (sha256 of the folder's socket, namespace and id of a task bundle in the folder).
_LEFTOVER = (
    ALIVE_FN
    + r"""
d=$1; shift
root=${TMPDIR:-/tmp}
root=${root%/}
[ -n "$root" ] || root=/tmp
case "${d##*/}" in
  @NAME@.????????) ;;
  *) echo "NOT_OURS its name is not one the project makes"; exit 0;;
esac
if [ "${d%/*}" != "$root" ]; then
  echo "NOT_OURS it is not in this host's temporary folder $root"; exit 0
fi
[ -L "$d" ] && { echo "NOT_OURS it is a symbolic link"; exit 0; }
if [ -e "$d" ] && { [ ! -d "$d" ] || [ ! -O "$d" ]; }; then
  echo "NOT_OURS it is not a folder of this user"; exit 0
fi
ours() {
  case "$(cat "/proc/$1/comm" 2>/dev/null)" in
    containerd|containerd-shim*|ctr) ;;
    *) return 1;;
  esac
  case "$(tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null)" in *"$d/"*) return 0;; esac
  return 1
}
kills=
for a; do
  p=${a%%:*} t=${a#*:}
  alive "$p" || continue
  if [ "$(started_at "$p")" != "$t" ] || ! ours "$p"; then
    echo "LEFT $p is another process now"; continue
  fi
done
for c in /proc/[0-9]*/cmdline; do
  q=${c#/proc/}; q=${q%/cmdline}
  ours "$q" && kills="$kills $q"
done
for f in "$d"/runc/*/*/state.json; do
  [ -f "$f" ] || continue
  p=$(sed -n 's/.*"init_process_pid":\([0-9]*\).*/\1/p' "$f")
  t=$(sed -n 's/.*"init_process_start":\([0-9]*\).*/\1/p' "$f")
  [ -n "$p" ] && [ -n "$t" ] && alive "$p" && [ "$(started_at "$p")" = "$t" ] &&
    kills="$kills $p"
done
[ -n "$kills" ] && kill -KILL $kills 2>/dev/null
wait_gone 200 $kills
for p in $kills; do echo "KILLED $p"; done
for m in $(awk -v d="$d/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r); do
  umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
done
for b in "$d"/state/io.containerd.runtime.v2.task/*/*; do
  [ -d "$b" ] || continue
  ns=${b%/*}
  h=$(printf '%s' "$d/containerd.sock/${ns##*/}/${b##*/}" | sha256sum)
  s=@SOCK@/${h%% *}
  [ -S "$s" ] && rm -f -- "$s" && echo "SOCKET $s"
done
if awk -v d="$d/" 'index($5, d) == 1 {f=1} END {exit !f}' /proc/self/mountinfo; then
  echo "MOUNTED $d"; exit 0
fi
rm -rf -- "$d"
exit 0
""".replace("@NAME@", FOLDER_NAME).replace("@SOCK@", SHIM_SOCKETS)
)


def stop_leftover(
    host: Host, folder: str, pids: Sequence[int], starts: Mapping[str, str] | None = None
) -> tuple[bool, list[str]]:
    """Stop and remove what a killed run's private containerd left in ``folder``.

    Acts only on what `_LEFTOVER` proves the run started: the daemon, its shims and ``ctr``
    readers (command lines naming the folder; a recorded pid also by its start time), the
    containers' inits runc's state there names, mounts under the folder, the shims' sockets
    named after the folder's tasks. Returns whether the folder qualified (and is gone), and
    one note per thing left alone.
    """
    starts = starts or {}
    base = folder.rstrip("/").rpartition("/")[2]
    if not folder.startswith("/") or not re.fullmatch(rf"{FOLDER_NAME}\.[A-Za-z0-9]{{8}}", base):
        return False, ["its name is not one the project makes"]
    given = [f"{p}:{starts[str(p)]}" for p in pids if str(p) in starts]
    out = host.sh(_LEFTOVER, folder.rstrip("/"), *given, check=False, timeout=60)
    notes: list[str] = []
    for line in out.stdout.splitlines():
        if line.startswith("NOT_OURS "):
            return False, [line.removeprefix("NOT_OURS ")]
        if line.startswith("LEFT "):
            pid, _, why = line.removeprefix("LEFT ").partition(" ")
            notes.append(f"pid {pid} {why}")
        if line.startswith("MOUNTED "):
            return False, [*notes, "something is still mounted under it"]
    return True, notes

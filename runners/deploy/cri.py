"""containerd's CRI path without a kubelet: a pod and its container made over the CRI API.

The kubelet's path for a container's stdout: nginx ``write()`` -> a pipe ->
``containerd-shim-runc-v2`` (copies it) -> a FIFO -> the containerd daemon's CRI logger, which
reads it line by line and writes each line with a timestamp and the stream's name to the
container's log file (``/var/log/pods/...`` under a kubelet; here the deployment's prefix).
`CriDeployment` makes that path as a kubelet would, with the CRI calls a kubelet makes
(RunPodSandbox with the node's network, CreateContainer with a log path, StartContainer),
sent over containerd's socket with ``grpcio``; the few messages are encoded here by hand
(protobuf field numbers of ``k8s.io/cri-api`` ``runtime.v1``), so no generated code is kept.

The pod's image is made here too, with no registry: one layer holding the host's ``sleep``
and the libraries it loads (the pod's sandbox process), imported with ``ctr images import``;
nginx runs from the host's ``/usr`` and ``/etc``, mounted read-only.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import platform
import subprocess
import tarfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from runners.deploy.container import (
    STDOUT_FILE,
    Containerd,
    ContainerDeployment,
    Flood,
    FloodSettings,
    read_flood,
)
from runners.deploy.nginx import NginxHost, NginxInstance, NginxProcess, Recorder
from runners.errors import RunnerError
from runners.hosts import Host
from runners.scenario import Scenario
from trialtable.jsonvalue import JsonObject, JsonValue

#: The pod image's name in containerd's ``k8s.io`` namespace (the CRI plugin's own).
IMAGE = "docker.io/library/nginx-sizing-pod:1"
#: The CRI service and the namespace modes (``runtime.v1.NamespaceMode``).
SERVICE = "/runtime.v1.RuntimeService/"
NODE, CONTAINER = 2, 1
#: The pod's sandbox process: the host's ``sleep`` (with the libraries ``ldd`` names).
POD_PROGRAM = "/usr/bin/sleep"
#: OCI architecture names of the machine names `platform.machine` gives.
OCI_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}

Message = Sequence[tuple[int, Any]]


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def encode(fields: Message) -> bytes:
    """A protobuf message from (field number, value) pairs, in order.

    A value is text or bytes (length-delimited), an int or bool (varint), or a sequence of
    pairs (a nested message); a field repeats by appearing again.
    """
    out = bytearray()
    for num, value in fields:
        if isinstance(value, bool | int):
            out += _varint(num << 3) + _varint(int(value))
            continue
        data = value.encode() if isinstance(value, str) else value
        if not isinstance(data, bytes):
            data = encode(data)
        out += _varint(num << 3 | 2) + _varint(len(data)) + data
    return bytes(out)


def delimited(data: bytes, field: int) -> list[bytes]:
    """Every length-delimited ``field`` of a protobuf message, in order."""
    out, i = [], 0
    while i < len(data):
        key, i = _read_varint(data, i)
        num, kind = key >> 3, key & 7
        if kind == 0:
            _, i = _read_varint(data, i)
        elif kind == 2:
            size, i = _read_varint(data, i)
            if num == field:
                out.append(data[i : i + size])
            i += size
        else:
            raise RunnerError(f"unexpected protobuf wire type {kind} in a CRI answer")
    return out


def first_text(data: bytes, field: int) -> str:
    """The first length-delimited ``field`` of a protobuf message, as text ("" if absent)."""
    got = delimited(data, field)
    return got[0].decode() if got else ""


def _read_varint(data: bytes, i: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        b = data[i]
        n |= (b & 0x7F) << shift
        i += 1
        if not b & 0x80:
            return n, i
        shift += 7


class Cri:
    """The CRI runtime service on containerd's socket; each call one unary gRPC."""

    def __init__(self, socket: str) -> None:
        try:
            import grpc
        except ImportError:
            raise RunnerError("the CRI path needs grpcio (pip install grpcio)") from None
        self._grpc = grpc
        self._channel = grpc.insecure_channel(f"unix://{socket}")

    def call(self, method: str, message: Message) -> bytes:
        """Call ``method`` with ``message``; the answer's bytes; `RunnerError` on failure."""
        stub = self._channel.unary_unary(SERVICE + method)
        try:
            answer: bytes = stub(encode(message), timeout=120)
        except self._grpc.RpcError as exc:
            raise RunnerError(f"CRI {method} failed: {exc.details()}") from None
        return answer

    def close(self) -> None:
        """Close the channel."""
        self._channel.close()


def pod_files(program: str = POD_PROGRAM) -> list[str]:
    """``program`` and the shared libraries ``ldd`` says it loads (absolute paths)."""
    out = subprocess.run(["ldd", program], capture_output=True, text=True, check=False).stdout
    libs = [w for line in out.splitlines() for w in line.split() if w.startswith("/")]
    return [program, *dict.fromkeys(libs)]


def pod_image(path: Path) -> None:
    """Write an OCI image archive at ``path``: one layer with `pod_files`, run as ``sleep``."""
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as tar:
        for name in ("usr", "etc", "tmp", "proc", "dev", "sys", "run", "var"):
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for link in ("bin", "lib", "lib64", "sbin"):
            info = tarfile.TarInfo(link)
            info.type, info.linkname = tarfile.SYMTYPE, f"usr/{link}"
            tar.addfile(info)
        for f in pod_files():
            tar.add(os.path.realpath(f), arcname="usr/" + f.removeprefix("/usr/").lstrip("/"))
    blobs: dict[str, bytes] = {}

    def blob(data: bytes) -> dict[str, str | int]:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return {"digest": digest, "size": len(data)}

    lay = blob(layer.getvalue())
    arch = OCI_ARCH.get(platform.machine(), platform.machine())
    config: JsonObject = {
        "architecture": arch,
        "os": "linux",
        "config": {"Entrypoint": ["/usr/bin/sleep", "infinity"]},
        "rootfs": {"type": "layers", "diff_ids": [lay["digest"]]},
    }
    manifest: JsonObject = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **blob(_json(config))},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", **lay}],
    }
    index: JsonObject = {
        "schemaVersion": 2,
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                **blob(_json(manifest)),
                "annotations": {"io.containerd.image.name": IMAGE},
                "platform": {"architecture": arch, "os": "linux"},
            }
        ],
    }
    files = {"oci-layout": _json({"imageLayoutVersion": "1.0.0"}), "index.json": _json(index)}
    files.update({f"blobs/sha256/{d.split(':')[1]}": data for d, data in blobs.items()})
    with tarfile.open(path, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))


def _json(obj: JsonValue) -> bytes:
    return json.dumps(obj, sort_keys=True).encode()


class CriContainerd(Containerd):
    """A private containerd with its CRI plugin on, and the pod image imported."""

    def __init__(self, host: Host, record: Recorder | None = None) -> None:
        super().__init__(host, sandbox_image=IMAGE, record=record)
        self.cri: Cri | None = None

    def start(self) -> None:
        """Start the daemon, import the pod image, open the CRI channel."""
        super().start()
        archive = Path(self.folder) / "pod-image.tar"
        pod_image(archive)
        sock = f"{self.folder}/containerd.sock"
        self.host.run(
            ["ctr", "-a", sock, "-n", "k8s.io", "images", "import", str(archive)],
            what="importing the pod image",
            timeout=120,
        )
        self.cri = Cri(sock)

    def stop(self) -> None:
        """Close the CRI channel, then stop as `Containerd.stop` does."""
        if self.cri is not None:
            self.cri.close()
            self.cri = None
        super().stop()

    def pod(self, name: str, log_dir: str, command: Sequence[str], mounts: Sequence[str]) -> Pod:
        """Run ``command`` in a new pod on the node's network, stdout to ``log_dir``."""
        assert self.cri is not None
        return Pod.run(self.cri, name, log_dir, command, mounts)

    def flood(self, flood: FloodSettings, cpu: int, clk_tck: int) -> Flood:
        """As `Containerd.flood`, through the CRI logger (the reader is the daemon)."""
        self._floods += 1
        work = f"{self.folder}/flood"
        self.host.sh('rm -rf -- "$1" && mkdir -p "$1"', work, what="the flood's folder")
        ts = self.host.sh("command -v taskset", check=False).stdout.strip() or "taskset"
        line = "x" * (flood.line_bytes - 1)
        writer = (
            'while [ ! -e "$1/go" ]; do sleep 0.01; done\n'
            'yes "$2" | dd bs=$(($3 * $5)) iflag=fullblock count=$(($4 / $5)) status=none\n'
            "exec sleep 100000"
        )
        argv = [ts, "-c", str(cpu), "/bin/sh", "-c", writer, "sh", work, line]
        argv += [str(flood.line_bytes), str(flood.lines), str(flood.per_write)]
        pod = self.pod(f"flood-{self._floods}", work, argv, ["/usr", "/etc", work])
        try:
            out = self.host.sh(
                _CRI_FLOOD,
                work,
                str(pod.pid()),
                str(self.pid),
                str(flood.lines),
                str(flood.line_bytes),
                check=False,
                timeout=180,
                what="the log-path flood",
            )
        finally:
            pod.remove()
        return read_flood(out.stdout, flood, clk_tck)


# The flood through the CRI logger: the shim's, the daemon's CPU (twice, as the reader and
# as the daemon: one process), go, wait until the log file holds $n lines, again.
_CRI_FLOOD = r"""
w=$1 m=$2 daemon=$3 n=$4 len=$5
shim=$(sed 's/.*) . \([0-9]*\).*/\1/' "/proc/$m/stat")
stats() { for p in "$shim" "$daemon" "$daemon"; do echo "STAT $(cat "/proc/$p/stat")"; done; }
f=$w/@OUT@
stats; echo "T0 $(date +%s%N)"
: > "$w/go"
i=0
# Each line gains at least 30 bytes (a timestamp, "stdout F "): count lines only from there.
least=$((n * (len + 30)))
while [ $i -lt 6000 ]; do
  [ "$(stat -c %s "$f" 2>/dev/null || echo 0)" -ge "$least" ] &&
    [ "$(wc -l < "$f")" -ge "$n" ] && break
  sleep 0.01; i=$((i+1))
done
echo "T1 $(date +%s%N)"; stats
echo "BYTES $(( $(wc -l < "$f") * len ))"
""".replace("@OUT@", STDOUT_FILE)


class Pod:
    """One pod sandbox and its one container, made and removed over the CRI API."""

    def __init__(self, cri: Cri, sandbox: str, container: str) -> None:
        self.cri, self.sandbox, self.container = cri, sandbox, container

    @classmethod
    def run(
        cls, cri: Cri, name: str, log_dir: str, command: Sequence[str], mounts: Sequence[str]
    ) -> Pod:
        """Create and start the pod: node network, its own PID namespace, stdout logged."""
        ns = [(1, NODE), (2, CONTAINER), (3, NODE)]
        meta = [(1, name), (2, f"{name}-{time.time_ns()}"), (3, "nginx-sizing")]
        sandbox_config = [(1, meta), (3, log_dir), (8, [(2, [(1, ns)])])]
        sandbox = first_text(cri.call("RunPodSandbox", [(1, sandbox_config)]), 1)
        pod = cls(cri, sandbox, "")
        try:
            binds = [(7, [(1, m), (2, m), (3, m in ("/usr", "/etc"))]) for m in mounts]
            config = [
                (1, [(1, name)]),
                (2, [(1, IMAGE)]),
                *((3, a) for a in command[:1]),
                *((4, a) for a in command[1:]),
                *binds,
                (11, STDOUT_FILE),
                (15, [(2, [(3, ns)])]),
            ]
            answer = cri.call("CreateContainer", [(1, sandbox), (2, config), (3, sandbox_config)])
            pod.container = first_text(answer, 1)
            cri.call("StartContainer", [(1, pod.container)])
        except RunnerError:
            pod.remove()
            raise
        return pod

    def pid(self) -> int:
        """The container's init process on the host (ContainerStatus, verbose)."""
        answer = self.cri.call("ContainerStatus", [(1, self.container), (2, True)])
        info = {first_text(e, 1): first_text(e, 2) for e in delimited(answer, 2)}
        try:
            return int(json.loads(info["info"])["pid"])
        except (KeyError, ValueError, TypeError):
            raise RunnerError("containerd did not say the container's pid") from None

    def remove(self) -> None:
        """Stop and remove the container and the pod (each call idempotent)."""
        if self.container:
            self.cri.call("StopContainer", [(1, self.container), (2, 2)])
            self.cri.call("RemoveContainer", [(1, self.container)])
        self.cri.call("StopPodSandbox", [(1, self.sandbox)])
        self.cri.call("RemovePodSandbox", [(1, self.sandbox)])


class CriDeployment(ContainerDeployment):
    """A `ContainerDeployment` made over the CRI API: stdout goes to containerd's CRI logger.

    The reader is the containerd daemon itself (its CRI logger), so `side_pids` names it
    twice (as ``reader`` and ``containerd``) and teardown leaves it running.
    """

    def __init__(
        self,
        server: NginxHost,
        scenario: Scenario,
        runtime: CriContainerd,
        record: Recorder | None = None,
    ) -> None:
        super().__init__(server, scenario, runtime, record)
        self.cri_runtime = runtime
        self.pod: Pod | None = None

    def _launch(
        self, inst: NginxInstance, prefix: str, conf: str, role: str, want: int
    ) -> NginxProcess | None:
        if role != "server":
            return super()._launch(inst, prefix, conf, role, want)
        host = inst.at.host
        conf_path = f"{prefix}/nginx.conf"
        host.write_text(conf_path, conf)
        test = host.run([inst.at.nginx, "-t", "-q", "-p", prefix, "-c", conf_path], check=False)
        if not test.ok:
            detail = " ".join((test.stderr or test.stdout).split())
            raise RunnerError(f"nginx -t rejected the server config on {host.name}: {detail}")
        self._remove_pod()
        argv = [inst.at.nginx, "-p", prefix, "-c", conf_path, "-e", f"{prefix}/error.log"]
        argv += ["-g", "daemon off;"]
        self.pod = self.cri_runtime.pod("nginx", prefix, argv, ["/usr", "/etc", prefix])
        master = str(self.pod.pid())
        out = host.sh(_CRI_STARTED, master, str(want), prefix, check=False, timeout=60)
        return self._started(inst, prefix, conf_path, out.stdout)

    def _started(
        self, inst: NginxInstance, prefix: str, conf_path: str, stdout: str
    ) -> NginxProcess | None:
        proc = super()._started(inst, prefix, conf_path, stdout)
        self.reader = self.runtime.pid
        return proc

    def _remove_pod(self) -> None:
        if self.pod is not None:
            pod, self.pod = self.pod, None
            pod.remove()

    def teardown(self) -> None:
        """Remove the pod (nginx with it), then the prefix as `Deployment.teardown` does."""
        try:
            self._remove_pod()
        finally:
            self.reader = 0
            super().teardown()


# The pod's nginx: its master (the container's init), its workers, the shim.
_CRI_STARTED = r"""
m=$1 want=$2 p=$3
i=0
while :; do
  w=$(cat "/proc/$m/task/$m/children" 2>/dev/null)
  set -- $w
  if [ $# -ge "$want" ] || [ $i -ge 1500 ] || ! kill -0 "$m" 2>/dev/null; then break; fi
  sleep 0.02; i=$((i+1))
done
[ $# -ge "$want" ] || { echo NOT_STARTED; tail -n 3 "$p/error.log" 2>/dev/null; exit 0; }
echo "SHIM $(sed 's/.*) . \([0-9]*\).*/\1/' "/proc/$m/stat")"
echo STARTED "$m" $w
"""

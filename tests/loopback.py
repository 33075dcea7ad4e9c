"""A private nginx on 127.0.0.1 for protocol tests: a config body in, its ports out.

It stops its own master and workers (and only those) when the block ends, and fails the test
if they do not stop.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from runners.tools import local_path

NGINX = local_path("nginx") or "nginx"
BODY = bytes(range(256)) * 4  # the 1,024-byte /body.bin


def h2load_logs(*workdirs: str | Path) -> set[Path]:
    """The h2load wrapper's per-request logs of these client work folders that exist now.

    The wrapper names a log after its work folder (``NAME-h2load.XXXXXXXX`` in /dev/shm, or
    beside the folder, or in $TMPDIR): only the logs of the caller's own work folders are
    looked for, so another run of h2load on this machine cannot fail the check.
    """
    names = {Path(w).name for w in workdirs}
    dirs = {Path("/dev/shm"), Path(os.environ.get("TMPDIR", "/tmp"))}
    dirs |= {Path(w).parent for w in workdirs}
    return {p for d in dirs for n in names for p in d.glob(f"{n}-h2load.*")}


def started_workdirs(run_dir: Path) -> list[str]:
    """The client work folders a run recorded in its ``started.jsonl``."""
    import json

    out = []
    for path in Path(run_dir).rglob("started.jsonl"):
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            if entry.get("what") == "client-workdir":
                out.append(entry["path"])
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _children(pid: int) -> list[int]:
    with contextlib.suppress(OSError):
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    return []


def alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@contextlib.contextmanager
def private_nginx(
    tmp: Path,
    http_lines: Callable[[Path, list[int]], Sequence[str]],
    *,
    ports: int = 1,
    main_lines: Sequence[str] = (),
) -> Iterator[list[int]]:
    """Run nginx with ``http { http_lines(prefix, ports) }``; yield the ports.

    The prefix holds ``html/body.bin`` (1,024 bytes), ``cert.pem`` and ``key.pem`` (ECDSA
    P-256) and a ``tmp`` folder; the ``http`` block already sets the temp paths, turns access
    logs off and raises ``keepalive_requests``.
    """
    (tmp / "html").mkdir(exist_ok=True)
    (tmp / "html" / "body.bin").write_bytes(BODY)
    (tmp / "tmp").mkdir(exist_ok=True)
    key, cert = str(tmp / "key.pem"), str(tmp / "cert.pem")
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1")
    subprocess.run(
        ["openssl", "req", "-x509", "-nodes", "-keyout", key, "-out", cert, "-subj", "/CN=t", *ec],
        check=True,
        capture_output=True,
        timeout=60,
    )
    chosen = [free_port() for _ in range(ports)]
    conf = "\n".join(
        [
            *main_lines,
            "user root;" if os.geteuid() == 0 else "",
            "worker_processes 1;",
            f"pid {tmp}/nginx.pid;",
            f"error_log {tmp}/error.log warn;",
            "events { worker_connections 1024; }",
            "http {",
            "access_log off;",
            "keepalive_requests 1000000;",
            *(f"{k}_temp_path {tmp}/tmp;" for k in ("client_body", "proxy", "fastcgi", "uwsgi")),
            f"scgi_temp_path {tmp}/tmp;",
            *http_lines(tmp, chosen),
            "}",
            "",
        ]
    )
    (tmp / "nginx.conf").write_text(conf)
    base = [NGINX, "-p", str(tmp), "-c", str(tmp / "nginx.conf"), "-e", str(tmp / "error.log")]
    subprocess.run([*base, "-t", "-q"], check=True, capture_output=True, timeout=60)
    subprocess.run(base, check=True, capture_output=True, timeout=60)
    try:
        deadline = time.monotonic() + 60
        for port in chosen:
            while time.monotonic() < deadline:
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                    break
                time.sleep(0.05)
        yield chosen
    finally:
        master = int((tmp / "nginx.pid").read_text())
        ours = {master, *_children(master)}
        os.kill(master, signal.SIGTERM)
        deadline = time.monotonic() + 60
        while any(alive(p) for p in ours) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(alive(p) for p in ours), "the test's nginx did not stop"

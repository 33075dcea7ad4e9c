"""A throw-away sshd on 127.0.0.1 for the tests: its own host key, user key and port."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Sshd:
    """A running test sshd and the files a client needs to reach it."""

    port: int
    user: str
    user_key: Path
    host_pub: Path
    proc: subprocess.Popen

    @property
    def spec(self) -> str:
        return f"{self.user}@127.0.0.1:{self.port}"

    def client_config(
        self,
        directory: Path,
        *,
        known: bool = True,
        key: Path | None = None,
        host_line: str | None = None,
    ) -> Path:
        """An ssh config for this sshd with its own known_hosts in ``directory``.

        ``known`` records the real host key (or ``host_line`` instead); ``key`` replaces the
        authorised user key.
        """
        known_hosts = directory / "known_hosts"
        if known:
            kind, blob = self.host_pub.read_text().split()[:2]
            known_hosts.write_text(host_line or f"[127.0.0.1]:{self.port} {kind} {blob}\n")
        cfg = directory / "ssh_config"
        cfg.write_text(
            f"Host 127.0.0.1\n  IdentityFile {key or self.user_key}\n"
            f"  UserKnownHostsFile {known_hosts}\n"
        )
        return cfg

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)


def start_sshd(base: Path, extra: str = "") -> Sshd:
    """Start sshd on a free loopback port with keys made under ``base``.

    ``extra``: more sshd_config lines (e.g. ``SetEnv TMPDIR=...``).
    """
    base.mkdir(parents=True, exist_ok=True)
    host_key, user_key = base / "host_ed25519", base / "user_ed25519"
    keygen(host_key)
    keygen(user_key)
    auth = base / "authorized_keys"
    auth.write_text((base / "user_ed25519.pub").read_text())
    auth.chmod(0o600)
    port = free_port()
    config = base / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\n"
        f"AuthorizedKeysFile {auth}\nPidFile {base}/sshd.pid\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
        "StrictModes no\nPermitRootLogin prohibit-password\nMaxStartups 50\nMaxSessions 50\n"
        "Subsystem sftp internal-sftp\n" + extra
    )
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation folder
    proc = subprocess.Popen(
        [SSHD, "-D", "-e", "-f", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=open(base / "sshd.log", "w"),
    )
    deadline = time.monotonic() + 60  # a busy machine starts sshd slowly
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    "test sshd did not start: " + (base / "sshd.log").read_text()[-300:]
                ) from None
            time.sleep(0.05)
    user = (
        os.environ.get("USER")
        or subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
    )
    return Sshd(port, user, user_key, base / "host_ed25519.pub", proc)

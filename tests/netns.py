"""Network namespaces for tests and benchmarks: a server namespace with a bridge, N clients on it.

Names carry the caller's tag and the process id, so two runs side by side never meet; every
namespace made is deleted on leaving (its veth pairs go with it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass


class Unavailable(Exception):
    """This machine does not let the caller make namespaces (no iproute2, not root, ...)."""


@dataclass(frozen=True)
class Bridge:
    """The namespaces made: the server's (with the bridge) and the clients'."""

    server: str
    clients: tuple[str, ...]
    server_ip: str

    @property
    def client_hosts(self) -> tuple[str, ...]:
        """The clients as host specs (``netns:NAME``)."""
        return tuple(f"netns:{ns}" for ns in self.clients)


def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True)


@contextlib.contextmanager
def bridge(tag: str, clients: int, subnet: str = "10.231.9") -> Iterator[Bridge]:
    """A server namespace with a bridge at ``SUBNET.1`` and ``clients`` namespaces on it.

    Raises
    ------
    Unavailable
        When namespaces or veth pairs cannot be made here (the caller skips).
    """
    if shutil.which("ip") is None:
        raise Unavailable("no ip command (iproute2) on this machine")
    pid = os.getpid()
    made = Bridge(
        f"{tag}-srv-{pid}", tuple(f"{tag}-c{i}-{pid}" for i in range(clients)), f"{subnet}.1"
    )
    done: list[str] = []
    try:
        for ns in (made.server, *made.clients):
            r = _ip("netns", "add", ns)
            if r.returncode != 0:
                raise Unavailable(f"ip netns is not allowed here: {r.stderr.strip()}")
            done.append(ns)
        for step in _steps(made, subnet, f"{tag[:3]}{pid % 100000}"):
            r = _ip(*step)
            if r.returncode != 0:
                raise Unavailable(f"cannot build the bridge: ip {' '.join(step)}: {r.stderr}")
        yield made
    finally:
        for ns in done:
            _ip("netns", "del", ns)


def _steps(made: Bridge, subnet: str, tag: str) -> list[tuple[str, ...]]:
    srv = made.server
    steps: list[tuple[str, ...]] = [
        ("-n", srv, "link", "add", "br0", "type", "bridge"),
        ("-n", srv, "addr", "add", f"{made.server_ip}/24", "dev", "br0"),
        ("-n", srv, "link", "set", "br0", "up"),
        ("-n", srv, "link", "set", "lo", "up"),
    ]
    for i, ns in enumerate(made.clients):
        vs, vc = f"s{i}{tag}", f"c{i}{tag}"  # at most 15 characters
        steps += [
            ("link", "add", vs, "type", "veth", "peer", "name", vc),
            ("link", "set", vs, "netns", srv),
            ("link", "set", vc, "netns", ns),
            ("-n", srv, "link", "set", vs, "master", "br0"),
            ("-n", srv, "link", "set", vs, "up"),
            ("-n", ns, "addr", "add", f"{subnet}.{i + 2}/24", "dev", vc),
            ("-n", ns, "link", "set", vc, "up"),
            ("-n", ns, "link", "set", "lo", "up"),
        ]
    return steps

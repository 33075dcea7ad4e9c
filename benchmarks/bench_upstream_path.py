"""A proxy's upstream leg over loopback and over a veth: what a new connection per request costs.

The measured `proxy_new_connection` feature (``runners features``) runs its upstream on
loopback, where Linux's default ``net.ipv4.tcp_tw_reuse = 2`` lets a connection reuse a port
held in TIME_WAIT and the packets never reach a device driver. A proxy on a VM reaches its
upstream through a NIC. This bench asks whether that difference moves the cost: one nginx
proxy (one worker, access log off) in a network namespace, wrk beside it on loopback
(``-t1 -c32``, keep-alive to the proxy), and an upstream nginx answering a 24-byte body either
on ``127.0.0.2`` in the same namespace (``loop``) or in a second namespace across a bridge
and veth pair (``veth``, `tests.netns.bridge`). Two proxy settings, NGINX's default
``proxy_pass`` (HTTP/1.0, a new upstream connection per request) and an ``upstream`` block
with ``keepalive 64`` and ``proxy_http_version 1.1``. Each round runs the four cases in a
rotating order, one trial each; a trial reads the proxy worker's user and kernel CPU time
from ``/proc/PID/stat`` around a wrk run and divides by wrk's request count. It also counts
the proxy's own TCP sockets in TIME_WAIT to the upstream's port after the trial: the side
that closes first holds them, and a proxy that held them would exhaust its ephemeral ports
(28,232 at the default range) at about 470 new connections a second per upstream address.

    .venv/bin/python benchmarks/bench_upstream_path.py [--rounds 5] [--seconds 5]

Prints each case's median user and kernel microseconds per request over the rounds, the new
connection's extra over the kept-alive proxy on each path, and the TIME_WAIT counts. Needs
root (namespaces), nginx and wrk; every namespace and nginx it starts is removed on exit.

``--closes-first`` runs instead, in namespaces of its own, the case where the proxy holds the
TIME_WAIT: ``proxy_http_version 1.1`` with ``proxy_set_header Connection ""`` and no upstream
``keepalive`` pool, so the upstream keeps each connection open and the proxy closes it after
the response. ``--trials`` consecutive trials (no pause: the TIME_WAIT sockets of one are still
there in the next) print the requests per second, the CPU per request and the TIME_WAIT count,
after the same trials of the default ``proxy_pass`` (the upstream closes first) for comparison.
``--port-range LOW-HIGH`` narrows the proxy namespace's ``net.ipv4.ip_local_port_range``.

    .venv/bin/python benchmarks/bench_upstream_path.py --closes-first [--trials 4] [--seconds 5]
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchlib import machine  # noqa: E402

from tests import netns  # noqa: E402

PROXY_PORT = 8081
UPSTREAM_PORT = 8080
KEEPALIVE = (
    'proxy_pass http://up; proxy_http_version 1.1; proxy_set_header Connection "";',
    "upstream up {{ server {addr}:8080; keepalive 64; }}",
)
NEW_CONNECTION = ("proxy_pass http://{addr}:8080;", "")
#: The proxy asks for a kept-alive upstream connection and closes it itself (no pool).
CLOSES_FIRST = (
    'proxy_pass http://{addr}:8080; proxy_http_version 1.1; proxy_set_header Connection "";',
    "",
)
CASES = {
    ("loop", "keepalive"): KEEPALIVE,
    ("loop", "new connection"): NEW_CONNECTION,
    ("veth", "keepalive"): KEEPALIVE,
    ("veth", "new connection"): NEW_CONNECTION,
}


@dataclass
class Nginx:
    """One nginx started in a namespace from its own folder."""

    ns: str
    folder: Path

    def start(self, listen: str, location: str, http_extra: str = "") -> None:
        """Write the config and start nginx (one worker, daemon) in ``ns``."""
        self.folder.mkdir(parents=True, exist_ok=True)
        d = self.folder
        temps = " ".join(f"{k}_temp_path {d};" for k in ("client_body", "proxy", "fastcgi"))
        temps += f" uwsgi_temp_path {d}; scgi_temp_path {d};"
        (d / "nginx.conf").write_text(
            f"worker_processes 1; pid {d}/nginx.pid; error_log {d}/error.log warn;\n"
            "events { worker_connections 4096; }\n"
            f"http {{ access_log off; {temps} {http_extra}\n"
            f"  server {{ listen {listen}; location / {{ {location} }} }} }}\n"
        )
        netns_run(self.ns, "nginx", "-p", str(d), "-c", str(d / "nginx.conf"))

    def worker(self) -> int:
        """The pid of the one worker (waited for, 10 s at most)."""
        master = int((self.folder / "nginx.pid").read_text())
        for _ in range(100):
            kids = Path(f"/proc/{master}/task/{master}/children").read_text().split()
            if kids:
                return int(kids[0])
            time.sleep(0.1)
        raise RuntimeError(f"nginx {master} started no worker")

    def stop(self) -> None:
        """Stop it if it started (its pid file names it), waiting up to 5 s."""
        pidfile = self.folder / "nginx.pid"
        if not pidfile.exists():
            return
        master = int(pidfile.read_text())
        try:
            os.kill(master, signal.SIGQUIT)
        except ProcessLookupError:
            return
        for _ in range(50):
            if not Path(f"/proc/{master}").exists():
                return
            time.sleep(0.1)
        os.kill(master, signal.SIGKILL)


def netns_run(ns: str, *argv: str, timeout: float = 60) -> str:
    """``argv`` in namespace ``ns``; its stdout (raises on failure)."""
    r = subprocess.run(
        ["ip", "netns", "exec", ns, *argv], capture_output=True, text=True, timeout=timeout
    )
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} in {ns}: {r.stderr.strip()[-300:]}")
    return r.stdout


def cpu_ticks(pid: int) -> tuple[int, int]:
    """User and kernel clock ticks of ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])


def trial(ns: str, worker: int, seconds: int, errors_ok: bool = False) -> dict[str, float]:
    """One wrk run through the proxy: its CPU per request and the TIME_WAIT sockets after.

    Answers other than 2xx fail the trial unless ``errors_ok`` (then they are counted).
    """
    tick_us = 1e6 / os.sysconf("SC_CLK_TCK")
    u0, s0 = cpu_ticks(worker)
    out = netns_run(
        ns,
        "wrk",
        "-t1",
        "-c32",
        f"-d{seconds}s",
        f"http://127.0.0.1:{PROXY_PORT}/",
        timeout=seconds + 30,
    )
    u1, s1 = cpu_ticks(worker)
    m = re.search(r"(\d+) requests in", out)
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if not m or int(m.group(1)) == 0 or (bad and not errors_ok):
        raise RuntimeError(f"wrk through the proxy did not get clean answers: {out[-300:]}")
    n = int(m.group(1))
    # The proxy's own (peer port the upstream's); the near upstream's own are in the same namespace.
    tw = netns_run(ns, "ss", "-Htan", "state", "time-wait", f"dport = :{UPSTREAM_PORT}").count("\n")
    return {
        "user_us": (u1 - u0) * tick_us / n,
        "kernel_us": (s1 - s0) * tick_us / n,
        "rps": n / seconds,
        "time_wait": tw,
        "errors": int(bad.group(1)) if bad else 0,
    }


def run(rounds: int, seconds: int, work: Path) -> dict[tuple[str, str], list[dict[str, float]]]:
    """The rounds, each case once per round in a rotating order."""
    got: dict[tuple[str, str], list[dict[str, float]]] = {case: [] for case in CASES}
    with netns.bridge("bup", 1, subnet="10.231.17") as made:
        proxy_ns = made.clients[0]
        far = Nginx(made.server, work / "far")
        near = Nginx(proxy_ns, work / "near")
        started = [far, near]
        try:
            far.start(f"{made.server_ip}:{UPSTREAM_PORT}", 'return 200 "upstream answer here\\n";')
            near.start(f"127.0.0.2:{UPSTREAM_PORT}", 'return 200 "upstream answer here\\n";')
            order = list(CASES)
            for r in range(rounds):
                for case in order[r % 4 :] + order[: r % 4]:
                    got[case].append(one_case(case, proxy_ns, made.server_ip, work, seconds))
        finally:
            for ng in started:
                ng.stop()
    return got


def one_case(case: tuple[str, str], ns: str, far_ip: str, work: Path, seconds: int) -> dict:
    """Start the case's proxy, run one trial, stop it."""
    addr = "127.0.0.2" if case[0] == "loop" else far_ip
    location, extra = (s.format(addr=addr) for s in CASES[case])
    proxy = Nginx(ns, work / f"proxy-{case[0]}-{case[1].replace(' ', '-')}")
    try:
        proxy.start(f"127.0.0.1:{PROXY_PORT}", location, extra)
        return trial(ns, proxy.worker(), seconds)
    finally:
        proxy.stop()
        (proxy.folder / "nginx.pid").unlink(missing_ok=True)


def closes_first(trials: int, seconds: int, work: Path, port_range: str = "") -> None:
    """Consecutive trials of the default proxy, then of one that closes first, over a veth."""
    with netns.bridge("bcf", 1, subnet="10.231.18") as made:
        ns = made.clients[0]
        if port_range:
            low, _, high = port_range.partition("-")
            netns_run(ns, "sysctl", "-qw", f"net.ipv4.ip_local_port_range={low} {high}")
        ports = netns_run(ns, "sysctl", "-n", "net.ipv4.ip_local_port_range").split()
        print(f"proxy namespace: ephemeral ports {'-'.join(ports)}", flush=True)
        far = Nginx(made.server, work / "far")
        far.start(f"{made.server_ip}:{UPSTREAM_PORT}", 'return 200 "upstream answer here\\n";')
        try:
            for name, (location, extra) in (
                ("default proxy_pass", NEW_CONNECTION),
                ("proxy closes first", CLOSES_FIRST),
            ):
                proxy = Nginx(ns, work / name.replace(" ", "-"))
                proxy.start(f"127.0.0.1:{PROXY_PORT}", location.format(addr=made.server_ip), extra)
                try:
                    worker = proxy.worker()
                    for i in range(trials):
                        t = trial(ns, worker, seconds, errors_ok=True)
                        print(
                            f"{name:19} trial {i + 1}: {t['rps']:8.0f} req/s, user "
                            f"{t['user_us']:7.1f} us, kernel {t['kernel_us']:8.1f} us per request, "
                            f"{t['errors']:.0f} errors, TIME_WAIT {t['time_wait']:.0f}",
                            flush=True,
                        )
                finally:
                    proxy.stop()
        finally:
            far.stop()


def report(got: dict[tuple[str, str], list[dict[str, float]]]) -> None:
    """Each case's medians, then the new connection's extra on each path."""
    med = {c: {k: statistics.median(t[k] for t in v) for k in v[0]} for c, v in got.items()}
    head = ("path", "upstream", "user us", "kernel us", "req/s", "TIME_WAIT")
    print(f"{head[0]:5} {head[1]:15} {head[2]:>8} {head[3]:>10} {head[4]:>8} {head[5]:>10}")
    for (path, kind), m in med.items():
        print(
            f"{path:5} {kind:15} {m['user_us']:8.1f} {m['kernel_us']:10.1f} "
            f"{m['rps']:8.0f} {m['time_wait']:10.0f}"
        )
    for path in ("loop", "veth"):
        new, kept = med[(path, "new connection")], med[(path, "keepalive")]
        extra = [new[k] - kept[k] for k in ("user_us", "kernel_us")]
        print(
            f"{path}: a new upstream connection per request adds {extra[0]:+.1f} us user, "
            f"{extra[1]:+.1f} us kernel per request (medians of {len(got[(path, 'keepalive')])})"
        )


def main(argv: list[str] | None = None) -> int:
    """Run the rounds and print the comparison."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--closes-first", action="store_true", help="the TIME_WAIT case instead")
    ap.add_argument("--trials", type=int, default=4)
    ap.add_argument("--port-range", default="", metavar="LOW-HIGH")
    args = ap.parse_args(argv)
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.2f} at start", flush=True)
    with tempfile.TemporaryDirectory(prefix="upstream-path-") as tmp:
        try:
            if args.closes_first:
                closes_first(args.trials, args.seconds, Path(tmp), args.port_range)
            else:
                report(run(args.rounds, args.seconds, Path(tmp)))
        except (netns.Unavailable, RuntimeError, subprocess.TimeoutExpired) as exc:
            print(f"bench_upstream_path: {exc}", file=sys.stderr)
            return 2
    print(f"load average {os.getloadavg()[0]:.2f} at end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

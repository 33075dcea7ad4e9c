"""The cap a proxy's own TIME_WAIT sockets set on new upstream connections.

The side of a TCP connection that closes first holds it in TIME_WAIT for 60 s, and with it
the 4-tuple's local port. A proxy that opens a new upstream connection per request and closes
it itself (``proxy_http_version 1.1`` with ``Connection`` cleared but no ``keepalive`` pool:
the upstream keeps the connection open, so the proxy ends it after the response) holds one
port per request to each upstream address for a minute. Once about half the ephemeral range
is held, each ``connect()`` searches the range for a free port: measured here, the proxy then
served about 100 requests a second at 6.2-6.9 ms of kernel time each, against 2,703-4,098 at
132-221 us before (`benchmarks/bench_upstream_path.py --closes-first`). A proxy that sends
NGINX's default HTTP/1.0 request leaves the close to the upstream and is not capped here.
"""

from __future__ import annotations

import math

from sizing.workload.value import Workload

#: Seconds a closed connection holds its port (Linux's TCP_TIMEWAIT_LEN).
TIME_WAIT_S = 60.0
#: Ports a proxy can hold in TIME_WAIT to one upstream address before connect() slows down.
HELD_PORTS = (
    14_116,
    "measured: the collapse began with 14,268-14,317 sockets in TIME_WAIT to one upstream "
    "address (bench_upstream_path.py --closes-first, nginx 1.22.1, Linux 6.18, 2026-11-27), "
    "half of Linux's default ephemeral range 32768-60999 (28,232 ports; connect() searches "
    "one half of the range first since Linux 4.6); a host with net.ipv4.tcp_tw_reuse = 1 or "
    "a wider range is not held there",
)


def time_wait_cap(work: Workload) -> tuple[float, str]:
    """Requests a second one instance can proxy before its ports run short, and the line.

    ``inf`` and no line unless the workload's proxy closes its new upstream connections
    itself (``Workload.upstream_time_wait`` addresses, each with `HELD_PORTS` / 60 s).
    """
    per_request = work.feature("proxy_new_connection")
    if work.upstream_time_wait <= 0 or per_request <= 0:
        return math.inf, ""
    per_address = HELD_PORTS[0] / TIME_WAIT_S
    cap = work.upstream_time_wait * per_address / per_request
    return cap, (
        f"the proxy's ports cap it at {cap:,.0f} RPS: it closes its {per_request:g} new "
        f"upstream connection(s) per request itself and holds each port {TIME_WAIT_S:.0f} s "
        f"in TIME_WAIT, {per_address:,.0f} new connections a second to each of "
        f"{work.upstream_time_wait} upstream address(es) ({HELD_PORTS[1]}); an upstream "
        "keepalive pool lifts it"
    )

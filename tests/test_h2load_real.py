"""Real h2load through its wrapper against a private nginx on 127.0.0.1."""

from __future__ import annotations

import os
import secrets
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from runners import cputime, loadgen
from runners.hosts import LocalHost
from runners.loadgen import h2load, wrk
from tests.loopback import free_port, h2load_logs, private_nginx

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("h2load") is None, reason="h2load (nghttp2-client) missing"),
]


def _servers(prefix: Path, ports: list[int]) -> list[str]:
    tls, h2c, h1 = ports
    return [
        f"ssl_certificate {prefix}/cert.pem;",
        f"ssl_certificate_key {prefix}/key.pem;",
        "ssl_protocols TLSv1.2 TLSv1.3;",
        "server {",
        f"listen 127.0.0.1:{tls} ssl http2;",
        f"listen 127.0.0.1:{h2c} http2;",
        f"listen 127.0.0.1:{h1};",
        f"root {prefix}/html;",
        "}",
    ]


@pytest.fixture(scope="module")
def ports(tmp_path_factory):
    with private_nginx(tmp_path_factory.mktemp("nginx"), _servers, ports=3) as p:
        yield p


#: This module's client work folder, named for this process alone: the wrapper names its
#: per-request log after it, so the check below sees this module's logs and no other's.
WORKDIR = f"{os.environ.get('TMPDIR', '/tmp')}/nginx-sizing-test-{secrets.token_hex(6)}"


def _run(argv: list[str], seconds: int) -> tuple[str, wrk.Measurement]:
    out = LocalHost().sh(h2load.WRAPPER, WORKDIR, *argv, timeout=seconds + 120, check=False)
    return out.stdout, h2load.parse(out.stdout)


def _load(url, **settings):
    """An h2load run's settings: one thread and HTTP/2 unless told."""
    return loadgen.Load(url, **{"threads": 1, "http_version": "2", **settings})


@pytest.fixture
def private_tmp():
    """Fail if a run through the wrapper leaves its per-request log behind."""
    yield
    assert h2load_logs(WORKDIR) == set(), "the per-request log was left behind"


def test_http2_over_tls_closed_loop(ports, private_tmp):
    argv = h2load.command(
        _load(f"https://127.0.0.1:{ports[0]}/body.bin", connections=4, streams=4, duration_s=1),
        warmup_s=1,
    )
    text, r = _run(argv, 2)
    assert "Application protocol: h2" in text
    assert r.requests > 0 and r.error_count == 0
    assert sum(r.histogram_us.values()) == r.requests
    assert 1024 + 9 <= r.bytes / r.requests <= 1024 + 2048
    assert 0 < r.latency_ms["p50"] <= r.latency_ms["p99"] <= r.latency_ms["max"]
    assert cputime.times_seconds(text) >= 0


def test_http1_and_h2c(ports, private_tmp):
    for url, version, proto in (
        (f"http://127.0.0.1:{ports[2]}/body.bin", "1.1", "http/1.1"),
        (f"http://127.0.0.1:{ports[1]}/body.bin", "2", "h2c"),
    ):
        argv = h2load.command(_load(url, connections=2, duration_s=1, http_version=version))
        text, r = _run(argv, 1)
        assert f"Application protocol: {proto}" in text
        assert r.requests == sum(r.histogram_us.values()) > 0 and r.error_count == 0


def test_open_loop_holds_a_low_rate(ports, private_tmp):
    """200 req/s over 2 connections for 2 s: h2load never sends more than the schedule."""
    argv = h2load.command(
        _load(f"https://127.0.0.1:{ports[0]}/body.bin", connections=2, duration_s=2, rate_rps=200)
    )
    assert "--rps=100" in argv
    _, r = _run(argv, 2)
    assert 0 < r.requests <= 200 * 2 + 2
    assert r.error_count == 0 and sum(r.histogram_us.values()) == r.requests
    # The rule a search applies: a rate far above what was asked is always flagged.
    assert h2load.rate_shortfall(r.rps, 100 * r.rps) is not None


def test_two_clients_side_by_side_merge_exactly(ports, private_tmp):
    argv = h2load.command(
        _load(f"http://127.0.0.1:{ports[1]}/body.bin", connections=2, streams=2, duration_s=1)
    )
    with ThreadPoolExecutor(2) as pool:
        (_, a), (_, b) = pool.map(lambda _: _run(argv, 1), range(2))
    merged = loadgen.merge([a, b])
    assert merged.requests == a.requests + b.requests
    for v in set(a.histogram_us) | set(b.histogram_us):
        assert merged.histogram_us[v] == a.histogram_us.get(v, 0) + b.histogram_us.get(v, 0)
    assert merged.latency_ms == loadgen.latency_summary(merged.histogram_us)
    assert merged.latency_ms["max"] == max(a.latency_ms["max"], b.latency_ms["max"])


def test_refused_connection_is_counted_not_crashed(private_tmp):
    argv = h2load.command(_load(f"http://127.0.0.1:{free_port()}/", connections=2, duration_s=1))
    _, r = _run(argv, 1)
    assert r.requests == 0 and r.errors["connect"] == 2

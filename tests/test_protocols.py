"""HTTP/2, TLS session resumption and the JWT check in the scenarios' nginx configs.

Config text is checked as text; then a real private nginx (a `Deployment`) on 127.0.0.1 shows
that HTTP/2 is negotiated, that TLS sessions resume only when allowed, and that the JWT
scenarios pass a valid token and refuse a missing or forged one with 401. A last test runs
wrk, the cps scenario's load generator, against nginx with the runner's resumption lines and
reads ``$ssl_session_reused`` from an access log: wrk does resume when nginx allows it.
"""

from __future__ import annotations

import http.client
import os
import shutil
import socket
import ssl
import subprocess
from pathlib import Path

import pytest

from runners import jwt
from runners.deploy.conf import SESSION_RESUMPTION, ConfTarget, render_conf
from runners.deploy.nginx import Deployment, NginxHost
from runners.errors import RunnerError
from runners.hosts import LocalHost
from runners.scenario import Scenario, make_scenario
from tests.loopback import private_nginx

ROOT = os.geteuid() == 0
NJS = Path(jwt.DEFAULT_MODULES_PATH) / jwt.MODULE_FILE
JWT_CONF = jwt.JwtConfig("/usr/lib/nginx/modules", "/p/jwt_verify.js", "QUJD")


def _conf(scenario: Scenario, **kw) -> str:
    upstream = ["127.0.0.1:1"] if scenario.proxied else []
    return render_conf(scenario, ConfTarget("/p", "127.0.0.1", [20000], [0], upstream), **kw)


def test_http2_listens_with_alpn_or_prior_knowledge():
    assert "listen 127.0.0.1:20000 ssl http2 backlog" in _conf(
        Scenario(protocol="https"), http2=True
    )
    assert "listen 127.0.0.1:20000 http2 backlog" in _conf(Scenario(), http2=True)
    # h2c with sendfile waits ~40 ms per response on a delayed ACK: off for h2c only.
    assert "        sendfile off;" in _conf(Scenario(), http2=True)
    assert "        sendfile off;" not in _conf(Scenario(protocol="https"), http2=True)
    assert "        sendfile off;" not in _conf(Scenario())
    assert "http2" not in _conf(Scenario(protocol="https"))
    # h2load must not be cut at nginx's default of 1,000 requests per connection.
    assert "keepalive_requests 1000000;" in _conf(Scenario(), http2=True)


def test_tls_resumption_on_and_off():
    on = _conf(Scenario(protocol="https", tls_resumption=True))
    off = _conf(Scenario(protocol="https"))
    assert all(line in on for line in SESSION_RESUMPTION)
    assert "ssl_session_tickets off;" in off and "ssl_session_cache off;" in off
    assert "ssl_session_tickets on;" not in off
    with pytest.raises(RunnerError, match="needs --protocol https"):
        Scenario(tls_resumption=True)
    cps = make_scenario("cps", protocol="https", tls_resumption=True)
    assert "ssl_session_tickets on;" in _conf(cps) and "keepalive_timeout 0;" in _conf(cps)


@pytest.mark.parametrize("name", ["reverse_proxy", "api_gateway"])
def test_jwt_lines(name):
    conf = _conf(make_scenario(name, jwt=True), jwt_config=JWT_CONF)
    assert conf.index("load_module /usr/lib/nginx/modules/ngx_http_js_module.so;") < conf.index(
        "events {"
    )
    assert "js_import jwt from /p/jwt_verify.js;" in conf
    assert "js_var $jwt_public_key QUJD;" in conf
    assert "js_content jwt.verify;" in conf and "location @jwt_backend {" in conf
    # Only the named location proxies: no request reaches the backend without the check.
    assert conf.count("proxy_pass http://backend;") == 1
    assert "js_" not in _conf(make_scenario(name))
    with pytest.raises(RunnerError, match="module folder"):
        _conf(make_scenario(name, jwt=True))


def test_jwt_only_for_proxies():
    with pytest.raises(RunnerError, match="reverse_proxy and api_gateway"):
        Scenario("static", jwt=True)
    assert Scenario.from_dict({"name": "static"}) == Scenario()


def _tls_client(alpn: list[str] | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if alpn:
        ctx.set_alpn_protocols(alpn)
    return ctx


def _tls_get(port: int, ctx: ssl.SSLContext, session: ssl.SSLSession | None = None):
    """A new TLS connection, one HTTP/1.1 request unless h2 was chosen; (session, reused, alpn)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost", session=session) as tls:
            if tls.selected_alpn_protocol() == "h2":
                return tls.session, tls.session_reused, "h2"
            tls.sendall(b"GET /body.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            while chunk := tls.recv(65536):
                data += chunk
            assert data.startswith(b"HTTP/1.1 200")
            return tls.session, tls.session_reused, tls.selected_alpn_protocol()


@pytest.mark.slow
@pytest.mark.parametrize("resume", [True, False], ids=["resumption-on", "resumption-off"])
def test_sessions_resume_only_when_allowed(resume, leaves_no_nginx):
    scenario = Scenario(protocol="https", tls_resumption=resume)
    with Deployment(NginxHost(LocalHost(), as_root=ROOT), scenario) as dep:
        dep.start([0])
        assert dep.port
        for tls_max in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
            ctx = _tls_client()
            ctx.maximum_version = tls_max
            session, reused, _ = _tls_get(dep.port, ctx)
            assert not reused
            _, reused, _ = _tls_get(dep.port, ctx, session)
            assert reused is resume, tls_max


@pytest.mark.slow
def test_http2_is_negotiated_and_http1_still_works_over_tls(leaves_no_nginx):
    with Deployment(
        NginxHost(LocalHost(), as_root=ROOT), Scenario(protocol="https"), http2=True
    ) as dep:
        dep.start([0])
        assert dep.port
        assert _tls_get(dep.port, _tls_client(["h2", "http/1.1"]))[2] == "h2"
        # A client without ALPN (wrk) still gets HTTP/1.1 on the same port.
        assert _tls_get(dep.port, _tls_client())[2] is None


def _get(port: int, path: str, headers: dict[str, str]) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


@pytest.mark.slow
@pytest.mark.skipif(not NJS.exists(), reason="njs (libnginx-mod-http-js) is not installed")
@pytest.mark.parametrize("name", ["reverse_proxy", "api_gateway"])
def test_jwt_scenarios_pass_valid_tokens_and_refuse_others(name, leaves_no_nginx):
    keys = jwt.KeyPair.generate()
    scenario = make_scenario(name, jwt=True, upstreams=2)
    with Deployment(
        NginxHost(LocalHost(), as_root=ROOT), scenario, jwt_public_key=keys.public_der_b64
    ) as dep:
        conf = dep.start([0])
        assert dep.port and "js_content jwt.verify;" in conf
        status, body = _get(dep.port, scenario.path, {"Authorization": f"Bearer {keys.token()}"})
        assert status == 200 and len(body) == scenario.file_bytes
        forged = jwt.KeyPair.generate().token()
        for headers in (
            {},
            {"Authorization": f"Bearer {forged}"},
            {"Authorization": f"Bearer {keys.token(lifetime_s=-1)}"},
        ):
            assert _get(dep.port, scenario.path, headers)[0] == 401
        if name == "api_gateway":
            token = {"Authorization": f"Bearer {keys.token()}"}
            assert _get(dep.port, "/body.bin", token)[0] == 404


def test_jwt_scenario_needs_its_key():
    with pytest.raises(RunnerError, match="public key"):
        Deployment(NginxHost(LocalHost()), make_scenario("reverse_proxy", jwt=True))


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk missing")
@pytest.mark.parametrize("resume", [True, False], ids=["resumption-on", "resumption-off"])
def test_wrk_resumes_cps_connections_when_nginx_allows(tmp_path, resume):
    """The cps load generator resumes sessions: ``$ssl_session_reused`` in nginx's log."""

    def http(prefix: Path, ports: list[int]) -> list[str]:
        tls = list(SESSION_RESUMPTION) if resume else ["ssl_session_tickets off;"]
        return [
            f"ssl_certificate {prefix}/cert.pem;",
            f"ssl_certificate_key {prefix}/key.pem;",
            "ssl_protocols TLSv1.2 TLSv1.3;",
            *tls,
            "log_format reuse '$ssl_session_reused';",
            "keepalive_timeout 0;",
            "server {",
            f"listen 127.0.0.1:{ports[0]} ssl;",
            f"root {prefix}/html;",
            f"access_log {prefix}/reuse.log reuse;",
            "}",
        ]

    with private_nginx(tmp_path, http) as (port,):
        url = f"https://127.0.0.1:{port}/body.bin"
        out = subprocess.run(
            ["wrk", "-t1", "-c2", "-d1s", "-H", "Connection: close", url],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout
        assert "requests in" in out
    marks = (tmp_path / "reuse.log").read_text().split()
    assert len(marks) >= 3
    if resume:
        # Each of wrk's connections makes one full handshake, then resumes on reconnect.
        assert marks.count(".") <= 2 and marks.count("r") == len(marks) - marks.count(".")
    else:
        assert set(marks) == {"."}


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("h2load") is None, reason="h2load (nghttp2-client) missing")
@pytest.mark.parametrize("http2", [True, False], ids=["h2c", "http1.1"])
def test_one_connection_is_not_cut_at_1000_requests(http2, leaves_no_nginx):
    """nginx's default keepalive_requests (1,000) would stop h2load's connection for good."""
    with Deployment(NginxHost(LocalHost(), as_root=ROOT), Scenario(), http2=http2) as dep:
        dep.start([0])
        argv = ["h2load", "-c", "1", "-n", "2500", f"http://127.0.0.1:{dep.port}/body.bin"]
        if not http2:
            argv.insert(1, "--h1")
        out = subprocess.run(argv, capture_output=True, text=True, timeout=120).stdout
        assert "requests: 2500 total, 2500 started, 2500 done, 2500 succeeded" in out

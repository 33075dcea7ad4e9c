"""RS256 tokens and their check in a real nginx with njs on 127.0.0.1."""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding

from runners import jwt

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
NJS = Path(jwt.DEFAULT_MODULES_PATH) / jwt.MODULE_FILE


def _b64d(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def test_token_is_a_valid_rs256_jwt():
    keys = jwt.KeyPair.generate()
    token = jwt.KeyPair.token(keys, now=1_000_000, lifetime_s=60)
    header, payload, signature = token.split(".")
    assert json.loads(_b64d(header)) == {"alg": "RS256", "typ": "JWT"}
    assert json.loads(_b64d(payload)) == {"sub": "nginx-sizing", "iat": 1_000_000, "exp": 1_000_060}
    public = serialization.load_der_public_key(base64.b64decode(keys.public_der_b64))
    public.verify(  # type: ignore[call-arg]
        _b64d(signature), f"{header}.{payload}".encode(), padding.PKCS1v15(), hashes.SHA256()
    )


def test_config_lines():
    assert jwt.modules_path("configure arguments: --prefix=/x --modules-path=/opt/m") == "/opt/m"
    assert jwt.modules_path("nginx version: nginx/1.22.1") == jwt.DEFAULT_MODULES_PATH
    assert jwt.main_lines("/opt/m/") == ["load_module /opt/m/ngx_http_js_module.so;"]
    assert jwt.http_lines("/p/jwt_verify.js", "QUJD+/==")[1] == "js_var $jwt_public_key QUJD+/==;"
    with pytest.raises(Exception, match="base64"):
        jwt.http_lines("/p/x.js", "abc; evil")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _nginx(tmp: Path, public_b64: str) -> Iterator[int]:
    """A private nginx: a JWT-checking proxy on one port, its file server on another."""
    (tmp / "html").mkdir()
    (tmp / "html" / "body.bin").write_bytes(b"x" * 1024)
    (tmp / "tmp").mkdir()
    shutil.copy(jwt.VERIFY_SCRIPT, tmp / "jwt_verify.js")
    port, up = _free_port(), _free_port()
    proxy = [f"proxy_pass http://127.0.0.1:{up};", "proxy_http_version 1.1;"]
    conf = "\n".join(
        [
            *jwt.main_lines(jwt.DEFAULT_MODULES_PATH),
            "user root;" if os.geteuid() == 0 else "",
            "worker_processes 1;",
            f"pid {tmp}/nginx.pid;",
            f"error_log {tmp}/error.log warn;",
            "events { worker_connections 64; }",
            "http {",
            "access_log off;",
            *(f"{k}_temp_path {tmp}/tmp;" for k in ("client_body", "proxy", "fastcgi", "uwsgi")),
            f"scgi_temp_path {tmp}/tmp;",
            *jwt.http_lines(f"{tmp}/jwt_verify.js", public_b64),
            "server {",
            f"listen 127.0.0.1:{port};",
            "location / {",
            *jwt.location_lines(),
            "}",
            *jwt.backend_location(proxy),
            "}",
            f"server {{ listen 127.0.0.1:{up}; root {tmp}/html; }}",
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
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            time.sleep(0.05)
        yield port
    finally:
        master = int((tmp / "nginx.pid").read_text())
        ours = {master, *_children(master)}
        os.kill(master, signal.SIGTERM)
        deadline = time.monotonic() + 60
        while any(_alive(p) for p in ours) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(p) for p in ours), "the test's nginx did not stop"


def _children(pid: int) -> list[int]:
    with contextlib.suppress(OSError):
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    return []


def _alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _status(port: int, headers: dict[str, str]) -> tuple[int, bytes, str | None]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", "/body.bin", headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read(), resp.getheader("WWW-Authenticate")
    finally:
        conn.close()


@pytest.mark.slow
@pytest.mark.skipif(not NJS.exists(), reason="njs (libnginx-mod-http-js) is not installed")
def test_nginx_accepts_valid_tokens_and_refuses_others(tmp_path):
    keys, other = jwt.KeyPair.generate(), jwt.KeyPair.generate()
    good = keys.token()
    h, p, s = good.split(".")
    forged_claims = jwt.b64url(json.dumps({"sub": "x", "exp": 2**40}).encode())
    alg_none = jwt.b64url(json.dumps({"alg": "none"}).encode())
    bad = {
        "missing": {},
        "not bearer": {"Authorization": f"Basic {good}"},
        "other key": {"Authorization": f"Bearer {other.token()}"},
        "expired": {"Authorization": f"Bearer {keys.token(lifetime_s=-10)}"},
        "not yet valid": {
            "Authorization": f"Bearer {keys.token(extra_claims={'nbf': time.time() + 3600})}"
        },
        "claims changed": {"Authorization": f"Bearer {h}.{forged_claims}.{s}"},
        "alg none": {"Authorization": f"Bearer {alg_none}.{p}."},
        "signature cut": {"Authorization": f"Bearer {h}.{p}.{s[:-4]}"},
        "garbage": {"Authorization": "Bearer a.b.c"},
    }
    with _nginx(tmp_path, keys.public_der_b64) as port:
        status, body, _ = _status(port, {"Authorization": f"Bearer {good}"})
        assert status == 200 and body == b"x" * 1024
        for name, headers in bad.items():
            status, _, challenge = _status(port, headers)
            assert status == 401, name
            assert challenge == 'Bearer realm="nginx-sizing"', name
        # The same valid token keeps passing (nothing is cached between requests).
        assert _status(port, {"Authorization": f"Bearer {good}"})[0] == 200

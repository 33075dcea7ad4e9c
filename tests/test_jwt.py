"""RS256 tokens and their check in a real nginx with njs on 127.0.0.1."""

from __future__ import annotations

import base64
import http.client
import json
import shutil
import time
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding

from runners import jwt
from runners.tools import local_path
from tests.loopback import BODY, private_nginx

NGINX = local_path("nginx") or "nginx"
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


def _jwt_proxy(tmp: Path, public_b64: str):
    """A JWT-checking proxy on the first port, its file server on the second."""
    shutil.copy(jwt.VERIFY_SCRIPT, tmp / "jwt_verify.js")

    def http(prefix: Path, ports: list[int]) -> list[str]:
        proxy = [f"proxy_pass http://127.0.0.1:{ports[1]};", "proxy_http_version 1.1;"]
        return [
            *jwt.http_lines(f"{prefix}/jwt_verify.js", public_b64),
            "server {",
            f"listen 127.0.0.1:{ports[0]};",
            "location / {",
            *jwt.location_lines(),
            "}",
            *jwt.backend_location(proxy),
            "}",
            f"server {{ listen 127.0.0.1:{ports[1]}; root {prefix}/html; }}",
        ]

    return private_nginx(tmp, http, ports=2, main_lines=jwt.main_lines(jwt.DEFAULT_MODULES_PATH))


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
    with _jwt_proxy(tmp_path, keys.public_der_b64) as (port, _):
        status, body, _ = _status(port, {"Authorization": f"Bearer {good}"})
        assert status == 200 and body == BODY
        for name, headers in bad.items():
            status, _, challenge = _status(port, headers)
            assert status == 401, name
            assert challenge == 'Bearer realm="nginx-sizing"', name
        # The same valid token keeps passing (nothing is cached between requests).
        assert _status(port, {"Authorization": f"Bearer {good}"})[0] == 200

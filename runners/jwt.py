"""RS256 JSON Web Tokens: a key pair, tokens, and the nginx lines that verify them with njs.

Seed 002 measured NGINX Plus ``auth_jwt`` with RS256 tokens on every request. Open-source
nginx does the same with the njs module (Debian: ``libnginx-mod-http-js``) and WebCrypto:
`VERIFY_SCRIPT` checks the token (alg RS256, ``exp`` in the future, ``nbf`` if present, the
RSASSA-PKCS1-v1_5 SHA-256 signature) in a ``js_content`` handler and hands a request that
passes to a named location that proxies; any other request gets 401. Only the public key goes
to the server host (in the config); the private key stays in the runner, which signs tokens.
"""

from __future__ import annotations

import base64
import json
import time
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from runners.errors import RunnerError

VERIFY_SCRIPT = Path(__file__).with_name("jwt_verify.js")
MODULE_FILE = "ngx_http_js_module.so"
DEFAULT_MODULES_PATH = "/usr/lib/nginx/modules"
BACKEND_LOCATION = "@jwt_backend"
# Tokens outlive any run: a trial must not start failing half-way because a token expired.
DEFAULT_LIFETIME_S = 7 * 24 * 3600


def b64url(data: bytes) -> str:
    """Base64url without padding, as JWTs encode their parts."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


@dataclass(frozen=True)
class KeyPair:
    """An RSA key pair for RS256: the private key (PEM) and the public key (DER, base64).

    Attributes
    ----------
    private_pem : bytes
        PKCS#8 PEM private key (kept by the runner; never sent to a host).
    public_der_b64 : str
        Base64 of the DER SubjectPublicKeyInfo, as the nginx config carries it.
    """

    private_pem: bytes
    public_der_b64: str

    @classmethod
    def generate(cls, bits: int = 2048) -> KeyPair:
        """A new RSA key pair (2048 bits by default, as RS256 tokens commonly use)."""
        key = rsa.generate_private_key(public_exponent=65537, key_size=bits)
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        der = key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return cls(pem, base64.b64encode(der).decode("ascii"))

    def token(
        self,
        *,
        subject: str = "nginx-sizing",
        lifetime_s: float = DEFAULT_LIFETIME_S,
        now: float | None = None,
        extra_claims: dict[str, object] | None = None,
    ) -> str:
        """A signed RS256 token with ``sub``, ``iat`` and ``exp = iat + lifetime_s`` [s].

        A negative ``lifetime_s`` makes a token that has already expired.
        """
        key = serialization.load_pem_private_key(self.private_pem, password=None)
        if not isinstance(key, rsa.RSAPrivateKey):
            raise RunnerError("the JWT key is not an RSA key")
        iat = int(time.time() if now is None else now)
        claims: dict[str, object] = {"sub": subject, "iat": iat, "exp": iat + int(lifetime_s)}
        claims.update(extra_claims or {})
        header = b64url(json.dumps({"alg": "RS256", "typ": "JWT"}, separators=(",", ":")).encode())
        payload = b64url(json.dumps(claims, separators=(",", ":")).encode())
        signing_input = f"{header}.{payload}".encode("ascii")
        signature = key.sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
        return f"{header}.{payload}.{b64url(signature)}"


def authorization_header(token: str) -> str:
    """The request header that carries a token."""
    return f"Authorization: Bearer {token}"


def modules_path(nginx_v: str) -> str:
    """The module folder of nginx, from ``nginx -V`` output (``--modules-path=``), else Debian's."""
    for word in nginx_v.split():
        if word.startswith("--modules-path="):
            return word.split("=", 1)[1]
    return DEFAULT_MODULES_PATH


def main_lines(modules_dir: str) -> list[str]:
    """Main-context lines: load the njs module (an absolute path: the prefix is private)."""
    return [f"load_module {modules_dir.rstrip('/')}/{MODULE_FILE};"]


def http_lines(script_path: str, public_der_b64: str) -> list[str]:
    """``http``-block lines: import the verifier and carry the public key."""
    if not public_der_b64.replace("+", "").replace("/", "").rstrip("=").isalnum():
        raise RunnerError("the JWT public key must be base64")
    return [
        f"js_import jwt from {script_path};",
        f"js_var $jwt_public_key {public_der_b64};",
    ]


def location_lines() -> list[str]:
    """Lines for the location that receives client requests: verify, then hand over."""
    return ["js_content jwt.verify;"]


def backend_location(proxy: list[str]) -> list[str]:
    """The named location a verified request is handed to, with the proxy's lines."""
    return [f"location {BACKEND_LOCATION} {{", *(f"    {p}" for p in proxy), "}"]


@dataclass(frozen=True)
class JwtConfig:
    """Where the server host keeps what the JWT check needs, for the nginx config.

    Attributes
    ----------
    modules_dir : str
        nginx's module folder on the host (holds ``ngx_http_js_module.so``).
    script_path : str
        `VERIFY_SCRIPT`'s copy in the deployment's prefix.
    public_der_b64 : str
        The public key (`KeyPair.public_der_b64`).
    """

    modules_dir: str
    script_path: str
    public_der_b64: str

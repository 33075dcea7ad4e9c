"""The key type of a user's TLS certificate, read from the certificate's public key alone.

A run of a user's nginx.conf (`runners.deploy.userconf`) replaces every certificate and key by
the run's own self-signed pair. A full handshake costs what the key's signature costs (RSA
3072 several times RSA 2048, ECDSA P-256 a fraction of either), so the run's key is made of
the same type and size as the user's: read from the public key of the certificate the loaded
server names (``ssl_certificate``), never from the private key. The certificate file is read
as data, line by line, up to the end of its first certificate: a private key stored after it
in the same file is never read, and a file that holds another PEM block (a key) before its
certificate is not read further. When the certificate cannot be read (a variable or
``data:`` path, missing, not permitted, not PEM, a key type the run cannot make), the run
keeps the default key and says so in one line.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from trialtable.tls import tls_key

#: The key types a run makes, by name: ``openssl req -newkey`` arguments.
CERT_KEYS: dict[str, tuple[str, ...]] = {
    "ecdsa-p256": tls_key("ecdsa-p256").newkey,
    "ecdsa-p384": ("ec", "-pkeyopt", "ec_paramgen_curve:secp384r1"),
    "ecdsa-p521": ("ec", "-pkeyopt", "ec_paramgen_curve:secp521r1"),
    "ed25519": ("ed25519",),
    "rsa2048": tls_key("rsa2048").newkey,
    "rsa3072": ("rsa:3072",),
    "rsa4096": ("rsa:4096",),
}
#: Elliptic curves by their name in `cryptography`.
CURVES = {"secp256r1": "ecdsa-p256", "secp384r1": "ecdsa-p384", "secp521r1": "ecdsa-p521"}
#: Most bytes read before a certificate ends [B].
MAX_BYTES = 1024 * 1024
BEGIN, END = b"-----BEGIN CERTIFICATE-----", b"-----END CERTIFICATE-----"


class CertUnreadable(ValueError):
    """A certificate whose key type is not known (the message says why, briefly)."""


@dataclass(frozen=True)
class CertKey:
    """The run's key for a user's configuration.

    Attributes
    ----------
    name : str
        A key of `CERT_KEYS`; empty: the run's default key (``--tls-key``).
    note : str
        One line saying where the type came from, or why the default is kept.
    """

    name: str = ""
    note: str = ""


def key_name(cert_pem: bytes) -> str:
    """The `CERT_KEYS` name of the public key of the PEM certificate ``cert_pem``.

    Raises
    ------
    CertUnreadable
        Not a certificate, or a key type or size the run does not make.
    """
    try:
        key = x509.load_pem_x509_certificate(cert_pem).public_key()
    except ValueError:
        raise CertUnreadable("not a PEM certificate") from None
    if isinstance(key, rsa.RSAPublicKey):
        name = f"rsa{key.key_size}"
    elif isinstance(key, ec.EllipticCurvePublicKey):
        name = CURVES.get(key.curve.name, f"ecdsa-{key.curve.name}")
    elif isinstance(key, ed25519.Ed25519PublicKey):
        name = "ed25519"
    else:
        name = type(key).__name__
    if name not in CERT_KEYS:
        raise CertUnreadable(f"a {name} key, which the run does not make")
    return name


def first_certificate(path: str) -> bytes:
    """The first PEM certificate block of the regular file ``path``, read only that far.

    Raises
    ------
    CertUnreadable
        Missing, not permitted, not a regular file, another PEM block first, or no
        certificate within `MAX_BYTES`.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise CertUnreadable(exc.strerror or type(exc).__name__) from None
    except ValueError:  # a NUL byte in the name the configuration gives
        raise CertUnreadable("a file name with a NUL byte") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise CertUnreadable("not a regular file")
        kept: list[bytes] = []
        for line in iter(lambda: f.readline(MAX_BYTES), b""):
            if f.tell() > MAX_BYTES:
                break
            text = line.strip()
            if not kept and text.startswith(b"-----BEGIN") and text != BEGIN:
                raise CertUnreadable("another PEM block (a key?) comes before the certificate")
            if kept or text == BEGIN:
                kept.append(text)
            if text == END and kept:
                return b"\n".join(kept) + b"\n"
    raise CertUnreadable("no PEM certificate in it")


def cert_key(certs: list[tuple[str, str]]) -> CertKey:
    """The run's key for the certificates ``(path, where)`` the loaded server names.

    With several (an RSA and an ECDSA certificate), the run makes the ECDSA key, then
    Ed25519, then RSA: the certificate clients that can take ECDSA get. With none read, the
    run keeps its ``--tls-key`` key (the note says why).
    """
    if not certs:
        return CertKey()
    found, problems = [], []
    for path, where in certs:
        try:
            if "$" in path or path.startswith("data:"):
                raise CertUnreadable("its path is a variable or inline data")
            found.append((key_name(first_certificate(path)), path, where))
        except CertUnreadable as exc:
            problems.append(f"{where}: certificate {path!r} not read ({exc})")
    if not found:
        return CertKey("", f"{problems[0]}: the run's key is the --tls-key one")
    name, path, where = min(found, key=lambda f: _rank(f[0]))
    return CertKey(
        name,
        f"{where}: the run's key is {name}, the type of the public key in {path!r}"
        + (f" (of {len(found)} certificates: ECDSA first, then Ed25519)" if len(found) > 1 else ""),
    )


def _rank(name: str) -> int:
    """ECDSA before Ed25519 before RSA: what clients that can take each negotiate."""
    return 0 if name.startswith("ecdsa") else 1 if name == "ed25519" else 2

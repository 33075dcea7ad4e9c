"""The TLS certificate keys, named once for both packages.

``runners`` makes a self-signed certificate with one of these keys and records the key's
short name in its scenario (``tls_key``); ``sizing`` prices a full handshake with it. Both
command lines take ``--tls-key`` as the long name (the short one is read too).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TlsKey:
    """One certificate key.

    Attributes
    ----------
    name : str
        Its name on both command lines and in the cost model (``ecdsa-p256``).
    short : str
        The name a run records in its scenario (``ecdsa``).
    coefficient : str
        The cost model's coefficient of a full handshake with it [us/handshake].
    newkey : tuple of str
        ``openssl req -newkey`` arguments that make it.
    """

    name: str
    short: str
    coefficient: str
    newkey: tuple[str, ...]


#: Every key, the default first.
KEYS: tuple[TlsKey, ...] = (
    TlsKey(
        "ecdsa-p256",
        "ecdsa",
        "handshake_full_ecdsa_p256_us",
        ("ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"),
    ),
    TlsKey("rsa2048", "rsa", "handshake_full_rsa2048_us", ("rsa:2048",)),
)
#: The long names, as both command lines offer them.
TLS_KEYS: tuple[str, ...] = tuple(k.name for k in KEYS)
#: The short names runs record.
SHORT_TLS_KEYS: tuple[str, ...] = tuple(k.short for k in KEYS)
DEFAULT_TLS_KEY = KEYS[0].name
#: The full-handshake coefficient of each key, by either of its names.
HANDSHAKE_FULL: dict[str, str] = {
    **{k.name: k.coefficient for k in KEYS},
    **{k.short: k.coefficient for k in KEYS},
}


def tls_key(text: str) -> TlsKey:
    """The key named ``text`` (long or short name, any case).

    Raises
    ------
    ValueError
        Naming the keys there are, when ``text`` names none.
    """
    want = text.strip().lower()
    for key in KEYS:
        if want in (key.name, key.short):
            return key
    raise ValueError(f"{text!r} is not a TLS key; expected {' or '.join(TLS_KEYS)}")

"""What the server under test serves: a `Scenario`, and whether a response fits it."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from runners.errors import BadInput
from trialtable.jsonvalue import JsonObject
from trialtable.profile import PROXIED
from trialtable.schema import PROTOCOLS, SCENARIOS
from trialtable.tls import KEYS, SHORT_TLS_KEYS

DEFAULT_FILE_BYTES = {
    "static": 1024,
    "cps": 0,
    "reverse_proxy": 1024,
    "api_gateway": 1024,
    "throughput": 1024 * 1024,
}
MAX_UPSTREAMS = 64
# A response carries the status line and headers besides the body: nginx sends 200-300 bytes.
HEADER_BYTES_RANGE = (64, 2048)


@dataclass(frozen=True)
class Scenario:
    """What the server does.

    Attributes
    ----------
    name : str
        ``static``, ``cps`` (one request per connection), ``reverse_proxy``, ``api_gateway``
        (regex match and URI rewrite, then proxy) or ``throughput`` (large files).
    protocol : str
        ``http`` or ``https``.
    file_bytes : int
        Response body size [B].
    gzip : bool
        Compress responses on the fly (clients send ``Accept-Encoding: gzip``).
    upstreams : int
        File servers behind the proxy (proxy scenarios only).
    tls_key : str
        The self-signed certificate's key, by its short name (`trialtable.tls`: ``ecdsa`` for
        P-256, the default, or ``rsa`` for 2048 bits).
    directives : tuple of str
        Extra directives for the ``http`` block, e.g. ``ssl_ciphers ...;``.
    tls_resumption : bool
        HTTPS: let clients resume TLS sessions (session tickets and a shared session cache);
        off, every new connection makes a full handshake.
    jwt : bool
        Proxy scenarios: every request must carry an RS256 JSON Web Token, which nginx checks
        (njs, WebCrypto) before proxying; others get 401 (`runners.jwt`).
    nginx_conf : str
        A user's own nginx.conf (absolute path) that nginx runs instead of the scenario's
        config, rewritten into the deployment (`runners.deploy.userconf`); the scenario then
        says what is requested (``path``) and what the stub upstream serves.
    """

    name: str = "static"
    protocol: str = "http"
    file_bytes: int = 1024
    gzip: bool = False
    upstreams: int = 1
    tls_key: str = KEYS[0].short
    directives: tuple[str, ...] = ()
    tls_resumption: bool = False
    jwt: bool = False
    nginx_conf: str = ""

    def __post_init__(self) -> None:
        if self.name not in SCENARIOS:
            raise BadInput(f"unknown scenario {self.name!r}; expected one of {SCENARIOS}")
        if self.protocol not in PROTOCOLS:
            raise BadInput(f"unknown protocol {self.protocol!r}; expected http or https")
        if self.tls_key not in SHORT_TLS_KEYS:
            raise BadInput(
                f"unknown TLS key {self.tls_key!r}; expected {' or '.join(SHORT_TLS_KEYS)}"
            )
        if self.file_bytes < 0:
            raise BadInput(f"file size {self.file_bytes} is negative")
        if self.name == "cps" and self.file_bytes != 0:
            raise BadInput("the cps scenario serves a 0-byte response; drop --file-size")
        if self.tls_resumption and self.protocol != "https":
            raise BadInput("TLS session resumption needs --protocol https")
        if self.jwt and not self.proxied:
            raise BadInput(
                "--jwt is for the reverse_proxy and api_gateway scenarios (nginx checks the "
                "token before proxying)"
            )
        if not 1 <= self.upstreams <= MAX_UPSTREAMS:
            raise BadInput(f"--upstreams must be from 1 to {MAX_UPSTREAMS} (got {self.upstreams})")

    @property
    def keepalive(self) -> bool:
        """Whether client connections are reused (all but ``cps``)."""
        return self.name != "cps"

    @property
    def proxied(self) -> bool:
        """Whether the server proxies to upstream file servers."""
        return self.name in PROXIED

    @property
    def body_name(self) -> str:
        """File name of the body under the content root."""
        return "body.html" if self.gzip else "body.bin"

    @property
    def path(self) -> str:
        """The request path clients ask for."""
        return "/api/v1/body" if self.name == "api_gateway" else f"/{self.body_name}"

    @property
    def headers(self) -> tuple[str, ...]:
        """Request headers clients send."""
        out = []
        if not self.keepalive:
            out.append("Connection: close")
        if self.gzip:
            out.append("Accept-Encoding: gzip")
        return tuple(out)

    def to_dict(self) -> JsonObject:
        """Plain data for ``run.json``."""
        d = asdict(self)
        d["directives"] = list(self.directives)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Scenario:
        """Inverse of `to_dict`."""
        return cls(**{**d, "directives": tuple(d.get("directives", ()))})


def make_scenario(name: str = "static", file_bytes: int | None = None, **kw: Any) -> Scenario:
    """A `Scenario` with the scenario's default file size when none is given."""
    if name not in DEFAULT_FILE_BYTES:
        raise BadInput(f"unknown scenario {name!r}; expected one of {SCENARIOS}")
    return Scenario(
        name, file_bytes=DEFAULT_FILE_BYTES[name] if file_bytes is None else file_bytes, **kw
    )


def response_size_problem(scenario: Scenario, bytes_per_response: float) -> str | None:
    """Why the bytes read per response do not fit what the scenario serves, or None."""
    lo, hi = HEADER_BYTES_RANGE
    body = scenario.file_bytes
    if scenario.gzip and body > 0:
        if not lo <= bytes_per_response <= body + hi:
            return f"response size {bytes_per_response:.0f} B does not fit a gzip of {body} B"
        if bytes_per_response >= body + lo:
            return f"response size {bytes_per_response:.0f} B: the body was not compressed"
        return None
    if not body + lo <= bytes_per_response <= body + hi:
        return (
            f"response size {bytes_per_response:.0f} B is not a {body} B body plus headers "
            f"({body + lo}-{body + hi} B)"
        )
    return None

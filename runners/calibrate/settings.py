"""What a calibration campaign runs: its settings and its options.

Each `Setting` isolates one or two terms of the cost model (`trialtable.profile`);
`fit_settings` lists the one-worker settings the coefficients are fitted to and
`scaling_settings` the multi-worker ones. `CalibrateOptions` holds what a campaign runs and
where (checked when built). The campaign itself is `runners.calibrate.campaign`, the fit
`runners.calibrate.fit`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from runners import loadgen
from runners.errors import BadInput
from runners.hosts import HostSpec
from runners.scenario import Scenario
from runners.tools import TOOLS
from trialtable.jsonvalue import JsonObject

KB = 1024
GZIP_BYTES = 16 * KB
#: The large body of the keep-alive settings [B] (with 0 B and 1 KB it separates request_us,
#: body_us and byte_ns).
LARGE = 100 * KB
# A worker that ran less than this share of the trial's wall time did not have its CPU alone
# (a competing process, steal) or was not loaded: flagged.
MIN_WORKER_SHARE = 0.75


@dataclass(frozen=True)
class Setting:
    """One measured configuration of the campaign.

    Attributes
    ----------
    name : str
        Stable name (also the key of the profile's ``configs``).
    scenario : Scenario
        What nginx serves.
    connections : int
        Connections per worker of the first round; later rounds halve them after a p99 over
        the SLA and double them when the worker was idle and p99 far under it.
    vcpus : int
        nginx workers (one pinned CPU each).
    """

    name: str
    scenario: Scenario
    connections: int
    vcpus: int = 1


def _static(name: str, protocol: str, size: int, conns: int, **kw: Any) -> Setting:
    return Setting(name, Scenario("static", protocol=protocol, file_bytes=size, **kw), conns)


def fit_settings() -> list[Setting]:
    """The settings that isolate the coefficients (one worker each).

    The starting connection counts are chosen so a closed loop stays under a few ms of p99
    (about ``SLA / cost per request``); they adapt per round.
    """
    return [
        _static("static_http_0B", "http", 0, 16),
        _static("static_http_1KB", "http", KB, 16),
        _static("static_http_100KB", "http", LARGE, 8),
        _static("static_https_0B", "https", 0, 16),
        _static("static_https_1KB", "https", KB, 16),
        _static("static_https_100KB", "https", LARGE, 8),
        Setting("cps_http", Scenario("cps", protocol="http", file_bytes=0), 8),
        Setting("cps_https_ecdsa", Scenario("cps", protocol="https", file_bytes=0), 4),
        Setting("cps_https_rsa", Scenario("cps", protocol="https", file_bytes=0, tls_key="rsa"), 2),
        # wrk resumes its TLS session on every reconnect when nginx allows it (one full
        # handshake per connection slot, then resumed ones): the resumed handshake's cost.
        Setting(
            "cps_https_resumed",
            Scenario("cps", protocol="https", file_bytes=0, tls_resumption=True),
            8,
        ),
        _static("gzip_http_16KB", "http", GZIP_BYTES, 4, gzip=True),
        Setting("reverse_proxy_http_1KB", Scenario("reverse_proxy", file_bytes=KB), 8),
        # With the 1 KB proxy: proxy_request_us and proxy_byte_ns (a proxy copies each byte).
        Setting("reverse_proxy_http_100KB", Scenario("reverse_proxy", file_bytes=LARGE), 4),
        Setting("api_gateway_http_1KB", Scenario("api_gateway", file_bytes=KB), 8),
    ]


def retired_settings() -> list[Setting]:
    """Settings earlier campaigns ran and this one no longer does (to refit their trials).

    64 KB responses over loopback meet delayed ACKs (a p99 of about 40 ms at any load) and
    cost per byte unlike the sizes around them; the large size is now 100 KB.
    """
    return [
        _static("static_http_64KB", "http", 64 * KB, 8),
        _static("static_https_64KB", "https", 64 * KB, 8),
    ]


SCALING_BASE = "static_http_1KB"


def scaling_settings(cpus: int) -> list[Setting]:
    """``static_http_1KB`` at 2, 4, 8, ... workers up to ``cpus`` (at most 4 counts)."""
    base = next(s for s in fit_settings() if s.name == SCALING_BASE)
    counts: list[int] = []
    n = 2
    while n <= cpus and len(counts) < 4:
        counts.append(n)
        n *= 2
    if cpus > 1 and cpus not in counts and len(counts) < 4:
        counts.append(cpus)
    return [replace(base, name=f"scaling_{n}_workers", vcpus=n) for n in counts]


@dataclass(frozen=True)
class CalibrateOptions:
    """What a campaign runs and where.

    Attributes
    ----------
    server, clients : host specs
        ``local``, ``netns:NAME`` or ``[user@]host[:port]``.
    quick : bool
        Short trials and 2 rounds (about 2-3 minutes on a 2-vCPU host).
    repeats : int, optional
        Rounds (each setting once per round); default 3, or 2 with ``quick``.
    extra_rounds : int, optional
        Further rounds, after those, of only the settings that measure a coefficient whose
        standard error is still over `runners.calibrate.fit.TARGET_REL` of its value
        (default 2, or 0 with ``quick``); they stop early once every coefficient is pinned.
    sla_p99_ms : float
        p99 each setting is measured under [ms].
    load_generator : str
        A closed-loop load generator of `runners.loadgen` (``wrk`` or ``h2load``, HTTP/1.1);
        with one that cannot run a setting (h2load does not reconnect, so no ``cps_*``), the
        campaign leaves those settings out and says so.
    only : tuple of str
        Run only these settings (default: all).
    max_workers : int, optional
        Most workers of the scaling settings (default: every CPU of the server).
    target_address : str, optional
        Address the clients use (derived when omitted).
    nginx, wrk, openssl : str
        Binaries on the hosts.
    """

    server: str = "local"
    clients: tuple[str, ...] = ("local",)
    quick: bool = False
    repeats: int | None = None
    extra_rounds: int | None = None
    sla_p99_ms: float = 5.0
    load_generator: str = "wrk"
    only: tuple[str, ...] = ()
    max_workers: int | None = None
    target_address: str | None = None
    nginx: str = TOOLS["nginx"]
    wrk: str = TOOLS["wrk"]
    openssl: str = TOOLS["openssl"]
    h2load: str = TOOLS["h2load"]

    def __post_init__(self) -> None:
        if self.repeats is not None and not 1 <= self.repeats <= 20:
            raise BadInput(f"--repeats must be between 1 and 20 (got {self.repeats})")
        if self.extra_rounds is not None and not 0 <= self.extra_rounds <= 10:
            raise BadInput(f"--extra-rounds must be between 0 and 10 (got {self.extra_rounds})")
        if not self.sla_p99_ms > 0 or not math.isfinite(self.sla_p99_ms):
            raise BadInput("--sla-p99 must be a positive duration")
        # The campaign loads a closed loop over HTTP/1.1 (raises UnsupportedLoad otherwise).
        loadgen.get(self.load_generator).check("1.1", loadgen.CLOSED)
        known = {s.name for s in fit_settings()}
        unknown = [n for n in self.only if n not in known and not n.startswith("scaling_")]
        if unknown:
            raise BadInput(
                f"unknown setting {unknown[0]!r}; known: {', '.join(sorted(known))}, "
                "scaling_N_workers"
            )
        if self.max_workers is not None and self.max_workers < 1:
            raise BadInput("--max-workers must be at least 1")
        HostSpec.parse(self.server)
        for c in self.clients:
            HostSpec.parse(c)

    @property
    def rounds(self) -> int:
        """Rounds to run."""
        return self.repeats if self.repeats is not None else (2 if self.quick else 3)

    @property
    def more_rounds(self) -> int:
        """Most rounds of the settings that measure a coefficient not yet pinned."""
        if self.extra_rounds is not None:
            return self.extra_rounds
        return 0 if self.quick else 2

    @property
    def duration_s(self) -> int:
        """Length of each trial [s]."""
        return 1 if self.quick else 3

    @property
    def warmup_s(self) -> int:
        """Discarded warm-up before each trial [s]."""
        return 1

    @property
    def cooldown_s(self) -> float:
        """Pause after each trial [s]."""
        return 0.2 if self.quick else 0.5

    def to_dict(self) -> JsonObject:
        """Plain data for ``campaign.json``."""
        return {
            "server": self.server,
            "clients": list(self.clients),
            "quick": self.quick,
            "repeats": self.rounds,
            "extra_rounds": self.more_rounds,
            "sla_p99_ms": self.sla_p99_ms,
            "load_generator": self.load_generator,
            "only": list(self.only),
            "max_workers": self.max_workers,
            "target_address": self.target_address,
            "nginx": self.nginx,
            "wrk": self.wrk,
            "openssl": self.openssl,
            "h2load": self.h2load,
        }

    @property
    def client_binary(self) -> str:
        """The load generator's binary (name or path) on the clients."""
        binaries = {"wrk": self.wrk, "h2load": self.h2load}
        return loadgen.get(self.load_generator).tool(binaries, loadgen.CLOSED)

"""What a run measures and where: the `Plan`, and how SSH hosts are reached (`Access`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from runners import loadgen
from runners.errors import BadInput
from runners.hosts import HostSpec
from runners.names import DEFAULT_OUT
from runners.scenario import Scenario
from runners.tools import TOOLS
from trialtable.jsonvalue import JsonObject

__all__ = ["DEFAULT_OUT", "Access", "Plan"]


@dataclass(frozen=True)
class Plan:
    """What to measure and where.

    Attributes
    ----------
    scenario : Scenario
        What nginx serves.
    server, clients
        Host specs: ``local``, ``netns:NAME`` or ``[user@]host[:port]``.
    vcpus, threads, connections : tuple of int
        The grid: nginx workers (one pinned CPU each), wrk threads and connections per client.
    duration_s, warmup_s : int
        Length of each trial and of the discarded warm-up before it [s] (wrk takes whole s).
    cooldown_s : float
        Pause after each trial [s].
    timeout_s : int
        wrk's socket timeout [s]; slower responses count as timeouts.
    sla_p99_ms : float
        The p99 latency a trial must meet [ms].
    max_error_rate : float
        Errors per response above which a trial is invalid.
    saturation : float
        A client using this fraction of its allotted CPUs or more is saturated.
    label : str
        Instance type or free label stored in each row (``instance_label``).
    target_address : str, optional
        Address the clients use to reach the server; derived from the hosts when omitted.
    upstream_host, upstream_address : str, optional
        Where the proxy scenarios' upstream file servers run (default: the server host) and
        the address the server reaches them at (derived when omitted).
    nginx, wrk, openssl, wrk2, h2load : str
        Binaries on the hosts (names looked up on PATH and in the sbin folders, or paths);
        wrk2 is needed only for constant-rate trials with wrk.
    load_generator : str
        The load generator's registry name (`runners.loadgen.NAMES`): ``wrk`` by default.
    http_version : str
        ``"1.1"`` or ``"2"``; the load generator must speak it.
    streams : int
        Concurrent streams per connection (HTTP/2 load generators; 1 otherwise).
    client_weights : tuple of float
        Each client's share of a constant rate relative to the others' (empty: equal shares;
        `runners.clients`).
    """

    scenario: Scenario = field(default_factory=Scenario)
    server: str = "local"
    clients: tuple[str, ...] = ("local",)
    vcpus: tuple[int, ...] = (1,)
    threads: tuple[int, ...] = (1,)
    connections: tuple[int, ...] = (16,)
    duration_s: int = 10
    warmup_s: int = 1
    cooldown_s: float = 1.0
    timeout_s: int = 2
    sla_p99_ms: float = 5.0
    max_error_rate: float = 0.01
    saturation: float = 0.9
    label: str = ""
    target_address: str | None = None
    upstream_host: str | None = None
    upstream_address: str | None = None
    nginx: str = TOOLS["nginx"]
    wrk: str = TOOLS["wrk"]
    openssl: str = TOOLS["openssl"]
    wrk2: str = TOOLS["wrk2"]
    load_generator: str = "wrk"
    http_version: str = "1.1"
    streams: int = 1
    h2load: str = TOOLS["h2load"]
    client_weights: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        self.generator().check(self.http_version)
        if self.streams < 1 or (self.streams > 1 and self.http_version != "2"):
            raise BadInput("streams must be 1, or more than 1 only over HTTP/2")
        if not self.scenario.keepalive and self.load_generator == "h2load":
            raise loadgen.UnsupportedLoad(
                f"h2load does not reconnect after the server closes a connection; the "
                f"{self.scenario.name} scenario needs --load-generator wrk"
            )
        for name in ("vcpus", "threads", "connections"):
            values = getattr(self, name)
            if not values or any(int(v) < 1 for v in values):
                raise BadInput(f"{name} must be a non-empty list of positive integers")
        if self.duration_s < 1 or self.warmup_s < 0 or self.timeout_s < 1:
            raise BadInput("wrk needs a duration >= 1 s, a warm-up >= 0 s and a timeout >= 1 s")
        if self.cooldown_s < 0:
            raise BadInput("the cooldown cannot be negative")
        if not self.clients:
            raise BadInput("at least one client host is needed")
        specs = [str(HostSpec.parse(c)) for c in self.clients]
        if len(set(specs)) != len(specs):
            raise BadInput(f"a client host is listed twice: {', '.join(self.clients)}")
        if self.client_weights and (
            len(self.client_weights) != len(self.clients)
            or not all(0 < w < float("inf") for w in self.client_weights)
        ):
            raise BadInput("client weights must be one positive number per client")
        HostSpec.parse(self.server)
        if not self.settings():
            raise BadInput(
                "no setting to run: every --connections value is below every --threads value "
                "(wrk needs connections >= threads)"
            )
        if not 0 < self.saturation <= 1 or not 0 <= self.max_error_rate < 1:
            raise BadInput("saturation must be in (0, 1] and max error rate in [0, 1)")

    def settings(self) -> list[tuple[int, int, int]]:
        """The grid in run order (vCPUs outermost, so nginx restarts once per count).

        Settings with fewer connections than threads are left out (wrk refuses them).
        """
        return [
            (v, t, c) for v in self.vcpus for t in self.threads for c in self.connections if c >= t
        ]

    def generator(self) -> loadgen.LoadGenerator:
        """The load generator the plan names."""
        return loadgen.get(self.load_generator)

    def binaries(self) -> dict[str, str]:
        """Tool name (a key of `TOOLS`) -> the binary the user chose (name or path)."""
        return {name: str(getattr(self, name)) for name in TOOLS}

    def to_dict(self) -> JsonObject:
        """Plain data for ``run.json``."""
        d = asdict(self)
        d["scenario"] = self.scenario.to_dict()
        for key in ("clients", "vcpus", "threads", "connections", "client_weights"):
            d[key] = list(d[key])
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Plan:
        """Inverse of `to_dict`."""
        d = dict(d)
        d["scenario"] = Scenario.from_dict(d["scenario"])
        for key in ("clients", "vcpus", "threads", "connections", "client_weights"):
            d[key] = tuple(d.get(key, ()))
        return cls(**d)


@dataclass(frozen=True)
class Access:
    """How to reach SSH hosts (not part of what is measured)."""

    accept_new_host_keys: bool = False
    ssh_config: str | None = None

"""A simulated server: plan and compare search strategies with no hosts.

The server's capacity follows the universal scalability law in its vCPUs,
``mu(n) = lambda * n / (1 + sigma (n - 1) + kappa n (n - 1))``; the load generator's threads
can drive at most ``thread_rps`` each. A closed loop of ``C`` connections with a fixed network
and stack latency ``base`` and a single queue of rate ``m = min(mu, threads * thread_rps)``
settles where ``X = C / R`` and ``R = base + 1 / (m - X)`` (Little's law with an M/M/1
sojourn). Latency percentiles are those of the exponential sojourn, ``base + ln(1/(1-q)) /
(m - X)``. An open loop at rate ``r`` (wrk2) has ``X = r`` below ``m`` and a queue that grows
for the whole run above it. Measurements carry seeded multiplicative noise that depends only
on the seed, the setting and how many times that setting was measured, so two strategies that
try the same setting see the same number.

Defaults are of the order of seed 004's HTTP 1 KB table (74,091 RPS on one CPU); they are an
illustration, not a measurement, and every row says ``simulated=true``.
"""

from __future__ import annotations

import math
import random
from dataclasses import asdict, dataclass, field
from typing import Any

from runners.errors import RunnerError
from runners.loadgen.base import ERROR_KINDS, Measurement, saturation_note
from runners.run import Run
from runners.scenario import Scenario
from runners.trial import CpuUse, Judging, TrialSetting, trial_row
from trialtable.folder import RunFolder
from trialtable.jsonvalue import JsonObject
from trialtable.schema import utc_now


@dataclass(frozen=True)
class SimServer:
    """Parameters of the simulated server and load generator.

    Attributes
    ----------
    seed : int
        Noise seed.
    lambda_rps : float
        Capacity of one vCPU [1/s].
    sigma, kappa : float
        USL contention and coherency coefficients.
    base_ms : float
        Latency floor: network and stack [ms].
    client_cpus : int
        CPUs of the simulated load generator (threads are capped there).
    thread_rps : float
        Requests per second one wrk thread can drive [1/s].
    rps_noise, latency_noise : float
        Log-normal noise (standard deviation of the log) on throughput and latency.
    bytes_per_response : int
        Bytes read per response, headers included [B].
    """

    seed: int = 1
    lambda_rps: float = 74000.0
    sigma: float = 0.03
    kappa: float = 0.0001
    base_ms: float = 0.15
    client_cpus: int = 8
    thread_rps: float = 150000.0
    rps_noise: float = 0.01
    latency_noise: float = 0.03
    bytes_per_response: int = 1278

    def __post_init__(self) -> None:
        positive = ("lambda_rps", "base_ms", "client_cpus", "thread_rps", "bytes_per_response")
        for name in (*positive, "sigma", "kappa", "rps_noise", "latency_noise"):
            value = float(getattr(self, name))
            if not math.isfinite(value) or value < 0 or (name in positive and value == 0):
                need = "a positive finite number" if name in positive else "finite and >= 0"
                raise RunnerError(f"simulator {name} = {value!r}: expected {need}")

    def capacity(self, vcpus: int) -> float:
        """USL capacity [1/s] of ``vcpus`` vCPUs."""
        n = float(vcpus)
        return self.lambda_rps * n / (1 + self.sigma * (n - 1) + self.kappa * n * (n - 1))

    def closed_loop(self, vcpus: int, threads: int, connections: int) -> tuple[float, float]:
        """Noise-free throughput [1/s] and queue service rate [1/s] with ``connections``."""
        m = min(self.capacity(vcpus), threads * self.thread_rps)
        r0 = self.base_ms / 1000.0
        b = r0 * m + 1 + connections
        x = (b - math.sqrt(b * b - 4 * r0 * connections * m)) / (2 * r0)
        return x, m

    def measure(
        self,
        vcpus: int,
        threads: int,
        connections: int,
        *,
        rate_rps: float | None = None,
        duration_s: float = 10.0,
        repeat: int = 0,
    ) -> dict[str, float]:
        """One noisy measurement: rps, latency percentiles [ms] and client/server CPU [%]."""
        rng = random.Random(
            f"{self.seed}:{vcpus}:{threads}:{connections}:{rate_rps or 0:.0f}:{repeat}"
        )
        base = self.base_ms / 1000.0
        qs = (0.5, 0.9, 0.99, 0.999)
        if rate_rps is None:
            x, m = self.closed_loop(vcpus, threads, connections)
        else:
            m = min(self.capacity(vcpus), threads * self.thread_rps)
            x = min(rate_rps, m)
        if rate_rps is None or rate_rps < m:
            gap = max(m - x, 1e-9)
            quantile = {q: base + math.log(1 / (1 - q)) / gap for q in qs}
            quantile[1.0] = base + math.log(max(x * duration_s, 2.0)) / gap
            mean = base + 1 / gap
        else:
            # The backlog grows all run: at time t it holds (rate - m) t requests, which the
            # server drains at m per second, so a request sent then waits t (rate - m) / m.
            slope = duration_s * (rate_rps - m) / m
            quantile = {q: base + q * slope for q in (*qs, 1.0)}
            mean = base + 0.5 * slope
        rps = x * math.exp(rng.gauss(0.0, self.rps_noise))
        lat = math.exp(rng.gauss(0.0, self.latency_noise))
        return {
            "rps": rps,
            "p50": quantile[0.5] * lat * 1000,
            "p90": quantile[0.9] * lat * 1000,
            "p99": quantile[0.99] * lat * 1000,
            "p999": quantile[0.999] * lat * 1000,
            "max": max(quantile[1.0], quantile[0.999]) * lat * 1000,
            "mean": mean * lat * 1000,
            "client_cpu_pct": 100.0 * rps / self.thread_rps,
            "server_cpu_pct": 100.0 * vcpus * min(rps / self.capacity(vcpus), 1.0),
        }

    def to_dict(self) -> JsonObject:
        """Plain data for ``run.json``."""
        return asdict(self)


@dataclass
class SimTarget:
    """The simulated server behind the same ``trial`` interface as a real `Session`."""

    sim: SimServer
    store: RunFolder | Run
    scenario: Scenario = field(default_factory=Scenario)
    sla_p99_ms: float = 5.0
    label: str = ""
    max_error_rate: float = 0.01
    saturation: float = 0.9
    _seq: int = 0
    _repeats: dict[tuple[Any, ...], int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.store.meta.get("simulated"):
            raise RunnerError("a simulated target needs a run marked simulated")
        rows = self.store.rows()
        self._seq = len(rows)
        # Noise follows how often a setting was measured, the stored trials included, so a
        # resumed run measures on exactly as an uninterrupted one would.
        for r in rows:
            rate = float(r["rate_rps"]) if r["rate_rps"] else None
            key = _setting(int(r["vcpus"]), int(r["threads"]), int(r["connections"]), rate)
            self._repeats[key] = self._repeats.get(key, 0) + 1

    def max_threads(self, vcpus: int) -> int:
        """Threads the load generator can run without sharing CPUs."""
        return self.sim.client_cpus

    def trial(
        self,
        vcpus: int,
        threads: int,
        connections: int,
        *,
        duration_s: int = 10,
        kind: str = "sweep",
        rate_rps: float | None = None,
    ) -> JsonObject:
        """Simulate one trial; append and return its row."""
        if connections < threads:
            raise RunnerError(f"connections ({connections}) must be >= threads ({threads})")
        key = _setting(vcpus, threads, connections, rate_rps)
        repeat = self._repeats.get(key, 0)
        self._repeats[key] = repeat + 1
        m = self.sim.measure(
            vcpus, threads, connections, rate_rps=rate_rps, duration_s=duration_s, repeat=repeat
        )
        self._seq += 1
        requests = round(m["rps"] * duration_s)
        measured = Measurement(
            duration_s=float(duration_s),
            requests=requests,
            bytes=requests * self.sim.bytes_per_response,
            errors=dict.fromkeys(ERROR_KINDS, 0),
            latency_ms={k: m[k] for k in ("p50", "p90", "p99", "p999", "max", "mean")},
            rps=m["rps"],
        )
        note = saturation_note(m["client_cpu_pct"], threads, self.saturation, "sim")
        ids: JsonObject = {
            "run_id": self.store.run_id,
            "trial_id": f"{self.store.run_id}-{self._seq:04d}",
            "started_at": utc_now(),
            "kind": kind,
            "simulated": True,
            "load_generator": "sim",
            "http_version": "1.1",
            "streams": 1,
            "server_host": "sim",
            "client_hosts": "sim",
            "clients": 1,
            "instance_label": self.label,
            "arch": "sim",
            "cpu_model": (
                f"simulated: USL lambda={self.sim.lambda_rps:g} sigma={self.sim.sigma:g}"
                f" kappa={self.sim.kappa:g}, seed {self.sim.seed}"
            ),
            "server_cpus": list(range(vcpus)),
            "client_cpus": "sim",
            "placement": "simulated",
        }
        row = trial_row(
            ids,
            self.scenario,
            measured,
            TrialSetting(vcpus, threads, connections, rate_rps, warmup_s=0),
            CpuUse(m["client_cpu_pct"], m["server_cpu_pct"], [note] if note else []),
            Judging(self.sla_p99_ms, self.max_error_rate),
        )
        self.store.append(row)
        return row


def _setting(
    vcpus: int, threads: int, connections: int, rate_rps: float | None
) -> tuple[int, int, int, int | None]:
    return vcpus, threads, connections, None if rate_rps is None else round(rate_rps)

"""The cloud model's objects: platform speeds, environment terms and their spreads.

What `sizing.fitting.cloudfit` fits to published cloud measurements, stored in
``data/fits/cloud-model.json`` and read here without numpy or pandas, so that sizing a fleet
loads only what it uses. `speed_for` is the one rule for a platform's per-vCPU speed: fitted,
else CoreMark calibrated to the fitted platforms, else a conservative speed for an unknown CPU.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sizing.errors import InputError
from sizing.paths import DATA_DIR
from trialtable.jsonvalue import JsonObject

__all__ = [
    "CLASSES",
    "CLOUD_MODEL_PATH",
    "CloudModel",
    "EnvTerm",
    "PlatformSpeed",
    "load_cloud_model",
    "speed_for",
    "workload_class",
]

CLOUD_MODEL_PATH = DATA_DIR / "fits" / "cloud-model.json"
CLASSES = ("small_static", "large_static")
LARGE_BYTES = 16384
#: How each harness ran, from (container, client placement): the environment its NGINX rows
#: measure. A client on the same VM shares its vCPUs: such rows place platforms relative to
#: each other (stage 1) but give no environment level.
ENVIRONMENT_OF_HARNESS = {
    ("yes", "separate_vm"): "kubernetes",
    ("no", "separate_vm"): "vm",
    ("no", "separate_host"): "bare-metal",
    ("yes", "separate_host"): "kubernetes",
}
ANCHORS = ("haswell", "broadwell", "skylake", "cascade_lake")
#: Prior on a cloud Haswell core against the reference Xeon E5-2699 v3 core (same core; the
#: clouds' E5-2666 v3 / E5-2676 v3 run similar all-core clocks).
ANCHOR_CLOCK = (
    1.0,
    0.10,
    "estimate: a cloud Haswell core (Xeon E5-2666 v3 / E5-2676 v3, all-core turbo about "
    "3.2 GHz) does the reference E5-2699 v3 core's work per second within 10% (1 sd)",
)
SMT_PRIOR = (
    1.25,
    0.15,
    "estimate: NGINX serving clients on other machines gains 10-40% from a core's second "
    "hardware thread (1 sd 15%)",
)
#: A pod behind a ClusterIP Service (veth pair, iptables NAT with conntrack) against a
#: process on the VM itself, per request on keep-alive connections [us on the reference core].
K8S_EXTRA_US = (
    11.0,
    3.0,
    "published: a pod behind veth and kube-proxy's iptables (the path of EKS's VPC CNI and of "
    "Calico's iptables dataplane) adds 6.9-8.2 us of server CPU per keep-alive request (median "
    "7.4, 4 figures) on a Ryzen 9 3950X core against the same server on the host network "
    "(Cilium project, 'CNI Benchmark: Understanding Cilium Network Performance', 2021, netperf "
    "TCP_RR CPU charts; data/reference/k8s-network-path.csv), x1.3-2.0 reference cores per "
    "core: 11 us (95% 5-17; an eBPF datapath that bypasses the host stack adds about 4)",
)
VM_PACKET_US = (
    0.3,
    0.3,
    "estimate: a virtual NIC's per-packet cost (virtio / ENA / gVNIC), 0-0.9 us on the "
    "reference core (95%)",
)


def workload_class(mean_body_bytes: float) -> str:
    """The workload class whose platform speeds apply to a body size [B]."""
    return "large_static" if mean_body_bytes >= LARGE_BYTES else "small_static"


@dataclass(frozen=True)
class PlatformSpeed:
    """Per-vCPU NGINX speed of one platform and vCPU kind for one class, with its spread.

    Attributes
    ----------
    speed : float
        Reference cores per vCPU [1].
    rel_sd : float
        Log-scale standard error of ``speed`` (the fit's and the anchor's).
    instance_types : int
        Instance types measured on it (all sources).
    sources : list of str
        Source ids whose rows place it.
    nginx_shift : float
        Log shift from real-NGINX rows of the platform (stage 3 of `fit_cloud_model`).
    nginx_types : int
        Instance types of real-NGINX rows behind that shift.
    smt_shift : float
        Log shift of a hyper-thread's speed from the stand-in server's SMT gain to real
        NGINX's (stage 3a of `fit_cloud_model`); 0 for whole cores.
    stand_in_only : bool
        No real-NGINX row of this platform, vCPU kind and class was fitted: the speed rests
        on a stand-in static server with its client on the same VM only.
    stand_in_sd : float
        The log sd added to ``rel_sd`` for that (`stand_in_gap`'s figure); 0 otherwise.
    capped_by : str
        For a stand-in-only speed whose step over the generation before passed a published
        upper bound (`sizing.model.steps`): the step's id, the speed it had and the source;
        empty otherwise.
    cap_shift : float
        Log shift of that cap (``ln(capped / fitted)``, <= 0); 0 otherwise.
    """

    platform_id: str
    threads_per_core: int
    workload_class: str
    speed: float
    rel_sd: float
    instance_types: int
    sources: list[str]
    nginx_shift: float = 0.0
    nginx_types: int = 0
    smt_shift: float = 0.0
    stand_in_only: bool = False
    stand_in_sd: float = 0.0
    capped_by: str = ""
    cap_shift: float = 0.0

    @property
    def source(self) -> str:
        """What the speed rests on, in words."""
        if self.stand_in_only:
            return self._stand_in_source()
        shift = (
            f", moved x{math.exp(self.nginx_shift):.2f} to {self.nginx_types} real-NGINX "
            "instance measurement(s) of it"
            if self.nginx_types
            else ""
        )
        return (
            f"fitted to {self.instance_types} instance type(s) of published cloud measurements "
            f"({', '.join(self.sources)}; data/cloud/measurements.csv){shift}"
        )

    def _stand_in_source(self) -> str:
        """`source` of a speed no real NGINX measured: says so, and how much wider it is."""
        twin = (
            f", moved x{math.exp(self.nginx_shift):.2f} by {self.nginx_types} real-NGINX "
            "instance measurement(s) of a platform with the same core"
            if self.nginx_types
            else ""
        )
        return (
            f"stand-in server only: fitted to {self.instance_types} instance type(s) of a "
            "static server that is not NGINX, its client on the same VM "
            f"({', '.join(self.sources)}; data/cloud/measurements.csv){twin}; log sd widened "
            f"by {self.stand_in_sd:.2f} (the stand-in-to-NGINX gap of platforms measured both ways)"
            + (f"; {self.capped_by}" if self.capped_by else "")
        )


@dataclass(frozen=True)
class EnvTerm:
    """Extra CPU time per request of a deployment environment, on the reference core.

    Attributes
    ----------
    request_us, request_stderr : float
        Per request [us] and its standard error [us].
    packet_us, packet_stderr : float
        Per packet [us] and its standard error [us].
    source : str
        What it was fitted to, or ``estimate: ...``.
    n : int
        NGINX observations it was fitted to (0: derived or estimated).
    anchored : bool
        Fitted (directly or through another fitted environment) on the same anchor as the
        platform speeds, so the anchor's error cancels in predictions.
    """

    environment: str
    request_us: float
    request_stderr: float
    packet_us: float
    packet_stderr: float
    source: str
    n: int = 0
    anchored: bool = False


@dataclass
class CloudModel:
    """The fitted cloud model: platform speeds, SMT gains, environment terms and spreads."""

    speeds: dict[str, PlatformSpeed]
    smt_gain: dict[str, tuple[float, float, str]]
    environments: dict[str, EnvTerm]
    within_sd: dict[str, float]
    between_source_sd: float
    between_source_pairs: int
    anchor: str
    fitted_on: list[str]
    held_out: list[str] = field(default_factory=list)
    levels: dict[str, float] = field(default_factory=dict)
    anchor_sd: dict[str, float] = field(default_factory=dict)
    size_slopes: dict[str, float] = field(default_factory=dict)
    stand_in_gap_sd: float = 0.0
    stand_in_gap_platforms: int = 0

    def spread(self, cls: str) -> float:
        """Log sd of an instance type's value about its platform's speed, in a new harness.

        The scatter between instance types of a platform (``within_sd``) and the
        disagreement between sources on one instance type (``between_source_sd``).

        Both are counted in full although the first holds part of the second: leaving each
        source out (``benchmarks/bench_cloud.py``), ranges without that overlap held 72% and
        82% of the held-out values, with it 89% and 93%. Two harnesses differ by more than
        noise on an instance type: they place whole platforms differently.
        """
        return math.hypot(self.within_sd.get(cls, 0.0), self.between_source_sd)

    def speed_sd(self, speed: PlatformSpeed | float, cls: str, environment: str) -> float:
        """Log sd of a speed as used in ``environment``.

        The fit's, plus the anchor's where the environment's level was not fitted to real
        NGINX rows on the same anchor (there the anchor's error cancels: ``(C + E) / V`` does
        not move with it).
        """
        sd = speed.rel_sd if isinstance(speed, PlatformSpeed) else float(speed)
        env = self.environments.get(environment)
        if env is None or not env.anchored:
            sd = math.hypot(sd, self.anchor_sd.get(cls, ANCHOR_CLOCK[1]))
        return sd

    @staticmethod
    def key(platform_id: str, threads_per_core: int, cls: str) -> str:
        """Dictionary key of a platform speed."""
        return f"{platform_id}|{threads_per_core}|{cls}"

    def speed(self, platform_id: str, threads_per_core: int, cls: str) -> PlatformSpeed | None:
        """The fitted speed, or None when the data never measured that platform and kind.

        A platform measured only as the other vCPU kind is converted by the class's SMT gain.
        """
        got = self.speeds.get(self.key(platform_id, threads_per_core, cls))
        if got is not None:
            return got
        other = self.speeds.get(self.key(platform_id, 3 - threads_per_core, cls))
        if other is None:
            return None
        g, g_sd, _ = self.smt_gain[cls]
        factor = g / 2.0 if threads_per_core == 2 else 2.0 / g
        return PlatformSpeed(
            platform_id,
            threads_per_core,
            cls,
            other.speed * factor,
            math.hypot(other.rel_sd, g_sd / g),
            other.instance_types,
            other.sources,
            stand_in_only=other.stand_in_only,
            stand_in_sd=other.stand_in_sd,
            capped_by=other.capped_by,
        )

    def to_dict(self) -> JsonObject:
        """JSON-ready form."""
        return {
            "format": "nginx-sizing/cloud-model/1",
            "speeds": {k: asdict(v) for k, v in sorted(self.speeds.items())},
            "smt_gain": {k: list(v) for k, v in self.smt_gain.items()},
            "environments": {k: asdict(v) for k, v in self.environments.items()},
            "within_sd": self.within_sd,
            "between_source_sd": self.between_source_sd,
            "between_source_pairs": self.between_source_pairs,
            "anchor": self.anchor,
            "fitted_on": self.fitted_on,
            "held_out": self.held_out,
            "levels": self.levels,
            "anchor_sd": self.anchor_sd,
            "size_slopes": self.size_slopes,
            "stand_in_gap_sd": self.stand_in_gap_sd,
            "stand_in_gap_platforms": self.stand_in_gap_platforms,
        }

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> CloudModel:
        """The model from `to_dict`'s form."""
        if doc.get("format") != "nginx-sizing/cloud-model/1":
            raise InputError("cloud model: format is not nginx-sizing/cloud-model/1")
        return cls(
            speeds={k: PlatformSpeed(**v) for k, v in doc["speeds"].items()},
            smt_gain={k: (float(v[0]), float(v[1]), str(v[2])) for k, v in doc["smt_gain"].items()},
            environments={k: EnvTerm(**v) for k, v in doc["environments"].items()},
            within_sd={k: float(v) for k, v in doc["within_sd"].items()},
            between_source_sd=float(doc["between_source_sd"]),
            between_source_pairs=int(doc["between_source_pairs"]),
            anchor=str(doc["anchor"]),
            fitted_on=list(doc["fitted_on"]),
            held_out=list(doc.get("held_out", [])),
            levels={k: float(v) for k, v in doc.get("levels", {}).items()},
            anchor_sd={k: float(v) for k, v in doc.get("anchor_sd", {}).items()},
            size_slopes={k: float(v) for k, v in doc.get("size_slopes", {}).items()},
            stand_in_gap_sd=float(doc.get("stand_in_gap_sd", 0.0)),
            stand_in_gap_platforms=int(doc.get("stand_in_gap_platforms", 0)),
        )


#: A platform the measurements never saw: CoreMark's speed calibrated by the median
#: fitted/CoreMark ratio of the platforms they did, with the spread of that ratio.
UNKNOWN_SPEED_SD = (
    0.45,
    "estimate: a CPU no published measurement or table names: the slowest quarter of the "
    "fitted platforms of its architecture, 1 sd 45% (log scale)",
)


def core_of_vcpu(model: CloudModel, cls: str, threads_per_core: int) -> float:
    """A core's worth over one vCPU's for NGINX (``2 / g`` for a hyper-thread, else 1).

    ``g`` is the class's fitted SMT gain, or the prior where the fit had no such class.
    """
    gain = model.smt_gain.get(cls, SMT_PRIOR)[0]
    return 2.0 / gain if threads_per_core == 2 else 1.0


def coremark_calibration(model: CloudModel, cls: str) -> tuple[float, float, int]:
    """Median and sd of ln(fitted core speed / CoreMark core speed) over platforms with both.

    Per core, so that platforms measured as hyper-threads and as whole cores calibrate alike
    (a hyper-thread's fitted speed is turned into its core's by the fitted SMT gain).
    """
    from sizing.model.platforms import platforms

    ratios = []
    for pid, plat in platforms().items():
        if plat.estimate:
            continue
        tpc = plat.threads_per_core
        fitted = model.speeds.get(CloudModel.key(pid, tpc, cls))
        if fitted is not None:
            core = fitted.speed * core_of_vcpu(model, cls, tpc)
            ratios.append(math.log(core / plat.core_speed))
    if len(ratios) < 2:
        return 1.0, UNKNOWN_SPEED_SD[0], len(ratios)
    ratios.sort()
    mid = ratios[len(ratios) // 2]
    sd = math.sqrt(sum((r - mid) ** 2 for r in ratios) / (len(ratios) - 1))
    return math.exp(mid), sd, len(ratios)


def speed_for(
    model: CloudModel, platform_id: str, threads_per_core: int, cls: str, known_cpu: bool = True
) -> tuple[float, float, str, str]:
    """Per-vCPU speed [reference cores], log sd, kind (fitted|coremark|unknown) and why.

    Fitted where the measurements place the platform (either vCPU kind); else CoreMark's
    speed calibrated to the fitted platforms (a labelled fallback); an unknown CPU
    (``known_cpu`` False) gets the slowest quarter of its architecture's fitted speeds.
    """
    from sizing.model.platforms import platforms

    known = platforms()
    if known_cpu:
        fitted = model.speed(platform_id, threads_per_core, cls)
        if fitted is not None:
            return fitted.speed, fitted.rel_sd, "fitted", fitted.source
    plat = known.get(platform_id)
    if not known_cpu or plat is None:
        arch = plat.arch if plat is not None else "x86_64"
        same = sorted(
            v.speed
            for v in model.speeds.values()
            if v.workload_class == cls
            and v.platform_id in known
            and known[v.platform_id].arch == arch
        )
        slow = same[len(same) // 4] if same else 0.5
        return slow, UNKNOWN_SPEED_SD[0], "unknown", UNKNOWN_SPEED_SD[1]
    ratio, ratio_sd, n = coremark_calibration(model, cls)
    base = plat.core_speed / core_of_vcpu(model, cls, threads_per_core)
    return (
        base * ratio,
        math.hypot(plat.rel_sd, ratio_sd),
        "coremark",
        f"fallback: {plat.name} is not in the published cloud measurements; {base:.2f} "
        f"reference cores per vCPU from {plat.source}, x{ratio:.2f} (the median fitted/CoreMark "
        f"ratio of {n} measured platforms, log sd {ratio_sd:.2f})",
    )


def load_cloud_model(path: Path = CLOUD_MODEL_PATH) -> CloudModel | None:
    """The precomputed cloud model (``python -m sizing precompute``), or None if absent."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    try:
        return CloudModel.from_dict(json.loads(text))
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{path}: not a cloud model ({exc})") from None

"""Kubernetes output: a Deployment, a PodDisruptionBudget and an HPA, and the node type.

One pod is one NGINX with ``pod_cpus`` workers, sized by the same cost model as a VM, with
the workload's ``environment`` set to ``kubernetes``. For every candidate node type (the
catalog rows a request selects):

- the pod's capacity under the SLA on that node's CPU platform (a pod of ``pod_cpus``
  vCPUs), and its target RPS with the headroom kept;
- the CPU request: the CPU the pod uses at its target RPS (CPU time per request: the pod's
  CPUs at the SLA utilisation over its RPS under the SLA, times the target RPS), rounded up
  to a millicore;
  the CPU limit: ``pod_cpus`` (one worker per CPU); memory: `POD_MEMORY_MIB` (an estimate),
  request equal to limit;
- replicas: the fewest pods whose survivors (zone loss, failures) carry the target with the
  headroom kept at the request's confidence (each pod at the ``1 - confidence`` quantile of
  its capacity, as the fleet's count at the confidence), spread evenly over the zones; the
  PodDisruptionBudget keeps the pods that carry the target so (``minAvailable``);
- the HPA's target CPU utilisation: the CPU at the headroom load (the pod's target RPS, where
  it keeps the headroom) over the CPU request, in percent: 99-100% by the model (the request
  is that CPU rounded up to a millicore); a run's measured curve of server CPU against RPS
  moves it by how far the curve bends from a line through zero (`measured_cpu_ratio`). The
  SLA knee is the headroom above it, never the target;
- packing: pods per node from the node's allocatable CPU and memory (the reservations of
  `reserved_cpu` and `reserved_memory_gib`, published by GKE and AKS) against the pods'
  requests, at most `MAX_PODS_PER_NODE`, and the node's network capacity; nodes per zone
  rounded up; the node type whose bill costs least in all wins: the nodes plus the traffic's
  egress priced where they run (`sizing.catalog.egress.egress_cost`, the answer's traffic),
  as the fleet's options are ranked.

Names (the app, the namespace) must be RFC 1123 labels and are refused otherwise; a node type
whose name is not a valid label value is left out (it could not be a node selector).
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypedDict

from sizing.catalog.egress import egress_cost
from sizing.catalog.load import Instance
from sizing.errors import Infeasible, InputError
from sizing.fleet.recommend import (
    HOURS_PER_MONTH,
    FleetRules,
    capacities,
    count_for,
    min_instances,
    p_meet,
    per_zone,
    usd_per_million,
)
from sizing.model.capacity import Capacity
from sizing.model.costmodel import CostProfile
from sizing.report.render import clean
from sizing.units import fmt_usd_small
from sizing.workload.value import Workload
from trialtable.jsonvalue import JsonObject, JsonValue, as_float, as_int

#: Estimate: memory of one NGINX pod [MiB]: the master and a worker with their buffers,
#: connection structures for a few thousand connections and the open-file cache, about 20 MiB
#: each in resident memory, doubled for peaks, plus 64 MiB for the container's page cache.
POD_MEMORY_BASE_MIB = 64
POD_MEMORY_PER_WORKER_MIB = 32
#: The default largest pod count per node (Kubernetes' documented default ``maxPods``).
MAX_PODS_PER_NODE = 110
#: Estimate: CPU the node's own daemons (kube-proxy, CNI, logging agent) request [cores].
DAEMONSET_CPU = 0.2
#: Estimate: memory those daemons request [GiB].
DAEMONSET_MEMORY_GIB = 0.4
#: Kubelet's hard eviction threshold held back from allocatable memory [GiB].
EVICTION_MEMORY_GIB = 0.1
SOURCES = {
    "reserved": "GKE 'Node allocatable' (cloud.google.com/kubernetes-engine/docs/concepts/"
    "plan-node-sizes) and AKS 'Resource reservations': CPU 6% of the first core, 1% of the "
    "next, 0.5% of the next 2, 0.25% above 4; memory 25% of the first 4 GiB, 20% of the next "
    "4, 10% of the next 8, 6% of the next 112, 2% above",
    "memory": f"estimate: {POD_MEMORY_BASE_MIB} MiB + {POD_MEMORY_PER_WORKER_MIB} MiB per worker",
    "daemonsets": f"estimate: node daemons request {DAEMONSET_CPU:g} CPU and "
    f"{DAEMONSET_MEMORY_GIB:g} GiB",
    "max_pods": f"Kubernetes default maxPods {MAX_PODS_PER_NODE}",
}

# Matched whole (``fullmatch``): ``$`` would also match before a final newline.
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")
_IMAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@-]{0,254}")


def check_name(value: str, what: str) -> str:
    """``value`` if it is an RFC 1123 label (lower-case letters, digits, '-', <= 63)."""
    if not isinstance(value, str) or not _LABEL.fullmatch(value):
        raise InputError(
            f"{what} {str(value)[:70]!r} is not a Kubernetes name (RFC 1123 label: lower-case "
            "letters, digits and '-', starting and ending with a letter or digit, at most 63)"
        )
    return value


def check_image(value: str) -> str:
    """A container image reference (registry/name:tag or @digest), or InputError."""
    if not isinstance(value, str) or not _IMAGE.fullmatch(value):
        raise InputError(f"image {str(value)[:70]!r} is not a container image reference")
    return value


def _tiered(amount: float, tiers: Sequence[tuple[float, float]]) -> float:
    """The sum of each tier's share of the part of ``amount`` in that tier."""
    left, out = float(amount), 0.0
    for size, share in tiers:
        take = min(left, size)
        out += take * share
        left -= take
        if left <= 0:
            break
    return out


def reserved_cpu(vcpus: float) -> float:
    """CPU a managed node keeps for the system (GKE and AKS's published tiers) [cores]."""
    return _tiered(vcpus, ((1, 0.06), (1, 0.01), (2, 0.005), (math.inf, 0.0025)))


def reserved_memory_gib(memory_gib: float) -> float:
    """Memory a managed node keeps for the system (GKE and AKS's published tiers) [GiB]."""
    return _tiered(memory_gib, ((4, 0.25), (4, 0.20), (8, 0.10), (112, 0.06), (math.inf, 0.02)))


@dataclass(frozen=True)
class Pod:
    """The NGINX pod and the names its manifests carry.

    Attributes
    ----------
    cpus : int
        CPUs of one pod, one worker each (1 to 64).
    name, namespace : str
        The app's name and its namespace (RFC 1123 labels; no namespace: the default one).
    image : str
        The container image reference.
    max_replicas : int, optional
        The HPA's most replicas (default: the model's count times a margin).
    """

    cpus: int = 2
    name: str = "nginx"
    namespace: str | None = None
    image: str = "nginx:1.27"
    max_replicas: int | None = None

    def check(self) -> Pod:
        """The pod itself, checked: InputError for a bad name, namespace, image or size."""
        check_name(self.name, "name")
        if self.namespace is not None:
            check_name(self.namespace, "namespace")
        check_image(self.image)
        if not 1 <= self.cpus <= 64:
            raise InputError(f"pod CPUs must be 1 to 64, got {self.cpus!r}")
        return self


@dataclass(frozen=True)
class PodBasis:
    """What the pods' sizing rests on besides the catalog and the request.

    Attributes
    ----------
    evidence
        The measured evidence of the answer (`sizing.fleet.counts.Recommendation.evidence`).
    profiles : sequence of CostProfile
        Calibrated cost profiles.
    runs_rows : sequence of dict
        Trial rows of runs given: their curve of CPU against RPS sets the HPA's target.
    traffic : dict, optional
        The answer's traffic (`sizing.fleet.counts.Recommendation.traffic`): its egress is
        priced where each node type runs.
    """

    evidence: object = None
    profiles: Sequence[CostProfile] = ()
    runs_rows: Sequence[dict[str, Any]] = ()
    traffic: dict[str, Any] | None = None


@dataclass
class NodeFit:
    """One node type's answer: the pod on its CPU, how many fit, and what the nodes cost."""

    node: Instance
    pod: Capacity
    node_cap: Capacity
    pod_target_rps: float
    cpu_request: float
    cpu_at_sla: float
    memory_mib: int
    replicas: int
    min_available: int
    pods_per_node: int
    limited_by: str
    nodes: int
    nodes_per_zone: list[int]
    price: float
    p_meet: float
    confidence: float = 0.95
    egress_monthly_usd: float | None = None

    @property
    def hourly_cost_usd(self) -> float:
        """Hourly cost of the nodes [USD/h]."""
        return self.nodes * self.price

    @property
    def total_monthly_usd(self) -> float:
        """The bill: the nodes and the traffic's egress where they run [USD/month]."""
        return self.hourly_cost_usd * HOURS_PER_MONTH + (self.egress_monthly_usd or 0.0)

    def row(self, target_rps: float) -> JsonObject:
        """JSON-ready summary."""
        n = self.node
        return {
            "node_type": n.instance_type,
            "provider": n.provider,
            "region": n.region,
            "node_vcpus": n.vcpus,
            "node_memory_gib": n.memory_gib,
            "pods_per_node": self.pods_per_node,
            "pods_per_node_limited_by": self.limited_by,
            "nodes": self.nodes,
            "nodes_per_zone": self.nodes_per_zone,
            "replicas": self.replicas,
            "pod_rps_under_sla": self.pod.cpu_sla_rps,
            "pod_sla_utilization": self.pod.max_utilization,
            "pod_target_rps": self.pod_target_rps,
            "cpu_request_cores": self.cpu_request,
            "hourly_cost_usd": self.hourly_cost_usd,
            "monthly_cost_usd": self.hourly_cost_usd * HOURS_PER_MONTH,
            "egress_monthly_usd": self.egress_monthly_usd,
            "total_monthly_usd": self.total_monthly_usd,
            "usd_per_million_requests": usd_per_million(
                self.total_monthly_usd / HOURS_PER_MONTH, target_rps
            ),
            "p_meets_target": self.p_meet,
            "confidence": self.confidence,
        }


def measured_cpu_ratio(
    rows: Sequence[Mapping[str, JsonValue]], pod_cpus: int, sla_p99_ms: float, headroom: float
) -> tuple[float, str] | None:
    """From a run's trials: how the measured CPU at the headroom load bends from the model's.

    The model's CPU grows in proportion to the load, so at the headroom load it is
    ``1 - headroom`` of the CPU at the SLA load; the measured curve's CPU at the headroom
    load over that is the factor returned (1 on a straight line through zero).

    The trials of the vCPU count nearest ``pod_cpus`` (valid, with server CPU recorded),
    ordered by RPS; the SLA load is the highest RPS whose p99 is within ``sla_p99_ms``; the
    server CPU at ``(1 - headroom)`` of it is interpolated linearly along RPS (from 0 at 0).

    Returns
    -------
    (ratio, source) or None
        None when no trial met the SLA.
    """
    good = [
        r
        for r in rows
        if r.get("valid")
        and r.get("rps")
        and r.get("server_cpu_pct") is not None
        and r.get("latency_p99_ms") is not None
    ]
    if not good:
        return None
    vcpus = min({as_int(r["vcpus"]) for r in good}, key=lambda v: (abs(v - pod_cpus), v))
    pts = sorted(
        (
            as_float(r["rps"]),
            as_float(r["server_cpu_pct"]) / 100.0,
            as_float(r["latency_p99_ms"]),
            r,
        )
        for r in good
        if as_int(r["vcpus"]) == vcpus
    )
    ok = [p for p in pts if p[2] <= sla_p99_ms]
    if not ok:
        return None
    sla_rps, sla_cpu, _, best = max(ok, key=lambda p: p[0])
    want = sla_rps * (1.0 - headroom)
    curve = [(0.0, 0.0)] + [(x, c) for x, c, _, _ in pts if x <= sla_rps]
    cpu = sla_cpu
    for (x0, c0), (x1, c1) in itertools.pairwise(curve):
        if x0 <= want <= x1:
            cpu = c0 if x1 == x0 else c0 + (c1 - c0) * (want - x0) / (x1 - x0)
            break
    if cpu <= 0:
        return None
    src = (
        f"run {best['run_id']}: {vcpus} vCPU(s), p99 within {sla_p99_ms:g} ms up to "
        f"{sla_rps:,.0f} RPS at {sla_cpu:.2f} CPU; {cpu:.2f} CPU at {want:,.0f} RPS "
        "(interpolated along the measured curve)"
    )
    return cpu / ((1.0 - headroom) * sla_cpu), src


def _same_workload(row: Mapping[str, JsonValue], work: Workload) -> bool:
    """Whether a trial measured ``work``: scenario, protocol, HTTP version and body size."""
    return (
        row.get("scenario") == work.scenario
        and row.get("protocol") == work.protocol
        and str(row.get("http_version") or "1.1") == work.http_version
        and row.get("file_bytes") == work.file_bytes
        and not row.get("simulated")
    )


def _left_out(n: Instance, pricing: str, pod_cpus: int) -> str:
    """Why node type ``n`` cannot hold the pods ('' when it can)."""
    if n.burstable:
        return "burstable CPU"
    if n.price(pricing) is None:
        return f"no {pricing} price"
    if not _LABEL_VALUE.fullmatch(n.instance_type):
        return "its name is not a Kubernetes label value (no node selector can name it)"
    if n.vcpus < pod_cpus:
        return f"{n.vcpus} vCPU(s): fewer than a pod's {pod_cpus}"
    return ""


def _left(n: Instance, reason: str) -> dict[str, str]:
    """A node type left out, and why."""
    return {"node_type": n.instance_type, "region": n.region, "reason": reason}


def fit_nodes(
    target_rps: float,
    nodes: Sequence[Instance],
    work: Workload,
    rules: FleetRules,
    pod_cpus: int = 2,
    evidence: object = None,
    profiles: Sequence[CostProfile] = (),
) -> tuple[list[NodeFit], list[dict[str, str]]]:
    """Every node type's fit for the target, cheapest first, and the types left out."""
    work = replace(work, environment="kubernetes")
    fits: list[NodeFit] = []
    excluded: list[dict[str, str]] = []
    candidates = []
    for n in nodes:
        why = _left_out(n, rules.pricing, pod_cpus)
        if why:
            excluded.append(_left(n, why))
        else:
            candidates.append(n)
    pod_shapes = [replace(n, vcpus=pod_cpus) for n in candidates]
    node_caps = capacities(candidates, work, evidence, profiles)
    pod_caps = capacities(pod_shapes, work, evidence, profiles)
    for n, node_cap, pod in zip(candidates, node_caps, pod_caps, strict=True):
        fit = _fit_node(n, node_cap, pod, target_rps, rules, pod_cpus)
        if isinstance(fit, str):
            excluded.append(_left(n, fit))
        else:
            fits.append(fit)
    fits.sort(key=lambda f: (f.hourly_cost_usd, f.nodes, f.node.provider, f.node.instance_type))
    return fits, excluded


def _fit_node(
    n: Instance,
    node_cap: Capacity,
    pod: Capacity,
    target_rps: float,
    rules: FleetRules,
    pod_cpus: int,
) -> NodeFit | str:
    """One node type's fit for the target, or why it is left out."""
    memory_mib = POD_MEMORY_BASE_MIB + POD_MEMORY_PER_WORKER_MIB * pod_cpus
    price = n.price(rules.pricing)
    assert price is not None
    if pod.cpu_sla_rps <= 0 or pod.cpu_peak_rps <= 0:
        return "misses the SLA"
    # A pod whose CPU would carry more than the node's NIC gets the NIC's share.
    net_usable = node_cap.network_rps * (1.0 - rules.headroom)
    target_pod = min(pod.cpu_sla_rps * (1.0 - rules.headroom), net_usable)
    if not target_pod > 0:
        return "no network"
    # The pod runs at the SLA utilisation of its CPUs at its SLA load (measured evidence
    # moves the load, not the utilisation).
    cores_per_request = pod_cpus * pod.max_utilization / pod.cpu_sla_rps
    request = math.ceil(target_pod * cores_per_request * 1000.0) / 1000.0
    cpu_at_sla = min(pod.cpu_sla_rps, node_cap.network_rps) * cores_per_request
    alloc_cpu = n.vcpus - reserved_cpu(n.vcpus) - DAEMONSET_CPU
    alloc_mem = (
        n.memory_gib - reserved_memory_gib(n.memory_gib) - DAEMONSET_MEMORY_GIB
    ) - EVICTION_MEMORY_GIB
    limits = {
        "cpu": math.floor(alloc_cpu / max(request, 0.001) + 1e-9),
        "memory": math.floor(alloc_mem * 1024 / memory_mib + 1e-9),
        "max pods": MAX_PODS_PER_NODE,
        "network": math.floor(net_usable / target_pod + 1e-9),
    }
    limited_by, ppn = min(limits.items(), key=lambda kv: kv[1])
    if ppn < 1:
        return f"no pod fits ({limited_by})"
    # Each pod's capacity: its CPU under the SLA, or its share of the node's NIC.
    share = node_cap.network_rps / ppn
    pod = replace(pod, capacity_rps=min(pod.cpu_sla_rps, share), network_rps=share)
    # At the request's confidence: each pod at the 1 - confidence quantile of its capacity.
    usable = min(pod.quantile(1.0 - rules.confidence) * (1.0 - rules.headroom), target_pod)
    replicas = count_for(target_rps, usable, rules)
    need = min_instances(target_rps, usable)
    if replicas is None or need is None:
        return "too many pods"
    per_zone_nodes = [math.ceil(z / ppn) for z in per_zone(replicas, rules.zones)]
    return NodeFit(
        node=n,
        pod=pod,
        node_cap=node_cap,
        pod_target_rps=target_pod,
        cpu_request=request,
        cpu_at_sla=cpu_at_sla,
        memory_mib=memory_mib,
        replicas=replicas,
        min_available=need,
        pods_per_node=ppn,
        limited_by=limited_by,
        nodes=sum(per_zone_nodes),
        nodes_per_zone=per_zone_nodes,
        price=price,
        p_meet=p_meet(replicas, pod, target_rps, rules),
        confidence=rules.confidence,
    )


def manifests(
    fit: NodeFit,
    *,
    name: str = "nginx",
    namespace: str | None = None,
    image: str = "nginx:1.27",
    zones: int = 1,
    hpa_percent: int,
    max_replicas: int | None = None,
) -> list[JsonObject]:
    """The Deployment, PodDisruptionBudget and HorizontalPodAutoscaler for ``fit``."""
    check_name(name, "name")
    if namespace is not None:
        check_name(namespace, "namespace")
    check_image(image)
    meta: dict[str, Any] = {"name": name, "labels": {"app.kubernetes.io/name": name}}
    if namespace is not None:
        meta["namespace"] = namespace
    selector = {"matchLabels": {"app.kubernetes.io/name": name}}
    cpus = fit.pod.instance.vcpus
    resources = {
        "requests": {"cpu": f"{round(fit.cpu_request * 1000)}m", "memory": f"{fit.memory_mib}Mi"},
        "limits": {"cpu": str(cpus), "memory": f"{fit.memory_mib}Mi"},
    }
    pod_spec: dict[str, Any] = {
        "nodeSelector": {"node.kubernetes.io/instance-type": fit.node.instance_type},
        "containers": [
            {
                "name": "nginx",
                "image": image,
                "ports": [{"containerPort": 80, "name": "http"}],
                "resources": resources,
                "readinessProbe": {"tcpSocket": {"port": "http"}, "periodSeconds": 5},
            }
        ],
    }
    if zones > 1:
        pod_spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": selector,
            }
        ]
    deployment: JsonObject = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {
            "replicas": fit.replicas,
            "selector": selector,
            "template": {"metadata": {"labels": dict(meta["labels"])}, "spec": pod_spec},
        },
    }
    pdb: JsonObject = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": meta,
        "spec": {"minAvailable": fit.min_available, "selector": selector},
    }
    hpa: JsonObject = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": meta,
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": fit.replicas,
            "maxReplicas": max(max_replicas or 2 * fit.replicas, fit.replicas),
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": hpa_percent},
                    },
                }
            ],
        },
    }
    return [deployment, pdb, hpa]


def price_egress(fits: list[NodeFit], traffic: dict[str, Any] | None, zones: int) -> None:
    """Price the traffic's egress where each fit runs, and rank the fits on the total bill.

    Parameters
    ----------
    fits : list of NodeFit
        Sorted in place, cheapest in all first.
    traffic : dict or None
        The answer's traffic (``monthly_gib`` [GiB], ``clients``); None prices nothing.
    zones : int
        Zones the nodes are spread over (inter-zone traffic with VPC clients).
    """
    if traffic:
        priced: dict[tuple[str, str], float | None] = {}
        for f in fits:
            where = (f.node.provider, f.node.region)
            if where not in priced:
                priced[where] = egress_cost(
                    *where, traffic["monthly_gib"], clients=traffic["clients"], zones=zones
                ).get("usd_month")
            f.egress_monthly_usd = priced[where]
    fits.sort(key=lambda f: (f.total_monthly_usd, f.nodes, f.node.provider, f.node.instance_type))


def hpa_target(fit: NodeFit, measured: tuple[float, str] | None = None) -> tuple[int, str]:
    """The HPA's target CPU utilisation [% of the request] and where it comes from.

    The CPU at the headroom load (the pod's target RPS) over the CPU request, times the
    measured curve's bend when a run gives one (`measured_cpu_ratio`), capped at what the
    limit allows (``limit / request``), floored to a whole percent.
    """
    cap = fit.pod.instance.vcpus / fit.cpu_request
    pod = fit.pod
    per_request = pod.instance.vcpus * pod.max_utilization / pod.cpu_sla_rps  # [CPU s]
    ratio = fit.pod_target_rps * per_request / fit.cpu_request
    how = (
        f"model: {fit.pod_target_rps:,.0f} RPS per pod; the SLA knee, "
        f"{fit.pod.cpu_sla_rps:,.0f} RPS at SLA utilisation {fit.pod.max_utilization:.1%} "
        "(sizing.model.capacity.sla_utilization), is the headroom above it"
    )
    if measured is not None:
        bend, src = measured
        ratio *= bend
        how = f"measured: {src}; x{bend:.2f} of the model's straight line"
    percent = max(1, math.floor(100.0 * min(ratio, cap) + 1e-9))
    return percent, how


# ----------------------------------------------------------------------------- YAML


_PLAIN_KEY = re.compile(r"[A-Za-z][A-Za-z0-9./_-]{0,252}")


def _key(value: object) -> str:
    text = str(value)
    return text if _PLAIN_KEY.fullmatch(text) else _scalar(text)


def _scalar(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    # A JSON string is a YAML double-quoted scalar: every character escaped as YAML reads it.
    return json.dumps(str(value), ensure_ascii=True)


def _emit(value: object, indent: int, out: list[str]) -> None:
    pad = " " * indent
    if isinstance(value, dict):
        for k, v in value.items():
            key = _key(k)
            if isinstance(v, dict | list) and v:
                out.append(f"{pad}{key}:")
                _emit(v, indent + 2, out)
            else:
                out.append(f"{pad}{key}: {_empty(v)}")
    elif isinstance(value, list):
        for v in value:
            if isinstance(v, dict | list) and v:
                sub: list[str] = []
                _emit(v, indent + 2, sub)
                out.append(f"{pad}- {sub[0].lstrip()}")
                out += sub[1:]
            else:
                out.append(f"{pad}- {_empty(v)}")
    else:
        out.append(f"{pad}{_scalar(value)}")


def _empty(v: object) -> str:
    if isinstance(v, dict):
        return "{}"
    if isinstance(v, list):
        return "[]"
    return _scalar(v)


def to_yaml(docs: Sequence[Mapping[str, object]], comments: Sequence[str] = ()) -> str:
    """Documents as block YAML (every string double-quoted), ``#`` comments first.

    Comment lines are made single-line and printable, so no text in them starts a document.
    """
    out = [f"# {clean(c)}" for c in comments]
    for d in docs:
        out.append("---")
        _emit(d, 0, out)
    return "\n".join(out) + "\n"


def _comments(
    best: NodeFit,
    fits: Sequence[NodeFit],
    work: Workload,
    rules: FleetRules,
    target_rps: float,
    pod_cpus: int,
    hpa: tuple[int, str],
) -> list[str]:
    """The answer in comment lines: nodes and their bill, pods, HPA, PDB, sources, the next."""
    percent, how = hpa
    n = best.node
    egress = (
        "egress not priced"
        if best.egress_monthly_usd is None
        else f"${best.egress_monthly_usd:,.0f} egress"
    )
    comments = [
        f"nginx-sizing: {target_rps:,.0f} RPS, p99 <= {work.sla_p99_ms:g} ms, {work.describe()}",
        f"nodes: {best.nodes} x {n.instance_type} ({n.provider} {n.region}, {rules.pricing}) "
        f"in {rules.zones} zone(s), {'/'.join(map(str, best.nodes_per_zone))} per zone, "
        f"${best.total_monthly_usd:,.0f}/month in all "
        f"(${best.hourly_cost_usd * HOURS_PER_MONTH:,.0f} nodes + {egress}; "
        f"${best.hourly_cost_usd:,.2f}/hour), "
        f"{fmt_usd_small(usd_per_million(best.total_monthly_usd / HOURS_PER_MONTH, target_rps))}"
        " per million requests; "
        f"the cheapest in all of {len(fits)} node type(s) that fit",
        f"pods: {best.replicas} x {pod_cpus} CPU(s), {best.pods_per_node} per node "
        f"(limited by {best.limited_by}); P(meet) {best.p_meet:.0%}, the count that keeps the "
        f"headroom with {rules.confidence:.0%} confidence",
        f"pod: {best.pod.cpu_sla_rps:,.0f} RPS under the SLA, target {best.pod_target_rps:,.0f} "
        f"RPS (headroom {rules.headroom:.0%}); CPU request {best.cpu_request:.3f} = CPU at the "
        f"target RPS; limit {pod_cpus}",
        f"HPA target {percent}% of the request: CPU at the headroom load ({how})",
        f"PDB minAvailable {best.min_available}: the pods that carry the target with the "
        f"headroom; replicas {best.replicas} survive losing {rules.zone_loss} of "
        f"{rules.zones} zone(s)"
        + (
            "; no pod may be evicted voluntarily (node drains wait): --redundancy or "
            "--zones 3 --zone-loss 1 leave room"
            if best.min_available >= best.replicas
            else ""
        ),
        *(f"{k}: {v}" for k, v in SOURCES.items()),
        *(b for b in best.pod.basis if b.startswith(("CPU time", "platform", "estimate: SLA"))),
    ]
    for f in fits[1:4]:
        comments.append(
            f"next: {f.nodes} x {f.node.instance_type} ({f.node.region}) "
            f"${f.total_monthly_usd:,.0f}/month in all (${f.hourly_cost_usd:,.2f}/hour), "
            f"{f.replicas} pods, {f.pods_per_node} per node"
        )
    return comments


class K8sAnswer(TypedDict):
    """`k8s_answer`'s answer: the manifests, the nodes, the autoscaler's target.

    The manifests as YAML (with its comments) and as objects, the node chosen and every node
    fitted, the autoscaler's target and its basis, the nodes left out and why.
    """

    yaml: str
    manifests: list[JsonObject]
    node: JsonObject
    nodes: list[JsonObject]
    hpa_target_percent: int
    hpa_source: str
    excluded: list[dict[str, str]]
    comments: list[str]


def k8s_answer(
    target_rps: float,
    nodes: Sequence[Instance],
    work: Workload,
    rules: FleetRules,
    pod: Pod = Pod(),
    basis: PodBasis = PodBasis(),
) -> K8sAnswer:
    """The whole answer: manifests for the node type cheapest in all, and the packing table.

    The node types are ranked on their total bill: the nodes plus ``basis.traffic``'s egress
    priced where each runs.

    Raises
    ------
    InputError
        For a bad name, namespace, image or pod size.
    Infeasible
        When no node type fits a pod.
    """
    pod.check()
    work = replace(work, environment="kubernetes")
    fits, excluded = fit_nodes(
        target_rps, nodes, work, rules, pod.cpus, basis.evidence, basis.profiles
    )
    price_egress(fits, basis.traffic, rules.zones)
    if not fits:
        raise Infeasible(
            f"no node type fits a {pod.cpus}-CPU NGINX pod for {target_rps:,.0f} RPS under "
            f"p99 {work.sla_p99_ms:g} ms"
        )
    best = fits[0]
    same = [r for r in basis.runs_rows if _same_workload(r, work)]
    measured = measured_cpu_ratio(same, pod.cpus, work.sla_p99_ms, rules.headroom)
    percent, how = hpa_target(best, measured)
    if basis.runs_rows and measured is None:
        how += (
            "; the runs given measured no trial of this workload within the SLA"
            if not same
            else "; no trial of the runs met the SLA"
        )
    docs = manifests(
        best,
        name=pod.name,
        namespace=pod.namespace,
        image=pod.image,
        zones=rules.zones,
        hpa_percent=percent,
        max_replicas=pod.max_replicas,
    )
    comments = _comments(best, fits, work, rules, target_rps, pod.cpus, (percent, how))
    return {
        "yaml": to_yaml(docs, comments),
        "manifests": docs,
        "node": best.row(target_rps),
        "nodes": [f.row(target_rps) for f in fits],
        "hpa_target_percent": percent,
        "hpa_source": how,
        "excluded": excluded,
        "comments": comments,
    }

"""A load generator on the server's own VM: its CPU time per request, from a fitted source.

SpareCores' static_web task (``sparecores-static-web`` in ``data/cloud/sources.csv``) runs wrk
on the same VM as the server and records the server process's CPU seconds beside the
requests per second. With every vCPU busy (the run with the highest rate), the server's share
of the VM is ``s = cpu_us_per_request x rps / (1e6 x vCPUs)``; the rest, ``(1 - s) x vCPUs x
1e6 / rps`` [us of a vCPU per request], is the client's (wrk, its loopback half and the
kernel's share).

The client is not NGINX: across platforms its CPU time per request follows the stand-in
server's placement of the platform (binserve beside it on the same VM), not NGINX's. The
cloud fit places each platform from the stand-in first, then moves the speed to real NGINX's
rows, to NGINX's hyper-thread gain and to a published generation step
(`sizing.fitting.cloudfit.fit_cloud_model`, stages 3-4); the client's own speed
(`client_speed`) is the speed before those moves. Times that speed, the client's time per
request is nearly the same on every platform (`ClientCost.rel_sd`); times NGINX's speed it
is not (``nginx_speed_sd``). On a platform, ``ratio`` = NGINX's speed over the client's turns
the client's reference cost into NGINX's scale (`nginx_share`):

    capacity with the client on the VM = vCPUs x speed x 1e6 / (cpu_us_nginx + client_us x ratio)

Used by the benchmarks for published runs whose client shared the VM.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from functools import cache

__all__ = [
    "ClientCost",
    "ClientRow",
    "ClientSpeed",
    "client_rows",
    "client_speed",
    "nginx_share",
    "same_vm_client_cost",
    "speed_ratio",
    "unknown_cpu_sd",
]

#: The fitted source that records the client's and the server's CPU on one VM.
SOURCE = "sparecores-static-web"
#: Its body size whose rows are read [B]: a small static response, as the runs it is used for.
BODY_BYTES = 1024
#: Machines above this many vCPUs are left out (as `sizing.fitting.cloudfit.MAX_VCPUS`).
MAX_VCPUS = 16


@dataclass(frozen=True)
class ClientCost:
    """The same-VM client's CPU time per request on the reference core, with its spread.

    Attributes
    ----------
    us : float
        Median over instance types [us on the reference core], converted with the client's
        own speed (`client_speed`).
    rel_sd : float
        Log-scale sd over instance types (1.4826 x MAD of the logs).
    server_share : float
        Median share of the VM's CPU time the server process used [1].
    n : int
        Instance types behind the figures.
    source : str
        What it rests on, in words.
    nginx_speed_sd : float
        The log sd over instance types had the client's time been converted with NGINX's
        speed of each platform instead (the conversion it replaces) [1].
    """

    us: float
    rel_sd: float
    server_share: float
    n: int
    source: str
    nginx_speed_sd: float = 0.0


@dataclass(frozen=True)
class ClientSpeed:
    """How fast the same-VM client runs on one platform, against NGINX.

    Attributes
    ----------
    ratio : float
        NGINX's per-vCPU speed over the client's on the platform [1]: a client request of
        ``us`` on the client's reference scale costs ``us x ratio`` on NGINX's.
    source : str
        What the client's speed rests on, in words.
    """

    ratio: float
    source: str


def speed_ratio(nginx_shift: float, smt_shift: float, cap_shift: float) -> float:
    """NGINX's speed over the stand-in's placement of a platform, from the fit's log shifts [1].

    Parameters
    ----------
    nginx_shift : float
        Log shift to the platform's real-NGINX rows (stage 3b of the cloud fit).
    smt_shift : float
        Log shift of a hyper-thread to NGINX's hyper-thread gain (stage 3a; 0 for a core).
    cap_shift : float
        Log shift of a stand-in-only speed held to a published step (stage 4; <= 0).
    """
    return math.exp(nginx_shift + smt_shift + cap_shift)


def client_speed(platform_id: str, threads_per_core: int, cls: str) -> ClientSpeed:
    """The same-VM client's speed on a platform and vCPU kind, as NGINX's speed over it.

    The client's speed is the cloud fit's placement of the platform by the stand-in server
    (whose own client, wrk, shares its VM), before the moves to real NGINX. A platform
    measured only as the other vCPU kind takes that kind's shifts (and the class's
    hyper-thread shift for a hyper-thread); one the fit never placed gets ratio 1 (the
    client taken at NGINX's speed), and its source says so.
    """
    from sizing.model.capacity import cloud_model
    from sizing.model.cloud import CloudModel

    model = cloud_model()
    if model is None:
        return ClientSpeed(1.0, "no cloud model shipped: the client taken at NGINX's speed")
    sp = model.speeds.get(CloudModel.key(platform_id, threads_per_core, cls))
    smt = sp.smt_shift if sp is not None else 0.0
    if sp is None:
        sp = model.speeds.get(CloudModel.key(platform_id, 3 - threads_per_core, cls))
        ht = [
            v.smt_shift
            for v in model.speeds.values()
            if v.workload_class == cls and v.threads_per_core == 2
        ]
        smt = ht[0] if ht and threads_per_core == 2 else 0.0
    if sp is None:
        return ClientSpeed(
            1.0,
            f"{platform_id}: not placed by the cloud fit, the client taken at NGINX's speed",
        )
    ratio = speed_ratio(sp.nginx_shift, smt, sp.cap_shift)
    return ClientSpeed(
        ratio,
        f"the client's own speed: the stand-in's placement of {platform_id} ({SOURCE}, "
        f"binserve with wrk on the same VM; data/cloud/measurements.csv), NGINX's speed over it "
        f"x{ratio:.2f} (real-NGINX shift x{math.exp(sp.nginx_shift):.2f}, hyper-thread shift "
        f"x{math.exp(smt):.2f}, published-step cap x{math.exp(sp.cap_shift):.2f})",
    )


def nginx_share(nginx_us: float, client_us: float, ratio: float = 1.0) -> float:
    """NGINX's share of a VM's CPU time when a client on the VM sends it every request [1].

    Parameters
    ----------
    nginx_us : float
        NGINX's CPU time per request on the reference core [us].
    client_us : float
        The client's, on the client's own reference scale [us] (`ClientCost.us`).
    ratio : float
        NGINX's speed over the client's on the platform (`ClientSpeed.ratio`) [1].
    """
    if nginx_us <= 0 or client_us < 0 or ratio <= 0:
        raise ValueError(f"nginx_share: bad costs {nginx_us}, {client_us}, ratio {ratio}")
    return nginx_us / (nginx_us + client_us * ratio)


def _robust(logs: list[float]) -> tuple[float, float]:
    """Median and 1.4826 x MAD of a list of logs."""
    mid = statistics.median(logs)
    return mid, 1.4826 * statistics.median(abs(x - mid) for x in logs)


@dataclass(frozen=True)
class ClientRow:
    """One SpareCores instance type's same-VM run at its highest rate (1 KiB, <= 16 vCPUs).

    Attributes
    ----------
    instance_type, platform_id : str
        The instance type and its platform id.
    threads_per_core : int
        vCPUs per core of the type (1 or 2).
    server_share : float
        Share of the VM's CPU time the server process used [1].
    client_vcpu_us : float
        The client's CPU time per request [us of one vCPU].
    nginx_speed : float
        The model's NGINX speed of the type's vCPU [reference cores].
    ratio : float
        NGINX's speed over the client's (`client_speed`) [1].
    """

    instance_type: str
    platform_id: str
    threads_per_core: int
    server_share: float
    client_vcpu_us: float
    nginx_speed: float
    ratio: float


@cache
def client_rows() -> tuple[ClientRow, ...]:
    """The `ClientRow` of every SpareCores instance type with 1 KiB rows and <= 16 vCPUs."""
    from sizing.fitting.cloudfit import catalog_threads_per_core
    from sizing.fitting.cloudtruth import load_cloud_measurements
    from sizing.model.capacity import cloud_speed
    from sizing.model.cloud import workload_class
    from sizing.model.platforms import platforms
    from sizing.workload.value import Workload

    df = load_cloud_measurements()
    df = df[(df["source_id"] == SOURCE) & (df["body_bytes"] == BODY_BYTES)]
    df = df[df["vcpus"] <= MAX_VCPUS]
    wide = df.pivot_table(
        index=["instance_type", "vcpus", "cpu_platform"], columns="metric", values="value"
    ).reset_index()
    known, tpc_of = platforms(), catalog_threads_per_core()
    work = Workload(protocol="http", file_bytes=BODY_BYTES)
    out: list[ClientRow] = []
    columns = zip(
        wide["instance_type"].astype(str),
        wide["cpu_platform"].astype(str),
        wide["vcpus"].to_numpy(dtype=float),
        wide["cpu_us_per_request"].to_numpy(dtype=float),
        wide["rps"].to_numpy(dtype=float),
        strict=True,
    )
    for inst, plat_id, vcpus, server_us, rps in columns:
        plat = known.get(plat_id)
        if plat is None or not (rps > 0 and server_us > 0):
            continue
        tpc = tpc_of.get(inst, plat.threads_per_core)
        speed = cloud_speed(plat, tpc, work)
        share = float(server_us * rps / (1e6 * vcpus))
        if speed is None or not 0 < share < 1:
            continue
        ratio = client_speed(plat_id, tpc, workload_class(BODY_BYTES)).ratio
        vcpu_us = (1 - share) * float(vcpus * 1e6 / rps)
        out.append(ClientRow(inst, plat_id, tpc, share, vcpu_us, speed[0], ratio))
    return tuple(out)


@cache
def same_vm_client_cost() -> ClientCost:
    """`ClientCost` from the fitted SpareCores rows (`client_rows`)."""
    rows = client_rows()
    own = [math.log(r.client_vcpu_us * r.nginx_speed / r.ratio) for r in rows]
    mid, sd = _robust(own)
    nginx_sd = _robust([math.log(r.client_vcpu_us * r.nginx_speed) for r in rows])[1]
    share = statistics.median(r.server_share for r in rows)
    us = math.exp(mid)
    return ClientCost(
        us=us,
        rel_sd=sd,
        server_share=share,
        n=len(rows),
        nginx_speed_sd=nginx_sd,
        source=(
            f"fitted: wrk on the server's VM (SpareCores static_web, {len(rows)} instance types "
            f"of <= {MAX_VCPUS} vCPUs, {BODY_BYTES} B): the server process used {share:.0%} of "
            f"the VM's CPU time (median), the client the rest, {us:.1f} us per request on the "
            f"reference core at the client's own speed (the stand-in's placement of each "
            f"platform; x/ {math.exp(sd):.2f}, 1 sd over instance types; x/ "
            f"{math.exp(nginx_sd):.2f} had it been converted with NGINX's speed)"
        ),
    )


@cache
def unknown_cpu_sd() -> float:
    """Log sd of the per-vCPU speeds of the x86 hyper-thread platforms real NGINX placed.

    A machine whose CPU is not named may be any of them: the sd (over platforms, small static
    requests, stand-in-only speeds left out) is how far its speed may be from the one used.
    """
    from sizing.model.capacity import cloud_model

    model = cloud_model()
    if model is None:
        raise ValueError("no cloud model is shipped (python -m sizing precompute)")
    logs = [
        math.log(s.speed)
        for s in model.speeds.values()
        if s.workload_class == "small_static" and s.threads_per_core == 2 and not s.stand_in_only
    ]
    return statistics.stdev(logs)

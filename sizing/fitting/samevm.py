"""A load generator on the server's own VM: its CPU time per request, from a fitted source.

SpareCores' static_web task (``sparecores-static-web`` in ``data/cloud/sources.csv``) runs wrk
on the same VM as the server and records the server process's CPU seconds beside the
requests per second. With every vCPU busy (the run with the highest rate), the server's share
of the VM is ``s = cpu_us_per_request x rps / (1e6 x vCPUs)``; the rest, ``(1 - s) x vCPUs x
1e6 / rps`` [us of a vCPU per request], is the client's (wrk, its loopback half and the
kernel's share). Times the vCPU's speed (`sizing.model.capacity.cloud_speed`) it is on the
reference core's scale, so it can be added to NGINX's own cost for any platform:

    capacity with the client on the VM = vCPUs x speed x 1e6 / (cpu_us_nginx + client_us)

Used by the benchmarks for published runs whose client shared the VM.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from functools import cache

__all__ = ["ClientCost", "same_vm_client_cost", "unknown_cpu_sd"]

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
        Median over instance types [us on the reference core].
    rel_sd : float
        Log-scale sd over instance types (1.4826 x MAD of the logs).
    server_share : float
        Median share of the VM's CPU time the server process used [1].
    n : int
        Instance types behind the figures.
    source : str
        What it rests on, in words.
    """

    us: float
    rel_sd: float
    server_share: float
    n: int
    source: str


@cache
def same_vm_client_cost() -> ClientCost:
    """`ClientCost` from the fitted SpareCores rows (1 KiB bodies, <= 16 vCPUs)."""
    from sizing.fitting.cloudfit import catalog_threads_per_core
    from sizing.fitting.cloudtruth import load_cloud_measurements
    from sizing.model.capacity import cloud_speed
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
    shares: list[float] = []
    costs: list[float] = []
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
        speed = cloud_speed(plat, tpc_of.get(inst, plat.threads_per_core), work)
        share = float(server_us * rps / (1e6 * vcpus))
        if speed is None or not 0 < share < 1:
            continue
        shares.append(share)
        costs.append((1 - share) * float(vcpus * 1e6 / rps) * speed[0])
    logs = [math.log(c) for c in costs]
    mid = statistics.median(logs)
    sd = 1.4826 * statistics.median(abs(x - mid) for x in logs)
    share = statistics.median(shares)
    us = math.exp(mid)
    return ClientCost(
        us=us,
        rel_sd=sd,
        server_share=share,
        n=len(costs),
        source=(
            f"fitted: wrk on the server's VM (SpareCores static_web, {len(costs)} instance types "
            f"of <= {MAX_VCPUS} vCPUs, {BODY_BYTES} B): the server process used {share:.0%} of "
            f"the VM's CPU time (median), the client the rest, {us:.1f} us per request on the "
            f"reference core (x/ {math.exp(sd):.2f}, 1 sd over instance types)"
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

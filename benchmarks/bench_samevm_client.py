"""A load generator on the server's VM: does its cost per request follow NGINX's speed?

Run (a few seconds)::

    PYTHONPATH=. .venv/bin/python benchmarks/bench_samevm_client.py

Fitted data only (``data/cloud/measurements.csv``); no held-out row is read. Per platform
and vCPU kind, over SpareCores' static_web runs (binserve and wrk on one VM, 1 KiB,
<= 16 vCPUs, `sizing.fitting.samevm.client_rows`):

- ``client``: wrk's CPU time per request on one vCPU [us], median over instance types, and
  its step over Cascade Lake (hyper-threads) per vCPU;
- ``server``: the stand-in server's step, from its own CPU time on the same runs;
- ``model NGINX``: the step of the model's NGINX speeds (`sizing.model.capacity.cloud_speed`);
- ``EKS NGINX``: the step real NGINX measured with its client on another node
  (``aws-ec2-benchmark-nginx``, xlarge types, vCPUs x 1e6 / highest RPS);
- ``ratio``: NGINX's speed over the client's own (`sizing.fitting.samevm.client_speed`).

Then the client's reference cost's spread over instance types, converted with NGINX's speed
(as before), with CoreMark's (a general CPU benchmark) and with the client's own (as now).
"""

from __future__ import annotations

import math
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable

from sizing.fitting.samevm import ClientRow

#: The platform and vCPU kind the steps are taken over (c5's Cascade Lake, hyper-threads).
BASE = ("cascade_lake", 2)
#: Rows printed: the held-out same-VM rows' platforms first, then the others measured both ways.
SHOWN = (
    ("cascade_lake", 2),
    ("skylake", 2),
    ("zen2", 2),
    ("ice_lake", 2),
    ("graviton2", 1),
    ("graviton3", 1),
    ("sapphire_rapids", 2),
    ("graviton4", 1),
    ("granite_rapids", 2),
    ("zen1", 2),
    ("zen3", 2),
    ("zen4", 2),
    ("axion", 1),
    ("altra", 1),
)
EKS = "aws-ec2-benchmark-nginx"


def eks_vcpu_us() -> dict[str, float]:
    """Real NGINX's CPU time per request on one vCPU [us], median per platform (EKS, xlarge)."""
    from sizing.fitting.cloudtruth import load_cloud_measurements

    df = load_cloud_measurements()
    df = df[(df["source_id"] == EKS) & (df["metric"] == "rps")]
    best = df.groupby(["cpu_platform", "instance_type", "vcpus"])["value"].max().reset_index()
    per: dict[str, list[float]] = defaultdict(list)
    for plat, vcpus, rps in zip(best["cpu_platform"], best["vcpus"], best["value"], strict=True):
        per[str(plat)].append(float(vcpus) * 1e6 / float(rps))
    return {p: statistics.median(v) for p, v in per.items()}


def platform_table() -> list[dict[str, float | str | int]]:
    """One row per platform and vCPU kind of `SHOWN` with the medians the module names."""
    from sizing.fitting.samevm import client_rows

    per: dict[tuple[str, int], list[ClientRow]] = defaultdict(list)
    for r in client_rows():
        per[(r.platform_id, r.threads_per_core)].append(r)
    eks = eks_vcpu_us()

    def med(key: tuple[str, int], f: Callable[[ClientRow], float]) -> float:
        return statistics.median(f(r) for r in per[key])

    def server_us(r: ClientRow) -> float:
        return r.client_vcpu_us * r.server_share / (1 - r.server_share)

    base_c, base_s = med(BASE, lambda r: r.client_vcpu_us), med(BASE, server_us)
    base_n = med(BASE, lambda r: r.nginx_speed)
    out: list[dict[str, float | str | int]] = []
    for key in SHOWN:
        if key not in per:
            continue
        client = med(key, lambda r: r.client_vcpu_us)
        out.append(
            {
                "platform": f"{key[0]}/{key[1]}",
                "n": len(per[key]),
                "client_us": client,
                "client_step": base_c / client,
                "server_step": base_s / med(key, server_us),
                "nginx_step": med(key, lambda r: r.nginx_speed) / base_n,
                "eks_step": eks[BASE[0]] / eks[key[0]] if key[0] in eks else math.nan,
                "ratio": med(key, lambda r: r.ratio),
            }
        )
    return out


def coremark_sd() -> float:
    """Log sd (1.4826 x MAD) of the client's cost converted with CoreMark's per-vCPU speed.

    `sizing.model.platforms.Platform.vcpu_speed`: Google's CoreMark per machine type turned
    into NGINX speed, the fallback for platforms no cloud measurement placed.
    """
    from sizing.fitting.samevm import client_rows
    from sizing.model.platforms import platforms

    known = platforms()
    logs = [
        math.log(r.client_vcpu_us * known[r.platform_id].vcpu_speed(r.threads_per_core))
        for r in client_rows()
    ]
    mid = statistics.median(logs)
    return 1.4826 * statistics.median(abs(x - mid) for x in logs)


def main() -> int:
    from sizing.fitting.samevm import same_vm_client_cost

    print(
        f"{'platform':<20} {'n':>3} {'client us':>9}  steps over {BASE[0]}/{BASE[1]}: "
        f"{'client':>6} {'server':>6} {'model NGINX':>11} {'EKS NGINX':>9}  {'ratio':>5}"
    )
    for r in platform_table():
        eks = f"{r['eks_step']:.2f}" if math.isfinite(float(r["eks_step"])) else "-"
        print(
            f"{r['platform']:<20} {r['n']:>3} {r['client_us']:>9.2f}  {'':>22}"
            f"{r['client_step']:>6.2f} {r['server_step']:>6.2f} {r['nginx_step']:>11.2f} "
            f"{eks:>9}  {r['ratio']:>5.2f}"
        )
    c = same_vm_client_cost()
    print("\nthe client's cost per request on the reference core, over instance types:")
    print(f"  converted with NGINX's speed:    log sd {c.nginx_speed_sd:.3f} (n {c.n})")
    print(f"  converted with CoreMark's speed: log sd {coremark_sd():.3f}")
    print(f"  converted with its own speed:    log sd {c.rel_sd:.3f}, median {c.us:.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())

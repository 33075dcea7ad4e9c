"""Leave-one-out check of the platform speeds that real NGINX rows moved.

Run (about ten seconds)::

    PYTHONPATH=. .venv/bin/python benchmarks/bench_nginx_shift.py

Stage 3b of `sizing.fitting.cloudfit.fit_cloud_model` moves a platform's speed towards its
real-NGINX rows (``nginx_shift``), shrunk by n / (n + 1) for n instance types. Where n is
small, one harness's instance types decide the speed. For every speed that NGINX rows moved
and that rests on at most ``MAX_TYPES`` instance types, this refits the cloud model without
those rows (and only those) and prints the speed with and without them: how much of the
platform's speed is one harness's.

Only the fit's own data (``data/cloud/measurements.csv``) is read: no held-out row.
"""

from __future__ import annotations

import math
import sys
from typing import Any

#: Speeds moved by this many NGINX instance types or fewer are checked.
MAX_TYPES = 1


def leave_out(obs: Any, platform: str) -> Any:
    """``obs`` without the real-NGINX rows of one CPU platform (its stand-in rows kept)."""
    return obs[~((obs["server"] == "nginx") & (obs["cpu_platform"] == platform))]


def checks(max_types: int = MAX_TYPES) -> list[dict[str, Any]]:
    """Each NGINX-moved speed on few instance types: shipped speed, speed without its rows."""
    from sizing.fitting.cloudfit import fit_cloud_model, observations
    from sizing.fitting.cloudtruth import load_cloud_measurements

    obs = observations(load_cloud_measurements())
    full = fit_cloud_model(obs)
    out = []
    for key, sp in sorted(full.speeds.items()):
        if not 0 < sp.nginx_types <= max_types or sp.nginx_shift == 0:
            continue
        platform = key.split("|")[0]
        rows = obs[(obs["server"] == "nginx") & (obs["cpu_platform"] == platform)]
        without = fit_cloud_model(leave_out(obs, platform)).speeds[key]
        out.append(
            {
                "speed": key,
                "types": sorted(set(rows["instance_type"])),
                "sources": sorted(set(rows["source_id"])),
                "with": sp.speed,
                "without": without.speed,
                "shift": math.exp(sp.nginx_shift),
                "sd_without": without.rel_sd,
            }
        )
    return out


def main() -> int:
    print(f"{'speed':<28} {'with':>6} {'without':>8} {'moved':>6}  rows left out")
    for c in checks():
        print(
            f"{c['speed']:<28} {c['with']:>6.3f} {c['without']:>8.3f} "
            f"x{c['with'] / c['without']:>5.2f}  {', '.join(c['types'])} "
            f"({', '.join(c['sources'])}); without them +-{c['sd_without']:.0%}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

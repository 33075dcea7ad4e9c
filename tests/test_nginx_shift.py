"""benchmarks/bench_nginx_shift.py: which rows its leave-one-out refit leaves out."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


def _bench():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import bench_nginx_shift
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return bench_nginx_shift


def test_only_the_platforms_real_nginx_rows_are_left_out() -> None:
    obs = pd.DataFrame(
        {
            "server": ["nginx", "binserve", "nginx", "nginx"],
            "cpu_platform": ["zen2", "zen2", "zen1", "skylake"],
            "instance_type": ["c5a.xlarge", "c5a.2xlarge", "m5a.xlarge", "c5.xlarge"],
        }
    )
    left = _bench().leave_out(obs, "zen2")
    assert list(left["instance_type"]) == ["c5a.2xlarge", "m5a.xlarge", "c5.xlarge"]


def test_the_shipped_fit_moves_zen2_by_one_nginx_instance_type() -> None:
    """The speed the check refits: Zen 2's NGINX shift rests on c5a.xlarge alone."""
    from sizing.model.cloud import load_cloud_model

    model = load_cloud_model()
    assert model is not None
    sp = model.speeds["zen2|2|small_static"]
    assert sp.nginx_types == 1 and sp.nginx_shift < 0

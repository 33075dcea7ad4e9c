"""A feature's user-space cost is carried to other CPUs by their compute scores."""

from __future__ import annotations

import csv
from dataclasses import replace

import pytest

from sizing.model.capacity import (
    current_stack,
    features_profile,
    reference_profile,
    reference_request_us,
)
from sizing.model.compute import (
    COMPUTE_REL_SD,
    GEEKBENCH_PATH,
    host_platform,
    single_core_scores,
    user_factor,
)
from sizing.model.features import load_feature_costs, on_reference_core
from sizing.model.platforms import platforms
from sizing.workload.value import Workload
from trialtable.profile import feature_coefficient


def test_the_table_names_known_platforms_and_its_source() -> None:
    known = set(platforms())
    with GEEKBENCH_PATH.open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) >= 15
    assert len(known & {r["platform"] for r in rows}) >= 18  # the model's platforms
    for r in rows:
        assert r["platform"].isidentifier(), r["platform"]
        assert int(r["servers"]) >= 1
        assert (
            float(r["gb6_single_q1"]) <= float(r["gb6_single_median"]) <= float(r["gb6_single_q3"])
        )
        assert "sc-inspector-data@" in r["source"]
    # Newer cores of one line score higher (a transcription slip would break the order).
    s = single_core_scores()
    assert s["graviton2"].median < s["graviton3"].median < s["graviton4"].median
    assert s["zen2"].median < s["zen3"].median < s["zen4"].median < s["zen5"].median


def test_the_host_is_placed_by_its_cpuid_where_its_name_is_vague() -> None:
    assert host_platform("AMD EPYC (AuthenticAMD family 25 model 1 stepping 1)").platform_id == (
        "zen3"
    )
    assert host_platform("AMD EPYC").platform_id.endswith("-default")


def test_the_factor_is_static_speed_per_compute_score_against_the_hosts() -> None:
    p = platforms()
    s = single_core_scores()
    k, sd, why = user_factor((p["altra"], 1.2), (p["zen3"], 1.5))
    assert k == pytest.approx((1.2 / s["altra"].median) / (1.5 / s["zen3"].median))
    assert sd == COMPUTE_REL_SD[0] and "Geekbench 6" in why and "Ampere Altra" in why
    # The same platform, or one without a score: carried as before.
    assert user_factor((p["zen3"], 1.2), (p["zen3"], 1.5))[:2] == (1.0, 0.0)
    unknown = replace(p["zen3"], platform_id="x86_64-default")
    assert user_factor((unknown, 1.2), (p["zen3"], 1.5))[:2] == (1.0, 0.0)


def test_only_the_user_space_part_moves_and_its_spread_grows() -> None:
    cost = load_feature_costs()["lua_content"]
    ref = reference_request_us(cost.reference, cost.file_bytes)
    plain = on_reference_core(cost, ref)
    moved = on_reference_core(cost, ref, (1.4, 0.15))
    assert moved.user_us == pytest.approx(plain.user_us * 1.4)
    assert moved.kernel_us == plain.kernel_us
    assert moved.sd_us > plain.sd_us


def test_a_lua_handler_costs_more_on_a_core_slower_at_compute_than_at_static_serving() -> None:
    """Ampere Altra serves static NGINX faster, per compute score, than the measuring Zen 3."""
    p = platforms()
    work = Workload(scenario="static", features=(("lua_access", 1.0),))
    prof = current_stack(reference_profile())
    key = feature_coefficient("lua_access")
    before = features_profile(prof, work)[0].coefficients[key]
    after = features_profile(prof, work, target=(p["altra"], 1.3))[0].coefficients[key]
    assert after.value > before.value and "Geekbench 6" in after.source


def test_an_arm64_host_is_placed_by_its_part_or_its_name() -> None:
    """An arm64 host is not taken for x86: by Arm's part number, or a name of arm64 only."""
    by_part = host_platform("(ARM implementer 0x41 part 0xd40)")
    assert by_part.platform_id == "graviton3" and "part 0xd40" in by_part.matched_by
    assert host_platform("Neoverse-V2 (ARM implementer 0x41 part 0xd4f)").platform_id == (
        "graviton4"
    )
    assert host_platform("Neoverse-V1").platform_id == "graviton3"
    unknown = host_platform("(ARM implementer 0x41 part 0xfff)")
    assert unknown.arch == "arm64" and unknown.platform_id.endswith("-default")


def test_the_facts_script_reads_an_arm64_hosts_part(tmp_path) -> None:
    """The facts' CPU-id lines, run by the shell on a recorded arm64 /proc/cpuinfo excerpt."""
    import subprocess

    from runners import hosts

    lines = hosts._FACTS.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("c() {"))
    snippet = "\n".join(lines[start : start + 5]).replace("/proc/cpuinfo", str(tmp_path / "ci"))
    # The fields of a Graviton3 (c7g) /proc/cpuinfo, as the arm64 kernel prints them.
    (tmp_path / "ci").write_text(
        "processor\t: 0\nBogoMIPS\t: 2100.00\nFeatures\t: fp asimd evtstrm\n"
        "CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x1\n"
        "CPU part\t: 0xd40\nCPU revision\t: 1\n"
    )
    out = subprocess.run(["sh", "-c", snippet], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "cpu_id=ARM implementer 0x41 part 0xd40"
    assert host_platform(f"Neoverse-V1 ({out.stdout.strip()[7:]})").platform_id == "graviton3"

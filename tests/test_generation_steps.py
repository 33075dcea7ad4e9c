"""Published generation steps: the file, the cap on stand-in-only speeds, and the check.

Data: ``data/platforms/generation-steps.csv`` and the shipped ``data/fits/cloud-model.json``
(``python -m sizing precompute``). Pure: no measurement runs.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import replace

import pytest

from sizing.errors import InputError
from sizing.fitting.cloudfit import cap_to_steps
from sizing.fitting.speedcheck import step_checks
from sizing.model.cloud import CloudModel, PlatformSpeed, load_cloud_model
from sizing.model.steps import STEPS_PATH, GenerationStep, capped_speed, load_steps, parse_steps

HEADER = (
    "step_id,subject,baseline,subject_tpc,baseline_tpc,ratio_low,ratio_high,kind,families,"
    "title,publisher,date,url,quote\n"
)


def _row(**kw: str) -> str:
    cells = {
        "step_id": "s",
        "subject": "zen5",
        "baseline": "zen4",
        "subject_tpc": "1",
        "baseline_tpc": "1",
        "ratio_low": "",
        "ratio_high": "1.3",
        "kind": "web_up_to",
        "families": "a / b",
        "title": "T",
        "publisher": "P",
        "date": "2025",
        "url": "u",
        "quote": "q",
    }
    cells.update(kw)
    return ",".join(cells.values()) + "\n"


def _speed(pid: str, speed: float, *, stand_in: bool, tpc: int = 1) -> PlatformSpeed:
    return PlatformSpeed(
        pid, tpc, "small_static", speed, 0.1, 3, ["src"], stand_in_only=stand_in, stand_in_sd=0.1
    )


def _model(*speeds: PlatformSpeed) -> CloudModel:
    return CloudModel(
        speeds={
            CloudModel.key(s.platform_id, s.threads_per_core, s.workload_class): s for s in speeds
        },
        smt_gain={"small_static": (1.1, 0.1, "test")},
        environments={},
        within_sd={},
        between_source_sd=0.1,
        between_source_pairs=1,
        anchor="haswell",
        fitted_on=["src"],
    )


def test_every_shipped_quote_holds_its_bound() -> None:
    steps = load_steps()
    assert {s.step_id for s in steps} >= {"aws-m8a-vs-m7a-any", "aws-m9g-vs-m8g-web"}
    with STEPS_PATH.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    for row, step in zip(rows, steps, strict=True):
        percents = {int(p) for p in re.findall(r"(\d+)%", row["quote"])}
        assert round((step.high - 1) * 100) in percents, row["step_id"]
        if step.low is not None:
            assert round((step.low - 1) * 100) in percents, row["step_id"]
        assert row["title"] and row["publisher"] and row["url"].startswith("https://")


@pytest.mark.parametrize(
    ("cells", "says"),
    [
        ({"kind": "rumour"}, "kind"),
        ({"ratio_high": "fast"}, "not a number"),
        ({"ratio_high": "-1"}, "not a positive ratio"),
        ({"subject_tpc": "4"}, "subject_tpc"),
        ({"kind": "nginx", "ratio_low": "1.5", "ratio_high": "1.2"}, "above ratio_high"),
        ({"kind": "web_up_to", "ratio_low": "1.1"}, "'up to' kind"),
        ({"kind": "nginx", "ratio_low": ""}, "'up to' kind"),
    ],
)
def test_a_bad_row_is_one_line_naming_file_and_line(cells: dict[str, str], says: str) -> None:
    with pytest.raises(InputError) as err:
        parse_steps(HEADER + _row() + _row(**cells), "steps.csv")
    assert "steps.csv line 3" in str(err.value) and says in str(err.value)
    assert "\n" not in str(err.value)
    with pytest.raises(InputError, match="columns"):
        parse_steps("a,b\n1,2\n", "steps.csv")


def test_a_speed_is_capped_at_the_bound_with_a_range_reaching_back() -> None:
    step = parse_steps(HEADER + _row(ratio_high="1.6"))[0]
    assert capped_speed(1.5, 1.0, step) is None
    speed, sd = capped_speed(2.4, 1.0, step) or (0.0, 0.0)
    assert speed == pytest.approx(1.6)
    assert speed * math.exp(1.959964 * sd) == pytest.approx(2.4)
    # a speed or baseline that is not a positive finite number is left as it is
    for speed_in, base_in in ((math.nan, 1.0), (2.4, math.nan), (2.4, 0.0), (2.4, -1.0)):
        assert capped_speed(speed_in, base_in, step) is None


def test_only_stand_in_speeds_past_the_step_are_held() -> None:
    step = parse_steps(HEADER + _row(ratio_high="1.3"))[0]
    base = _speed("zen4", 2.0, stand_in=True)
    model = _model(
        base, _speed("zen5", 4.0, stand_in=True), _speed("zen5", 2.0, stand_in=True, tpc=2)
    )
    cap_to_steps(model, [step])
    held = model.speeds["zen5|1|small_static"]
    assert held.speed == pytest.approx(2.6) and held.cap_shift == pytest.approx(math.log(2.6 / 4))
    assert held.speed * math.exp(1.959964 * held.rel_sd) >= 4.0 * 0.999
    assert "held to x1.30 of zen4" in held.source and "was 4" in held.source
    # The hyper-thread kind is set against the baseline seen as hyper-threads (SMT gain 1.1).
    assert model.speeds["zen5|2|small_static"].speed == pytest.approx(2.0 * 1.1 / 2 * 1.3)
    # A speed real NGINX measured is never moved, and a second pass moves nothing.
    measured = _model(base, _speed("zen5", 4.0, stand_in=False))
    cap_to_steps(measured, [step])
    assert measured.speeds["zen5|1|small_static"].speed == 4.0
    again = dict(model.speeds)
    cap_to_steps(model, [replace(step, high=1.1)])
    assert model.speeds == again


def test_a_measured_nginx_range_bounds_small_bodies_only() -> None:
    nginx = parse_steps(HEADER + _row(kind="nginx", ratio_low="1.5", ratio_high="1.7"))[0]
    up_to = parse_steps(HEADER + _row())[0]
    assert nginx.applies_to("small_static") and not nginx.applies_to("large_static")
    assert up_to.applies_to("small_static") and up_to.applies_to("large_static")


def test_the_shipped_fit_holds_turin_and_graviton5_and_reports_the_rest() -> None:
    model = load_cloud_model()
    assert model is not None
    checks = {(c.step_id, c.key): c for c in step_checks(model)}
    turin = checks[("aws-m8a-vs-m7a-any", "zen5|1|small_static")]
    assert turin.status == "held" and turin.ratio == pytest.approx(1.6, rel=0.01)
    assert "aws-m8a-vs-m7a-any" in model.speeds["zen5|1|small_static"].source
    g5 = checks[("aws-m9g-vs-m8g-web", "graviton5|1|small_static")]
    assert g5.status == "held" and g5.basis == "stand-in only"
    # NGINX-measured speeds are reported against the step, never moved by it.
    g4 = checks[("aws-r8g-vs-r7g-web", "graviton4|1|small_static")]
    assert g4.basis == "NGINX-measured" and g4.status in ("within", "above")
    assert not model.speeds["graviton4|1|small_static"].capped_by
    assert all(c.status != "held" or c.basis == "stand-in only" for c in checks.values())


def test_a_step_names_platforms_the_model_knows() -> None:
    from sizing.model.platforms import platforms

    known = set(platforms())
    for step in load_steps():
        assert isinstance(step, GenerationStep)
        assert {step.subject, step.baseline} <= known, step.step_id

"""The tornado varies the coefficients the answer uses, and varying one moves the capacity."""

from __future__ import annotations

import pytest

from sizing import recommend
from sizing.analyses.sensitivity import (
    UncertainInput,
    cost_at_confidence,
    sensitivity,
    uncertain_inputs,
)
from sizing.catalog.load import load_catalog
from sizing.model.capacity import instance_capacities, instance_capacity
from sizing.model.costmodel import current_stack_coefficients, reference_profile
from sizing.model.inputs import ModelInputs
from sizing.pipeline import size
from sizing.request import SizingRequest
from sizing.workload.value import Workload


def test_a_current_stack_coefficient_is_varied_around_the_value_the_answer_uses():
    current = current_stack_coefficients()
    assert "tls_byte_ns" in current
    assert current["tls_byte_ns"].value != reference_profile().coef("tls_byte_ns").value
    insts = [i for i in load_catalog() if i.region == "us-east-1" and i.family == "c7g"]
    work = Workload(protocol="https", file_bytes=16384)
    rec = recommend(1e6, insts, work)
    (tls,) = [u for u in uncertain_inputs(rec) if u.key == "coef:tls_byte_ns"]
    assert tls.value == current["tls_byte_ns"].value
    inst = next(i for i in insts if i.vcpus >= 8)
    base = instance_capacity(inst, work).cpu_peak_rps
    (high,) = instance_capacities([inst], work, model=tls.at(tls.high))
    (low,) = instance_capacities([inst], work, model=tls.at(tls.low))
    assert low.cpu_peak_rps > base > high.cpu_peak_rps  # a dearer byte, fewer requests
    assert instance_capacity(inst, work).cpu_peak_rps == base  # nothing of the model moved


@pytest.mark.parametrize(
    ("flags", "headline"),
    [
        (
            {"rps": 2e3, "providers": ("gcp",), "regions": ("us-central1",), "burstable": True},
            "1 x f1-micro",
        ),
        ({"rps": 1e6, "max_count": 4}, "4 x c7g.2xlarge"),
    ],
)
def test_the_tornado_asks_the_headline_question_with_every_flag(flags, headline):
    """--burstable and --max-count reach each end: at the point value, the headline's fleet.

    Without the flag the cheapest fleet is another (n4a-highcpu-1; 27 x c8g.medium).
    """
    answer = size(SizingRequest(**flags))
    rec = answer.recommendation
    cost, choice = cost_at_confidence(rec)
    assert choice == headline
    point = UncertainInput(
        "none", "nothing moved", "estimate", 1.0, 1.0, 1.0, "x", "test", at=lambda v: ModelInputs()
    )
    (row,) = sensitivity(rec, list(answer.instances), inputs=[point])
    assert (row.cost_low, row.choice_low) == (row.cost_high, row.choice_high) == (cost, choice)

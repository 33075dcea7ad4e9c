"""The tornado varies the coefficients the answer uses, and varying one moves the capacity."""

from __future__ import annotations

from sizing import recommend
from sizing.analyses.sensitivity import uncertain_inputs
from sizing.catalog.load import load_catalog
from sizing.model.capacity import instance_capacity
from sizing.model.costmodel import current_stack_coefficients, reference_profile
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
    with tls.apply(tls.high):
        high = instance_capacity(inst, work).cpu_peak_rps
    with tls.apply(tls.low):
        low = instance_capacity(inst, work).cpu_peak_rps
    assert low > base > high  # a dearer byte, fewer requests
    assert instance_capacity(inst, work).cpu_peak_rps == base  # and put back

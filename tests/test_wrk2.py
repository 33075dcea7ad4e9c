"""The wrk2 adapter: its command line and its output as every load generator's result."""

from __future__ import annotations

from pathlib import Path

import pytest

from runners import loadgen
from runners.errors import RunnerError
from runners.loadgen import Load, wrk2

EXAMPLE = Path(__file__).parent / "data" / "wrk2" / "readme-example.txt"


def test_command_is_wrk2_at_a_constant_rate():
    argv = wrk2.command(
        Load("http://127.0.0.1:1/x", 2, 64, 5, rate_rps=1999.6, cpus=(1,)),
    )
    assert argv[:4] == ["taskset", "-c", "1", "wrk2"]
    assert argv[argv.index("-R") + 1] == "2000"
    assert "-s" not in argv and argv[-1] == "http://127.0.0.1:1/x"


@pytest.mark.parametrize("rate", [0.0, -5.0, float("nan"), float("inf")])
def test_command_refuses_a_bad_rate(rate):
    with pytest.raises(RunnerError, match="positive rate"):
        wrk2.command(Load("http://h/", 1, 1, 1, rate_rps=rate))


def test_parse_gives_an_exact_us_histogram_that_merges():
    r = wrk2.parse(EXAMPLE.read_text())
    # wrk2 leaves its first seconds (calibration) out of the spectrum.
    assert r.requests >= sum(r.histogram_us.values()) == 39500
    assert all(isinstance(v, int) for v in r.histogram_us)
    merged = loadgen.merge([r, r])
    assert merged.requests == 2 * r.requests
    assert merged.latency_ms["p99"] == r.latency_ms["p99"]
    assert wrk2.rate_shortfall(r.rps, 2000.0) is None
    assert wrk2.rate_shortfall(r.rps, 4000.0) is not None


def test_parse_recorded_local_run():
    r = wrk2.parse((EXAMPLE.parent / "local-http-500.txt").read_text())
    assert r.requests == 1493 and r.rps == pytest.approx(497.52)
    assert r.error_count == 0
    # Few requests make a coarse spectrum: p99 is the spectrum row at or above wrk2's own.
    assert 9.14 <= r.latency_ms["p99"] <= 9.591
    assert r.latency_ms["max"] == pytest.approx(14.67, abs=0.01)
    assert wrk2.rate_shortfall(r.rps, 500.0) is None


def test_wrk2_behind_the_contract():

    gen = loadgen.get("wrk2")
    assert gen.modes == ("open",) and gen.http_versions == ("1.1",)
    with pytest.raises(loadgen.UnsupportedLoad, match="no closed-loop mode"):
        gen.check("1.1", loadgen.CLOSED)
    load = loadgen.Load("http://127.0.0.1:1/", 1, 8, 3, rate_rps=500.0)
    argv = gen.command(load, binary="/opt/wrk2", workdir="/tmp/w")
    assert argv[0] == "/opt/wrk2" and argv[argv.index("-R") + 1] == "500"
    assert gen.tool({"wrk2": "/opt/wrk2"}, loadgen.OPEN) == "/opt/wrk2"
    assert gen.parse(EXAMPLE.read_text(), load).requests == 60018
    with pytest.raises(RunnerError, match="constant rate only"):
        gen.command(loadgen.Load("http://h/", 1, 8, 3), binary="wrk2", workdir="/tmp/w")

"""wrk command lines, parsing of recorded real outputs, and exact histogram merging."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from runners import loadgen
from runners.errors import RunnerError
from runners.loadgen import wrk

DATA = Path(__file__).parent / "data" / "wrk"


def _read(name: str) -> str:
    return (DATA / name).read_text()


def _json_doc(name: str) -> dict:
    line = next(ln for ln in _read(name).splitlines() if ln.startswith(wrk.JSON_MARKER))
    return json.loads(line[len(wrk.JSON_MARKER) :])


@pytest.mark.parametrize(
    ("name", "requests", "rps", "p99_ms", "errors"),
    [
        ("static-1k-t2c64.txt", 140970, 70449.56, 1.53, {}),
        ("cps-close.txt", 20394, 18549.66, 0.359, {}),
        ("status-404.txt", 83350, 75827.67, 0.237, {"status": 83350}),
        ("throughput-10m.txt", 284, 141.53, 47.15, {}),
        ("timeouts.txt", 431, 206.97, 657.54, {"timeout": 7}),
        ("server-killed-json.txt", 65339, 21078.93, 0.229, {"read": 8, "write": 1681}),
    ],
)
def test_parse_text_recorded(name, requests, rps, p99_ms, errors):
    r = wrk.parse_text(_read(name))
    assert r.requests == requests
    assert r.rps == pytest.approx(rps)
    assert r.latency_ms["p99"] == pytest.approx(p99_ms)
    expected = dict.fromkeys(loadgen.ERROR_KINDS, 0) | errors
    assert r.errors == expected
    assert r.histogram_us == {}


def test_parse_text_units():
    r = wrk.parse_text(_read("throughput-10m.txt"))
    assert r.duration_s == pytest.approx(2.01)
    assert r.bytes == round(2.77 * 1024**3)
    assert r.latency_ms["max"] == pytest.approx(62.62)
    assert r.latency_ms["mean"] == pytest.approx(27.92)
    t = wrk.parse_text(_read("static-1k-json.txt"))
    assert t.latency_ms["mean"] == pytest.approx(0.21072)
    assert t.bytes == round(199.54 * 1024**2)


@pytest.mark.parametrize(
    "name", ["static-1k-json.txt", "status-404-json.txt", "server-killed-json.txt"]
)
def test_parse_json_matches_wrk_own_numbers(name):
    """Counts agree with wrk's text summary, percentiles with wrk's own percentile()."""
    text = _read(name)
    r = wrk.parse_json(text)
    t = wrk.parse_text(text)
    doc = _json_doc(name)
    assert r.requests == t.requests
    assert r.errors == t.errors
    assert sum(r.histogram_us.values()) > 0.99 * r.requests
    for key in ("p50", "p90", "p99", "p999"):
        assert r.latency_ms[key] == pytest.approx(doc["latency_us"][key] / 1000.0)
    # wrk prints microseconds rounded to 2 decimals: the text p99 is the same number.
    assert r.latency_ms["p99"] == pytest.approx(t.latency_ms["p99"], abs=0.006)
    assert r.latency_ms["max"] == pytest.approx(doc["latency_us"]["max"] / 1000.0)


def test_parse_json_status_errors_are_counted():
    r = wrk.parse_json(_read("status-404-json.txt"))
    assert r.errors["status"] == r.requests == 78993


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_read("refused-json.txt"), "unable to connect to 127.0.0.1:18099 Connection refused"),
        ("Usage: wrk <options> <url>\n  Options:\n", "rejected its arguments"),
        ("", "no output"),
    ],
)
def test_no_result_is_a_clear_error(text, message):
    with pytest.raises(RunnerError, match=message):
        wrk.parse_json(text)
    with pytest.raises(RunnerError, match=message):
        wrk.parse_text(text)


def test_malformed_json_line():
    with pytest.raises(RunnerError, match="malformed"):
        wrk.parse_json(wrk.JSON_MARKER + '{"requests": 1}\n')


def test_percentile_rank_rule():
    hist = {100: 1, 200: 98, 5000: 1}
    # n = 100: rank(p99) = round(99 + 0.5) = 100 -> the last value
    assert loadgen.percentile(hist, 99.0) == 5000
    assert loadgen.percentile(hist, 50.0) == 200
    assert loadgen.percentile(hist, 0.5) == 100
    assert loadgen.percentile({}, 99.0) != loadgen.percentile({}, 99.0)  # NaN


def test_merge_is_exact():
    """Splitting one run's histogram between two clients and merging gives it back."""
    base = wrk.parse_json(_read("static-1k-json.txt"))
    rng = random.Random(7)
    a: dict[int, int] = {}
    b: dict[int, int] = {}
    for v, c in base.histogram_us.items():
        k = rng.randint(0, c)
        if k:
            a[v] = k
        if c - k:
            b[v] = c - k
    ra = loadgen.Measurement(
        base.duration_s,
        sum(a.values()),
        1,
        dict.fromkeys(loadgen.ERROR_KINDS, 0),
        a,
        rps=sum(a.values()) / base.duration_s,
    )
    rb = loadgen.Measurement(
        base.duration_s,
        sum(b.values()),
        2,
        {**ra.errors, "read": 3},
        b,
        rps=sum(b.values()) / base.duration_s,
    )
    m = loadgen.merge([ra, rb])
    assert m.histogram_us == base.histogram_us
    assert m.latency_ms == loadgen.latency_summary(base.histogram_us)
    assert m.requests == ra.requests + rb.requests
    assert m.rps == pytest.approx(ra.rps + rb.rps)
    assert m.errors["read"] == 3 and m.bytes == 3


def test_merge_is_not_one_clients_p99():
    fast = loadgen.Measurement(
        1.0, 1500, 0, dict.fromkeys(loadgen.ERROR_KINDS, 0), {100: 1500}, rps=1500
    )
    slow = loadgen.Measurement(
        1.0, 500, 0, dict.fromkeys(loadgen.ERROR_KINDS, 0), {9000: 500}, rps=500
    )
    m = loadgen.merge([fast, slow])
    assert m.latency_ms["p99"] == 9.0
    assert m.latency_ms["p50"] == 0.1


def test_merge_refuses_text_results():
    t = wrk.parse_text(_read("cps-close.txt"))
    with pytest.raises(RunnerError, match="without histograms"):
        loadgen.merge([t, t])
    assert loadgen.merge([t]).requests == t.requests


def test_command_quoting_and_pinning():
    load = loadgen.Load(
        "https://10.0.0.1:8443/body.bin",
        threads=2,
        connections=64,
        duration_s=10,
        headers=("Connection: close",),
        cpus=(1, 3),
    )
    argv = wrk.command(load, script="/tmp/a b.lua")
    assert argv[:3] == ["taskset", "-c", "1,3"]
    assert argv[argv.index("-H") + 1] == "Connection: close"
    assert argv[argv.index("-s") + 1] == "/tmp/a b.lua"
    assert argv[-1] == "https://10.0.0.1:8443/body.bin"
    assert "-d" in argv and argv[argv.index("-d") + 1] == "10s"
    with pytest.raises(RunnerError, match="connections >= threads"):
        wrk.command(loadgen.Load("http://x/", threads=4, connections=2, duration_s=1))

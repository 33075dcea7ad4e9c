"""h2load command lines and parsers, on recorded real outputs (tests/data/h2load)."""

from __future__ import annotations

import gzip
import math
import subprocess
from pathlib import Path

import pytest

from runners import cputime, loadgen
from runners.errors import RunnerError
from runners.loadgen import h2load

DATA = Path(__file__).parent / "data" / "h2load"


def _text(name: str) -> str:
    return (DATA / f"{name}.txt").read_text()


def _read_log(name: str) -> tuple[dict[int, int], int]:
    """The histogram [us -> responses] and failed streams of a recorded (gzipped) log.

    Each line is ``start_us<TAB>status<TAB>latency_us``; a status of -1 is a failed stream.
    The oracle for what `h2load.WRAPPER`'s awk pass counts on the client.
    """
    hist: dict[int, int] = {}
    failed = 0
    with gzip.open(DATA / f"{name}.log.gz", "rt") as f:
        for line in f:
            parts = line.split("\t")
            if len(parts) < 3:
                continue
            status, latency = int(parts[1]), int(parts[2])
            if status > 0:
                hist[latency] = hist.get(latency, 0) + 1
            else:
                failed += 1
    return hist, failed


def _latencies(name: str) -> list[int]:
    with gzip.open(DATA / f"{name}.log.gz", "rt") as f:
        return sorted(int(ln.split("\t")[2]) for ln in f if int(ln.split("\t")[1]) > 0)


def _load(**settings):
    """An h2load run's settings: one thread, HTTP/2 and a dead port unless told."""
    return loadgen.Load(
        **{"url": "http://127.0.0.1:1/", "threads": 1, "http_version": "2", **settings}
    )


def test_command_closed_loop_http2():
    load = loadgen.Load(
        "https://127.0.0.1:20000/body.bin",
        connections=16,
        threads=2,
        streams=8,
        duration_s=10,
        http_version="2",
        headers=("Accept-Encoding: gzip",),
        cpus=(1,),
    )
    argv = h2load.command(load, warmup_s=1)
    assert argv == [
        "taskset",
        "-c",
        "1",
        "h2load",
        "-t",
        "2",
        "-c",
        "16",
        "-m",
        "8",
        "-D",
        "10",
        "--warm-up-time",
        "1",
        "-H",
        "Accept-Encoding: gzip",
        "https://127.0.0.1:20000/body.bin",
    ]


def test_command_open_loop_splits_the_rate_over_connections():
    argv = h2load.command(_load(connections=8, duration_s=3, rate_rps=4000))
    assert "--rps=500" in argv
    assert argv[argv.index("-m") + 1] == "1"
    assert "--warm-up-time" not in argv
    odd = h2load.command(_load(connections=3, duration_s=3, rate_rps=1000))
    assert "--rps=333.333" in odd


def test_command_http1_never_pipelines():
    argv = h2load.command(_load(connections=4, duration_s=1, streams=10, http_version="1.1"))
    assert "--h1" in argv
    assert argv[argv.index("-m") + 1] == "1"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"connections": 1, "threads": 2},
        {"connections": 4, "http_version": "3"},
        {"connections": 4, "duration_s": 0},
        {"connections": 4, "rate_rps": 0.0},
        {"connections": 4, "rate_rps": math.inf},
        {"connections": 4, "streams": 0},
    ],
)
def test_command_refuses_bad_settings(kwargs):
    kwargs = {"duration_s": 1, **kwargs}
    with pytest.raises(RunnerError):
        h2load.command(_load(**kwargs))


@pytest.mark.parametrize(
    ("name", "done", "rps", "duration_s", "traffic", "errors"),
    [
        ("h2-tls-closed", 12239, 12239.0, 1.0, 14074850, {}),
        ("h1-closed", 10048, 10048.0, 1.0, 12700672, {}),
        ("h2c-open", 2000, 1000.0, 2.0, 2300000, {}),
        ("h2c-open-short", 5197, 5197.0, 1.0, 5976648, {}),
        ("h2c-404", 4835, 4835.0, 1.0, 1068731, {"status": 4835}),
        ("refused", 0, 0.0, math.nan, 0, {"connect": 2}),
    ],
)
def test_parse_summary_recorded(name, done, rps, duration_s, traffic, errors):
    s = h2load.parse_summary(_text(name))
    assert s.done == done
    assert s.rps == pytest.approx(rps)
    assert s.traffic_bytes == traffic
    assert s.errors == dict.fromkeys(loadgen.ERROR_KINDS, 0) | errors
    if math.isnan(duration_s):
        assert math.isnan(s.duration_s)
    else:
        assert s.duration_s == pytest.approx(duration_s)


@pytest.mark.parametrize(
    "name", ["h2-tls-closed", "h1-closed", "h2c-open", "h2c-open-short", "h2c-404"]
)
def test_log_histogram_agrees_with_h2load_summary(name):
    """The log has one response per completed request; min, max and mean match h2load's."""
    s = h2load.parse_summary(_text(name))
    hist, failed = _read_log(name)
    assert failed == 0
    assert sum(hist.values()) == s.done
    assert min(hist) / 1000 == pytest.approx(s.latency_min_ms, rel=0.01, abs=0.001)
    assert max(hist) / 1000 == pytest.approx(s.latency_max_ms, rel=0.01)
    mean = sum(v * c for v, c in hist.items()) / sum(hist.values()) / 1000
    assert mean == pytest.approx(s.latency_mean_ms, rel=0.01)


@pytest.mark.parametrize("name", ["h2-tls-closed", "h2c-open", "h2c-404"])
def test_awk_on_the_client_host_counts_what_python_counts(name):
    """The wrapper's awk (run here, as on a client host) gives the same exact histogram."""
    log = gzip.decompress((DATA / f"{name}.log.gz").read_bytes()).decode()
    out = subprocess.run(
        ["awk", "-F", "\t", h2load._AWK],
        input=log,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    assert h2load.histogram_from_output(out) == _read_log(name)


def _wrapped(name: str) -> str:
    """What `WRAPPER` prints for a recorded run: h2load's output, times, the histogram."""
    hist, failed = _read_log(name)
    lines = [_text(name), "", cputime.TIMES_MARKER, "0m0.010s 0m0.000s", "0m1.500s 0m0.250s"]
    lines.append(f"{h2load.FAILED_MARKER} {failed}")
    lines += [f"{h2load.HIST_MARKER} {v} {c}" for v, c in hist.items()]
    return "\n".join(lines) + "\n"


def test_parse_wrapped_output():
    text = _wrapped("h2-tls-closed")
    r = h2load.parse(text)
    assert r.requests == 12239 and r.rps == pytest.approx(12239.0)
    assert r.duration_s == pytest.approx(1.0)
    assert sum(r.histogram_us.values()) == r.requests
    values = _latencies("h2-tls-closed")
    # wrk's rank rule on the raw values: the smallest with rank >= round(p n + 0.5).
    for key, p in loadgen.PERCENTILES.items():
        rank = math.floor(p / 100 * len(values) + 1.0)
        assert r.latency_ms[key] == pytest.approx(values[min(rank, len(values)) - 1] / 1000)
    assert cputime.times_seconds(text) == pytest.approx(1.75)
    assert 1024 + 64 <= r.bytes / r.requests <= 1024 + 2048


def test_parse_refuses_a_log_cut_short():
    text = _wrapped("h2c-open").replace(f"{h2load.HIST_MARKER} ", "x ", 5)
    with pytest.raises(RunnerError, match="log holds"):
        h2load.parse(text)


def test_parse_refused_connection_is_connect_errors():
    r = h2load.parse(_wrapped("refused"))
    assert r.requests == 0 and r.errors["connect"] == 2 and r.histogram_us == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "gave no result: no output"),
        ("h2load: unrecognized option '--bogus'\nUsage: h2load", "rejected its arguments"),
        ("starting benchmark...\n", "gave no result: starting benchmark"),
    ],
)
def test_no_summary_is_one_clear_error(text, message):
    with pytest.raises(RunnerError, match=message):
        h2load.parse(text)


def test_open_loop_rate_rule_on_recorded_runs():
    ok = h2load.parse(_wrapped("h2c-open"))
    assert h2load.rate_shortfall(ok.rps, 1000.0) is None
    short = h2load.parse(_wrapped("h2c-open-short"))
    assert h2load.rate_shortfall(short.rps, 100000.0) == "achieved 5197 of the 100000 rps asked"


def test_exact_merge_of_two_h2load_clients():
    """Merged percentiles are those of every client's raw latencies pooled."""
    a, b = h2load.parse(_wrapped("h2-tls-closed")), h2load.parse(_wrapped("h1-closed"))
    merged = loadgen.merge([a, b])
    pooled = sorted(_latencies("h2-tls-closed") + _latencies("h1-closed"))
    assert merged.requests == len(pooled) == 12239 + 10048
    assert merged.rps == pytest.approx(12239.0 + 10048.0)
    for key, p in loadgen.PERCENTILES.items():
        rank = math.floor(p / 100 * len(pooled) + 1.0)
        assert merged.latency_ms[key] == pytest.approx(pooled[min(rank, len(pooled)) - 1] / 1000)
    assert merged.latency_ms["max"] == pooled[-1] / 1000


def test_h2load_behind_the_contract():

    gen = loadgen.get("h2load")
    assert gen.name == "h2load" and set(gen.http_versions) == {"1.1", "2"}
    assert set(gen.modes) == {"closed", "open"}
    assert gen.tool({"h2load": "/opt/h2load"}, loadgen.OPEN) == "/opt/h2load"
    load = loadgen.Load(
        "https://127.0.0.1:1/body.bin",
        threads=1,
        connections=8,
        duration_s=3,
        http_version="2",
        streams=4,
        rate_rps=800.0,
        cpus=(1,),
    )
    argv = gen.command(load, binary="/usr/bin/h2load", workdir="/tmp/w")
    assert argv[:5] == ["sh", "-c", h2load.WRAPPER, "sh", "/tmp/w"]
    assert argv[5:9] == ["taskset", "-c", "1", "/usr/bin/h2load"]
    assert "--rps=100" in argv and argv[argv.index("-m") + 1] == "4"
    warm = gen.command(
        loadgen.Load(load.url, 1, 8, 1, http_version="2", record=False), binary="h2load", workdir=""
    )
    assert warm[0] == "h2load" and "--rps" not in " ".join(warm)
    m = gen.parse(_wrapped("h2c-open"), load)
    assert m.requests == 2000 and sum(m.histogram_us.values()) == 2000
    assert gen.saturated(95.0, 1, 0.9, "h") == "h2load used 95% of its 1 CPU on h"
    assert "rejected its arguments" in gen.no_result("h2load: unrecognized option '--x'")

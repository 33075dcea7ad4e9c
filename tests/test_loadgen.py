"""The load-generator contract: the registry, wrk behind it, and the CLI's refusals."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from runners import loadgen
from runners.loadgen import wrk
from runners.sweep import Plan
from tests.conftest import runners_cli

DATA = Path(__file__).parent / "data"


def test_registry_finds_wrk_and_refuses_the_rest():
    gen = loadgen.get("wrk")
    assert isinstance(gen, loadgen.LoadGenerator) and gen.name == "wrk"
    assert "1.1" in gen.http_versions and set(gen.modes) == {"closed", "open"}
    with pytest.raises(loadgen.UnavailableLoadGenerator, match="unknown load generator 'ab'"):
        loadgen.get("ab")
    for name in loadgen.NAMES:
        try:
            assert loadgen.get(name).name == name
        except loadgen.UnavailableLoadGenerator as exc:
            assert "not available in this version" in str(exc)


def test_wrk_behind_the_contract():
    gen = loadgen.get("wrk")
    load = loadgen.Load(
        "http://127.0.0.1:8080/body.bin", threads=2, connections=8, duration_s=3, cpus=(1,)
    )
    argv = gen.command(load, binary="/usr/bin/wrk", workdir="/tmp/w d")
    assert argv[:4] == ["taskset", "-c", "1", "/usr/bin/wrk"]
    assert argv[argv.index("-s") + 1] == "/tmp/w d/report.lua"
    assert "report.lua" in gen.files()
    warm = gen.command(
        loadgen.Load(load.url, 2, 8, 1, record=False), binary="wrk", workdir="/tmp/w"
    )
    assert "-s" not in warm
    # Only a measured closed-loop run (with report.lua) waits for a common start itself.
    assert gen.waits_for_start(load)
    assert not gen.waits_for_start(loadgen.Load(load.url, 2, 8, 1, record=False))
    assert not gen.waits_for_start(loadgen.Load(load.url, 2, 64, 5, rate_rps=2000.0))
    text = (DATA / "wrk" / "static-1k-json.txt").read_text()
    m = gen.parse(text, load)
    assert m.requests == wrk.parse_json(text).requests and m.histogram_us
    assert gen.tool({"wrk": "/opt/wrk", "wrk2": "/opt/wrk2"}, loadgen.OPEN) == "/opt/wrk2"
    assert gen.tool({"wrk": "/opt/wrk"}, loadgen.CLOSED) == "/opt/wrk"
    rate = loadgen.Load(load.url, 2, 64, 5, rate_rps=2000.4)
    assert rate.mode == "open"
    open_argv = gen.command(rate, binary="wrk2", workdir="/tmp/w")
    assert open_argv[open_argv.index("-R") + 1] == "2000" and "-s" not in open_argv
    spectrum = (DATA / "wrk2" / "readme-example.txt").read_text()
    assert gen.parse(spectrum, rate).requests == 60018
    assert gen.saturated(95.0, 1, 0.9, "h") == "wrk used 95% of its 1 CPU on h"
    assert gen.saturated(50.0, 1, 0.9, "h") is None
    assert gen.collect(load, workdir="/tmp/w") is None
    assert gen.warmup_problem("... 10 requests in 1.00s, 1KB read\n", "", 1) is None
    assert gen.warmup_problem("", "unable to connect to 127.0.0.1:1\n", 1) == (
        "unable to connect to 127.0.0.1:1"
    )


def test_plan_names_its_load_generator():
    plan = Plan()
    assert plan.load_generator == "wrk" and plan.http_version == "1.1"
    assert Plan.from_dict(json.loads(json.dumps(plan.to_dict()))) == plan
    with pytest.raises(loadgen.UnsupportedLoad, match="does not speak HTTP/2"):
        Plan(http_version="2")
    with pytest.raises(loadgen.UnsupportedLoad):
        Plan(load_generator="nope")


def test_sim_rows_carry_load_generator_and_http_version(tmp_path):
    p = runners_cli(
        "sweep", "--server", "sim", "--out", str(tmp_path), "--quiet", "--format", "json"
    )
    assert p.returncode == 0, p.stderr
    (row,) = json.loads(p.stdout)
    assert row["load_generator"] == "sim" and row["http_version"] == "1.1"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--load-generator", "ab"], "invalid choice"),
        (["--http-version", "2"], "wrk does not speak HTTP/2"),
    ],
)
def test_cli_refuses_what_no_generator_can_do(tmp_path, args, message):
    for command in ("sweep", "search"):
        p = runners_cli(command, "--out", str(tmp_path), "--quiet", *args)
        assert p.returncode == 2, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1 and message in p.stderr
        assert not any(tmp_path.iterdir())


def test_cli_refuses_a_generator_not_in_this_version(tmp_path):
    for name in loadgen.NAMES:
        try:
            loadgen.get(name)
        except loadgen.UnavailableLoadGenerator:
            p = runners_cli("sweep", "--out", str(tmp_path), "--load-generator", name)
            assert p.returncode == 2 and "not available in this version" in p.stderr
            assert len(p.stderr.strip().splitlines()) == 1


def test_one_cpu_time_parser_for_times_and_proc_stat():
    from runners import cputime

    text = f"output\n{cputime.TIMES_MARKER}\n0m0.010s 0m0.000s\n1m2.500s 0m0.250s\n"
    assert cputime.times_seconds(text) == pytest.approx(62.75)
    assert math.isnan(cputime.times_seconds("no marker here"))
    assert math.isnan(cputime.times_seconds(f"{cputime.TIMES_MARKER}\n0m0s 0m0s\nxms 0m0s\n"))
    # The command name may hold spaces and parentheses: fields count from the last ")".
    line = "42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 17 5 0 0 20 0 1 0 12345 0 0"
    assert cputime.stat_ticks(line) == 22
    assert cputime.stat_ticks("42 (short) S 1") == 0


def test_tool_binaries_come_from_one_map_and_the_users_choice_wins():
    from runners import tools

    plan = Plan()
    assert plan.binaries() == tools.TOOLS
    gen = loadgen.get("wrk")
    assert gen.tool(plan.binaries(), loadgen.CLOSED) == "wrk"
    assert gen.tool(plan.binaries(), loadgen.OPEN) == "wrk2"
    chosen = Plan(wrk="/opt/wrk", wrk2="/opt/wrk2", h2load="/opt/h2load").binaries()
    assert gen.tool(chosen, loadgen.CLOSED) == "/opt/wrk"
    assert gen.tool(chosen, loadgen.OPEN) == "/opt/wrk2"
    assert loadgen.get("h2load").tool(chosen, loadgen.CLOSED) == "/opt/h2load"
    assert tools.tool_path("nginx", {"nginx": ""}) == "nginx"
    assert tools.local_path("/no/such/binary") is None


def test_percentiles_in_one_pass_keep_wrks_rank_rule():
    """Each percentile is the smallest value whose cumulative count reaches wrk's rank."""
    import random

    from runners.loadgen.base import percentiles

    def by_rank(hist: dict[int, int], p: float) -> float:
        rank = math.floor(p / 100.0 * sum(hist.values()) + 0.5 + 0.5)  # C round(x + 0.5)
        cumulative = 0
        for value in sorted(hist):
            cumulative += hist[value]
            if cumulative >= rank:
                return float(value)
        return float(max(hist))

    rng = random.Random(7)
    for _ in range(500):
        hist = {rng.randint(1, 10 ** rng.randint(1, 6)): rng.randint(1, 50) for _ in range(40)}
        ps = (50.0, 90.0, 99.0, 99.9, 0.0, 100.0, rng.uniform(0, 100))
        assert percentiles(hist, ps) == [by_rank(hist, p) for p in ps]


def test_a_merge_of_histograms_summed_as_they_arrived_is_the_plain_merge():
    text = (DATA / "wrk" / "static-1k-json.txt").read_text()
    runs = [wrk.parse_json(text) for _ in range(3)]
    summed: dict[int, int] = {}
    for r in runs:
        for us, n in r.histogram_us.items():
            summed[us] = summed.get(us, 0) + n
    plain, taken = loadgen.merge(runs), loadgen.merge(runs, summed)
    assert taken.histogram_us == plain.histogram_us and taken.latency_ms == plain.latency_ms
    assert (taken.requests, taken.rps) == (plain.requests, plain.rps)

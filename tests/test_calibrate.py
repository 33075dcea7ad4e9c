"""Calibration: the fit on known costs, and real campaigns against a local nginx."""

from __future__ import annotations

import json
import math
import random
from dataclasses import replace
from pathlib import Path

import pytest

from runners.calibrate import campaign as cal
from runners.calibrate import fit as calfit
from runners.errors import RunnerError
from tests.conftest import runners_cli
from tests.test_netns import two_namespaces  # noqa: F401 (fixture)
from trialtable.profile import read_profile

ROOT = Path(__file__).resolve().parents[1]

TRUE = {
    "request_us": 12.0,
    "body_us": 4.0,
    "byte_ns": 0.15,
    "tls_request_us": 3.0,
    "tls_byte_ns": 1.2,
    "tls_body_us": -2.0,
    "connection_us": 35.0,
    "handshake_full_ecdsa_p256_us": 250.0,
    "handshake_full_rsa2048_us": 1100.0,
    "handshake_resumed_us": 40.0,
    "gzip_byte_ns": 25.0,
    "proxy_request_us": 18.0,
    "gateway_request_us": 2.5,
}


def _rows(truth: dict[str, float], rounds: int = 3, noise: float = 0.02, seed: int = 1):
    """Trial rows as a campaign would store them, from known coefficients."""
    rng = random.Random(seed)
    settings = cal.fit_settings() + cal.scaling_settings(2)
    rows = []
    for r in range(rounds):
        for s in settings:
            x = calfit._row(s, None)
            us = sum(truth.get(k, 0.0) * v for k, v in x.items()) * rng.gauss(1.0, noise)
            if s.vcpus > 1:
                us *= 1.05
            rps = 0.95e6 / us * s.vcpus
            rows.append(
                {
                    "run_id": f"run-{s.name}-{r}",
                    "trial_id": f"run-{s.name}-{r}-0001",
                    "instance_label": cal._label(s.name, r),
                    "valid": True,
                    "invalid_reason": "",
                    "requests": rps * 2,
                    "duration_s": 2.0,
                    "rps": rps,
                    "server_cpu_pct": rps * us / 1e6 * 100.0,
                    "latency_p99_ms": 1.0,
                    "meets_sla": True,
                    "connections": s.connections,
                    "bytes_per_response": s.scenario.file_bytes * (0.5 if s.scenario.gzip else 1.0)
                    + 240.0,
                }
            )
    return settings, rows


def _profile(rows, settings, **kw):
    return cal.build_profile(
        rows,
        settings,
        configs={"static_http_0B": "conf"},
        host={"cpu_model": "Test", "arch": "x86_64", "threads_per_core": 2},
        options=cal.CalibrateOptions(),
        measured_over="loopback",
        **kw,
    )


def test_fit_recovers_known_costs():
    settings, rows = _rows(TRUE)
    p = _profile(rows, settings)
    for name, value in TRUE.items():
        c = p.coefficients[name]
        assert c.stderr is not None and c.stderr > 0 and c.spread is not None
        # Within 25% or 3 standard errors (a small cost over a large one, such as the
        # gateway's over the proxy's, is known only to its standard error under 2% noise).
        assert c.value == pytest.approx(value, rel=0.25, abs=max(0.5, 3 * c.stderr)), name
    # The efficiency of 2 workers is the CPU per request ratio (1/1.05 here).
    assert p.scaling.workers == [1, 2]
    assert p.scaling.efficiency[1] == pytest.approx(1 / 1.05, rel=0.06)
    assert not any("handshake_resumed_us not measured" in w for w in p.warnings)
    assert any("http2_request_us not measured" in w for w in p.warnings)
    assert p.runs and all(r.startswith("run-") for r in p.runs)


def test_a_busier_round_is_a_round_factor_not_a_cost():
    settings, rows = _rows(TRUE, noise=0.0)
    for row in rows:
        if row["instance_label"].endswith("-r1"):
            row["server_cpu_pct"] *= 0.5  # round 1 ran on a quieter host: everything cheaper
    p = _profile(rows, settings)
    for name, value in TRUE.items():
        assert p.coefficients[name].value == pytest.approx(value, rel=0.02, abs=0.05), name
    assert p.extra["campaign"]["round_factors"]["1"] == pytest.approx(0.5, rel=0.02)
    assert any("contention changed across rounds" in w for w in p.warnings)


# Recorded from OpenSSL 3.0.19 on the development machine (stderr and stdout together).
SPEED_OUTPUT = """+DTP:256:sign:ecdsa:1
+R5:4398:256:0.17
+DTP:256:verify:ecdsa:1
+R6:2888:256:0.30
+F4:3:256:25870.588235:9626.666667
"""


@pytest.mark.parametrize(
    ("text", "us"),
    [
        (SPEED_OUTPUT, 1e6 / 25870.588235),
        ("+F4:3:256:0:0\n", math.nan),
        ("+F4:3:256:fast:1\n", math.nan),
        ("openssl: unknown algorithm\n", math.nan),
        ("", math.nan),
    ],
)
def test_speed_probe_output_is_parsed(text, us):
    got = cal.parse_speed_probe(text)
    assert got == pytest.approx(us) if math.isfinite(us) else math.isnan(got)


def test_a_cpu_that_changed_speed_is_a_warning():
    settings, rows = _rows(TRUE, noise=0.0)
    host = {"cpu_model": "Test", "arch": "x86_64", "threads_per_core": 2}

    def warned(probes):
        p = cal.build_profile(
            rows,
            settings,
            configs={},
            host={**host, "speed_probe_us": probes},
            options=cal.CalibrateOptions(),
            measured_over="loopback",
        )
        assert p.host["speed_probe_us"] == probes
        return [w for w in p.warnings if "speed changed" in w]

    assert not warned({"r1": 40.0, "r2": 44.0, "r3": 42.0, "end": 41.0})
    (w,) = warned({"r1": 40.0, "r2": 82.0, "r3": 80.0, "end": 81.0})
    assert "40.0, 82.0, 80.0, 81.0 us" in w and "r1, r2, r3, end" in w
    assert not warned({"r1": 40.0})


def test_negative_cost_is_held_at_zero_and_said():
    truth = {**TRUE, "gateway_request_us": 0.0}
    settings, rows = _rows(truth, noise=0.0)
    for row in rows:
        if "api_gateway" in row["instance_label"]:
            row["server_cpu_pct"] *= 0.9  # the gateway measured cheaper than the proxy
    p = _profile(rows, settings)
    gw = p.coefficients["gateway_request_us"]
    assert gw.value == 0.0 and "held at 0" in gw.note
    assert any(w.startswith("gateway_request_us fitted") for w in p.warnings)


def test_competition_and_superlinear_scaling_are_flagged():
    settings, rows = _rows(TRUE)
    rows[0]["server_cpu_pct"] *= 0.5
    rows[0]["requests"] *= 0.5
    rows[0]["rps"] *= 0.5
    for row in rows:
        if row["instance_label"].startswith("calibrate-scaling_2_workers"):
            row["server_cpu_pct"] *= 0.5  # half the CPU per request with 2 workers
    p = _profile(rows, settings)
    assert any("trials flagged" in w for w in p.warnings)
    assert any("superlinear" in w for w in p.warnings)
    assert p.scaling.workers == [1]


def test_a_load_generator_at_its_limit_is_not_a_busy_host():
    settings, rows = _rows(TRUE)
    for row in rows:
        row["threads"], row["client_cpu_pct"] = 1, 50.0
        if "cps_https_ecdsa" in row["instance_label"]:
            row["server_cpu_pct"] *= 0.5  # the worker waits for wrk's TLS client work
            row["requests"] *= 0.5
            row["client_cpu_pct"] = 97.0
    p = _profile(rows, settings)
    assert not any("trials flagged" in w for w in p.warnings)
    (note,) = [w for w in p.warnings if "campaign's own load limited it" in w]
    assert note.startswith("3 of ") and "cps_https_ecdsa: the load generator" in note
    rows[0]["client_cpu_pct"] = 40.0
    rows[0]["server_cpu_pct"] *= 0.5
    rows[0]["requests"] *= 0.5
    p = _profile(rows, settings)
    assert any(w.startswith("1 of ") and "trials flagged" in w for w in p.warnings)


def test_unusable_trials_are_left_out_with_a_reason():
    settings, rows = _rows(TRUE, rounds=2)
    rows[1]["valid"] = False
    rows[1]["invalid_reason"] = "errors 5.00% > 1.00%"
    rows[2]["valid"] = False
    rows[2]["invalid_reason"] = "load generator saturated: wrk used 99% of its 1 CPU on local"
    obs, warnings = cal.observations(rows, settings, 5.0)
    assert len(obs) == len(rows) - 1
    assert any("errors 5.00%" in w for w in warnings)


def test_subset_fits_only_what_it_identifies():
    settings, rows = _rows(TRUE)
    names = {"static_http_0B", "static_http_1KB", "static_http_100KB"}
    p = _profile(
        [r for r in rows if any(f"-{n}-" in r["instance_label"] for n in names)],
        [s for s in settings if s.name in names],
    )
    assert set(p.coefficients) == {"request_us", "body_us", "byte_ns"}
    with pytest.raises(RunnerError, match="do not separate"):
        cal.check_identifiable([s for s in settings if s.name in names - {"static_http_100KB"}])
    assert any(w.startswith("tls_request_us, ") and "not measured" in w for w in p.warnings)
    one = [r for r in rows if r["instance_label"] in {cal._label(n, 0) for n in names}]
    exact = _profile(one, [s for s in settings if s.name in names])
    assert exact.coefficients["request_us"].stderr is None  # no residual degrees of freedom
    assert exact.coefficients["request_us"].spread is None


def test_extra_rounds_measure_what_is_not_pinned():
    settings, rows = _rows(TRUE, noise=0.01)
    options = cal.CalibrateOptions()
    assert calfit.unpinned(rows, settings, options) == ([], [])
    for i, row in enumerate(r for r in rows if "api_gateway" in r["instance_label"]):
        row["server_cpu_pct"] *= (0.7, 1.3, 1.0)[i]  # the gateway's rounds disagree by 30%
    names, use = calfit.unpinned(rows, settings, options)
    assert "gateway_request_us" in names
    assert "api_gateway_http_1KB" in use and "cps_https_rsa" not in use
    assert options.more_rounds == 2 and cal.CalibrateOptions(quick=True).more_rounds == 0
    with pytest.raises(RunnerError, match="extra-rounds"):
        cal.CalibrateOptions(extra_rounds=11)


def test_only_terms_nothing_else_leans_on_go_to_the_reference():
    rows = [calfit._row(s, None) for s in cal.fit_settings()]
    every = {n for r in rows for n in r}
    # The handshakes were measured beside connection_us: it stays (with a note).
    assert calfit._droppable({"connection_us", "gateway_request_us"}, every, rows) == {
        "gateway_request_us"
    }
    # The gateway leans on the proxy; once the gateway goes, the proxy can go too, its fixed
    # and per-byte parts together (measured in the same settings only).
    assert calfit._droppable({"proxy_request_us"}, every, rows) == set()
    both = {"proxy_request_us", "gateway_request_us"}
    assert calfit._droppable(both, every, rows) == {"gateway_request_us"}
    proxy = both | {"proxy_byte_ns"}
    assert calfit._droppable(proxy, every, rows) == proxy
    assert calfit._droppable({"request_us", "tls_byte_ns"}, every, rows) == set()


def test_connections_adapt_to_the_sla():
    s = cal.fit_settings()[0]
    over = {"connections": 16, "latency_p99_ms": 9.0, "server_cpu_pct": 100.0}
    idle = {"connections": 16, "latency_p99_ms": 0.2, "server_cpu_pct": 30.0}
    assert cal._connections(s, [], 5.0) == 16
    assert cal._connections(s, [over], 5.0) == 8
    assert cal._connections(s, [idle], 5.0) == 32
    # A p99 over the SLA from a worker that was mostly idle is not its queue: kept.
    slow_idle = {"connections": 16, "latency_p99_ms": 40.0, "server_cpu_pct": 30.0}
    assert cal._connections(s, [slow_idle], 5.0) == 16


def test_options_are_checked():
    with pytest.raises(RunnerError, match="unknown setting"):
        cal.CalibrateOptions(only=("warp",))
    with pytest.raises(RunnerError, match="repeats"):
        cal.CalibrateOptions(repeats=0)
    # Any closed-loop generator of the runners; an unknown one, or wrk2 (open loop only), not.
    with pytest.raises(RunnerError, match="unknown load generator 'ab'"):
        cal.CalibrateOptions(load_generator="ab")
    with pytest.raises(RunnerError, match="wrk2 has no closed-loop mode"):
        cal.CalibrateOptions(load_generator="wrk2")
    h2 = cal.CalibrateOptions(load_generator="h2load", h2load="/opt/h2load")
    assert h2.client_binary == "/opt/h2load"
    keepalive = next(s for s in cal.fit_settings() if s.name == "static_https_1KB")
    plan = cal._plan(h2, keepalive, "x", 1, 4)
    assert (plan.load_generator, plan.h2load, plan.http_version) == ("h2load", "/opt/h2load", "1.1")
    assert cal.unsupported(h2, keepalive) is None
    # h2load does not reconnect: it cannot run the new-connection settings.
    cps = [s for s in cal.fit_settings() if s.scenario.name == "cps"]
    assert cps and all("does not reconnect" in (cal.unsupported(h2, s) or "") for s in cps)
    assert all(cal.unsupported(cal.CalibrateOptions(), s) is None for s in cal.fit_settings())


def test_resumed_handshakes_are_a_setting_of_their_own():
    (s,) = [s for s in cal.fit_settings() if s.scenario.tls_resumption]
    assert s.scenario.name == "cps" and s.scenario.protocol == "https"
    assert calfit._row(s, None)["handshake_resumed_us"] == 1.0
    assert "handshake_full_ecdsa_p256_us" not in calfit._row(s, None)
    cal.check_identifiable(cal.fit_settings())


def test_shipped_profile_is_a_fresh_fit_of_its_trials():
    import pandas as pd

    for path in sorted((ROOT / "data" / "profiles").glob("*.json")):
        shipped = read_profile(path)
        rows = pd.read_csv(path.with_suffix(".trials.csv")).to_dict("records")
        assert {r["run_id"] for r in rows} == set(shipped.runs)
        opts = shipped.extra["campaign"]["options"]
        options = cal.CalibrateOptions(
            **{**opts, "clients": tuple(opts["clients"]), "only": tuple(opts["only"])}
        )
        workers = max(int(r["vcpus"]) for r in rows)
        fresh = cal.build_profile(
            rows,
            cal.fit_settings() + cal.retired_settings() + cal.scaling_settings(workers),
            configs=shipped.configs,
            host=shipped.host,
            options=options,
            measured_over=shipped.measured_over,
        )
        assert set(fresh.coefficients) == set(shipped.coefficients)
        for name, c in shipped.coefficients.items():
            assert fresh.coefficients[name].value == pytest.approx(c.value, rel=1e-6), name
        assert fresh.scaling == shipped.scaling


# -- profiles fitted from recorded real trials ------------------------------------------------

RECORDED = sorted((ROOT / "data" / "profiles").glob("*.trials.csv"))


def _recorded_profile(csv: Path, rounds: set[int] | None = None):
    """The profile a campaign writes from the recorded trial rows ``csv`` (some rounds)."""
    import pandas as pd

    rows = pd.read_csv(csv).to_dict("records")
    if rounds is not None:
        rows = [r for r in rows if int(str(r["instance_label"]).rsplit("-r", 1)[1]) in rounds]
    options = cal.CalibrateOptions()
    return cal.build_profile(
        rows,
        cal.fit_settings()
        + cal.retired_settings()
        + cal.scaling_settings(max(int(r["vcpus"]) for r in rows)),
        configs={},
        host={"cpu_model": "AMD EPYC", "arch": "x86_64", "threads_per_core": 1},
        options=options,
        measured_over="loopback",
    ), rows


def _workload(s: cal.Setting):
    from sizing.workload.value import Workload

    sc = s.scenario
    return Workload(
        scenario="static" if sc.name == "cps" else sc.name,
        protocol=sc.protocol,
        file_bytes=sc.file_bytes,
        requests_per_connection=1.0 if sc.name == "cps" else math.inf,
        tls_key="rsa2048" if sc.tls_key == "rsa" else "ecdsa-p256",
        tls_resumption=1.0 if sc.tls_resumption else 0.0,
    )


@pytest.mark.parametrize("csv", RECORDED, ids=lambda p: p.stem)
def test_a_profile_carries_each_term_once(csv, tmp_path):
    from sizing.evidence.profiles import read_profile as read_cost_profile
    from sizing.model.costmodel import cpu_us_per_request, reference_profile
    from trialtable.profile import write_profile

    profile, _ = _recorded_profile(csv)
    # Measured with bodies of 0 B, 1 KB and 64 KB: the body's fixed cost is a term of its own,
    # and HTTPS's (no sendfile) another.
    assert {"body_us", "tls_body_us"} <= set(profile.coefficients)
    path = write_profile(profile, tmp_path / "p.json")
    https_1kb = _workload(cal.fit_settings()[4])
    cost = cpu_us_per_request(https_1kb, read_cost_profile(path), over_nic=False)
    assert set(cost.terms) >= {"request_us", "body_us", "byte_ns", "tls_request_us", "tls_body_us"}
    assert not any("taken from" in n and "body_us" in n for n in cost.notes)
    # A profile of the first schema (no body_us, request_us fitted over every body) gets
    # body_us = 0 from the reader, never the reference's on top.
    doc = json.loads(path.read_text())
    del doc["coefficients"]["body_us"]
    (tmp_path / "old.json").write_text(json.dumps(doc))
    old = read_cost_profile(tmp_path / "old.json")
    assert old.coefficients["body_us"].value == 0.0
    assert "included in request_us" in old.coefficients["body_us"].source
    cost = cpu_us_per_request(https_1kb, old, fallback=reference_profile(), over_nic=False)
    assert cost.terms.get("body_us", 0.0) == 0.0 and not any("body_us" in n for n in cost.notes)
    # What the campaign could not pin is not published as a coefficient, but kept and said.
    for name, u in profile.extra.get("unidentified", {}).items():
        assert name not in profile.coefficients
        assert u["stderr"] > cal_fit_threshold() * abs(u["value"])
        assert any(w.startswith(f"{name} not identified") for w in profile.warnings)


def cal_fit_threshold() -> float:
    return calfit.UNIDENTIFIED_REL


@pytest.mark.parametrize("csv", RECORDED, ids=lambda p: p.stem)
@pytest.mark.parametrize("rounds", [None, {1}], ids=["all-rounds", "one-round"])
def test_every_reader_accepts_what_a_campaign_writes(csv, rounds, tmp_path):
    from sizing.evidence.profiles import read_profile as read_cost_profile
    from tests.conftest import sizing_cli
    from trialtable.profile import write_profile

    profile, _ = _recorded_profile(csv, rounds)
    path = write_profile(profile, tmp_path / "p.json")
    doc = json.loads(path.read_text())
    for name, c in doc["coefficients"].items():
        # An error that was not measured (one round: no spread) is left out, never null.
        assert all(c.get(k) is not None for k in ("stderr", "spread") if k in c), name
    if rounds == {1}:
        assert all("spread" not in c for c in doc["coefficients"].values())
    again = read_profile(path)
    assert again.coefficients == profile.coefficients
    cost_profile = read_cost_profile(path)
    assert set(cost_profile.coefficients) >= set(profile.coefficients)
    p = sizing_cli("recommend", "--rps", "1e5", "--profile", str(path), "--format", "json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)
    # Profiles written before errors were left out carry nulls: readers take them too.
    for c in doc["coefficients"].values():
        c.setdefault("spread", None)
        c.setdefault("stderr", None)
    (tmp_path / "nulls.json").write_text(json.dumps(doc))
    read_profile(tmp_path / "nulls.json")
    read_cost_profile(tmp_path / "nulls.json")


@pytest.mark.parametrize("csv", RECORDED, ids=lambda p: p.stem)
def test_a_profile_predicts_its_own_settings(csv):
    """Through sizing (as ``recommend --profile`` on the host itself, over loopback), each
    static and new-connection setting whose terms the campaign pinned is within 10% of what
    it measured (its median trial at the campaign's median contention)."""
    from sizing.evidence.profiles import host_capacity
    from sizing.evidence.profiles import read_profile as read_cost_profile
    from trialtable.profile import write_profile

    profile, rows = _recorded_profile(csv)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        prof = read_cost_profile(write_profile(profile, Path(tmp) / "p.json"))
    settings = cal.fit_settings() + cal.retired_settings()
    obs, _ = cal.observations(rows, settings, 5.0)
    factor = {int(k) - 1: v for k, v in profile.extra["campaign"]["round_factors"].items()}
    checked = 0
    for s in settings:
        if s.scenario.name not in ("static", "cps") or s.scenario.gzip:
            continue
        if set(calfit._row(s, None)) - set(profile.coefficients):
            continue  # a term the campaign did not pin: the reference's is used, not fitted
        mine = [o.cpu_us / factor[o.round_] for o in obs if o.setting == s.name]
        if not mine:
            continue
        predicted = host_capacity(prof, _workload(s)).cpu_us_per_request
        measured = (
            sorted(mine)[len(mine) // 2]
            if len(mine) % 2
            else sum(sorted(mine)[len(mine) // 2 - 1 : len(mine) // 2 + 1]) / 2
        )
        assert predicted == pytest.approx(measured, rel=0.10), s.name
        checked += 1
    assert checked >= 7


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sla-p99", "5"], "duration with a unit"),
        (["--repeats", "0"], "must be >= 1"),
        (["--extra-rounds", "11"], "--extra-rounds must be between 0 and 10"),
        (["--settings", "warp"], "unknown setting"),
        (["--resume", "nope"], "no campaign"),
        (["--load-generator", "ab"], "unknown load generator"),
        (["--load-generator", "h2load", "--settings", "cps_http"], "does not reconnect"),
    ],
)
def test_bad_input_is_one_line(tmp_path, args, message):
    p = runners_cli("calibrate", "--out", str(tmp_path), *args)
    assert p.returncode == 2
    assert message in p.stderr and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) <= 3


# -- real campaigns ---------------------------------------------------------------------------

PLAUSIBLE = {  # [low, high] on any CPU of the last decade, loopback, busy or not
    "request_us": (0.5, 2000),
    "body_us": (0.0, 2000),
    "byte_ns": (0.0, 50),
    "tls_request_us": (0.0, 2000),
    "tls_byte_ns": (0.0, 100),
    "connection_us": (0.0, 5000),
    "handshake_full_ecdsa_p256_us": (5, 50000),
    "handshake_full_rsa2048_us": (50, 200000),
    "handshake_resumed_us": (0.0, 50000),
    "gzip_byte_ns": (0.5, 1000),
    "proxy_request_us": (0.0, 5000),
    "gateway_request_us": (0.0, 5000),
}


@pytest.mark.slow
def test_quick_campaign_against_local_nginx(tmp_path, leaves_no_nginx):
    out = tmp_path / "cal"
    p = runners_cli_long("calibrate", "--quick", "--out", str(out), "--max-workers", "2")
    assert p.returncode == 0, p.stderr
    (campaign,) = out.iterdir()
    profile = read_profile(campaign / "profile.json")
    assert f"profile: {campaign / 'profile.json'}" in p.stdout
    assert "ETA" in p.stderr
    for name, (lo, hi) in PLAUSIBLE.items():
        c = profile.coefficients.get(name)
        if c is None:  # not pinned on a busy host: said, and kept aside
            assert name in profile.extra["unidentified"], name
            continue
        assert lo <= c.value <= hi, (name, c)
        assert c.stderr is not None and math.isfinite(c.stderr)
    # The main costs are clearly positive and ordered as a CPU orders them.
    co = {k: c.value for k, c in profile.coefficients.items()}
    assert co["request_us"] > 0 and co["gzip_byte_ns"] > 0
    assert co["handshake_full_rsa2048_us"] > co["handshake_full_ecdsa_p256_us"] > 0
    assert profile.measured_over == "loopback" and profile.load_generator == "wrk"
    assert profile.host["cpu_model"] == profile.cpu_model and profile.host["nginx_version"]
    assert set(profile.configs) >= {s.name for s in cal.fit_settings()}
    assert "ssl_session_tickets off;" in profile.configs["cps_https_rsa"]
    assert "ssl_session_tickets on;" in profile.configs["cps_https_resumed"]
    runs = {r.name for r in (campaign / "runs").iterdir()}
    assert set(profile.runs) <= runs and len(profile.runs) >= 12
    meta = json.loads((campaign / "campaign.json").read_text())
    assert meta["status"] == "complete"
    # The speed probe ran before each round and at the end, in CPU microseconds.
    probes = profile.host["speed_probe_us"]
    assert set(probes) == {"r1", "r2", "end"} and all(v > 0 for v in probes.values())


def runners_cli_long(*args: str):
    """``python -m runners ARGS`` with a bound that fits a quick campaign on a busy machine."""
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "runners", *args],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=900,
    )


class _InterruptAfter:
    """A progress stream that raises KeyboardInterrupt at the ``n``-th progress line."""

    def __init__(self, n: int) -> None:
        self.n, self.lines = n, 0

    def write(self, text: str) -> int:
        if text.startswith("["):
            self.lines += 1
            if self.lines == self.n:
                raise KeyboardInterrupt
        return len(text)

    def flush(self) -> None:
        pass


@pytest.mark.slow
def test_interrupted_campaign_resumes(tmp_path, leaves_no_nginx):
    options = cal.CalibrateOptions(
        quick=True, repeats=1, only=("static_http_0B", "static_http_1KB", "static_http_100KB")
    )
    with pytest.raises(KeyboardInterrupt):
        cal.run_calibrate(options, tmp_path, progress=_InterruptAfter(2))  # type: ignore[arg-type]
    (campaign,) = tmp_path.iterdir()
    assert json.loads((campaign / "campaign.json").read_text())["status"] == "interrupted"
    first = {r.name for r in (campaign / "runs").iterdir()}
    assert len(first) == 2
    with pytest.raises(RunnerError, match="other options"):
        cal.run_calibrate(cal.CalibrateOptions(quick=True), tmp_path, resume=campaign.name)
    _, profile = cal.run_calibrate(options, tmp_path, resume=campaign.name, progress=None)
    runs = {r.name for r in (campaign / "runs").iterdir()}
    assert first < runs and len(runs) == 3  # only the missing setting ran
    assert set(profile.runs) == runs
    assert set(profile.coefficients) == {"request_us", "body_us", "byte_ns"}
    assert profile.coefficients["request_us"].value > 0


# Two settings that separate two costs (0 B and 1 KB alone no longer do: body_us).
TWO = ("static_http_0B", "cps_http")


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    from tests.sshd import start_sshd

    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


@pytest.mark.slow
def test_campaign_over_ssh(tmp_path, sshd, leaves_no_nginx):
    from runners.sweep import Access

    cfg = sshd.client_config(tmp_path)
    options = cal.CalibrateOptions(
        server=sshd.spec, clients=(sshd.spec,), quick=True, repeats=1, only=TWO
    )
    path, profile = cal.run_calibrate(
        options, tmp_path / "cal", access=Access(ssh_config=str(cfg)), progress=None
    )
    assert set(profile.coefficients) == {"request_us", "connection_us"}
    assert profile.coefficients["request_us"].value > 0
    assert profile.measured_over == "loopback" and len(profile.runs) == 2
    assert profile.host["nginx_version"] and profile.cpu_model
    assert read_profile(path) == profile
    assert not list(Path("/tmp").glob("nginx-sizing-wrk.*"))


@pytest.mark.slow
@pytest.mark.usefixtures("two_namespaces")
def test_campaign_across_two_namespaces(tmp_path, leaves_no_nginx):
    from tests.test_netns import CLIENT_NS, SERVER_NS

    options = cal.CalibrateOptions(
        server=f"netns:{SERVER_NS}",
        clients=(f"netns:{CLIENT_NS}",),
        quick=True,
        repeats=1,
        only=TWO,
    )
    _, profile = cal.run_calibrate(options, tmp_path, progress=None)
    assert profile.coefficients["request_us"].value > 0
    assert len(profile.runs) == 2


def test_calibration_fits_the_formula_sizing_predicts_with():
    """Every setting's design row (what a campaign fits) prices a request exactly as sizing's
    cost model does (what ``recommend --profile`` predicts): one formula, not two copies."""
    from sizing.model.costmodel import ESTIMATES, Coefficient, CostProfile, cpu_us_per_request
    from trialtable.profile import COEFFICIENTS

    # distinct values, so a term multiplied by the wrong amount cannot hide behind another
    values = {name: 1.0 + 0.37 * i for i, name in enumerate(COEFFICIENTS)}
    prof = CostProfile(
        name="every term",
        cpu_model="test",
        coefficients={
            k: Coefficient(k, v, 0.0, COEFFICIENTS[k][0], "nic", "test") for k, v in values.items()
        },
        sigma=0.0,
        sigma_stderr=0.0,
        source="test",
        measured_over="nic",
    )
    settings = cal.fit_settings() + cal.retired_settings()
    ratio = ESTIMATES["gzip_ratio"][0]
    for s in settings:
        sc = s.scenario
        wire = sc.file_bytes * ratio if sc.gzip else None
        fitted = sum(values[k] * x for k, x in calfit._row(s, wire).items())
        work = replace(
            _workload(s),
            scenario=sc.name if sc.proxied else "static",
            gzip=1.0 if sc.gzip else 0.0,
        )
        predicted = cpu_us_per_request(work, prof, over_nic=False).us
        assert predicted == pytest.approx(fitted, rel=1e-12), s.name
    kinds = {(s.scenario.name, s.scenario.protocol, s.scenario.gzip) for s in settings}
    assert len(kinds) >= 6  # the settings cover the formula's branches


def test_the_command_line_prints_what_the_campaign_returns(monkeypatch, capsys):
    """``runners calibrate`` parses, runs the campaign (silent unless given a stream) and
    prints the profile it returns: the printing is the command line's, not the campaign's."""
    import inspect
    import sys

    from runners.cli import main as cli

    path = next((ROOT / "data" / "profiles").glob("*-loopback-*.json"))
    # Called as a library, the campaign says nothing unless given a stream.
    assert inspect.signature(cal.run_calibrate).parameters["progress"].default is None
    calls = []

    def campaign(options, out, **kw):
        calls.append((options, kw))
        return path, read_profile(path)

    monkeypatch.setattr(cal, "run_calibrate", campaign)
    assert cli.main(["calibrate", "--quick", "--h2load", "/opt/h2load"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("CPU profile: ") and f"profile: {path}" in out
    options, kw = calls[-1]
    assert options.quick and options.h2load == "/opt/h2load" and kw["progress"] is sys.stderr
    assert cli.main(["calibrate", "--quiet", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["schema"] == "nginx-sizing/cpu-profile/1"
    assert calls[-1][1]["progress"] is None


def test_a_round_alone_is_fitted_for_the_campaigns_terms_or_not_at_all():
    """A round whose settings cannot separate the campaign's costs raises (and is left out of
    the spread); it is not fitted to fewer terms that would absorb the others."""
    settings = cal.fit_settings()
    full = [calfit._row(s, None) for s in settings]
    names = calfit.fitted_names(full)
    cps = [s for s in settings if s.name.startswith("cps_https")]
    obs = [
        calfit.Observation(s.name, 4, 500.0 + 100 * k, 1000.0, 1.0, True, 1.0)
        for k, s in enumerate(cps)
    ]
    with pytest.raises(RunnerError):
        calfit.fit(obs, settings, allowed=names)

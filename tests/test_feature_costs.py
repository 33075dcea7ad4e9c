"""Configuration features: the measured table, its reader, and the model that prices them.

The good file is the shipped ``data/reference/feature-costs.csv``, written by
``python -m runners features`` on a Debian nginx 1.22 host (its notes: the ``.md`` beside it).
"""

from __future__ import annotations

import csv
import io
import math
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from runners.calibrate import features as campaign
from runners.cli.main import main as runners_main
from runners.deploy.conf import ConfExtra, ConfTarget, render_conf
from runners.scenario import Scenario
from sizing.cli.main import main as sizing_main
from sizing.errors import InputError
from sizing.model.capacity import (
    HT_USER_GAIN,
    current_stack,
    features_profile,
    reference_request_us,
    thread_gain,
)
from sizing.model.costmodel import cpu_us_per_request, reference_profile
from sizing.model.features import FEATURE_COSTS_PATH, load_feature_costs, on_reference_core
from sizing.workload.value import Workload
from trialtable.features import FEATURE_COST_COLUMNS, FEATURE_NAMES

SHIPPED = load_feature_costs()


def _cost(work: Workload):
    prof, share = features_profile(current_stack(reference_profile()), work)
    return cpu_us_per_request(work, prof, over_nic=False), share


def _rows() -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(FEATURE_COSTS_PATH.read_text())))


def _write(path: Path, rows: list[dict[str, str]]) -> Path:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    path.write_text(buf.getvalue())
    return path


# ----------------------------------------------------------------------------- the table


def test_shipped_table_names_every_feature_once_and_reads():
    rows = _rows()
    assert [r["feature"] for r in rows] == list(FEATURE_NAMES)
    assert {"proxy_keepalive", "proxy_new_connection"} <= set(SHIPPED)
    for name, cost in SHIPPED.items():
        assert cost.ref_us > 0 and math.isfinite(cost.user_us + cost.kernel_us), name


def test_writer_rows_read_back_and_hostile_notes_stay_data(tmp_path):
    trials = [campaign.Trial(1000, 5.0 + i, 20.0) for i in range(3)]
    on = [campaign.Trial(1000, 7.0 + i, 29.0) for i in range(3)]
    measured = campaign.Result("access_log", ref=trials, on=on)
    skipped = campaign.Result("njs_access", note='=HYPERLINK("x")\nsecond line')
    info = {"cpu_model": "+cmd|' /C calc'!A0", "nginx_version": "nginx version: nginx/1.22.1"}
    settings = campaign.Settings()
    rows = [campaign.row(r, settings, info, "2026-11-27T00:00:00Z") for r in (measured, skipped)]
    path = tmp_path / "costs.csv"
    path.write_text(campaign.to_csv(rows))
    got = load_feature_costs(path)
    assert set(got) == {"access_log"}
    assert got["access_log"].user_us == pytest.approx(2.0)
    assert got["access_log"].kernel_us == pytest.approx(9.0)
    text = path.read_text()
    assert len(text.strip().splitlines()) == 3
    cells = list(csv.DictReader(io.StringIO(text)))
    assert cells[1]["note"] == '\'=HYPERLINK("x") second line'
    assert cells[0]["cpu_model"].startswith("'+cmd")


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"pairs": "-1"}, "pairs"),
        ({"user_us": "nan"}, "user_us"),
        ({"user_us": ""}, "user_us"),
        ({"feature": "\x1b[31mlua_everything"}, "feature"),
        ({"ref_user_us": "0", "ref_kernel_us": "0"}, "reference costs nothing"),
    ],
)
def test_bad_file_is_one_line_exit_2_at_the_cli(tmp_path, capsys, change, words):
    rows = _rows()
    first = next(i for i, r in enumerate(rows) if r["status"] == "measured")
    rows[first] = {**rows[first], **change}
    path = _write(tmp_path / "bad.csv", rows)
    with pytest.raises(InputError):
        load_feature_costs(path)
    assert sizing_main(["reference", "--feature-costs", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0] and f":{first + 2}:" in err[0]
    assert "\x1b" not in err[0]


def test_missing_column_and_missing_file_are_one_line(tmp_path, capsys):
    rows = [{k: v for k, v in r.items() if k != "kernel_us"} for r in _rows()]
    for path in (_write(tmp_path / "cols.csv", rows), tmp_path / "absent.csv"):
        assert sizing_main(["reference", "--feature-costs", str(path)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and str(path) in err[0]


def test_cli_prints_the_good_file(capsys):
    assert sizing_main(["reference", "--feature-costs"]) == 0
    out = capsys.readouterr().out
    assert "proxy_new_connection" in out and "ref. core us" in out
    # where the costs were measured: the file, its pairs, CPU, nginx and date
    assert "\nmeasured:\nfeature-costs.csv (" in out and "pairs on" in out


# ----------------------------------------------------------------------------- the model


def test_new_upstream_connection_costs_more_than_a_kept_alive_one():
    keep, _ = _cost(Workload(protocol="http", features=(("proxy_keepalive", 1.0),)))
    new, _ = _cost(Workload(protocol="http", features=(("proxy_new_connection", 1.0),)))
    plain, _ = _cost(Workload(protocol="http"))
    assert new.us > keep.us > plain.us
    assert any("feature-costs.csv" in c.source for c in new.sources.values())


def test_a_reference_measured_with_a_feature_on_is_priced_with_it():
    # try_files_check's pairs ran without open_file_cache on both sides: the host's speed
    # ratio is read against the model's static request plus that feature, not the bare one.
    from sizing.model.capacity import reference_request_us
    from sizing.model.features import reference_us

    cost, under = SHIPPED["try_files_check"], SHIPPED["open_file_cache_off"]
    bare = reference_request_us("static", cost.file_bytes)
    core = on_reference_core(under, reference_request_us("static", under.file_bytes))
    assert reference_us(cost, reference_request_us, SHIPPED) == pytest.approx(
        bare + core.user_us + core.kernel_us
    )
    assert reference_us(under, reference_request_us, SHIPPED) == bare
    tried = campaign.setups(1024, "/f").get("try_files_check")
    off = campaign.setups(1024, "/f")["open_file_cache_off"]
    assert tried is not None and tried.reference_extra == off.extra


def test_the_header_in_a_segment_of_its_own_is_one_packet_more():
    from sizing.model.capacity import packets_per_request

    plain = packets_per_request(Workload(protocol="http"))
    apart = Workload(protocol="http", features=(("tcp_nopush_off", 0.5),))
    assert packets_per_request(apart) == plain + 0.5


def test_a_feature_counts_times_per_request():
    one, _ = _cost(Workload(protocol="http", features=(("access_log", 1.0),)))
    half, _ = _cost(Workload(protocol="http", features=(("access_log", 0.5),)))
    plain, _ = _cost(Workload(protocol="http"))
    assert one.us - plain.us == pytest.approx(2 * (half.us - plain.us))


def test_uncosted_directives_and_unmeasured_features_widen_the_range():
    base = Workload(protocol="http", features=(("proxy_keepalive", 1.0),))
    plain, _ = _cost(base)
    one, _ = _cost(replace(base, uncosted=("map (nginx.conf:12)",)))
    two, _ = _cost(replace(base, uncosted=("map (nginx.conf:12)", "sub_filter (nginx.conf:30)")))
    assert one.us == plain.us
    assert plain.rel_sd < one.rel_sd < two.rel_sd
    assert any("map (nginx.conf:12)" in n for n in one.notes)
    unmeasured = [n for n in FEATURE_NAMES if n not in SHIPPED]
    if unmeasured:
        missing, _ = _cost(replace(base, features=((unmeasured[0], 1.0),)))
        assert missing.rel_sd > _cost(Workload(protocol="http"))[0].rel_sd
        assert any(unmeasured[0] in n for n in missing.notes)


def test_a_lua_handler_is_wider_than_its_measured_minimal_spread():
    cost = SHIPPED["lua_log"] if "lua_log" in SHIPPED else next(iter(SHIPPED.values()))
    core = on_reference_core(cost, reference_request_us(cost.reference, cost.file_bytes))
    plain = on_reference_core(replace(cost, name="limit_req"), core.speed_ratio * cost.ref_us)
    if cost.name.startswith("lua_") and core.user_us + core.kernel_us:
        assert core.sd_us > plain.sd_us


def test_zero_features_leave_the_profile_and_the_thread_gain_alone():
    prof = current_stack(reference_profile())
    assert features_profile(prof, Workload()) == (prof, {})
    cost, share = _cost(Workload(protocol="http"))
    assert thread_gain(cost, share, 1.07) == (1.0, "")


def test_user_space_feature_work_gains_more_from_the_sibling_thread():
    work = Workload(protocol="http", features=(("proxy_new_connection", 1.0),))
    cost, share = _cost(work)
    factor, why = thread_gain(cost, share, 1.07)
    assert 1.0 < factor < HT_USER_GAIN[0] / 1.07
    assert "seed 004" in why


# ----------------------------------------------------------------------------- the runner


def test_feature_lines_land_in_their_blocks():
    extra = ConfExtra(
        main=("load_module m.so;",),
        server=("access_log access.log;",),
        upstream=("# peer @UPSTREAM_HOST@ @UPSTREAM_PORT@",),
        upstream_keepalive=False,
    )
    conf = render_conf(
        Scenario(name="reverse_proxy", protocol="http"),
        ConfTarget("/p", "127.0.0.1", [20001], [0], ["127.0.0.1:20002"]),
        extra=extra,
    )
    assert conf.index("load_module m.so;") < conf.index("http {")
    assert "listen 127.0.0.1:20001 " in conf and "# peer 127.0.0.1 20002" in conf
    assert "keepalive 64;" not in conf
    assert conf.index("access_log access.log;") > conf.index("    server {")


def test_the_ingress_feature_makes_the_proxy_location_an_ingress_one():
    setup = campaign.setups(1024, "/body.bin")["ingress_nginx"]
    assert setup.reference == setup.scenario == "reverse_proxy"
    assert setup.modules == campaign.LUA_MODULES
    conf = render_conf(
        Scenario(name="reverse_proxy", protocol="http"),
        ConfTarget("/p", "127.0.0.1", [20001], [0], ["127.0.0.1:20002"]),
        extra=setup.extra,
    )
    upstream, server = conf.index("upstream backend {"), conf.index("    server {")
    balancer = conf.index("balance('127.0.0.1', 20002)")
    assert upstream < balancer < conf.index("keepalive 64;") < server
    assert conf.index("init_by_lua_block {") < server < conf.index("location = /body.bin {")
    location = conf[conf.index("location = /body.bin {") :]
    for phase in ("rewrite", "header_filter", "log"):
        assert f"{phase}_by_lua_block" in location
    assert "proxy_set_header X-Request-ID $req_id;" in location
    assert "proxy_pass http://backend;" in location and "access_log" not in location
    assert "cjson.encode" in conf and "ngx.timer.every(1" in conf


def test_the_ingress_variants_differ_only_in_what_they_measure():
    plan = campaign.setups(1024, "/body.bin")
    on, off = plan["ingress_nginx"], plan["ingress_nginx_no_metrics"]
    assert (off.reference, off.scenario, off.modules) == (on.reference, on.scenario, on.modules)
    assert off.extra.server == on.extra.server and off.extra.upstream == on.extra.upstream
    worker_on = next(line for line in on.extra.http if line.startswith("init_worker"))
    worker_off = next(line for line in off.extra.http if line.startswith("init_worker"))
    assert '"enablemetrics", true' in worker_on and "ngx.timer.every(1" in worker_on
    assert '"enablemetrics", false' in worker_off and "ngx.timer" not in worker_off
    # the longer log line: both sides log, the reference the combined line
    log = plan["access_log_upstreaminfo"]
    assert log.reference == log.scenario == "reverse_proxy" and log.reference_extra is not None
    assert log.reference_extra.http == log.extra.http
    assert log.reference_extra.server[-1] == "access_log access.log combined if=$loggable;"
    assert log.extra.server[-1] == "access_log access.log upstreaminfo if=$loggable;"
    assert log.reference_extra.server[:-1] == log.extra.server[:-1]


def test_ingress_without_metrics_is_priced_below_with_them():
    if not {"ingress_nginx", "ingress_nginx_no_metrics"} <= set(SHIPPED):
        pytest.skip("the ingress_nginx rows are not measured in the shipped table")
    proxy = Workload(protocol="http", scenario="reverse_proxy")
    on, _ = _cost(replace(proxy, features=(("ingress_nginx", 1.0),)))
    off, _ = _cost(replace(proxy, features=(("ingress_nginx_no_metrics", 1.0),)))
    plain, _ = _cost(proxy)
    assert plain.us < off.us < on.us
    # the stand-in's extra sd applies to both rows
    row = SHIPPED["ingress_nginx_no_metrics"]
    plain_row = replace(row, name="limit_req")
    assert on_reference_core(row, 30.0).sd_us > on_reference_core(plain_row, 30.0).sd_us


def test_the_ingress_feature_is_priced_instead_of_minimal_handlers():
    if "ingress_nginx" not in SHIPPED:
        pytest.skip("ingress_nginx is not measured in the shipped table")
    proxy = Workload(protocol="http", scenario="reverse_proxy")
    ingress, share = _cost(replace(proxy, features=(("ingress_nginx", 1.0),)))
    plain, _ = _cost(proxy)
    extra = ingress.terms["feature_ingress_nginx_us"]
    assert ingress.us == pytest.approx(plain.us + extra)
    assert not any(k.startswith("feature_lua_") for k in ingress.terms)
    assert ingress.rel_sd > plain.rel_sd
    # its user-space share earns the sibling thread's user-space gain
    assert 0.0 < share["feature_ingress_nginx_us"] <= 1.0
    factor, _why = thread_gain(ingress, share, 1.07)
    assert factor > 1.0


def test_earlier_runs_keep_one_rows_line_each():
    md = "- Date (UTC): B\n\n| feature |\n\n## Rows measured at A\n\n- Rows: x\n- Command: c\n"
    kept = [{"feature": "x", "measured_at": "A"}]
    notes = campaign._earlier_notes(md, kept)
    assert notes.count("- Rows: x") == 1 and "- Command: c" in notes
    # the next run reads those notes back below its own table: they do not grow
    again = "- Date (UTC): C\n\n| feature |\n" + notes
    assert campaign._earlier_notes(again, kept) == notes


def test_runner_refuses_an_unknown_feature(capsys):
    with pytest.raises(SystemExit) as exc:
        runners_main(["features", "--only", "lua_everything"])
    assert exc.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_median_interval_is_seeded_and_holds_the_median():
    values = [1.0, 4.0, 2.0, 8.0, 3.0]
    med, low, high = campaign.median_interval(values)
    assert (med, low, high) == campaign.median_interval(values)
    assert low <= med == 3.0 <= high


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed")
def test_one_cheap_feature_measured_for_real(tmp_path, leaves_no_nginx, capsys):
    out = tmp_path / "costs.csv"
    argv = ["features", "--only", "limit_conn", "--pairs", "2", "--seconds", "1", "--out", str(out)]
    assert runners_main(argv) == 0
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert [r["feature"] for r in rows] == ["limit_conn"]
    assert list(rows[0]) == list(FEATURE_COST_COLUMNS)
    load_feature_costs(out)  # valid, measured or not (a busy host may refuse a trial)
    notes = out.with_suffix(".md").read_text()
    assert "runners features --only limit_conn" in notes and "Load average" in notes


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed")
@pytest.mark.skipif(
    not Path("/usr/lib/nginx/modules/ngx_http_lua_module.so").exists(),
    reason="libnginx-mod-http-lua is not installed",
)
def test_the_ingress_feature_measured_for_real(tmp_path, leaves_no_nginx, capsys):
    out = tmp_path / "costs.csv"
    names = "ingress_nginx,ingress_nginx_no_metrics,access_log_upstreaminfo"
    argv = ["features", "--only", names, "--pairs", "2", "--seconds", "1"]
    assert runners_main([*argv, "--out", str(out)]) == 0
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert [r["feature"] for r in rows] == [
        "access_log_upstreaminfo",
        "ingress_nginx",
        "ingress_nginx_no_metrics",
    ]
    for r in rows:
        assert r["reference"] == "reverse_proxy"
        # nginx took the config and its Lua (cjson, the balancer) ran: a busy host may still
        # refuse a trial, but never the config
        assert "nginx -t" not in r["note"] and "module not installed" not in r["note"]
    load_feature_costs(out)


def test_a_proxying_scenario_does_not_pay_for_its_proxy_twice():
    proxy = Workload(protocol="http", scenario="reverse_proxy")
    plain, _ = _cost(proxy)
    keep, _ = _cost(replace(proxy, features=(("proxy_keepalive", 1.0),)))
    new, _ = _cost(replace(proxy, features=(("proxy_new_connection", 1.0),)))
    static_new, _ = _cost(Workload(protocol="http", features=(("proxy_new_connection", 1.0),)))
    assert keep.us == plain.us and keep.rel_sd == plain.rel_sd
    extra = new.terms["feature_proxy_new_connection_us"]
    assert extra < static_new.terms["feature_proxy_new_connection_us"]


def test_a_missing_module_is_not_measured_and_starts_nothing(tmp_path):
    from runners.deploy.nginx import NginxHost
    from runners.hosts import LocalHost

    host = LocalHost()
    bench = campaign.Bench(host, NginxHost(host), "wrk", str(tmp_path / "no-modules"), ())
    result = campaign.measure(bench, "lua_log", campaign.Settings(), lambda _: None)
    assert not result.measured and "module not installed" in result.note
    assert "ngx_http_lua_module.so" in result.note


def test_the_notes_say_how_each_measured_feature_was_set_up_and_no_other():
    row = {"status": "not measured", "measured_at": "", "note": "", "reference": "", "pairs": 0}
    rows = [{**row, "feature": n} for n in ("ingress_nginx_no_metrics", "access_log")]
    text = campaign.notes_md(rows, campaign.Settings(), {}, "cmd")
    assert "- ingress_nginx_no_metrics: the same with the controller's metrics off" in text
    assert "- ingress_nginx:" not in text and "- access_log_container:" not in text
    every = [{**row, "feature": n} for n in campaign.SETUP_NOTES]
    text = campaign.notes_md(every, campaign.Settings(), {}, "cmd")
    at = [text.index(note) for note in campaign.SETUP_NOTES.values()]
    assert at == sorted(at) and text.index("- Lua and njs") < at[1]

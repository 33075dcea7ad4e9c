"""The held-out deployments: their file, that no fit reads it, and that the benchmark scores it."""

from __future__ import annotations

import csv
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "reference" / "heldout-deployments.csv"
BENCH = ROOT / "benchmarks" / "bench_heldout.py"
COLUMNS = [
    "row_id", "source_id", "citation", "quote", "provider", "instance_type", "model_instance",
    "platform_mapping", "instances", "link_gbps", "vcpus_nginx", "cpu_model", "environment",
    "protocol", "body_bytes", "scenario", "access_log", "client_keepalive", "upstream_keepalive",
    "lua", "gzip", "client_placement", "measured_rps", "latency", "server_bound",
    "server_bound_evidence", "colocated", "colocated_rps", "nginx_defaults",
]  # fmt: skip


def _rows() -> list[dict[str, str]]:
    with DATA.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_columns_and_rows() -> None:
    with DATA.open(newline="", encoding="utf-8") as f:
        header = next(csv.reader(f))
    assert header == COLUMNS
    rows = _rows()
    assert 12 <= len(rows) <= 30
    assert len({r["row_id"] for r in rows}) == len(rows)
    assert len({r["source_id"] for r in rows}) >= 4
    for r in rows:
        assert r["protocol"] in ("http", "https"), r["row_id"]
        assert r["scenario"] in ("static", "reverse_proxy", "ingress_lua"), r["row_id"]
        assert r["environment"] in ("bare-metal", "vm", "kubernetes"), r["row_id"]
        assert r["server_bound"] in ("yes", "shared", "unknown"), r["row_id"]
        assert float(r["measured_rps"]) > 0 and int(r["body_bytes"]) >= 0
        assert int(r["vcpus_nginx"]) >= 1 and int(r["instances"]) >= 1
        assert r["model_instance"], r["row_id"]


def test_every_row_has_a_citation_and_a_quote_holding_its_number() -> None:
    for r in _rows():
        assert r["citation"].strip() and r["quote"].strip(), r["row_id"]
        assert "@" in r["citation"] or r["citation"].startswith("https://"), r["row_id"]
        digits = r["quote"].replace(",", "")
        value = r["measured_rps"]
        assert value in digits or value.rstrip("0").rstrip(".") in digits, (r["row_id"], value)
        assert r["server_bound_evidence"].strip(), r["row_id"]


def test_no_fitting_code_reads_the_file() -> None:
    """Only benchmarks/ and tests/ name the held-out file; nothing under sizing/ does."""
    readers = []
    for path in (ROOT / "sizing").rglob("*"):
        if path.is_file() and path.suffix in (".py", ".json", ".toml", ".ipynb", ".cfg"):
            if "heldout" in path.read_text(encoding="utf-8", errors="replace").lower():
                readers.append(path.relative_to(ROOT))
    assert readers == []
    named = []
    for top in ("sizing", "runners", "trialtable", "benchmarks", "tests", "notebooks", "data"):
        base = ROOT / top
        if not base.is_dir() or base.is_symlink():
            continue
        for path in base.rglob("*.py"):
            if "heldout" in path.read_text(encoding="utf-8", errors="replace").lower():
                named.append(path.relative_to(ROOT).parts[0])
    assert set(named) <= {"benchmarks", "tests"}
    assert "benchmarks" in named


def test_the_benchmark_runs_and_prints_its_summary() -> None:
    out = subprocess.run(
        [sys.executable, str(BENCH)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH", "")])]
            ),
        },
    )
    assert out.returncode == 0, out.stderr[-2000:]
    text = out.stdout
    assert "SUMMARY" in text
    for line in ("all rows:", "server-bound rows only:", "each source counted once:"):
        assert line in text
    assert text.count("\n") >= len(_rows()) + 5
    for r in _rows():
        assert r["row_id"] in text
    # The platform speeds against their generations and the published steps.
    assert "PLATFORM SPEEDS" in text and "aws-m8a-vs-m7a-any" in text and " held " in text


def test_the_scores_are_numbers_a_regression_would_move() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import bench_heldout
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    out = bench_heldout.run()
    assert out["all"]["n"] == len(_rows())
    for r in out["rows"]:
        assert r["predicted"] > 0 and r["low"] <= r["predicted"] <= r["high"], r["row"]
    s = out["all"]
    assert 0 <= s["inside_95"] <= 1 and s["median_width"] >= 1
    # The recorded figures (heldout-deployments.md); a model change that moves them should
    # update the record.
    assert s["median_abs_ln"] == pytest.approx(0.406, abs=0.05)
    # Reading the configuration must not make the model worse on rows it was not fitted to.
    plain = bench_heldout.run(configured=False)["all"]
    assert plain["median_abs_ln"] == pytest.approx(0.767, abs=0.05)
    assert s["median_abs_ln"] <= plain["median_abs_ln"]
    assert out["sources_once"]["n"] == len({r["source_id"] for r in _rows()})


def _bench():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import bench_heldout
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return bench_heldout


def test_a_client_on_the_same_vm_takes_its_share_and_no_network_is_crossed() -> None:
    """Rows whose wrk ran on NGINX's machine: NGINX gets its share, the link caps nothing."""
    bench = _bench()
    same = [r for r in _rows() if bench.same_host(r)]
    assert len(same) >= 8 and all(r["server_bound"] == "shared" for r in same)
    peak, sd = bench.client_shared(1000.0, 20.0)
    assert 400 < peak < 800 and 0 < sd < 0.3
    # The heavier NGINX's own request, the larger its share of the machine.
    assert bench.client_shared(1000.0, 60.0)[0] > peak
    # A client slower than NGINX on the platform (its own speed, NGINX's over it x2) takes more.
    from sizing.fitting.samevm import ClientSpeed

    assert bench.client_shared(1000.0, 20.0, ClientSpeed(2.0, "test"))[0] < peak
    out = {r["row"]: r for r in bench.run()["rows"]}
    for r in same:
        assert math.isfinite(out[r["row_id"]]["high"]), r["row_id"]


def test_unknowns_widen_only_the_rows_that_leave_them_unknown() -> None:
    bench = _bench()
    by_id = {r["row_id"]: r for r in _rows()}
    assert set(bench.unknowns(by_id["xiaomi-nginx-proxy-1KB"])) == {
        "unknown CPU",
        "unseen environment",
    }
    assert set(bench.unknowns(by_id["aks-ds2v2-ingress-x3"])) == {
        "unknown CPU",
        "unseen environment",
    }
    assert bench.unknowns(by_id["ec2bench-2xl-c5"]) == {}
    assert set(bench.unknowns(by_id["traefik-exoscale-8c-proxy"])) == {
        "unknown CPU",
        "unseen environment",
    }
    assert bench.unknowns(by_id["apisix-t2a-std-2-1w"]) == {}  # GCP: a fitted source measured it
    assert bench.unknowns(by_id["tuning-i5-600B"]) == {}
    rows = {r["row"]: r for r in bench.run()["rows"]}
    assert rows["xiaomi-nginx-proxy-1KB"]["dominant"] == "unknown CPU"
    assert rows["monolake-c5a-http-128"]["dominant"] == "model"


def test_a_container_stdout_log_is_priced_as_the_container_log_path() -> None:
    bench = _bench()
    by_id = {r["row_id"]: r for r in _rows()}
    assert dict(bench.features_of(by_id["ec2bench-2xl-c8g"])) == {
        "access_log_container": 1.0,
        # nginx:alpine's config caches no descriptor and leaves tcp_nopush off
        "open_file_cache_off": 1.0,
        "tcp_nopush_off": 1.0,
    }
    assert bench.file_defaults(by_id["tuning-i5-600B"]) == ["open_file_cache_off"]
    odd = by_id["tuning-i5-600B"] | {"nginx_defaults": "open_file_cache of (typo)"}
    with pytest.raises(ValueError, match="is not one of"):
        bench.file_defaults(odd)
    quiet = odd | {"nginx_defaults": "sendfile off (named, not priced)"}
    assert bench.file_defaults(quiet) == []
    proxy = dict(bench.features_of(by_id["monolake-c5a-http-128"]))
    assert "access_log_container" not in proxy and "open_file_cache_off" not in proxy


def test_a_program_sharing_the_machine_takes_its_measured_share() -> None:
    """The AKS nodes ran a backend replica beside NGINX; the source measured it alone."""
    bench = _bench()
    by_id = {r["row_id"]: r for r in _rows()}
    aks = by_id["aks-ds2v2-ingress-x3"]
    assert float(aks["colocated_rps"]) > 0 and aks["colocated"]
    other = float(aks["colocated_rps"]) / int(aks["instances"])
    shared = bench.with_colocated(1e5, aks)
    assert shared == pytest.approx(1 / (1 / 1e5 + 1 / other))
    assert shared < min(1e5, other)
    assert bench.with_colocated(1e5, by_id["ec2bench-2xl-c5"]) == 1e5


def test_a_row_is_traced_term_by_term() -> None:
    bench = _bench()
    lines = bench.trace("monolake-c5a-http-128")
    text = "\n".join(lines)
    for term in ("proxy_request_us", "body_us", "request_us", "reference cores per vCPU",
                 "SLA derating", "RPS on the network"):  # fmt: skip
        assert term in text
    assert lines[-1].startswith("peak: ")
    with pytest.raises(KeyError):
        bench.trace("no-such-row")


def test_an_unknown_row_to_trace_is_one_line_and_exit_2() -> None:
    out = subprocess.run(
        [sys.executable, str(BENCH), "--trace", "no-such-row"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "no-such-row" in out.stderr


def test_fewer_workers_than_vcpus_cap_nginx_at_their_vcpus() -> None:
    """One APISIX worker on a 2-vCPU VM: at most half the VM's CPU peak, never more."""
    bench = _bench()
    assert bench.workers_cap(1000.0, 1000.0, 1, 2) == pytest.approx(500.0)
    assert bench.workers_cap(300.0, 1000.0, 1, 2) == 300.0  # the client's share bound first
    assert bench.workers_cap(800.0, 1000.0, 4, 4) == 800.0
    assert bench.workers_cap(800.0, 1000.0, 8, 4) == 800.0
    capped = [r for r in _rows() if r["instance_type"] == r["model_instance"]]
    assert any(int(r["vcpus_nginx"]) == 1 for r in capped)


def _file_of(citation: str) -> tuple[str, str]:
    """(``owner/name``, path) a row's citation quotes (``owner/name@commit:path:line``, or a
    GitHub URL: its repository and an empty path)."""
    head = citation.split()[0]
    if head.startswith("https://"):
        parts = head.split("github.com/", 1)[-1].split("/")
        return "/".join(parts[:2]), ""
    repo, rest = head.split("@", 1)
    return repo, rest.split(":")[1] if ":" in rest else ""


def test_no_held_out_row_comes_from_a_fitted_published_source() -> None:
    """A held-out source that is also in data/cloud is held out there (fit=no), and no fitted
    (fit=yes) measurement quotes a file a held-out row quotes."""
    cloud = ROOT / "data" / "cloud"
    with (cloud / "sources.csv").open(newline="", encoding="utf-8") as f:
        fit = {s["source_id"]: s["fit"] for s in csv.DictReader(f)}
    with (cloud / "measurements.csv").open(newline="", encoding="utf-8") as f:
        fitted = {
            (m["repo"], m["path"].split("#")[0])
            for m in csv.DictReader(f)
            if fit.get(m["source_id"]) == "yes"
        }
    assert fitted, "the fitted sources name their files"
    for r in _rows():
        if r["source_id"] in fit:
            assert fit[r["source_id"]] == "no", r["row_id"]
        repo, path = _file_of(r["citation"])
        assert (repo, path) not in fitted, r["row_id"]
        assert path or all(repo != fitted_repo for fitted_repo, _ in fitted), r["row_id"]


def test_the_published_seed_ratios_the_fit_never_saw_stay_predicted() -> None:
    """bench_fidelity.py part 3: every predicted seed 000/002 ratio in range or within 10%.

    A model change can move them without touching any fitted figure (counting a proxy's
    upstream leg against the packet budget once put c7gn / c6gn at 2.00 against 1.52-1.68).
    """
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import bench_fidelity
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    predicted = [r for r in bench_fidelity.seed_ratios()["rows"] if r["role"] == "predicted"]
    assert len(predicted) >= 40
    missed = [(r["claim"], r["vcpus"], round(r["predicted"], 2)) for r in predicted if not r["ok"]]
    assert not missed

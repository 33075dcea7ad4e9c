import importlib
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from sizing.catalog.load import select_instances
from sizing.cli import main as cli

ROOT = Path(__file__).resolve().parent.parent


def run(*args):
    return subprocess.run(
        [sys.executable, "-m", "sizing", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )


@pytest.mark.parametrize(
    "args,fragment",
    [
        (["--rps=-5"], "'-5' is not a positive finite request rate"),
        (["--rps", "0"], "'0' is not a positive"),
        (["--rps", "nan"], "'nan'"),
        (["--rps", "inf"], "'inf'"),
        (["--rps", "abc"], "'abc' is not a number"),
        (["--rps", ""], "'' is not a number"),
        (["--rps", "1e6", "--sla-p99", "0ms"], "longer than zero"),
        (["--rps", "1e6", "--sla-p99", "5"], "not a duration with a unit"),
        (["--rps", "1e6", "--provider", "oracle"], "unknown provider oracle"),
        (["--rps", "1e6", "--catalog", "/nonexistent/cat.csv"], "does not exist"),
        (["--rps", "1e6", "--headroom", "1.5"], "outside [0, 1)"),
        (["--rps", "1e6", "--file-size", "big"], "'big' is not a size"),
        (["--rps", "1e6", "--redundancy", "-1"], "must be >= 0"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, fragment):
    res = run("recommend", *args)
    assert res.returncode == 2, res.stderr
    assert res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert fragment in lines[0]
    assert "Traceback" not in res.stderr


def test_malformed_catalog_names_file_line_field(tmp_path):
    bad = tmp_path / "cat.csv"
    header = ",".join(
        "provider region instance_type family arch cpu vcpus memory_gib network_gbps "
        "network_burst price_usd_hour source source_date".split()
    )
    bad.write_text(header + "\naws,us-east-1,x.large,x,arm64,cpu,two,4,10,false,0.1,me,2026\n")
    res = run("recommend", "--rps", "1e6", "--catalog", str(bad))
    assert res.returncode == 2
    assert f"{bad}:2: field 'vcpus'" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_impossible_target_says_so_and_exits_1():
    res = run("recommend", "--rps", "1e10", "--max-count", "1")
    assert res.returncode == 1
    assert "no instance type meets 10,000,000,000 RPS" in res.stderr
    assert "Traceback" not in res.stderr


def test_default_recommendation_table(capsys):
    assert cli.main(["recommend", "--rps", "1e6"]) == 0
    out = capsys.readouterr().out
    assert "Target 1,000,000 RPS, p99 <= 5 ms" in out
    assert "headroom 20%" in out and "N+0" in out
    # One screen: the decision, the options, one line of basis; --explain for the rest.
    assert len(out.splitlines()) <= 40 and out.splitlines()[-1].startswith("Rests on ")
    assert "--explain lists them" in out and "004_2a50d35d485b581a.txt" not in out
    assert cli.main(["recommend", "--rps", "1e6", "--explain"]) == 0
    out = capsys.readouterr().out
    assert "Rests on" in out and "004_2a50d35d485b581a.txt" in out
    assert "vCPUs needed by family" in out


def test_json_and_csv_formats(capsys):
    assert cli.main(["recommend", "--rps", "1e6", "--format", "json", "--redundancy", "1"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) >= {"target_rps", "sla_p99_ms", "headroom", "redundancy", "options"}
    assert doc["redundancy"] == 1
    costs = [
        o["hourly_cost_at_confidence_usd"] + (o["egress_monthly_usd"] or 0) / 730
        for o in doc["options"]
    ]
    assert costs == sorted(costs) and len(costs) > 50  # by the cost at the confidence + egress
    assert doc["pricing"] == "on-demand" and doc["zones"] == 1 and doc["mix"] is None
    assert all(o["count_per_zone"] == [o["count"]] for o in doc["options"])
    assert doc["decision"]["text"].startswith("Buy ")
    assert all(o["basis"] for o in doc["options"])
    assert cli.main(["recommend", "--rps", "1e6", "--format", "csv", "--top", "3"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 4 and lines[0].startswith("provider,region,instance_type")


def test_arguments_reach_the_library(monkeypatch, capsys):
    seen = {}

    def fake(q, table):  # the fleet question the engine is asked, and its rows
        rules = q.rules
        seen.update(
            target=q.target_rps,
            n=len(table.rows),
            work=q.workload,
            headroom=rules.headroom,
            redundancy=rules.redundancy,
            max_count=rules.max_count,
            evidence=q.evidence,
            confidence=rules.confidence,
            zones=rules.zones,
            pricing=rules.pricing,
            mix=q.mix,
            profiles=list(q.profiles),
        )
        raise cli.Infeasible("stop")

    monkeypatch.setattr(importlib.import_module("sizing.pipeline"), "answer", fake)
    code = cli.main(
        [
            "recommend",
            "--rps",
            "2.5e5",
            "--sla-p99",
            "2500us",
            "--headroom",
            "30%",
            "--redundancy",
            "2",
            "--protocol",
            "http",
            "--file-size",
            "53KB",
            "--scenario",
            "api_gateway",
            "--provider",
            "aws",
            "--arch",
            "arm64",
            "--max-count",
            "7",
            "--confidence",
            "90%",
        ]
    )
    assert code == 1
    assert seen["evidence"] is None and seen["confidence"] == pytest.approx(0.9)
    assert seen["target"] == 2.5e5 and seen["headroom"] == pytest.approx(0.3)
    assert seen["work"].sla_p99_ms == pytest.approx(2.5)
    assert seen["work"].file_bytes == 53 * 1024 and seen["work"].protocol == "http"
    assert seen["work"].scenario == "api_gateway"
    assert seen["redundancy"] == 2 and seen["max_count"] == 7
    # AWS Arm sizes of the default regions in the shipped catalog
    assert seen["n"] == sum(
        1 for i in select_instances(provider="aws", arch="arm64") if i.arch == "arm64"
    )
    assert seen["zones"] == 1 and seen["pricing"] == "on-demand" and seen["mix"] == 1
    assert seen["profiles"] == [] and seen["work"].requests_per_connection == math.inf


@pytest.mark.parametrize(
    "text,ms", [("5ms", 5.0), ("0.005s", 5.0), ("500us", 0.5), ("2 ms", 2.0), ("1e1ms", 10.0)]
)
def test_parse_duration(text, ms):
    assert cli.parse_duration_ms(text) == pytest.approx(ms)


@pytest.mark.parametrize(
    "text,n",
    [
        ("0", 0),
        ("1KB", 1024),
        ("53KB", 54272),
        ("1k", 1024),
        ("1MB", 1048576),
        ("100", 100),
        ("1KiB", 1024),
    ],
)
def test_parse_size(text, n):
    assert cli.parse_size(text) == n


def test_reference_list(capsys):
    assert cli.main(["reference", "--list"]) == 0
    out = capsys.readouterr().out
    assert "nginx-web-server" in out and "91" in out and "004_2a50d35d485b581a.txt" in out


def test_recommend_path_imports_neither_pandas_nor_scipy():
    code = (
        "import sys, io, contextlib\n"
        "from sizing.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['recommend', '--rps', '1e6'])\n"
        "heavy = {m.split('.')[0] for m in sys.modules} & {'pandas', 'scipy', 'plotly'}\n"
        "assert not heavy, heavy\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0, res.stderr

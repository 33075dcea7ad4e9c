"""``runners sweep --nginx-conf``: a user's nginx.conf rewritten, refused, measured and carried.

The rewrite and the refusals are checked on the text (no nginx); one short run with real
nginx and wrk on loopback measures the reference static config against itself, and a killed
run is cleaned up. The reference config file is `runners.deploy.conf`'s own output.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runners.deploy.conf import ConfTarget, render_conf
from runners.deploy.userconf import UserConfError, read_user_conf
from runners.scenario import Scenario
from tests.conftest import nginx_prefixes, nginx_under, runners_cli, sizing_cli

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "data" / "reference" / "nginx-static.conf"
PROXY = ROOT / "tests" / "data" / "conf" / "proxy-keepalive.conf"
TARGET = ConfTarget("/run/p", "127.0.0.1", [20001, 20002], [0], ["127.0.0.1:30001"])


def test_the_reference_file_is_the_reference_config():
    """data/reference/nginx-static.conf is what the static scenario runs (paths aside)."""
    text = render_conf(Scenario(), ConfTarget("/srv/nginx", "0.0.0.0", [80], [0]))
    assert REFERENCE.read_text() == text


def _paths(text: str) -> set[str]:
    """The absolute paths the config names (comments left out)."""
    lines = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#"))
    return set(re.findall(r"(?<![\w:/])/[\w./-]+", lines))


def test_a_proxy_config_is_moved_into_the_run():
    conf = read_user_conf(str(PROXY))
    assert conf.upstreams == ["127.0.0.1:8081", "127.0.0.1:8082"]
    text = conf.render(TARGET)
    assert "listen 127.0.0.1:20001;" in text
    assert "server 127.0.0.1:30001;" in text and "8081" not in text
    assert "proxy_pass http://app;" in text  # the upstream block is kept, its servers moved
    files = {p for p in _paths(text) if not p.startswith(("/static/", "/run/p/"))}
    assert files == set(), files  # every file the config names is in the run's folder


def test_listens_certificates_and_secrets_are_the_runs(tmp_path):
    (tmp_path / "nginx.conf").write_text(
        "user www-data;\nworker_processes auto;\npid /run/nginx.pid;\n"
        "events {}\nhttp {\n"
        "  resolver 8.8.8.8;\n"
        "  server { listen 443 ssl; listen [::]:443 ssl reuseport; listen 80;\n"
        "    ssl_certificate /etc/ssl/a.pem; ssl_certificate_key /etc/ssl/a.key;\n"
        "    ssl_certificate /etc/ssl/b.pem; ssl_certificate_key /etc/ssl/b.key;\n"
        "    ssl_dhparam /etc/ssl/dh.pem; ssl_session_ticket_key /etc/ssl/t.key;\n"
        "    auth_basic_user_file /etc/nginx/htpasswd;\n"
        "    location /d/ { proxy_pass http://203.0.113.9:8080/x/; }\n"
        "    location /s/ { alias /srv/static/; } }\n"
        "  map $uri $m { default 0; root 1; ~proxy_store 2; }\n"
        "  server { listen unix:/var/run/n.sock; return 204; }\n}\n"
    )
    conf = read_user_conf(str(tmp_path / "nginx.conf"))
    assert (conf.slots, conf.target, conf.https) == (["443", "80", "unix:/var/run/n.sock"], 0, True)
    text = conf.render(ConfTarget("/run/p", "127.0.0.1", [1, 2, 3], [0, 1], ["127.0.0.1:9"]))
    listens = re.findall(r"^\s*listen (.*);", text, re.M)
    assert listens == ["127.0.0.1:1 ssl", "127.0.0.1:2", "unix:/run/p/socket-2.sock"]
    assert "reuseport" not in text  # a socket option of the merged [::]:443 is not given twice
    assert text.count("ssl_certificate /run/p/cert.pem;") == 1
    assert "ssl_session_ticket_key /run/p/ticket.key;" in text
    assert "auth_basic_user_file /run/p/htpasswd;" in text
    assert "proxy_pass http://127.0.0.1:9/x/;" in text and "alias /run/p/html/;" in text
    assert "worker_processes 2;" in text and "pid /run/p/nginx.pid;" in text
    assert "map $uri $m {" in text and "root 1;" in text  # a map's entries are data
    assert "www-data" not in text and "8.8.8.8" not in text and "dh.pem" not in text
    assert not {p for p in _paths(text) if not p.startswith(("/run/p/", "/d/", "/s/", "/x/"))}


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("fastcgi_pass 127.0.0.1:9000;", "only HTTP has a local stub"),
        ("proxy_pass https://a.example;", "only http:// targets"),
        ("proxy_pass http://$host;", "a target in a variable"),
        ("proxy_store on;", "writes responses into files"),
        ("access_log syslog:server=10.0.0.1 combined;", "syslog server"),
        ("js_import /etc/nginx/x.js;", "reads code from a file"),
        ("content_by_lua_file /etc/nginx/x.lua;", "reads code from a file"),
    ],
)
def test_what_the_sandbox_cannot_run_is_one_line(tmp_path, text, why):
    path = tmp_path / "nginx.conf"
    path.write_text(
        f"events {{}}\nhttp {{\n server {{ listen 80;\n  location / {{\n {text}\n }} }} }}\n"
    )
    with pytest.raises(UserConfError) as err:
        read_user_conf(str(path))
    message = str(err.value)
    assert why in message and f"{path}:5:" in message and "\n" not in message


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("include loop.conf;", "include loop"),
        ("http { server { listen 80; }", "unexpected end of file"),
        ("no_such_directive on;", 'unknown directive "no_such_directive"'),
        ("events {}", "no http server listens"),
    ],
)
def test_unreadable_configs_are_refused(tmp_path, text, why):
    (tmp_path / "loop.conf").write_text("include loop.conf;\n")
    path = tmp_path / "nginx.conf"
    path.write_text(text + "\n")
    with pytest.raises(UserConfError, match=re.escape(why)):
        read_user_conf(str(path))


@pytest.mark.parametrize(
    ("conf", "extra", "why"),
    [
        ("load_module modules/ngx_no_such_module.so;\n", (), "module not installed"),
        ("include loop.conf;\n", (), "include loop"),
        ("", ("--target-address", "0.0.0.0"), "is a wildcard"),
        ("", ("--vcpus", "1,2"), "one --vcpus"),
        ("", ("--server", "sim"), "--server sim"),
    ],
)
def test_bad_input_is_exit_2_before_any_run(tmp_path, conf, extra, why):
    (tmp_path / "loop.conf").write_text("include loop.conf;\n")
    path = tmp_path / "nginx.conf"
    path.write_text(conf + REFERENCE.read_text())
    out = tmp_path / "runs"
    p = runners_cli("sweep", "--nginx-conf", str(path), "--out", str(out), *extra)
    assert p.returncode == 2, p.stderr
    assert why in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert not out.exists() or not any(out.iterdir())


def test_pairs_without_a_config_is_refused(tmp_path):
    p = runners_cli("sweep", "--pairs", "3", "--server", "sim", "--out", str(tmp_path))
    assert p.returncode == 2 and "--pairs is for --nginx-conf" in p.stderr


def _cost(folder: Path, ratio: float, protocol: str = "https") -> Path:
    folder.mkdir()
    doc = {
        "kind": "nginx-conf-cost",
        "run_id": folder.name,
        "reference_run_id": "ref-run",
        "nginx_conf": "/etc/nginx/nginx.conf",
        "reference": {"scenario": "static", "protocol": protocol, "file_bytes": 1024},
        "ratio": ratio,
        "ratio_low": ratio * 0.95,
        "ratio_high": ratio * 1.05,
        "pairs": 8,
    }
    (folder / "conf-cost.json").write_text(json.dumps(doc))
    return folder


def _cpu_bound(doc: dict) -> dict[str, float]:
    return {
        o["instance_type"]: o["capacity_rps_per_instance"]
        for o in doc["options"]
        if o["binding_constraint"] == "cpu"
    }


def test_recommend_runs_divides_the_cpu_capacity_by_the_ratio(tmp_path):
    base = ("recommend", "--rps", "2e5", "--provider", "aws", "--format", "json", "--top", "60")
    plain = sizing_cli(*base)
    assert plain.returncode == 0, plain.stderr
    run = _cost(tmp_path / "conf-run", 2.0)
    p = sizing_cli(*base, "--runs", str(run))
    assert p.returncode == 0, p.stderr
    before, after = _cpu_bound(json.loads(plain.stdout)), _cpu_bound(json.loads(p.stdout))
    both = set(before) & set(after)
    assert both
    for name in both:
        assert after[name] == pytest.approx(before[name] / 2, rel=1e-6)
    assert "costs x2.00" in p.stdout
    other = sizing_cli(*base, "--runs", str(run), "--protocol", "http")
    assert other.returncode == 1 and "not used" in other.stderr


@pytest.mark.parametrize(
    "damage", ['{"kind": "nginx-conf-cost"}', "not json", '{"kind": "x"}', "link"]
)
def test_a_damaged_cost_file_is_one_line(tmp_path, damage):
    run = tmp_path / "run"
    run.mkdir()
    if damage == "link":
        (run / "conf-cost.json").symlink_to("/etc/passwd")
    else:
        (run / "conf-cost.json").write_text(damage)
    p = sizing_cli("recommend", "--rps", "1e5", "--runs", str(run))
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "root:" not in p.stderr


ARGS = ("--protocol", "http", "--duration", "1s", "--warmup", "0", "--cooldown", "0")


def test_the_reference_config_measures_as_the_reference(tmp_path, own_tmpdir, leaves_no_nginx):
    """Real nginx and wrk on loopback: the reference config against itself, 2 short pairs."""
    p = runners_cli(
        "sweep", "--nginx-conf", str(REFERENCE), *ARGS, "--pairs", "2", "--out", str(tmp_path)
    )
    assert p.returncode == 0, p.stderr
    (cost,) = tmp_path.glob("*/conf-cost.json")
    doc = json.loads(cost.read_text())
    assert doc["pairs"] == 2 and doc["reference"]["protocol"] == "http"
    # A measured ratio: the same config on a shared machine, so near 1, not a timing bound.
    assert math.isfinite(doc["ratio"]) and 0.3 < doc["ratio"] < 3
    confs = json.loads((cost.parent / "run.json").read_text())["nginx_conf"]
    assert all("listen 127.0.0.1:" in c for c in confs.values())
    assert str(own_tmpdir) in next(iter(confs.values()))  # paths in the run's prefix


def test_a_killed_run_leaves_nothing_cleanup_cannot_remove(tmp_path, own_tmpdir, leaves_no_nginx):
    argv = ["sweep", "--nginx-conf", str(PROXY), *ARGS, "--pairs", "50", "--out", str(tmp_path)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "runners", *argv, "--quiet"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and proc.poll() is None:
        if any(len(t.read_text().splitlines()) > 1 for t in tmp_path.glob("*/trials.csv")):
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before a trial was recorded"
    proc.kill()
    proc.wait(timeout=60)
    assert nginx_under(own_tmpdir), "the killed run's nginx (and its stub upstream) still run"
    p = runners_cli("cleanup", "--all", "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr
    deadline = time.monotonic() + 30
    while nginx_under(own_tmpdir) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not nginx_under(own_tmpdir) and not nginx_prefixes(own_tmpdir)
    assert not list(own_tmpdir.glob("nginx-sizing-load.*"))
    assert os.listdir(tmp_path)  # the runs' records are kept

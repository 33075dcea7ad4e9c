"""Hostile files given to the configuration readers, ``--prices`` and ``catalog update``.

Each refusal is one line on stderr and exit 2 (no traceback, no hang), and a hostile string
that is accepted as data reaches no output as a terminal escape or a spreadsheet formula. The
commands run in-process (`sizing.cli.main.main`); nothing here starts nginx or puts load
anywhere.
"""

from __future__ import annotations

import glob

import pytest

from sizing.workload.conf import read
from tests.test_bad_input import one_line, sizing
from trialtable import nginxconf

PROG = "python -m sizing"
SERVER = "events {}\nhttp {\n server {\n  listen 8080;\n  %s\n  location / { return 200; }\n }\n}\n"


def refused(capfd, *argv: str) -> str:
    """The one line of a refusal with exit 2."""
    code, _, err = sizing(capfd, *argv)
    assert code == 2, err
    return one_line(err, PROG)


# ------------------------------------------------------------------------- nginx.conf (--from-conf)


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("nan", "'nan': not a whole number"),
        ("inf", "'inf': not a whole number"),
        ("1.5", "'1.5': not a whole number"),
        ("on", "'on': not a whole number"),
        ("9" * 5000, "'" + "9" * 40 + "': not a whole number"),
        ("-5", "'-5': nginx takes no negative value here"),
    ],
)
def test_keepalive_requests_is_read_as_nginx_reads_it(capfd, tmp_path, value, why):
    conf = tmp_path / "nginx.conf"
    conf.write_text(SERVER % f"keepalive_requests {value};")
    line = refused(capfd, "workload", "--from-conf", str(conf))
    assert f"nginx.conf:5: keepalive_requests is {why}" in line


@pytest.mark.parametrize("text", ["<html><body>404</body></html>\n", "root:*:20228:0:99999:7:::\n"])
def test_a_file_that_is_not_a_config_says_so(capfd, tmp_path, text):
    conf = tmp_path / "nginx.conf"
    conf.write_text(text)
    line = refused(capfd, "workload", "--from-conf", str(conf))
    assert line.endswith("nginx.conf: does not parse as an nginx configuration"), line


def test_a_glob_that_walks_too_many_folders_is_refused(capfd, tmp_path, monkeypatch):
    """``include /*/*/*/*/*/*/x.conf`` would walk the whole file system to match nothing."""
    monkeypatch.setattr(nginxconf, "MAX_GLOB_SCANNED", 50)
    for i in range(10):
        for j in range(6):
            (tmp_path / f"d{i}" / f"e{j}").mkdir(parents=True)
    conf = tmp_path / "nginx.conf"
    conf.write_text("events {}\nhttp { include */*/nothing.conf; }\n")
    line = refused(capfd, "workload", "--from-conf", str(conf))
    assert "include */*/nothing.conf looks through more than 50 folder entries; refused" in line


def test_the_bounded_glob_matches_what_glob_matches(tmp_path):
    for name in ("a/x.conf", "a/.hidden.conf", "b/y.conf", "b/z.txt", ".c/w.conf", "a/sub/v.conf"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    include = nginxconf.Statement("include", ["x"], "nginx.conf", 1)
    for pattern in ("*/*.conf", "*/.*", ".*/*.conf", "[ab]/?.conf", "a/*", "*/sub/*.conf", "q*/*"):
        full = str(tmp_path / pattern)
        assert sorted(nginxconf._glob(full, include)) == sorted(glob.glob(full)), pattern


# ------------------------------------------------------------------ ingress-nginx (--ingress-nginx)


@pytest.mark.parametrize(
    ("data", "why"),
    [
        ("keep-alive: 1e308", "keep-alive is '1e308': not a whole number"),
        ("keep-alive-requests: 1e308", "keep-alive-requests is '1e308': not a whole number"),
        ("keep-alive: true", "keep-alive is 'true': not a whole number"),
        ("upstream-keepalive-connections: 1.5", "upstream-keepalive-connections is '1.5': not"),
        (f'upstream-keepalive-connections: "{"9" * 5000}"', "upstream-keepalive-connections is"),
        ('keep-alive: "\\e[31m75"', "keep-alive is '\\\\x1b[31m75': not a whole number"),
    ],
)
def test_configmap_counts_are_whole_numbers(capfd, tmp_path, data, why):
    cm = tmp_path / "cm.yaml"
    cm.write_text(f"kind: ConfigMap\ndata:\n  {data}\n")
    line = refused(capfd, "workload", "--ingress-nginx", str(cm))
    assert f"cm.yaml: {why}" in line and "int_max_str_digits" not in line, line


def test_no_upstream_keepalive_for_a_negative_count_as_the_template_renders_it(tmp_path):
    cm = tmp_path / "cm.yaml"
    cm.write_text('data:\n  upstream-keepalive-connections: "-5"\n')
    assert dict(read(ingress_nginx=str(cm)).workload.features).get("proxy_new_connection") == 1.0


def test_chart_extra_args_that_are_not_a_mapping_are_refused(capfd, tmp_path):
    values = tmp_path / "values.yaml"
    values.write_text("controller:\n  extraArgs: [enable-metrics]\n")
    line = refused(capfd, "workload", "--ingress-nginx", str(values))
    assert "values.yaml: controller.extraArgs is a list, not a mapping" in line


def test_an_escape_in_a_file_name_reaches_no_output(capfd, tmp_path):
    cm = tmp_path / "\x1b]0;x\x07\x1b[31m<b>cm.yaml"
    cm.write_text('data:\n  enable-modsecurity: "true"\n')
    reading = read(ingress_nginx=str(cm))
    assert not any("\x1b" in u for u in reading.workload.uncosted), reading.workload.uncosted
    assert not any("\x1b" in p for p in reading.found.provenance.values())
    code, out, err = sizing(capfd, "workload", "--ingress-nginx", str(cm))
    assert code == 0 and "\x1b" not in out + err and "\\x1b[31m<b>cm.yaml" in err

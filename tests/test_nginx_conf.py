"""Reading a user's nginx.conf (and an ingress-nginx ConfigMap) into a workload.

The fixtures under tests/data/conf/ are real configurations (see its README.md); a test runs
``nginx -t`` on each so they stay ones NGINX accepts.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from sizing.cli import main as cli
from sizing.errors import InputError
from sizing.request import SizingRequest
from sizing.workload.conf import read
from sizing.workload.conf.load import MAX_GLOB_MATCHES, MAX_LINE_BYTES
from sizing.workload.conf.locations import tame

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "conf"
DEBIAN = DATA / "debian" / "nginx.conf"
CONFS = (
    "static-tuned.conf",
    "proxy-keepalive.conf",
    "proxy-new-connection.conf",
    "lua-njs.conf",
    "ingress-rendered.conf",
    "app-fallback.conf",
)


def features(path: Path, **kw: str) -> dict[str, float]:
    return dict(read(str(path), **kw).workload.features)


#: What a static HTTP/1.1 location pays under NGINX's defaults (no open_file_cache; sendfile off
#: is named among the uncosted directives instead).
DEFAULTS = {"open_file_cache_off": 1.0}
#: What Debian's default site pays per request: its log line, its file looked up
#: (``try_files $uri $uri/ =404``) and opened.
DEBIAN_FEATURES = {"access_log": 1.0, "open_file_cache_off": 1.0, "try_files_check": 1.0}


# -- what each fixture says -------------------------------------------------------------------


def test_debian_default_reads_its_includes_and_logs_every_request():
    r = read(str(DEBIAN))
    names = [Path(f).name for f in r.files]
    assert names == ["nginx.conf", "mime.types", "default"]
    assert "sites-enabled/default:" in r.chosen and "location /" in r.chosen
    w = r.workload
    assert (w.scenario, w.protocol, w.http_version) == ("static", "http", "1.1")
    # No open_file_cache in Debian's config: each request looks its file up and opens it.
    assert dict(w.features) == DEBIAN_FEATURES
    assert w.gzip == 0.5 and w.requests_per_connection == 1000
    assert r.found.provenance["access_log"] == f"your nginx.conf ({DEBIAN}:40)"
    assert r.found.settings["sendfile"].startswith("on at ")
    assert r.found.settings["worker_connections"].startswith("768 at ")
    assert any("gzip" in e for e in r.found.estimates)
    assert w.uncosted == ()


def test_tuned_static_server():
    w = read(str(DATA / "static-tuned.conf")).workload
    assert (w.protocol, w.http_version, w.tls_key) == ("https", "2", "ecdsa-p256")
    assert w.features == () and w.gzip == 0.0
    assert w.tls_resumption == 0.5 and w.requests_per_connection == 100000


def test_proxy_with_upstream_keepalive_and_cache():
    conf = DATA / "proxy-keepalive.conf"
    r = read(str(conf))
    assert dict(r.workload.features) == {
        "access_log_buffered": 1.0,
        "proxy_keepalive": 1.0,
        "limit_req": 1.0,
    }
    assert r.found.settings[f"access_log {conf}:8"].endswith("(format combined)")
    cached = read(str(conf), location="/static/")
    assert dict(cached.workload.features) == {
        "access_log_buffered": 1.0,
        "proxy_keepalive": 0.5,
        "proxy_cache_hit": 0.5,
    }
    assert any("hit share is unknown" in e for e in cached.found.estimates)


def test_a_file_opened_per_request_is_a_feature_where_files_are_served(tmp_path):
    conf = tmp_path / "nginx.conf"
    conf.write_text(
        "events {}\nhttp {\n access_log off;\n sendfile on;\n tcp_nopush on;\n"
        " server {\n  listen 80;\n  location / { }\n"
        "  location /cached { open_file_cache max=1000; }\n"
        "  location /off { open_file_cache off; }\n"
        "  location /ok { return 200 ok; }\n"
        "  location /lua { content_by_lua_block { ngx.say(1) } }\n"
        "  location /api { proxy_pass http://10.0.0.1; }\n"
        "  location /outer { return 404; location /outer/inner { } }\n }\n"
        " server {\n  listen 81;\n  server_name moved;\n  return 301 https://example.com$uri;\n"
        "  location / { }\n }\n"
        " server {\n  listen 82;\n  server_name gone;\n  rewrite ^ /x redirect;\n }\n}\n"
    )
    assert features(conf) == {"open_file_cache_off": 1.0}
    assert features(conf, location="/off") == {"open_file_cache_off": 1.0}
    assert features(conf, location="/cached") == {}
    assert features(conf, location="/ok") == {}
    assert features(conf, location="/lua") == {"lua_content": 1.0}
    assert "open_file_cache_off" not in features(conf, location="/api")
    # A nested location does not inherit its parent's return; a redirecting server opens nothing.
    assert features(conf, location="/outer/inner") == {"open_file_cache_off": 1.0}
    assert features(conf, server="moved") == {} and features(conf, server="gone") == {}
    why = read(str(conf)).found.estimates
    assert any(e.startswith("open_file_cache off at ") for e in why)
    http_cache = "access_log off; open_file_cache max=10;"
    conf.write_text(conf.read_text().replace("access_log off;", http_cache))
    assert features(conf) == {}
    assert features(conf, location="/off") == {"open_file_cache_off": 1.0}


def test_sendfile_and_tcp_nopush_where_a_plain_http_file_is_sent(tmp_path):
    conf = tmp_path / "nginx.conf"
    conf.write_text(
        "events {}\nhttp {\n access_log off;\n open_file_cache max=10;\n"
        " server {\n  listen 80;\n  location / { }\n"
        "  location /sf { sendfile on; }\n"
        "  location /both { sendfile on; tcp_nopush on; }\n }\n"
        " server {\n  listen 443 ssl;\n  server_name tls;\n  location / { }\n }\n}\n"
    )
    assert features(conf) == {}  # NGINX's default, sendfile off: named, not priced
    assert read(str(conf)).workload.uncosted == (f"sendfile off ({conf}:7)",)  # location /
    assert features(conf, location="/sf") == {"tcp_nopush_off": 1.0}
    assert read(str(conf), location="/sf").workload.uncosted == ()
    # A response gzipped on the fly is built in memory: its share sends no file.
    zipped = conf.read_text().replace("access_log off;", "access_log off; gzip on;")
    conf.write_text(
        zipped.replace("open_file_cache max=10;", "open_file_cache max=10; gzip_types *;")
    )
    assert features(conf, location="/sf") == {}
    conf.write_text(zipped.replace(" sendfile on; }", " sendfile On; }"))
    assert features(conf, location="/sf") == {"tcp_nopush_off": 1.0 - read(str(conf)).workload.gzip}
    assert features(conf, location="/both") == {}
    assert features(conf, server="tls") == {}  # over TLS (no kTLS) nginx does not use sendfile
    why = read(str(conf), location="/sf").found.estimates
    assert any(e.startswith("tcp_nopush off at ") for e in why)


def test_try_files_sizes_where_a_request_no_file_answers_goes(tmp_path):
    conf = tmp_path / "nginx.conf"
    conf.write_text(
        "events {}\nhttp {\n access_log off;\n sendfile on;\n tcp_nopush on;\n"
        " upstream app { server 10.0.0.1:3000; keepalive 8; }\n"
        " server {\n  listen 80;\n  location / { try_files $uri $uri/ @app; }\n"
        "  location @app { proxy_pass http://app; proxy_http_version 1.1; "
        'proxy_set_header Connection ""; }\n'
        "  location /php/ { try_files $uri /index.php?$args; }\n"
        "  location ~ \\.php$ { fastcgi_pass 127.0.0.1:9000; }\n"
        "  location /spa/ { try_files $uri /spa/index.html; }\n"
        "  location /gone/ { try_files $uri @nowhere; }\n"
        "  location /cached/ { open_file_cache max=10; try_files $uri @app; }\n"
        "  location /kept/ { open_file_cache max=9; open_file_cache_errors on; "
        "try_files $uri @app; }\n"
        "  location /wp/ { try_files $uri $uri/ /wp/index.php$is_args$args; }\n"
        "  location =/wp/index.php { proxy_pass http://app; }\n"
        "  location /if/ { if ($request_method = POST) { proxy_pass http://app; } }\n }\n}\n"
    )
    r = read(str(conf))
    # A request no file answers looks up both candidates, then goes to @app: sized so.
    assert r.workload.scenario == "reverse_proxy" and "to location @app at" in r.chosen
    assert features(conf) == {"proxy_keepalive": 1.0, "try_files_check": 2.0}
    php = read(str(conf), location="/php/")  # a URI fallback goes where NGINX would send it
    assert php.workload.scenario == "reverse_proxy" and "\\.php$ at" in php.chosen
    assert php.workload.uncosted == (f"fastcgi_pass ({conf}:12)",)
    assert features(conf, location="/php/") == {"try_files_check": 1.0}
    # A fallback its own location serves, or none that exists: a static location.
    assert features(conf, location="/spa/") == {"open_file_cache_off": 1.0, "try_files_check": 1.0}
    assert features(conf, location="/gone/") == {"open_file_cache_off": 1.0, "try_files_check": 1.0}
    why = read(str(conf), location="/gone/").found.estimates
    assert any("its fallback '@nowhere' is not followed" in e for e in why)
    # open_file_cache keeps a miss only with open_file_cache_errors on.
    assert features(conf, location="/cached/") == {"proxy_keepalive": 1.0, "try_files_check": 1.0}
    assert features(conf, location="/kept/") == {"proxy_keepalive": 1.0}
    # $is_args$args are the URI's arguments; a modifier may be glued to its path (=/x).
    wp = read(str(conf), location="/wp/")
    assert "to location =/wp/index.php at" in wp.chosen
    assert dict(wp.workload.features) == {"proxy_new_connection": 1.0, "try_files_check": 2.0}
    under_if = read(str(conf), location="/if/")
    assert under_if.workload.scenario == "reverse_proxy"
    assert any(e.startswith("proxy_pass under if at ") for e in under_if.found.estimates)
    assert under_if.workload.uncosted == (f"if ({conf}:19)",)


def test_flags_read_in_any_case_as_nginx_does(tmp_path):
    conf = tmp_path / "nginx.conf"
    conf.write_text(
        "events {}\nhttp {\n access_log off;\n open_file_cache max=9;\n gzip ON;\n"
        " ssl_session_tickets OFF;\n server {\n  listen 443 ssl;\n  http2 On;\n"
        "  location / { }\n }\n}\n"
    )
    w = read(str(conf)).workload
    assert (w.protocol, w.http_version, w.gzip, w.tls_resumption) == ("https", "2", 0.5, 0.0)
    assert w.uncosted == ()


def test_http3_is_named_not_costed(tmp_path):
    conf = tmp_path / "nginx.conf"
    conf.write_text(
        "events {}\nhttp {\n access_log off;\n open_file_cache max=9;\n server {\n"
        "  listen 443 ssl;\n  listen 443 quic reuseport;\n  http2 on;\n  http3 on;\n"
        "  location / { }\n }\n}\n"
    )
    r = read(str(conf))
    assert r.workload.uncosted == (f"listen quic (HTTP/3) ({conf}:7)",)
    assert any(e.startswith("HTTP/3 at ") for e in r.found.estimates)
    assert not any("with and without TLS" in e for e in r.found.estimates)


def test_applications_behind_their_static_files():
    conf = DATA / "app-fallback.conf"
    node = read(str(conf), server="app.example.com")
    assert node.workload.scenario == "reverse_proxy" and "location @node at" in node.chosen
    assert dict(node.workload.features) == {
        "access_log": 1.0,
        "proxy_keepalive": 1.0,
        "try_files_check": 1.0,
    }
    php = read(str(conf), server="php.example.com")
    assert php.workload.scenario == "reverse_proxy" and "location ~ \\.php$ at" in php.chosen
    assert dict(php.workload.features) == {"access_log": 1.0, "try_files_check": 2.0}
    assert php.workload.uncosted == (f"fastcgi_pass ({conf}:54)",)
    assert node.workload.workers == php.workload.workers == 0  # worker_processes auto


COSTLY = [
    "^/(a+)+$",
    "a*a*a*a*b",
    "^/" + "a?" * 34 + "a" * 34 + "$",  # optional characters count as repeats
    r"(a|aa|\\)+$",  # a group closed after an escaped backslash
    "(?x)^/(a|aa) +$",  # verbose mode: the repeat after a space
    "a{4294967296}",  # beyond the matcher's count: no traceback
]


@pytest.mark.parametrize("pattern", COSTLY)
def test_a_costly_location_regex_is_passed_over_not_tried(tmp_path, pattern):
    conf = tmp_path / "nginx.conf"
    regex = pattern.replace("\\", "\\\\").replace('"', '\\"')
    conf.write_text(
        "events {}\nhttp {\n access_log off;\n server {\n  listen 80;\n"
        f"  location / {{ try_files $uri /{'a' * 60}!; }}\n"
        f'  location ~ "{regex}" {{ proxy_pass http://10.0.0.1; }}\n }}\n}}\n'
    )
    assert not tame(pattern)
    signal.signal(signal.SIGALRM, _too_long)
    signal.alarm(20)  # a pattern tried by mistake would run for minutes: fail instead
    try:
        r = read(str(conf))
    finally:
        signal.alarm(0)
    assert r.workload.scenario == "static"  # NGINX's longest prefix, / itself


def _too_long(*_: object) -> None:
    raise AssertionError("a location regex was tried and ran for 20 s")


def test_the_regexes_of_common_configs_are_tried():
    assert tame(r"\.php$") and tame(r"^/index\.php(/|$)") and tame(r"\.(jpe?g|png)$")
    assert tame(r"\(a+\)+")  # escaped parentheses are characters, not a group
    assert tame(r"/\.(?!well-known).*") and tame("[^/]\\.php(/|$)")
    assert not tame("x" * 201)


def test_proxy_without_upstream_keepalive_and_server_choice():
    conf = DATA / "proxy-new-connection.conf"
    r = read(str(conf))
    assert dict(r.workload.features) == {"access_log": 1.0, "proxy_new_connection": 1.0}
    assert r.workload.gzip == 1.0 and "of 2" in r.chosen
    assert any("no upstream block with keepalive" in e for e in r.found.estimates)
    assert r.found.settings["proxy_buffering"].startswith("off at ")
    old = read(str(conf), server="old.example.com").workload
    assert old.features == () and old.requests_per_connection == 1  # a redirect opens no file
    assert old.uncosted == (f"rewrite ({conf}:33)",)
    with pytest.raises(InputError, match=r"no server named 'nope'.*www\.example\.com"):
        read(str(conf), server="nope")
    with pytest.raises(InputError, match="no location '/x'"):
        read(str(conf), location="/x")


def test_lua_and_njs_by_phase():
    conf = DATA / "lua-njs.conf"
    r = read(str(conf))
    assert dict(r.workload.features) == {
        "proxy_new_connection": 1.0,
        "lua_access": 1.0,
        "lua_balancer": 1.0,
        "lua_log": 1.0,
    }
    assert r.workload.uncosted == (f"body_filter_by_lua_block ({conf}:37)",)
    assert features(conf, location="/hello") == {"lua_access": 1.0, "njs_content": 1.0}


def test_inheritance_location_over_server_over_http(tmp_path):
    conf = tmp_path / "nginx.conf"
    conf.write_text(
        "events {}\nhttp {\n access_log off;\n limit_conn_zone $binary_remote_addr zone=a:1m;\n"
        " server {\n  listen 80;\n  limit_conn a 10;\n  location / { access_log x.log; }\n"
        "  location /quiet { limit_conn a 1; limit_conn a 2; }\n }\n}\n"
    )
    assert features(conf) == {"access_log": 1.0, "limit_conn": 1.0, **DEFAULTS}
    assert features(conf, location="/quiet") == {"limit_conn": 2.0, **DEFAULTS}


def test_ingress_configmap():
    path = DATA / "ingress-configmap.yaml"
    r = read(ingress_nginx=str(path))
    assert dict(r.workload.features) == {
        "access_log_container": 1.0,  # the image's access.log is /dev/stdout
        "proxy_keepalive": 1.0,
        # the controller's Lua, measured as one feature; a ConfigMap does not say whether
        # --enable-metrics is given: the controller's and the chart's default, off
        "ingress_nginx_no_metrics": 1.0,
        # its log-format-upstream (83 characters) is no longer than combined: no extra
    }
    assert "nginx.tmpl:532 (lua_balancer)" in r.found.provenance["ingress_nginx_no_metrics"]
    assert (
        r.found.settings["metrics"].startswith("off (")
        and "flags.go:177" in (r.found.settings["metrics"])
    )
    assert any(e.startswith("metrics off: a ConfigMap does not say") for e in r.found.estimates)
    assert any(e.startswith("log-format-upstream: a log format of 83") for e in r.found.estimates)
    assert r.workload.uncosted == (f"enable-opentelemetry ({path})",)
    assert r.workload.requests_per_connection == 10000 and r.workload.http_version == "2"


def test_ingress_chart_values_say_whether_metrics_are_on(tmp_path):
    values = tmp_path / "values.yaml"
    values.write_text(
        'controller:\n  config:\n    use-http2: "false"\n  metrics:\n    enabled: true\n'
    )
    r = read(ingress_nginx=str(values))
    assert dict(r.workload.features) == {
        "access_log_container": 1.0,
        "access_log_upstreaminfo": 1.0,  # the default upstreaminfo line's extra over combined
        "proxy_keepalive": 1.0,
        "ingress_nginx": 1.0,  # monitor.call() in the log phase
    }
    assert r.workload.http_version == "1.1"  # controller.config is the ConfigMap's data
    assert "controller.metrics.enabled" in r.found.settings["metrics"]
    assert r.found.source == "your ingress-nginx chart values"
    assert not any(e.startswith("metrics") for e in r.found.estimates)
    # extraArgs come after the chart's flag (the last one wins); absent: the chart's default
    values.write_text(
        "controller:\n  metrics: {enabled: true}\n  extraArgs: {enable-metrics: 'false'}\n"
    )
    assert "ingress_nginx_no_metrics" in features_of_ingress(values)
    values.write_text("controller:\n  extraArgs: {enable-metrics: ''}\n")
    assert "ingress_nginx" in features_of_ingress(values)
    values.write_text("controller:\n  replicaCount: 2\n")
    r = read(ingress_nginx=str(values))
    assert "ingress_nginx_no_metrics" in dict(r.workload.features)
    assert "the chart's default false" in r.found.settings["metrics"]


def features_of_ingress(path: Path) -> dict[str, float]:
    return dict(read(ingress_nginx=str(path)).workload.features)


def test_a_log_format_is_priced_by_its_length(tmp_path):
    from trialtable.features import UPSTREAMINFO_FORMAT

    conf = tmp_path / "nginx.conf"
    longer = UPSTREAMINFO_FORMAT + " $request_id" * 20
    conf.write_text(
        "events {}\nhttp {\n"
        f" log_format upstreaminfo escape=json '{UPSTREAMINFO_FORMAT}';\n"
        f" log_format long '{longer}';\n"
        " log_format short '$remote_addr $status';\n"
        " server {\n  listen 80;\n  access_log /var/log/a.log upstreaminfo;\n"
        "  location /long { access_log /var/log/b.log long; }\n"
        "  location /short { access_log /var/log/c.log short; }\n }\n}\n"
    )
    r = read(str(conf))
    assert dict(r.workload.features) == {
        "access_log": 1.0,
        "access_log_upstreaminfo": 1.0,
        **DEFAULTS,
    }
    assert not any("priced by its length" in e for e in r.found.estimates)
    got = features(conf, location="/long")
    assert got["access_log_upstreaminfo"] == pytest.approx((len(longer) - 112) / (290 - 112))
    assert features(conf, location="/short") == {"access_log": 1.0, **DEFAULTS}
    cm = tmp_path / "cm.yaml"
    cm.write_text(f"data:\n  log-format-upstream: '{longer}'\n")
    assert features_of_ingress(cm)["access_log_upstreaminfo"] == got["access_log_upstreaminfo"]


def test_an_access_log_to_stdout_is_the_container_log_path(tmp_path):
    conf = tmp_path / "nginx.conf"
    conf.write_text(
        "events {}\nhttp {\n server {\n  listen 80;\n  access_log /dev/stdout;\n"
        "  location /file { access_log /var/log/x.log; }\n }\n}\n"
    )
    assert features(conf) == {"access_log_container": 1.0, **DEFAULTS}
    assert features(conf, location="/file") == {"access_log": 1.0, **DEFAULTS}
    ingress = tmp_path / "cm.yaml"
    ingress.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
        "data:\n  access-log-path: /var/log/nginx/file.log\n"
    )
    got = dict(read(ingress_nginx=str(ingress)).workload.features)
    assert got.get("access_log") == 1.0 and "access_log_container" not in got


def test_an_ingress_rendered_conf_is_priced_as_the_ingress_feature(tmp_path):
    conf = DATA / "ingress-rendered.conf"
    r = read(str(conf))
    # its Lua handlers are one measured feature, not four minimal ones; the WebSocket map
    # ('' -> '') keeps the upstream connection alive
    # its log phase is a Lua file, which reads --enable-metrics from cfg.json: the default, off
    assert dict(r.workload.features) == {"proxy_keepalive": 1.0, "ingress_nginx_no_metrics": 1.0}
    assert r.found.provenance["ingress_nginx_no_metrics"].endswith(f"({conf}:32)")
    assert any("priced as the measured ingress_nginx_no_metrics" in e for e in r.found.estimates)
    assert any("/etc/nginx/lua/cfg.json" in e for e in r.found.estimates)
    # the template before #11806 wrote the log phase inline: monitor.call() in it or not
    file = "log_by_lua_file /etc/nginx/lua/nginx/ngx_conf_log_block.lua;"
    inline = tmp_path / "inline.conf"
    for lua, feature in (("monitor.call()", "ingress_nginx"), ("", "ingress_nginx_no_metrics")):
        inline.write_text(conf.read_text().replace(file, f"log_by_lua_block {{ {lua} }}"))
        r = read(str(inline))
        assert feature in dict(r.workload.features)
        assert "log phase at" in r.found.settings["metrics"]
    # another upstream name: the handlers stay what they are
    other = tmp_path / "nginx.conf"
    other.write_text(conf.read_text().replace("upstream_balancer", "backend"))
    got = features(other)
    assert not {"ingress_nginx", "ingress_nginx_no_metrics"} & set(got)
    assert {"lua_rewrite", "lua_balancer", "lua_header_filter", "lua_log"} <= set(got)


def test_a_rendered_controllers_default_log_path_is_the_containers_stdout(tmp_path):
    # the controller's image links /var/log/nginx/access.log to /dev/stdout (Dockerfile:84)
    conf = DATA / "ingress-rendered.conf"
    logged = conf.read_text().replace("access_log off;", "access_log /var/log/nginx/access.log;")
    rendered = tmp_path / "rendered.conf"
    rendered.write_text(logged)
    r = read(str(rendered))
    got = dict(r.workload.features)
    assert got.get("access_log_container") == 1.0 and "access_log" not in got
    assert any("rootfs/Dockerfile:84" in e for e in r.found.estimates)
    # the same path in a server that is not a controller's is a file
    other = tmp_path / "nginx.conf"
    other.write_text(logged.replace("upstream_balancer", "backend"))
    got = features(other)
    assert got.get("access_log") == 1.0 and "access_log_container" not in got


@pytest.mark.parametrize("key", ["keep-alive", "keep-alive-requests"])
def test_a_negative_keep_alive_key_is_refused(tmp_path, key):
    path = tmp_path / "cm.yaml"
    path.write_text(f'data:\n  {key}: "-5"\n')
    with pytest.raises(InputError, match=f"{key}.*no negative value"):
        read(ingress_nginx=str(path))


def test_ingress_without_upstream_keepalive(tmp_path):
    path = tmp_path / "cm.yaml"
    path.write_text('data:\n  upstream-keepalive-connections: "0"\n  disable-access-log: "true"\n')
    got = dict(read(ingress_nginx=str(path)).workload.features)
    assert got["proxy_new_connection"] == 1.0 and "access_log" not in got


# -- the fixtures are configurations NGINX accepts ----------------------------------------------


def _nginx_accepts(conf: Path, prefix: Path) -> subprocess.CompletedProcess[str]:
    text = conf.read_text()
    text = text.replace("/var/log/nginx/", f"{prefix}/logs/").replace("/run/", f"{prefix}/")
    copy = conf.with_name("checked-" + conf.name)
    copy.write_text(text)
    pid = [] if re.search(r"^pid ", text, re.M) else ["-g", f"pid {prefix}/nginx.pid;"]
    argv = ["nginx", "-t", "-q", "-p", f"{prefix}/", "-e", f"{prefix}/logs/error.log"]
    return subprocess.run(
        [*argv, "-c", str(copy), *pid], capture_output=True, text=True, timeout=60
    )


@pytest.mark.skipif(shutil.which("nginx") is None, reason="nginx is not installed")
def test_nginx_accepts_the_fixtures(tmp_path):
    prefix = tmp_path / "p"
    shutil.copytree(DATA, prefix, symlinks=True)
    (prefix / "logs").mkdir()
    (prefix / "certs").mkdir()
    key = prefix / "certs" / "static-ecdsa-p256"
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"]
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            *ec,
            "-subj",
            "/CN=t",
            "-keyout",
            f"{key}.key",
            "-out",
            f"{key}.crt",
        ],
        capture_output=True,
        check=True,
        timeout=60,
    )
    modules = Path("/usr/lib/nginx/modules")
    for name in (*CONFS, "debian/nginx.conf"):
        needs = re.findall(r"^load_module (\S+);", (DATA / name).read_text(), re.M)
        if not all(Path(m).exists() or (modules / Path(m).name).exists() for m in needs):
            continue  # a module not installed here
        out = _nginx_accepts(prefix / name, prefix)
        assert out.returncode == 0, (name, out.stderr)


# -- bad input: one line naming the file (and line), exit 2 -----------------------------------


def _refused(capsys, argv: list[str]) -> str:
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # a path refused as the command line is parsed
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    return err


def _conf(tmp_path: Path, text: str, name: str = "nginx.conf") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        ("events {}\nhttp {\n server { listen 80;\n}\n", r"nginx.conf:\d+: unexpected end"),
        ("events {}\nhttp {\n frobnicate on;\n}\n", r'nginx.conf:3: unknown directive "frob'),
        ("events {}\nhttp {\n server { listen 80; }\n}\n}\n", r'nginx.conf:5: unexpected "}"'),
        ("events {}\nhttp {\n location / {}\n}\n", r'nginx.conf:3: "location" directive is not'),
        ("events {}\n", r"no http block"),
    ],
)
def test_a_config_that_does_not_parse(tmp_path, capsys, text, expect):
    conf = _conf(tmp_path, text)
    assert re.search(expect, _refused(capsys, ["workload", "--from-conf", str(conf)]))


def test_include_loop_and_missing_include(tmp_path, capsys):
    _conf(tmp_path, "include b.conf;\n", "a.conf")
    _conf(tmp_path, "include a.conf;\n", "b.conf")
    main = _conf(tmp_path, "events {}\nhttp {\n include a.conf;\n}\n")
    err = _refused(capsys, ["workload", "--from-conf", str(main)])
    assert "b.conf:1: include loop" in err
    gone = _conf(tmp_path, "events {}\nhttp {\n include nothere.conf;\n}\n", "c.conf")
    assert "nothere.conf" in _refused(capsys, ["workload", "--from-conf", str(gone)])


def test_a_glob_of_too_many_files(tmp_path, capsys):
    many = tmp_path / "many"
    many.mkdir()
    for i in range(MAX_GLOB_MATCHES + 1):
        (many / f"{i}.conf").write_text("")
    conf = _conf(tmp_path, "events {}\nhttp {\n include many/*.conf;\n}\n")
    err = _refused(capsys, ["recommend", "--rps", "1e5", "--nginx-conf", str(conf)])
    assert f"nginx.conf:3: include many/*.conf matches more than {MAX_GLOB_MATCHES}" in err


def test_files_too_large_and_not_files(tmp_path, capsys):
    big = tmp_path / "big.conf"
    with open(big, "wb") as f:
        f.truncate(4 * 1024 * 1024 + 1)  # sparse: refused by its size, never read
    assert "more than the 4 MB allowed" in _refused(capsys, ["workload", "--from-conf", str(big)])
    long = _conf(tmp_path, "# " + "x" * MAX_LINE_BYTES + "\nevents {}\n", "long.conf")
    assert "long.conf:1: a line over 1 MB" in _refused(
        capsys, ["workload", "--from-conf", str(long)]
    )
    fifo = tmp_path / "fifo.conf"
    os.mkfifo(fifo)  # nobody writes: refused at once, not waited on
    assert "pipe" in _refused(capsys, ["workload", "--from-conf", str(fifo)])
    assert "a folder" in _refused(capsys, ["workload", "--from-conf", str(tmp_path)])
    assert "device" in _refused(capsys, ["workload", "--from-conf", "/dev/zero"])
    loop = tmp_path / "loop.conf"
    loop.symlink_to(tmp_path / "loop2.conf")
    (tmp_path / "loop2.conf").symlink_to(loop)
    assert "loop.conf" in _refused(capsys, ["workload", "--from-conf", str(loop)])


def test_bad_configmaps(tmp_path, capsys):
    bad = _conf(tmp_path, "data: [unclosed\n", "cm.yaml")
    assert "cm.yaml" in _refused(capsys, ["workload", "--ingress-nginx", str(bad)])
    code = _conf(tmp_path, "!!python/object/apply:os.system ['true']\n", "code.yaml")
    assert "code.yaml" in _refused(capsys, ["workload", "--ingress-nginx", str(code)])
    assert "--server" in _refused(
        capsys, ["recommend", "--rps", "1", "--ingress-nginx", str(bad), "--server", "x"]
    )
    values = _conf(tmp_path, "controller:\n  config: [a, b]\n", "values.yaml")
    assert "values.yaml" in _refused(capsys, ["workload", "--ingress-nginx", str(values)])


#: Nine lists of nine, each the one before by alias: 9**9 strings once expanded.
ALIAS_BOMB = "".join(
    f"{k}: &{k} [{', '.join([f'*{p}' if p else '0'] * 9)}]\n"
    for k, p in zip("abcdefghi", ["", *"abcdefgh"], strict=True)
)


def test_hostile_chart_values_are_refused_in_one_line(tmp_path, capsys):
    bad = {
        "bomb.yaml": ALIAS_BOMB,  # a plain mapping of keys: its values are read as strings
        "bomb-values.yaml": "x:\n"
        + "".join(f"  {line}\n" for line in ALIAS_BOMB.splitlines())
        + "controller:\n  metrics: {enabled: *i}\n",
        "yes.yaml": 'controller:\n  metrics: {enabled: "yes"}\n',  # the controller refuses it
        "list.yaml": "controller:\n  metrics: {enabled: [1, 2]}\n",
        "metrics.yaml": "controller:\n  metrics: [1]\n",
        "extra.yaml": "controller:\n  extraArgs: {enable-metrics: {a: 1}}\n",
        "escape.yaml": 'controller:\n  extraArgs: {enable-metrics: "\\e[31m"}\n',
        "config.yaml": "controller:\n  config: 0\n",
        "value.yaml": "kind: ConfigMap\ndata:\n  keep-alive: [75]\n",
        "nan.yaml": "kind: ConfigMap\ndata:\n  keep-alive: nan\n",
        "inf.yaml": "kind: ConfigMap\ndata:\n  keep-alive-requests: 1e400\n",
        "digits.yaml": "kind: ConfigMap\ndata:\n  keep-alive: " + "1" * 5000 + "\n",
        "month.yaml": "kind: ConfigMap\ndata:\n  since: 2001-13-45\n",
        "hex.yaml": "kind: ConfigMap\ndata:\n  keep-alive: 0x" + "f" * 5000 + "\n",
        "hex-values.yaml": "controller:\n  metrics: {enabled: 0x" + "f" * 5000 + "}\n",
    }
    for name, text in bad.items():
        path = _conf(tmp_path, text, name)
        err = _refused(capsys, ["recommend", "--rps", "1e5", "--ingress-nginx", str(path)])
        assert name in err and "\x1b" not in err, err


def test_chart_values_read_as_the_chart_passes_them(tmp_path):
    values = tmp_path / "values.yaml"
    # a truthy enabled is passed as --enable-metrics=VALUE (1: on); a falsy one is not passed
    for enabled, feature in (("1", "ingress_nginx"), ("'True'", "ingress_nginx"), ("0", "")):
        values.write_text(f"controller:\n  metrics: {{enabled: {enabled}}}\n")
        assert (feature or "ingress_nginx_no_metrics") in features_of_ingress(values), enabled
    values.write_text("kind: ConfigMap\nmetadata: {name: x}\n")  # a ConfigMap with no data
    assert "ingress_nginx_no_metrics" in features_of_ingress(values)


# -- the command line ------------------------------------------------------------------------


def test_workload_from_conf_writes_the_workload_file(tmp_path, capsys):
    out = tmp_path / "w.json"
    assert cli.main(["workload", "--from-conf", str(DEBIAN), "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["source"] == "nginx.conf" and doc["kind"] == "nginx-sizing workload"
    assert doc["workload"]["features"] == DEBIAN_FEATURES
    assert doc["configuration"]["chosen"].startswith("server _ ")
    said = capsys.readouterr().out
    assert "feature access_log x1 per request from your nginx.conf" in said
    assert "size it: python -m sizing recommend --rps RPS --nginx-conf" in said
    err = _refused(capsys, ["recommend", "--workload", str(out)])
    assert "read from a configuration" in err


def test_recommend_nginx_conf_end_to_end():
    conf = DATA / "proxy-new-connection.conf"
    argv = [sys.executable, "-m", "sizing", "recommend", "--rps", "2e5", "--nginx-conf"]
    argv += [str(conf), "--requests-per-connection", "10", "--format", "json", "--top", "1"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    w = doc["workload"]
    assert w["features"] == {"access_log": 1.0, "proxy_new_connection": 1.0}
    assert (w["scenario"], w["protocol"], w["gzip"]) == ("reverse_proxy", "http", 1.0)
    assert w["requests_per_connection"] == 10  # a flag set away from its default wins
    assert doc["configuration"]["provenance"]["proxy_new_connection"] == (
        f"your nginx.conf ({conf}:20)"
    )
    assert any(
        "priced from their measured costs: access_log x1, proxy_new_connection x1" in n
        for n in doc["notes"]
    )


def test_request_parameters_carry_the_configuration():
    request = SizingRequest(nginx_conf=str(DEBIAN), conf_location="/")
    params = json.loads(json.dumps(request.to_parameters()))
    assert params["nginx_conf"] == str(DEBIAN) and params["ingress_nginx"] == ""
    again = SizingRequest.from_parameters(params)
    assert again == request
    assert dict(again.workload().features) == DEBIAN_FEATURES
    assert SizingRequest().configuration() is None


def test_hostile_names_are_shown_escaped(tmp_path, capsys):
    conf = _conf(
        tmp_path, 'events {}\nhttp {\n server { listen 80; server_name "a\x1b[31mb"; }\n}\n'
    )
    assert cli.main(["workload", "--from-conf", str(conf)]) == 0
    err = capsys.readouterr().err
    assert "\x1b" not in err and "a\\x1b[31mb" in err
    log = _conf(tmp_path, "x\n", "access.log")
    assert "--server" in _refused(capsys, ["workload", "--from-log", str(log), "--server", "a"])


@pytest.mark.parametrize(
    ("timeout", "closes"),
    [("0", True), ("0s", True), ("0ms", True), ("0m", True), ("0s0ms", True), ("1ms", False)],
)
def test_a_zero_keepalive_timeout_in_any_unit_closes_each_connection(
    tmp_path: Path, timeout: str, closes: bool
) -> None:
    conf = tmp_path / "nginx.conf"
    conf.write_text(
        "events {}\nhttp { access_log off; keepalive_timeout " + timeout + ";\n"
        "  server { listen 80; location / { root /srv; } } }\n"
    )
    assert (read(str(conf)).workload.requests_per_connection == 1.0) is closes

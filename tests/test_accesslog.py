"""``python -m sizing workload --from-log``: workload files from NGINX access logs.

Logs with a known rate profile and size mix (generated) must give back their peak and mix;
logs written by a real nginx under wrk must count the requests wrk made; hostile lines are
counted as malformed and never reach the terminal raw; bad files are one line and exit 2.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sizing.cli import main as cli
from sizing.errors import InputError
from sizing.request import SizingRequest
from sizing.workload import accesslog
from sizing.workload.accesslog import (
    compile_format,
    load_workload_file,
    read_logs,
    request_argv,
    validate_workload,
    workload_to_request_args,
)
from tests.logsynth import SIZES, START, combined_lines, local_time, write_combined
from tests.loopback import private_nginx

ROOT = Path(__file__).resolve().parents[1]


def _profile() -> list[int]:
    """900 s: 20/s, a 120 s busy spell at 100/s with five 300/s seconds, 10 silent seconds."""
    counts = [20] * 900
    counts[300:420] = [100] * 120
    counts[350:355] = [300] * 5
    counts[600:610] = [0] * 10
    return counts


def _run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sizing", "workload", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _clean(text: str) -> bool:
    """No control character but line feeds: nothing a terminal would act on."""
    return all(c.isprintable() or c == "\n" for c in text)


# --- (a) a known rate profile and size mix ----------------------------------------------


def test_known_profile_gives_back_its_peak_mix_and_shares(tmp_path):
    log = tmp_path / "access.log"
    truth = write_combined(log, _profile(), SIZES, offset_min=-7 * 60)
    assert truth.requests == 28_400
    doc = read_logs([str(log)])
    # Peak: nearest rank of the 900 per-second counts, silent seconds included. By hand:
    # 10 x 0, 770 x 20, 115 x 100, 5 x 300 -> rank 891 (p99) is 100, rank 896 (p99.5) 300.
    assert doc["rps"]["peak"] == truth.peak(99) == 100
    assert read_logs([str(log)], peak_percentile=99.5)["rps"]["peak"] == truth.peak(99.5) == 300
    assert read_logs([str(log)], peak_percentile=50)["rps"]["peak"] == 20
    assert doc["rps"]["max_second"] == 300
    assert doc["rps"]["mean"] == pytest.approx(28_400 / 900, abs=1e-9)
    assert doc["span_s"] == 900
    # -0700 in the log: times are read as UTC.
    assert doc["first_second"] == "2023-11-14T22:13:20Z"
    assert doc["last_second"] == "2023-11-14T22:28:19Z"
    # Minutes start on the clock: 22:19 is seconds 340..399 (55 x 100 + 5 x 300), 22:18
    # seconds 280..339 (20 x 20 + 40 x 100).
    first, second = doc["busiest_minutes"][:2]
    assert (first["start"], first["requests"], first["max_second_rps"]) == (
        "2023-11-14T22:19:00Z",
        55 * 100 + 5 * 300,
        300,
    )
    assert (second["start"], second["requests"]) == ("2023-11-14T22:18:00Z", 20 * 20 + 40 * 100)
    # Size mix: exact shares (the pattern repeats every 10 requests), bucket means in bytes.
    mix = doc["size_mix"]
    assert mix["spec"] == "0:0.1,1KB:0.7,50000:0.2"
    assert mix["mean_bytes"] == pytest.approx(0.7 * 1024 + 0.2 * 50_000, abs=1e-6)
    assert sum(b["requests"] for b in mix["buckets"]) == truth.requests
    assert doc["http_versions"] == {"1.0": 0.25, "1.1": 0.5, "2": 0.25}
    assert doc["status"]["classes"] == {"2xx": 0.98, "4xx": 0.02}
    assert doc["status"]["codes"]["404"] == 0.02
    prov = doc["provenance"]
    assert prov["lines_read"] == prov["lines_parsed"] == truth.requests
    assert prov["malformed"] == 0 and prov["malformed_examples"] == []
    (f,) = prov["files"]
    assert f["bytes"] == log.stat().st_size and not f["gzip"] and len(f["sha256_first_mb"]) == 64
    # Combined logs no connection counter: requests per connection is said to be an estimate.
    assert doc["requests_per_connection"]["estimate"] is True
    assert doc["tls"]["share"] is None and doc["upstream_share"] is None


def test_workload_file_round_trip_and_recommend_arguments(tmp_path, capsys):
    log = tmp_path / "access.log"
    write_combined(log, _profile(), SIZES)
    out = tmp_path / "w.json"
    assert cli.main(["workload", "--from-log", str(log), "--out", str(out)]) == 0
    doc = load_workload_file(out)
    assert doc["format"] == 1
    args = workload_to_request_args(doc, growth="2x")
    assert args["rps"] == 200.0 and args["growth"] == 2.0
    assert args["file_size"] == (
        round(0.7 * 1024 + 0.2 * 50_000),
        ((0, 0.1), (1024, 0.7), (50_000, 0.2)),
    )
    assert args["http_version"] == "1.1" and args["http2_share"] == pytest.approx(0.25)
    assert args["requests_per_connection_estimate"] is True
    # The recommend parser takes the options as they stand.
    ns = cli.build_parser().parse_args(["recommend", *request_argv(args)])
    request = SizingRequest.from_args(ns)
    assert request.rps == 200.0 and (request.file_bytes, request.size_mix) == args["file_size"]
    assert request.requests_per_connection == pytest.approx(
        args["requests_per_connection"], rel=1e-5
    )
    capsys.readouterr()
    assert cli.main(["recommend", *request_argv(args), "--top", "1", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)
    assert workload_to_request_args(doc, growth=1.5)["rps"] == 150.0
    assert workload_to_request_args(doc, growth="150%")["rps"] == 150.0
    with pytest.raises(InputError, match="growth"):
        workload_to_request_args(doc, growth="-2x")


def test_connection_requests_ssl_reuse_and_upstream_from_a_custom_format(tmp_path):
    fmt = (
        "$msec $connection $connection_requests $ssl_session_reused $ssl_protocol "
        '"$request" $status $bytes_sent $upstream_addr $upstream_response_time'
    )
    lines = []
    for conn in range(10):  # 10 connections of 5 requests; 4 resumed; 3 passed upstream
        for k in range(1, 6):
            up = "10.0.0.1:80, 10.0.0.2:80" if conn < 3 else "-"
            lines.append(
                f"{START + conn}.{k:03d} {conn} {k} {'r' if conn < 4 else '.'} TLSv1.3 "
                f'"GET /x HTTP/2.0" 200 {2048 if k % 5 else 0} {up} '
                f"{'0.001, 0.002' if conn < 3 else '-'}\n"
            )
    log = tmp_path / "custom.log"
    log.write_text("".join(lines))
    doc = read_logs([str(log)], fmt)
    rpc = doc["requests_per_connection"]
    assert rpc == {**rpc, "value": 5.0, "connections": 10, "estimate": False}
    assert doc["tls"]["share"] == 1.0 and doc["tls"]["resumption"] == 0.4
    assert doc["tls"]["protocols"] == {"TLSv1.3": 1.0}
    assert doc["upstream_share"] == 0.3
    assert doc["http_versions"] == {"2": 1.0}
    assert doc["size_mix"]["spec"] == "0:0.2,2KB:0.8" and doc["size_mix"]["source"] == "$bytes_sent"
    args = workload_to_request_args(doc)
    assert args["protocol"] == "https" and args["http_version"] == "2"
    assert args["tls_resumption"] == 0.4 and args["requests_per_connection"] == 5.0


@pytest.mark.parametrize("order", ["logged", "shuffled"])
def test_connections_estimate_counts_clients_per_minute(tmp_path, monkeypatch, order):
    """Without $connection_requests: one connection per client address and minute."""
    lines = []
    for minute, clients, n in ((0, "abc", 10), (1, "ab", 5), (3, "a", 2)):
        for k in range(n):
            for c in clients:
                lines.append(
                    f"10.0.0.{ord(c)} - - [{local_time(START + 60 * minute + k)}] "
                    f'"GET / HTTP/1.1" 200 5 "-" "-"\n'
                )
    if order == "shuffled":
        random.Random(1).shuffle(lines)
    else:
        monkeypatch.setattr(accesslog, "CHUNK_BYTES", 300)  # minutes cross blocks
    log = tmp_path / "a.log"
    log.write_text("".join(lines))
    rpc = read_logs([str(log)])["requests_per_connection"]
    assert rpc["estimate"] is True and rpc["connections"] == 3 + 2 + 1
    assert rpc["value"] == (30 + 10 + 2) / 6


def test_a_sparse_log_has_no_peak_at_p99(tmp_path):
    log = tmp_path / "a.log"
    write_combined(log, [1] + [0] * 199 + [1], SIZES)  # two requests in 201 s
    r = _run("--from-log", str(log))
    assert r.returncode == 0 and json.loads(r.stdout)["rps"]["peak"] == 0
    assert "lower --peak-percentile" in r.stderr
    with pytest.raises(InputError, match="lower --peak-percentile"):
        workload_to_request_args(json.loads(r.stdout))
    assert read_logs([str(log)], peak_percentile=99.5)["rps"]["peak"] == 1


def test_log_format_strings():
    # nginx's own quoting of a log_format (single-quoted pieces) is read as one string.
    f = compile_format("'$remote_addr [$time_local] ' '\"$request\" $status'")
    assert f.text == '$remote_addr [$time_local] "$request" $status'
    assert f.fields == ("remote_addr", "time_local", "request", "status")
    assert compile_format("${msec}ms $status").fields == ("msec", "status")
    for bad, match in [
        ("", "empty"),
        ("$remote_addr $status", "no time"),
        ("$time_local $request $status", "quotes"),
        ("$http_user_agent$http_referer $time_local", "nothing between"),
        ("$time_local\n$status", "line break"),
        ("$time_local " + "x" * 20_000, "characters"),
    ]:
        with pytest.raises(InputError, match=match):
            compile_format(bad)


# --- (b) logs written by a real nginx under wrk -----------------------------------------

REAL_FORMAT = (
    '$remote_addr [$time_local] "$request" $status $body_bytes_sent $connection '
    "$connection_requests $ssl_session_reused $ssl_protocol $server_protocol $request_time "
    '$msec "$http_user_agent"'
)

LUA = """
counter = 0
request = function()
  counter = counter + 1
  if counter % 4 == 0 then return wrk.format(nil, "/big.bin") end
  return wrk.format(nil, "/body.bin")
end
"""


def _wrk(argv: list[str]) -> tuple[int, int]:
    """Requests wrk completed, and its socket errors (each may leave a logged request)."""
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True).stdout
    m = re.search(r"^\s*(\d+) requests in ", out, re.M)
    assert m, out
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    return int(m.group(1)), sum(map(int, errors.groups())) if errors else 0


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk missing")
def test_real_nginx_logs_count_what_wrk_sent(tmp_path, leaves_no_nginx):
    """nginx logs every request wrk completed, plus at most the ones cut at its end."""
    (tmp_path / "html").mkdir()
    (tmp_path / "html" / "big.bin").write_bytes(b"x" * 51_200)
    (tmp_path / "mix.lua").write_text(LUA)

    def http(prefix: Path, ports: list[int]) -> list[str]:
        return [
            f"ssl_certificate {prefix}/cert.pem;",
            f"ssl_certificate_key {prefix}/key.pem;",
            "ssl_protocols TLSv1.2 TLSv1.3;",
            "ssl_session_cache shared:SSL:1m;",
            "ssl_session_tickets on;",
            f"log_format sizing '{REAL_FORMAT}';",
            "server {",
            f"listen 127.0.0.1:{ports[0]} ssl;",
            f"root {prefix}/html;",
            f"access_log {prefix}/access.log sizing;",
            "}",
        ]

    with private_nginx(tmp_path, http) as (port,):
        url = f"https://127.0.0.1:{port}"
        # Keep-alive: 4 connections, a request mix of 1 KiB and 50 KiB responses.
        kept, kept_errors = _wrk(
            ["wrk", "-t1", "-c4", "-d2s", "-s", str(tmp_path / "mix.lua"), url + "/"]
        )
        # One request per connection: every connection after each one's first resumes. On a
        # busy machine a second of handshakes may be too few: more seconds until 20 are done.
        closed = closed_errors = closed_runs = 0
        while closed < 20 and closed_runs < 20:
            n, errors = _wrk(
                ["wrk", "-t1", "-c2", "-d1s", "-H", "Connection: close", url + "/body.bin"]
            )
            closed, closed_errors, closed_runs = closed + n, closed_errors + errors, closed_runs + 1
    log = tmp_path / "access.log"
    out = tmp_path / "w.json"
    r = _run("--from-log", str(log), "--log-format", REAL_FORMAT, "--out", str(out))
    assert r.returncode == 0, r.stderr
    doc = load_workload_file(out)
    prov = doc["provenance"]
    assert prov["malformed"] == 0, prov["malformed_examples"]
    # Requests in flight when wrk stops are logged too (at most one per connection).
    # A socket error (a timeout on a busy machine) may leave one more logged request and
    # connection: the tolerance is the connections open at each run's end, and the errors.
    slack = 4 + 2 * closed_runs + kept_errors + closed_errors
    assert kept + closed <= doc["requests"] <= kept + closed + slack
    assert kept >= 50 and closed >= 20  # enough traffic for the shares below to mean much
    rpc = doc["requests_per_connection"]
    assert rpc["estimate"] is False
    # 4 kept-alive connections plus one per request of the second run (and cut ones).
    assert closed + 4 <= rpc["connections"] <= closed + slack
    assert rpc["value"] == pytest.approx(doc["requests"] / rpc["connections"])
    tls = doc["tls"]
    assert tls["share"] == 1.0 and set(tls["protocols"]) <= {"TLSv1.2", "TLSv1.3"}
    # Full handshakes: the 4 kept connections and each closing connection's first.
    full = 4 + 2
    assert tls["resumption"] == pytest.approx(
        1 - full / rpc["connections"], abs=(slack - full + 2) / rpc["connections"]
    )
    assert doc["http_versions"] == {"1.1": 1.0}
    assert doc["status"]["classes"]["2xx"] >= 0.99
    # One request in four of the keep-alive run is the 50 KiB file (a response cut at the
    # end of a run may log fewer bytes).
    small, large = doc["size_mix"]["buckets"][1:3]
    assert small["mean_bytes"] == pytest.approx(1024, rel=0.01)
    assert large["mean_bytes"] == pytest.approx(51_200, rel=0.01)
    assert large["share"] == pytest.approx(kept / 4 / doc["requests"], abs=0.01)
    assert small["share"] + large["share"] >= 0.99
    assert doc["rps"]["peak"] >= doc["rps"]["mean"] > 0


# --- (c) hostile lines ------------------------------------------------------------------


def test_hostile_lines_are_malformed_never_fatal_never_raw(tmp_path):
    good = [line for line, _ in combined_lines([30] * 10, SIZES)]
    valid_line = good[0]
    hostile = [
        "\x1b[2J\x1b]0;owned\x07\x1b[31mred\r\n",
        '=HYPERLINK("http://evil")\n',
        "+1+1\n",
        "@SUM(A1:A9)\n",
        "-2+3 cmd|' /C calc'!A0\n",
        valid_line.replace("14/Nov/2023", "14/Foo/2023"),  # matches, but no such month
        valid_line.replace("14/Nov/2023", "31/Nov/2023"),  # no such day
        "\x00\x00\x00\xff\xfe\n",
        valid_line.replace("GET /static", 'GET /a"b /static'),  # an unescaped quote
        "\n",
    ]
    junk = bytes((i * 37 + 11) % 256 for i in range(4096)).replace(b"\n", b"\n\x01")
    body = "".join(good[:150]) + "".join(hostile) + "".join(good[150:-1])
    log = tmp_path / "hostile.log"
    junk_lines = junk.count(b"\n") + 1
    with open(log, "wb") as fh:
        fh.write(body.encode("latin-1"))
        fh.write(b"A" * (10 * 1024 * 1024) + b"\n")  # a 10 MB line
        fh.write(junk + b"\n")
        fh.write(good[-1].encode())
    r = _run("--from-log", str(log))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    prov = doc["provenance"]
    assert prov["lines_parsed"] == 300
    assert prov["malformed"] == len(hostile) + 1 + junk_lines
    assert prov["lines_read"] == 300 + prov["malformed"]
    assert prov["malformed_reasons"]["time out of range"] == 2
    assert len(prov["malformed_examples"]) == accesslog.EXAMPLES
    assert all(_clean(ex["text"]) for ex in prov["malformed_examples"])
    assert "\\x1b[2J" in prov["malformed_examples"][0]["text"]
    assert _clean(r.stderr) and "\x1b" not in r.stdout
    assert doc["rps"]["peak"] == 30 and doc["size_mix"]["spec"] == "0:0.1,1KB:0.7,50000:0.2"


def test_a_line_too_long_to_carry_is_one_malformed_line(tmp_path, monkeypatch):
    monkeypatch.setattr(accesslog, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(accesslog, "MAX_LINE_BYTES", 10_000)
    good = [line for line, _ in combined_lines([5] * 4, SIZES)]
    log = tmp_path / "long.log"
    log.write_bytes(("".join(good[:10]) + "B" * 50_000 + "\n" + "".join(good[10:])).encode())
    doc = read_logs([str(log)])
    prov = doc["provenance"]
    assert (prov["lines_parsed"], prov["malformed"]) == (20, 1)
    assert prov["malformed_reasons"] == {"longer than 1 MiB": 1}
    assert prov["malformed_examples"][0]["line"] == 11


def test_truncated_gzip_keeps_the_lines_before_the_cut(tmp_path):
    log = tmp_path / "cut.log.gz"
    truth = write_combined(tmp_path / "full.log", [20] * 300, SIZES)
    whole = gzip.compress((tmp_path / "full.log").read_bytes())
    log.write_bytes(whole[: len(whole) // 2])
    r = _run("--from-log", str(log))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    (f,) = doc["provenance"]["files"]
    assert f["gzip"] and any("truncated gzip" in n for n in f["notes"])
    assert 0 < f["lines_parsed"] < truth.requests
    assert f["malformed"] <= 1  # the line cut in two
    assert "truncated gzip" in r.stderr


# --- (d) gzip ---------------------------------------------------------------------------


def test_gzip_members_and_plain_files_give_the_same_counts(tmp_path):
    plain = tmp_path / "access.log"
    truth = write_combined(plain, _profile(), SIZES)
    data = plain.read_bytes()
    half = data.index(b"\n", len(data) // 2) + 1
    # Two gzip members one after the other (as `cat a.gz b.gz` makes), no .gz suffix.
    packed = tmp_path / "access.log.1"
    packed.write_bytes(gzip.compress(data[:half]) + gzip.compress(data[half:]))
    a = read_logs([str(plain)])
    b = read_logs([str(packed)])
    assert b["provenance"]["files"][0]["gzip"] is True
    assert b["provenance"]["files"][0]["notes"] == []
    for key in ("requests", "rps", "size_mix", "busiest_minutes", "http_versions", "status"):
        assert a[key] == b[key], key
    assert b["requests"] == truth.requests
    # Two servers' logs of the same seconds add up per second.
    other = tmp_path / "other.log.gz"
    with gzip.open(other, "wb") as fh:
        fh.write(data)
    both = read_logs([str(plain), str(other)])
    assert both["rps"]["peak"] == 2 * a["rps"]["peak"] and both["requests"] == 2 * truth.requests


# --- (e) refusals -----------------------------------------------------------------------


def test_no_parsable_line_is_one_line_and_exit_2(tmp_path):
    log = tmp_path / "other.log"
    log.write_text('{"json": "lines"}\n\x1b[31mnot nginx\n')
    r = _run("--from-log", str(log))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "no line of" in r.stderr and _clean(r.stderr)
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    r = _run("--from-log", str(empty))
    assert r.returncode == 2 and r.stderr.count("\n") == 1


def test_missing_folder_device_fifo_and_twice_are_refused_in_one_line(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    log = tmp_path / "a.log"
    write_combined(log, [1] * 5, SIZES)
    cases = {
        str(tmp_path / "missing.log"): "No such file",
        str(tmp_path): "a folder",
        "/dev/null": "a device",
        str(fifo): "named pipe",
    }
    for path, words in cases.items():
        r = _run("--from-log", str(log), path, timeout=60)  # a FIFO must not be waited on
        assert r.returncode == 2, (path, r.stderr)
        assert r.stderr.count("\n") == 1 and words in r.stderr, r.stderr
    r = _run("--from-log", str(log), str(log))
    assert r.returncode == 2 and "twice" in r.stderr
    r = _run("--from-log", str(log), "--out", str(tmp_path))
    assert r.returncode == 2 and "folder" in r.stderr
    r = _run("--from-log", str(log), "--peak-percentile", "0")
    assert r.returncode == 2 and r.stderr.count("\n") == 1


def test_workload_files_are_validated_in_one_line(tmp_path):
    log = tmp_path / "a.log"
    write_combined(log, [3] * 60, SIZES)
    good = read_logs([str(log)])
    assert validate_workload(json.loads(json.dumps(good))) is not None

    def refused(doc, match):
        path = tmp_path / "w.json"
        path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
        with pytest.raises(InputError, match=match) as exc:
            load_workload_file(path)
        assert "\n" not in str(exc.value)

    refused("{not json", "not a JSON")
    refused([1, 2], "expected a JSON object")
    refused({**good, "format": 2}, "format")
    refused({**good, "format": True}, "format")
    refused({**good, "rps": {**good["rps"], "peak": -1}}, "peak")
    refused({**good, "rps": {**good["rps"], "peak": 1e300}}, "peak")
    refused({**good, "rps": "fast"}, "rps")
    refused({**good, "size_mix": {**good["size_mix"], "spec": "1KB:0.5,2KB:0.2"}}, "sum")
    refused({**good, "size_mix": {**good["size_mix"], "spec": "huge:1"}}, "size")
    refused({**good, "requests_per_connection": {"value": 0.5, "estimate": False}}, "value")
    refused({**good, "tls": {"share": 2}}, "share")
    refused({**good, "upstream_share": "most"}, "upstream_share")
    with pytest.raises(InputError, match=r"folder|directory"):
        load_workload_file(tmp_path)
    with pytest.raises(InputError, match="No such file"):
        load_workload_file(tmp_path / "missing.json")
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (accesslog.MAX_WORKLOAD_BYTES + 1))
    with pytest.raises(InputError, match="allowed"):
        load_workload_file(big)

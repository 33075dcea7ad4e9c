"""Write the k6, vegeta and HdrHistogram-log test files from real measurements of a local nginx.

k6 and vegeta are not packaged for this machine: their files are written here in their
documented formats from a real local measurement (sequential keep-alive GETs, each timed with
``time.perf_counter_ns``). The HdrHistogram interval log holds three real 1 s wrk runs (the
project's ``runners/report.lua`` reporter, 1 us buckets), one interval each, written with the
``hdrhistogram`` package. See README.md for the commands that record them with the real tools.

Usage: ``python tests/data/importers/record.py URL OUT_DIR``
"""

from __future__ import annotations

import http.client
import json
import math
import subprocess
import sys
import time
import urllib.parse
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runners.loadgen.wrk import REPORTER, parse_json

#: Trend statistics of the k6 summary (``--summary-trend-stats``).
TREND_STATS = ("avg", "min", "med", "max", "p(90)", "p(95)", "p(99)")


def measure(url: str, n: int, rate: float) -> list[dict[str, Any]]:
    """``n`` GETs of ``url`` on one keep-alive connection, sent at ``rate`` per second."""
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port or 80, timeout=5)
    out = []
    start = time.time_ns()
    for i in range(n):
        due = start + int(i * 1e9 / rate)
        time.sleep(max(0.0, (due - time.time_ns()) / 1e9))
        sent, t0 = time.time_ns(), time.perf_counter_ns()
        conn.request("GET", u.path)
        resp = conn.getresponse()
        body = resp.read()
        latency = time.perf_counter_ns() - t0
        head = sum(len(k) + len(v) + 4 for k, v in resp.getheaders()) + 17
        out.append(
            {
                "sent_ns": sent,
                "latency_ns": latency,
                "code": resp.status,
                "bytes_in": len(body),
                "bytes_read": len(body) + head,
                "headers": {k: [v] for k, v in resp.getheaders()},
            }
        )
    conn.close()
    return out


def rfc3339(ns: int) -> str:
    """Nanoseconds since the epoch as RFC 3339 with nanoseconds, as Go prints them."""
    s, frac = divmod(ns, 10**9)
    return datetime.fromtimestamp(s, UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{frac:09d}Z"


def k6_percentile(values: list[float], p: float) -> float:
    """k6's trend percentile: linear interpolation at ``p * (n - 1)`` in the sorted values."""
    v = sorted(values)
    i = p * (len(v) - 1)
    lo, hi = v[math.floor(i)], v[math.ceil(i)]
    return lo + (hi - lo) * (i - math.floor(i))


def write_k6(samples: list[dict[str, Any]], url: str, out: Path) -> None:
    """``k6 run --out json=k6.json`` and ``--summary-export=k6-summary.json`` of ``samples``."""
    tags = {
        "expected_response": "true",
        "group": "",
        "method": "GET",
        "name": url,
        "proto": "HTTP/1.1",
        "scenario": "default",
        "url": url,
    }
    lines = []
    for name, kind, contains in (
        ("http_reqs", "counter", "default"),
        ("http_req_duration", "trend", "time"),
        ("data_received", "counter", "data"),
    ):
        data = {"type": kind, "contains": contains, "thresholds": [], "submetrics": None}
        lines.append({"metric": name, "type": "Metric", "data": data})
    for s in samples:
        at = rfc3339(s["sent_ns"] + s["latency_ns"])
        t = {**tags, "status": str(s["code"])}
        for name, value in (
            ("http_reqs", 1),
            ("http_req_duration", s["latency_ns"] / 1e6),
            ("data_received", s["bytes_read"]),
        ):
            point = {"time": at, "value": value, "tags": t}
            lines.append({"metric": name, "type": "Point", "data": point})
    text = "".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines)
    (out / "k6.json").write_text(text)
    ms = [s["latency_ns"] / 1e6 for s in samples]
    span = (samples[-1]["sent_ns"] + samples[-1]["latency_ns"] - samples[0]["sent_ns"]) / 1e9
    trend = {
        "avg": sum(ms) / len(ms),
        "min": min(ms),
        "med": k6_percentile(ms, 0.5),
        "max": max(ms),
        **{f"p({p})": k6_percentile(ms, p / 100) for p in (90, 95, 99)},
    }
    summary = {
        "metrics": {
            "http_req_duration": trend,
            "http_reqs": {"count": len(ms), "rate": len(ms) / span},
            "http_req_failed": {"passes": 0, "fails": len(ms), "value": 0},
        },
        "root_group": {"name": "", "path": "", "id": "d41d8cd98f00b204e9800998ecf8427e"},
    }
    (out / "k6-summary.json").write_text(json.dumps(summary, indent=4) + "\n")


def write_vegeta(samples: list[dict[str, Any]], url: str, out: Path) -> None:
    """``vegeta attack ... | vegeta encode --to json > vegeta.json`` of ``samples``."""
    lines = []
    for i, s in enumerate(samples):
        r = {
            "attack": "",
            "seq": i,
            "code": s["code"],
            "timestamp": rfc3339(s["sent_ns"]),
            "latency": s["latency_ns"],
            "bytes_out": 0,
            "bytes_in": s["bytes_in"],
            "error": "",
            "body": None,
            "method": "GET",
            "url": url,
            "headers": s["headers"],
        }
        lines.append(json.dumps(r, separators=(",", ":")) + "\n")
    (out / "vegeta.json").write_text("".join(lines))


def write_hdrh(url: str, out: Path, runs: int = 3) -> dict[str, Any]:
    """``runs`` 1 s wrk runs as an HdrHistogram interval log; their exact merged summary.

    wrk's histogram holds more samples than requests (it adds the latencies coordinated
    omission hid): the log, and the import, count samples.
    """
    from hdrh.histogram import HdrHistogram
    from hdrh.log import HistogramLogWriter

    from runners.loadgen import latency_summary, merge

    measured = []
    with (out / "wrk.hlog").open("w") as fh:
        log = HistogramLogWriter(fh)
        log.output_log_format_version()
        log.output_comment("[wrk -t1 -c4 -d1s -s runners/report.lua, values in us]")
        log.output_legend()
        t0 = time.time()
        for _ in range(runs):
            start = time.time() - t0
            argv = ["wrk", "-t1", "-c4", "-d1s", "-s", str(REPORTER), url]
            m = parse_json(subprocess.run(argv, capture_output=True, text=True).stdout)
            h = HdrHistogram(1, 60_000_000, 3)
            for us, count in m.histogram_us.items():
                h.record_value(max(us, 1), count)
            log.output_interval_histogram(h, start or 0.001, time.time() - t0, 1000.0)
            measured.append(m)
    merged = merge(measured)
    samples = sum(merged.histogram_us.values())  # wrk adds samples for coordinated omission
    return {"requests": merged.requests, "samples": samples, **latency_summary(merged.histogram_us)}


def main() -> None:
    """Record all three kinds of files."""
    url, out = sys.argv[1], Path(sys.argv[2])
    write_k6(measure(url, 120, 100.0), url, out)
    write_vegeta(measure(url, 300, 200.0), url, out)
    print(json.dumps({"wrk merged (exact)": write_hdrh(url, out)}))


if __name__ == "__main__":
    main()

"""The access log to a container's stdout: the private containerd, the log path's table.

Recorded output under ``tests/data/container/`` was written on a Debian 12 host with
containerd 1.6.20 and runc 1.1.5 (root, no system containerd):
- ``flood.txt``: ``Containerd.flood``'s script (`runners.deploy.container._FLOOD`) run with
  ``host.sh(_FLOOD, folder, "ctr", id, "20000", "100", "0", daemon_pid, *mount_args([]))``;
- ``run.txt`` and ``run-port-taken.txt``: `_RUN`'s output as ``ContainerDeployment.start``
  ran it, the second with the port held by another listener.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import tarfile
from dataclasses import replace
from pathlib import Path

import pytest

from runners.calibrate import features as campaign
from runners.calibrate import logpath
from runners.cli.main import main as runners_main
from runners.deploy import container, cri
from runners.deploy.nginx import NginxHost, NginxInstance
from runners.errors import RunnerError
from runners.hosts import LocalHost
from runners.scenario import Scenario
from sizing.model.features import load_feature_costs
from trialtable.features import FEATURE_COST_COLUMNS, FEATURE_NAMES

DATA = Path(__file__).parent / "data" / "container"
SHIPPED_LOG_PATH = Path(__file__).parents[1] / "data" / "reference" / campaign.LOG_PATH_FILE


def _flood() -> container.Flood:
    return container.read_flood(
        (DATA / "flood.txt").read_text(), container.FloodSettings(lines=20_000), 100
    )


def test_recorded_flood_reads_as_cpu_per_line():
    f = _flood()
    assert f.lines == 20_000 and f.line_bytes == 100 and f.per_write == 1
    assert f.seconds == pytest.approx(0.347179017)
    # 2 + 6 ticks of the shim, 7 of ctr, none of the daemon, over 20 000 lines.
    assert f.side["shim"] == pytest.approx((1.0, 3.0))
    assert f.side["reader"] == pytest.approx((0.0, 3.5))
    assert f.side["containerd"] == (0.0, 0.0)
    assert f.lines_per_s == pytest.approx(20_000 / 0.347179017)
    assert f.cpu_share("shim") == pytest.approx(4.0 * 20_000 / 1e6 / 0.347179017)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("NOT_STARTED\nctr: failed to create shim task", "did not start"),
        ("STAT 1 (x) S\nT0 1\n", "second reading"),
    ],
)
def test_a_broken_flood_is_one_runner_error(text, words):
    with pytest.raises(RunnerError, match=words):
        container.read_flood(text, container.FloodSettings(lines=10), 100)


def test_a_short_flood_is_refused():
    text = (DATA / "flood.txt").read_text().replace("BYTES 2000000", "BYTES 1999900")
    with pytest.raises(RunnerError, match="delivered 1999900 of 2000000"):
        container.read_flood(text, container.FloodSettings(lines=20_000), 100)


def _dep() -> container.ContainerDeployment:
    host = LocalHost()
    return container.ContainerDeployment(NginxHost(host), Scenario(), container.Containerd(host))


def test_recorded_start_names_the_master_workers_shim_and_reader():
    dep = _dep()
    inst = NginxInstance(dep.main.at, "127.0.0.1")
    proc = dep._started(inst, "/p", "/p/nginx.conf", (DATA / "run.txt").read_text())
    assert proc is not None and (proc.master, proc.workers) == (7281, [7298])
    assert (dep.shim, dep.reader) == (7260, 7229)
    assert inst.pids == {7281, 7298}


def test_recorded_port_taken_start_asks_for_another_port():
    dep = _dep()
    inst = NginxInstance(dep.main.at, "127.0.0.1")
    text = (DATA / "run-port-taken.txt").read_text()
    assert dep._started(inst, "/p", "/p/nginx.conf", text) is None
    assert dep.reader == 8764 and not inst.pids
    broken = text.replace("Address already in use", "Permission denied")
    with pytest.raises(RunnerError, match="did not start in a container"):
        dep._started(inst, "/p", "/p/nginx.conf", broken)


def test_mount_args_are_read_only_binds():
    args = container.mount_args(["/lib64"])
    assert args[::2] == ["--mount"] * 3
    assert all(a.endswith("options=rbind:ro") for a in args[1::2])
    assert "src=/lib64,dst=/lib64" in args[-1]


def test_cri_messages_encode_as_protobuf_and_read_back():
    # RunPodSandboxRequest{config{metadata{name}, log_directory}} and a map entry answer.
    msg = cri.encode([(1, [(1, [(1, "nginx")]), (3, "/p")])])
    assert msg == b"\x0a\x0d\x0a\x07\x0a\x05nginx\x1a\x02/p"
    assert cri.first_text(cri.delimited(msg, 1)[0], 3) == "/p"
    answer = cri.encode([(2, [(1, "info"), (2, '{"pid": 42}')]), (2, [(1, "x"), (2, "y")])])
    entries = {cri.first_text(e, 1): cri.first_text(e, 2) for e in cri.delimited(answer, 2)}
    assert entries == {"info": '{"pid": 42}', "x": "y"}
    assert cri.encode([(2, True), (5, 300)]) == b"\x10\x01\x28\xac\x02"


def test_pod_image_is_an_oci_archive_of_the_hosts_sleep(tmp_path):
    cri.pod_image(tmp_path / "pod.tar")
    with tarfile.open(tmp_path / "pod.tar") as tar:
        names = tar.getnames()
        index = json.load(tar.extractfile("index.json"))  # type: ignore[arg-type]
    assert {"oci-layout", "index.json"} <= set(names)
    entry = index["manifests"][0]
    assert entry["annotations"]["io.containerd.image.name"] == cri.IMAGE
    assert f"blobs/sha256/{entry['digest'].split(':')[1]}" in names


# ----------------------------------------------------------------------------- the tables


def _common(when: str) -> dict:
    return {
        "measured_at": when,
        "container_path": "ctr",
        "line_bytes": 92.0,
        "lines_per_write": 1,
        "path": logpath.PATHS["ctr"],
        "cpu_model": "=cmd|' /C calc'!A0",
        "cpus": 2,
        "containerd_version": "containerd 1.6.20",
        "nginx_version": "nginx version: nginx/1.22.1",
        "loadavg": "1.0 1.0 1.0 -> 2.0 2.0 2.0",
    }


def _on_trials() -> list[campaign.Trial]:
    side = {"shim": (1.0, 4.0), "reader": (0.5, 3.0), "containerd": (0.0, 0.0)}
    return [campaign.Trial(40_000, 7.0, 21.0, side) for _ in range(3)]


def test_log_path_rows_append_and_their_notes_hold_the_spread(tmp_path):
    out = tmp_path / campaign.LOG_PATH_FILE
    ref = [campaign.Trial(40_000, 6.5, 19.0, {}) for _ in range(3)]
    pairs = (ref, _on_trials())
    floods = [_flood(), _flood(), replace(_flood(), per_write=64)]
    first = logpath.rows(pairs, 2, floods, _common("2026-11-27T10:30:00Z"))
    assert [(r["measurement"], r["process"]) for r in first] == [
        ("nginx", "nginx_extra"),
        *((m, p) for m in logpath.MEASUREMENTS for p in logpath.PROCESSES),
    ]
    assert [r["lines_per_write"] for r in first[-3:]] == [64] * 3
    assert (first[0]["user_us"], first[0]["kernel_us"]) == (0.5, 2.0)
    nginx_shim = first[1]
    assert nginx_shim["lines_per_s"] == 20_000 and nginx_shim["user_us"] == 1.0
    assert nginx_shim["cpu_share"] == pytest.approx(5.0 * 20_000 / 1e6)
    logpath.append(out, first, "python -m runners features --only access_log_container")
    table = logpath.append(out, first[4:7], "again")
    assert len(table) == 13
    cells = list(csv.DictReader(io.StringIO(out.read_text())))
    assert list(cells[0]) == list(logpath.LOG_PATH_COLUMNS)
    assert cells[0]["cpu_model"].startswith("'=cmd")
    notes = out.with_suffix(".md").read_text()
    assert "| ctr | flood | shim | 2 |" in notes and "## Spread over runs" in notes
    assert "CRI logger" in notes


def test_a_foreign_log_path_table_is_bad_input_before_any_load(tmp_path, capsys):
    (tmp_path / campaign.LOG_PATH_FILE).write_text("a,b\n1,2\n")
    out = tmp_path / "costs.csv"
    argv = ["features", "--only", "access_log_container", "--out", str(out)]
    assert runners_main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "container-log-path.csv" in err[0]


def test_a_foreign_feature_cost_table_is_bad_input_before_any_load(tmp_path, capsys):
    out = tmp_path / "costs.csv"
    out.write_text("feature,cost\nx,1\n")
    assert runners_main(["features", "--only", "limit_conn", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "other columns" in err[0]


def test_an_only_run_keeps_the_other_rows_and_their_notes(tmp_path):
    out = tmp_path / "feature-costs.csv"
    shipped = Path(__file__).parents[1] / "data" / "reference" / "feature-costs.csv"
    out.write_text(shipped.read_text())
    out.with_suffix(".md").write_text(shipped.with_suffix(".md").read_text())
    before = {r["feature"]: r for r in csv.DictReader(io.StringIO(out.read_text()))}
    ref = [campaign.Trial(40_000, 6.0, 20.0, {}) for _ in range(3)]
    result = campaign.Result("access_log_container", ref=ref, on=_on_trials())
    result.container_path = "cri"
    info = {"cpu_model": "AMD EPYC", "nginx_version": "nginx version: nginx/1.22.1"}
    campaign.write_table([result], campaign.Settings(), info, out, "python -m runners features")
    after = list(csv.DictReader(io.StringIO(out.read_text())))
    assert [r["feature"] for r in after] == list(FEATURE_NAMES)
    for r in after:
        if r["feature"] != "access_log_container":
            assert r == before[r["feature"]]
    assert load_feature_costs(out)["access_log_container"].user_us == pytest.approx(1.0)
    notes = out.with_suffix(".md").read_text()
    assert notes.count("## Rows measured at 2026-11-27T04:42:29Z") == 1
    assert "runners features --pairs 9" in notes and "access_log_container: both nginx" in notes
    # A second run of the same feature keeps the first run's notes of the other rows once.
    campaign.write_table([result], campaign.Settings(), info, out, "python -m runners features")
    again = out.with_suffix(".md").read_text()
    runs = {r["measured_at"] for r in after if r["feature"] != "access_log_container"}
    assert again.count("## Rows measured at ") == len(runs)  # each other run's notes, once
    assert "runners features --pairs 9" in again
    assert (tmp_path / campaign.LOG_PATH_FILE).exists()  # the trials' side costs


def test_without_containerd_the_feature_is_not_measured_and_starts_nothing(monkeypatch):
    monkeypatch.setattr(container, "CONTAINERD_TOOLS", ("nginx-sizing-no-such-runtime",))
    host = LocalHost()
    bench = campaign.Bench(host, NginxHost(host), "wrk", "/nowhere", ())
    result = campaign.measure(bench, "access_log_container", campaign.Settings(), print)
    assert not result.measured and not result.floods
    assert result.note.startswith("not measured, containerd absent")
    assert "nginx-sizing-no-such-runtime" in result.note


def test_shipped_log_path_table_reads():
    table = logpath.read_table(SHIPPED_LOG_PATH)
    assert {r["measurement"] for r in table} == set(logpath.MEASUREMENTS)
    assert {r["container_path"] for r in table} == set(logpath.PATHS)
    for r in table:
        assert r["lines_per_s"] > 0 and "CRI logger" in r["path"]


# ----------------------------------------------------------------------------- for real

_NO_CONTAINERD = [t for t in container.CONTAINERD_TOOLS if shutil.which(t) is None]
try:
    import grpc  # noqa: F401

    _NO_GRPC = ""
except ImportError:
    _NO_GRPC = "grpcio is not installed (the CRI path's client)"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed")
@pytest.mark.skipif(bool(_NO_CONTAINERD), reason=f"not installed: {', '.join(_NO_CONTAINERD)}")
@pytest.mark.skipif(os.geteuid() != 0, reason="containerd runs containers as root")
@pytest.mark.skipif(bool(_NO_GRPC), reason=_NO_GRPC)
def test_the_container_log_path_measured_for_real(tmp_path, leaves_no_nginx, monkeypatch):
    small = (container.FloodSettings(lines=20_000), container.FloodSettings(20_480, 100, 64))
    monkeypatch.setattr(campaign, "FLOODS", small)
    out = tmp_path / "costs.csv"
    argv = ["features", "--only", "access_log_container", "--pairs", "2", "--seconds", "1"]
    assert runners_main([*argv, "--out", str(out)]) == 0
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert [r["feature"] for r in rows] == ["access_log_container"]
    assert list(rows[0]) == list(FEATURE_COST_COLUMNS)
    load_feature_costs(out)  # valid, measured or not (a busy host may refuse a trial)
    if rows[0]["status"] == "measured":
        table = logpath.read_table(tmp_path / campaign.LOG_PATH_FILE)
        kinds = {(r["measurement"], r["trials"]) for r in table}
        assert kinds == {("nginx", 2), ("flood", 2), ("flood_batched", 2)}
        assert all(r["line_bytes"] and r["line_bytes"] > 50 for r in table)
    assert not list(Path(os.environ.get("TMPDIR", "/tmp")).glob("nginx-sizing-ctr.*"))

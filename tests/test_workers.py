"""NGINX's worker count (worker_processes) read from a config and applied to each instance."""

from __future__ import annotations

from pathlib import Path

import pytest

from sizing.catalog.load import load_catalog
from sizing.errors import InputError
from sizing.model.capacity import instance_capacity
from sizing.workload.conf import read
from sizing.workload.conf.reading import answer_notes
from sizing.workload.value import MAX_WORKERS, Workload

CATALOG = {i.instance_type: i for i in load_catalog()}


def _conf(tmp_path: Path, main: str) -> Path:
    conf = tmp_path / "nginx.conf"
    conf.write_text(
        f"{main}events {{}}\nhttp {{\n access_log off;\n open_file_cache max=9;\n"
        " server {\n  listen 80;\n  location / { }\n }\n}\n"
    )
    return conf


def test_worker_processes_as_nginx_reads_it(tmp_path):
    assert read(str(_conf(tmp_path, "worker_processes auto;\n"))).workload.workers == 0
    four = read(str(_conf(tmp_path, "worker_processes 4;\n")))
    assert four.workload.workers == 4
    assert four.found.provenance["workers"].endswith("nginx.conf:1)")
    unset = read(str(_conf(tmp_path, "")))  # NGINX's compiled-in default is one worker
    assert unset.workload.workers == 1
    assert any(e.startswith("worker_processes not set") for e in unset.found.estimates)
    said = "1 NGINX worker(s) from your nginx.conf (worker_processes: NGINX's default 1)"
    assert any(n.startswith(said) for n in answer_notes(unset, ()))
    auto = read(str(_conf(tmp_path, "worker_processes auto;\n")))
    assert not any("worker(s)" in n for n in answer_notes(auto, ()))


@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5", str(MAX_WORKERS + 1)])
def test_a_bad_worker_count_is_one_line_naming_the_place(tmp_path, value):
    conf = _conf(tmp_path, f"worker_processes {value};\n")
    with pytest.raises(InputError, match=rf"{conf}:1: worker_processes"):
        read(str(conf))


def test_the_controllers_worker_processes(tmp_path):
    cm = tmp_path / "cm.yaml"
    cm.write_text("apiVersion: v1\nkind: ConfigMap\ndata:\n  worker-processes: '3'\n")
    assert read(None, str(cm)).workload.workers == 3
    cm.write_text("apiVersion: v1\nkind: ConfigMap\ndata:\n  worker-processes: auto\n")
    assert read(None, str(cm)).workload.workers == 0


@pytest.mark.parametrize("bad", [-1, MAX_WORKERS + 1, 2.0, True])
def test_a_workload_refuses_a_bad_worker_count(bad):
    with pytest.raises(InputError, match="workers must be a count"):
        Workload(workers=bad)


def _peak(instance: str, workers: int) -> float:
    work = Workload(protocol="http", workers=workers, burst_network=True)
    return instance_capacity(CATALOG[instance], work).cpu_peak_rps


def test_fewer_workers_than_vcpus_leave_the_others_idle():
    # One thread per core (Graviton): each worker is one vCPU's worth.
    full = _peak("c7g.4xlarge", 0)
    assert _peak("c7g.4xlarge", 16) == full == _peak("c7g.4xlarge", 64)
    assert _peak("c7g.4xlarge", 4) == pytest.approx(full / 4, rel=0.03)
    # Two threads per core (Ice Lake): up to one worker per core, each runs alone on its core
    # and gets more than a busy hyper-thread's share, never more than the whole core.
    full = _peak("c6i.4xlarge", 0)
    alone = _peak("c6i.4xlarge", 8)
    assert full / 2 < alone < full
    assert _peak("c6i.4xlarge", 4) == pytest.approx(alone / 2, rel=0.03)
    peaks = [_peak("c6i.4xlarge", w) for w in range(1, 17)]
    assert peaks == sorted(peaks)
    # A ninth worker shares a core with a second one: 7 alone and 2 paired. With g what the
    # second thread adds (16 workers over 8, the scaling alike), 9 serve (14 / g + 2) / (16 / g)
    # of what 8 alone do.
    g = full / alone
    assert _peak("c6i.4xlarge", 9) / alone == pytest.approx((14 / g + 2) / (16 / g), rel=0.005)
    lines = instance_capacity(CATALOG["c6i.4xlarge"], Workload(protocol="http", workers=4)).basis
    assert any("only 4 of the 16 vCPUs run workers (worker_processes)" in b for b in lines)

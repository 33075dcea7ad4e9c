"""Kubernetes output: manifests validated against the Kubernetes schemas, packing, names."""

from __future__ import annotations

import math

import pytest
import yaml

from sizing.analyses import k8s
from sizing.catalog.load import select_instances
from sizing.cli.main import main
from sizing.errors import InputError
from sizing.fleet.recommend import FleetRules, survivors
from sizing.workload.value import Workload

kubernetes_validate = pytest.importorskip("kubernetes_validate")
K8S_VERSION = "1.30"


def validate_all(text: str) -> list[dict]:
    docs = [d for d in yaml.safe_load_all(text) if d is not None]
    for d in docs:
        kubernetes_validate.validate(d, K8S_VERSION, strict=True)
    return docs


def by_kind(docs: list[dict]) -> dict[str, dict]:
    return {d["kind"]: d for d in docs}


def test_validator_can_fail():
    bad = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "x"},
        "spec": {"minReplicas": "three", "maxReplicas": 2, "scaleTargetRef": {}},
    }
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, K8S_VERSION, strict=True)


@pytest.fixture(scope="module")
def answer():
    rules = FleetRules(zones=3, zone_loss=1)
    return k8s.k8s_answer(1e6, select_instances(), Workload(), rules, k8s.Pod(cpus=2))


def test_manifests_validate_and_hold_the_sizing(answer):
    docs = by_kind(validate_all(answer["yaml"]))
    assert set(docs) == {"Deployment", "PodDisruptionBudget", "HorizontalPodAutoscaler"}
    dep, pdb, hpa = docs["Deployment"], docs["PodDisruptionBudget"], docs["HorizontalPodAutoscaler"]
    node = answer["node"]
    assert dep["spec"]["replicas"] == node["replicas"]
    (c,) = dep["spec"]["template"]["spec"]["containers"]
    res = c["resources"]
    assert res["limits"]["cpu"] == "2"
    req = int(res["requests"]["cpu"].rstrip("m")) / 1000
    assert req == pytest.approx(node["cpu_request_cores"]) and 0 < req <= 2
    # The request is the CPU at the pod's target RPS, in millicores: the pod's 2 CPUs at
    # the SLA utilisation carry its RPS under the SLA.
    per_request = 2 * node["pod_sla_utilization"] / node["pod_rps_under_sla"]
    assert req == math.ceil(node["pod_target_rps"] * per_request * 1000) / 1000
    assert req == pytest.approx(2 * node["pod_sla_utilization"] * 0.8, abs=0.001)
    sel = dep["spec"]["template"]["spec"]["nodeSelector"]
    assert sel["node.kubernetes.io/instance-type"] == node["node_type"]
    spread = dep["spec"]["template"]["spec"]["topologySpreadConstraints"][0]
    assert spread["topologyKey"] == "topology.kubernetes.io/zone"
    # Zone loss: the pods left after losing one of three zones still carry the target.
    rules = FleetRules(zones=3, zone_loss=1)
    assert survivors(node["replicas"], rules) * node["pod_target_rps"] >= 1e6
    assert pdb["spec"]["minAvailable"] * node["pod_target_rps"] >= 1e6
    assert pdb["spec"]["minAvailable"] <= survivors(node["replicas"], rules)
    assert hpa["spec"]["minReplicas"] == node["replicas"] <= hpa["spec"]["maxReplicas"]
    target = hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"]
    assert target == answer["hpa_target_percent"] and "sla_utilization" in answer["hpa_source"]
    # The CPU at the headroom load over the request (that CPU rounded up to a millicore): the
    # HPA adds pods before any passes its headroom load, never at the SLA knee (100 / 0.8).
    assert 98 <= target <= 100


def test_node_choice_is_the_cheapest_packing(answer):
    nodes = answer["nodes"]
    costs = [n["total_monthly_usd"] for n in nodes]
    assert costs == sorted(costs) and answer["node"] == nodes[0]
    for n in nodes[:20]:
        per_zone = math.ceil(n["replicas"] / 3)
        assert n["nodes"] >= 3 * math.ceil((n["replicas"] // 3) / n["pods_per_node"])
        assert n["nodes"] <= 3 * math.ceil(per_zone / n["pods_per_node"])
        # Requests fit the node's allocatable CPU.
        alloc = n["node_vcpus"] - k8s.reserved_cpu(n["node_vcpus"]) - k8s.DAEMONSET_CPU
        assert n["pods_per_node"] * n["cpu_request_cores"] <= alloc + 1e-9
    assert "cheapest in all of" in answer["yaml"].splitlines()[1]


def test_reservations_follow_the_published_tiers():
    assert k8s.reserved_cpu(1) == pytest.approx(0.06)
    assert k8s.reserved_cpu(4) == pytest.approx(0.06 + 0.01 + 2 * 0.005)
    assert k8s.reserved_cpu(8) == pytest.approx(0.08 + 4 * 0.0025)
    assert k8s.reserved_memory_gib(4) == pytest.approx(1.0)
    assert k8s.reserved_memory_gib(16) == pytest.approx(1.0 + 0.8 + 0.8)


def test_measured_curve_sets_the_hpa_target():
    rows = [
        {
            "run_id": "R",
            "valid": True,
            "vcpus": 2,
            "rps": x,
            "server_cpu_pct": c,
            "latency_p99_ms": p,
        }
        for x, c, p in [
            (1000, 40.0, 1.0),
            (2000, 90.0, 2.0),
            (3000, 150.0, 4.0),
            (4000, 200.0, 9.0),
        ]
    ]
    ratio, src = k8s.measured_cpu_ratio(rows, 2, 5.0, 0.2)
    # SLA load 3000 RPS at 1.5 CPU; target 2400 RPS: 0.9 + 0.6 * 0.4 = 1.14 CPU, against the
    # straight line's 0.8 * 1.5 = 1.2 CPU.
    assert ratio == pytest.approx(1.14 / (0.8 * 1.5))
    assert "run R" in src and "3,000 RPS" in src
    assert k8s.measured_cpu_ratio(rows, 2, 0.5, 0.2) is None


def test_cli_k8s_and_recommend_format_k8s(capsys, tmp_path):
    assert (
        main(["k8s", "--rps", "2e5", "--pod-cpus", "1", "--name", "edge", "--namespace", "web"])
        == 0
    )
    docs = by_kind(validate_all(capsys.readouterr().out))
    assert docs["Deployment"]["metadata"] == {
        "name": "edge",
        "labels": {"app.kubernetes.io/name": "edge"},
        "namespace": "web",
    }
    out = tmp_path / "nginx.yaml"
    assert main(["recommend", "--rps", "2e5", "--format", "k8s", "--out", str(out)]) == 0
    assert "nodes:" in capsys.readouterr().out
    validate_all(out.read_text())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--name", "Web_Server"], "RFC 1123"),
        (["--name", "a" * 64], "RFC 1123"),
        (["--name", "x\n---\nkind: Secret"], "RFC 1123"),
        (["--namespace=-bad"], "RFC 1123"),
        (["--image", "nginx latest"], "container image"),
        (["--image", 'nginx"\n  evil: 1'], "container image"),
    ],
)
def test_hostile_names_are_refused(capfd, args, message):
    assert main(["k8s", "--rps", "1e5", *args]) == 2
    err = capfd.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_hostile_node_names_are_left_out_and_comments_stay_comments(tmp_path):
    (inst,) = [i for i in select_instances() if i.instance_type == "c6i.xlarge"][:1]
    from dataclasses import replace

    hostile = replace(inst, instance_type="evil\n---\nkind: Secret", price_usd_hour=0.001)
    fits, excluded = k8s.fit_nodes(1e5, [hostile, inst], Workload(), FleetRules())
    assert [f.node.instance_type for f in fits] == ["c6i.xlarge"]
    assert "label value" in excluded[0]["reason"]
    text = k8s.to_yaml([{"kind": "ConfigMap"}], ["a\nkind: Secret", "b\r\n---"])
    assert [line for line in text.splitlines() if not line.startswith("#")] == [
        "---",
        'kind: "ConfigMap"',
    ]


def test_yaml_strings_round_trip():
    doc = {"metadata": {"name": "x", "annotations": {"a": 'q"u\\ote\x1b[2J: - #', "b": "yes"}}}
    (back,) = yaml.safe_load_all(k8s.to_yaml([doc]))
    assert back == doc


def test_bad_pod_size_and_nothing_fits():
    with pytest.raises(InputError, match="pod CPUs"):
        k8s.k8s_answer(1e5, select_instances(), Workload(), FleetRules(), k8s.Pod(cpus=0))
    from sizing.errors import Infeasible

    small = [i for i in select_instances() if i.vcpus < 4]
    with pytest.raises(Infeasible, match="no node type fits"):
        k8s.k8s_answer(1e5, small, Workload(), FleetRules(), k8s.Pod(cpus=8))


@pytest.mark.slow
def test_hpa_from_a_real_run(tmp_path, leaves_no_nginx):
    """A short real sweep (nginx and wrk on this machine) gives the HPA target its curve."""
    from tests.conftest import runners_cli, sizing_cli

    out = tmp_path / "runs"
    p = runners_cli(
        *("sweep", "--server", "local", "--scenario", "static", "--protocol", "http"),
        *("--file-size", "1KB", "--vcpus", "1", "--threads", "1", "--connections", "2,8,32"),
        *("--duration", "2s", "--warmup", "0", "--cooldown", "0", "--sla-p99", "1s"),
        *("--label", "c6i.large", "--quiet", "--out", str(out)),
    )
    assert p.returncode == 0, p.stderr
    (run,) = out.iterdir()
    p = sizing_cli(
        *("k8s", "--rps", "1e5", "--protocol", "http", "--pod-cpus", "1"),
        *("--sla-p99", "1s", "--runs", str(run)),
    )
    assert p.returncode == 0, p.stderr
    docs = by_kind(validate_all(p.stdout))
    hpa = docs["HorizontalPodAutoscaler"]["spec"]["metrics"][0]["resource"]["target"]
    assert hpa["averageUtilization"] >= 1
    assert f"(measured: run {run.name}" in p.stdout


def test_runs_of_another_workload_leave_the_hpa_to_the_model():
    row = {"run_id": "R", "valid": True, "vcpus": 2, "rps": 1000.0, "server_cpu_pct": 50.0}
    row |= {"latency_p99_ms": 1.0, "scenario": "static", "protocol": "http"}
    row |= {"http_version": "1.1", "file_bytes": 65536, "simulated": False}
    nodes = [i for i in select_instances() if i.instance_type == "c6i.xlarge"]
    basis = k8s.PodBasis(runs_rows=[row])
    a = k8s.k8s_answer(1e5, nodes, Workload(protocol="http"), FleetRules(), basis=basis)
    assert a["hpa_source"].startswith("model:")
    assert "measured no trial of this workload" in a["hpa_source"]
    b = k8s.k8s_answer(
        1e5,
        nodes,
        Workload(protocol="http", file_bytes=65536),
        FleetRules(),
        basis=basis,
    )
    assert b["hpa_source"].startswith("measured: run R")

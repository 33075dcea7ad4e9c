"""Azure's published VM network path: the connection-rate cap and what the basis says."""

import math
from dataclasses import replace

import pytest

from sizing.catalog import azure
from sizing.catalog.load import Instance
from sizing.errors import InputError
from sizing.model.capacity import model_capacity
from sizing.workload.value import Workload

#: A network-optimized size (16 vCPUs: 87,500 connections/s published) and a general one.
N_SIZE = Instance(
    "azure",
    "eastus",
    "Standard_D16ns_v6",
    "Dns_v6",
    "x86_64",
    "Intel Xeon Emerald Rapids (inferred from the size name)",
    16,
    64.0,
    40.0,
    False,
    1.0,
    "test row",
    "2026-06-18",
)
GENERAL = replace(N_SIZE, instance_type="Standard_D16s_v6", family="Ds_v6")
AWS_TWIN = replace(
    GENERAL, provider="aws", region="us-east-1", instance_type="m7i.4xlarge", family="m7i"
)
NEW_PER_REQUEST = Workload(protocol="http", requests_per_connection=1)
PROXY_NEW = Workload(protocol="http", features=(("proxy_new_connection", 1.0),))


def test_the_shipped_file_holds_every_published_limit_with_its_line():
    limits = azure.read_network_path()
    by_name = {}
    for row in limits:
        by_name.setdefault(row.limit, []).append(row)
        assert row.line > 0 and len(row.commit) >= 12 and row.page.endswith(".md")
    assert [r.value for r in by_name["active_connections"]] == [500_000]
    assert [r.value for r in by_name["active_connections_proxy"]] == [250_000]
    cps = sorted(by_name["connections_per_second"], key=lambda r: r.vcpus_from)
    assert [r.value for r in cps][:3] == [62_500, 62_500, 75_000] and cps[-1].value == 420_000
    assert azure.limit_for(limits, "connections_per_second", 1).value == 62_500  # below: lowest
    assert azure.limit_for(limits, "connections_per_second", 96).value == 250_000
    assert azure.limit_for(limits, "connections_per_second", 416).value == 420_000


def test_new_connections_count_the_client_side_and_the_upstream_side():
    assert azure.new_connections_per_request(Workload()) == (0.0, 0.0)
    assert azure.new_connections_per_request(Workload(requests_per_connection=4)) == (0.25, 0.0)
    assert azure.new_connections_per_request(PROXY_NEW) == (0.0, 1.0)


def test_keep_alive_has_no_cap_but_the_basis_says_what_is_published():
    cap, why = azure.connection_cap(N_SIZE, Workload())
    assert math.isinf(cap)
    assert "500,000 active connections" in why and "packet-rate estimate is kept" in why
    assert "Accelerated Networking is not in the bundled data" in why
    _, proxying = azure.connection_cap(N_SIZE, PROXY_NEW)
    assert "250,000 active connections per VM that proxies" in proxying
    for scenario in ("reverse_proxy", "api_gateway"):  # a proxy by its scenario alone
        _, why = azure.connection_cap(N_SIZE, Workload(scenario=scenario))
        assert "250,000 active connections per VM that proxies" in why, scenario


def test_the_published_rate_caps_a_network_optimized_size():
    cap, why = azure.connection_cap(N_SIZE, NEW_PER_REQUEST)
    assert cap == pytest.approx(87_500)
    assert "published for this network-optimized size" in why
    both = Workload(
        protocol="http", requests_per_connection=1, features=(("proxy_new_connection", 1.0),)
    )
    assert azure.connection_cap(N_SIZE, both)[0] == pytest.approx(43_750)
    general_cap, general_why = azure.connection_cap(GENERAL, NEW_PER_REQUEST)
    assert general_cap == pytest.approx(87_500) and "an upper bound for this size" in general_why


@pytest.mark.parametrize("work", [NEW_PER_REQUEST, PROXY_NEW], ids=["client", "upstream"])
def test_the_capacity_is_held_to_the_connection_rate(work):
    cap = model_capacity(N_SIZE, work)
    twin = model_capacity(AWS_TWIN, work)
    # The CPU would serve more than the published rate: the cap must bind, on Azure only.
    assert cap.cpu_sla_rps > 87_500
    assert cap.network_rps == pytest.approx(87_500)
    assert cap.capacity_rps == pytest.approx(87_500) and cap.binding_constraint == "network"
    assert "the connection rate caps it lower" in " ".join(cap.basis)
    assert twin.capacity_rps > 87_500 and "connection rate" not in " ".join(twin.basis)


def test_a_bad_network_path_file_is_one_line_naming_it(tmp_path):
    good = azure.NETWORK_PATH.read_text().splitlines()
    bad = tmp_path / "network-path.csv"
    bad.write_text("\n".join([*good[:2], good[2].replace(",500000,", ",-1,")]) + "\n")
    with pytest.raises(InputError, match=r"network-path.csv:3: value or vCPUs out of range"):
        azure.read_network_path(bad)
    bad.write_text("\n".join([*good[:2], "=cmd|x,1,,1,connections,a,b.md,c,1"]) + "\n")
    with pytest.raises(InputError, match=r"network-path.csv:3: unknown limit '=cmd\|x'"):
        azure.read_network_path(bad)
    for cell, new in (
        ("0375bb83e151", "\x1b[31m"),
        ("virtual-machine", "\x1b]0;x\x07"),
        (",52", ",0"),
    ):
        bad.write_text("\n".join([*good[:2], good[2].replace(cell, new)]) + "\n")
        with pytest.raises(InputError, match=r"network-path.csv:3: page, commit or line is not"):
            azure.read_network_path(bad)
    bad.write_text("\n".join([*good[:2], good[5].replace(",2,3,", ",3,2,")]) + "\n")
    with pytest.raises(InputError, match=r"network-path.csv:3: vcpus_to below vcpus_from"):
        azure.read_network_path(bad)

"""Platform speeds a reader can trust: stand-in-only speeds labelled and widened, outliers flagged.

Data: the shipped ``data/fits/cloud-model.json`` (``python -m sizing precompute``) and the
published rows of ``data/cloud/measurements.csv``.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from sizing.catalog.load import load_catalog
from sizing.fitting.cloudfit import fit_cloud_model, observations, stand_in_gap
from sizing.fitting.cloudtruth import load_cloud_measurements
from sizing.fitting.speedcheck import generation_outliers
from sizing.model import capacity
from sizing.model.cloud import load_cloud_model
from sizing.workload.value import Workload


@pytest.fixture(scope="module")
def cat():
    return {i.instance_type: i for i in load_catalog()}


@pytest.fixture(scope="module")
def obs():
    return observations(load_cloud_measurements())


@pytest.fixture(scope="module")
def model():
    got = load_cloud_model()
    assert got is not None
    return got


def test_gap_is_the_root_mean_square_of_per_platform_shifts():
    resid = {"a|1|small_static": [("x", 0.3), ("y", 0.1)], "b|2|small_static": [("z", -0.2)]}
    assert stand_in_gap(resid) == (pytest.approx(0.2), 2)
    assert stand_in_gap({}) == (0.0, 0)


def test_stand_in_speeds_are_labelled_and_wider_nginx_ones_are_not(model):
    assert 0.05 < model.stand_in_gap_sd < 0.5 and model.stand_in_gap_platforms >= 3
    turin = model.speeds["zen5|1|small_static"]
    assert turin.stand_in_only and turin.stand_in_sd == model.stand_in_gap_sd
    assert turin.rel_sd >= model.stand_in_gap_sd
    assert "stand-in server only" in turin.source and "published" not in turin.source
    g3 = model.speeds["graviton3|1|small_static"]  # measured with real NGINX (small bodies)
    assert not g3.stand_in_only and "stand-in" not in g3.source
    # No NGINX row has large bodies: every large-body speed rests on the stand-in alone.
    large = [s for s in model.speeds.values() if s.workload_class == "large_static"]
    assert large and all(s.stand_in_only for s in large)


def test_the_answer_names_the_stand_in_in_its_basis(cat):
    turin = " ".join(capacity.instance_capacity(cat["m8azn.medium"], Workload()).basis)
    assert "stand-in server only" in turin
    graviton3 = " ".join(capacity.instance_capacity(cat["c7g.xlarge"], Workload()).basis)
    assert "stand-in server only" not in graviton3


def test_a_fit_without_nginx_rows_has_no_gap_to_measure(obs):
    blind = fit_cloud_model(obs, exclude_sources=["aws-ec2-benchmark-nginx"])
    assert (blind.stand_in_gap_sd, blind.stand_in_gap_platforms) == (0.0, 0)
    assert all(s.stand_in_only for s in blind.speeds.values())


def test_outliers_are_computed_from_the_speeds(model):
    flagged = {f.key for f in generation_outliers(model)}
    assert "zen5|1|small_static" in flagged and "graviton4|1|small_static" not in flagged
    # Put Zen 5 one ordinary step past Zen 4 and it is no longer flagged ...
    speeds = dict(model.speeds)
    for key in [k for k in speeds if k.startswith("zen5|")]:
        zen4 = speeds[key.replace("zen5", "zen4")]
        speeds[key] = replace(speeds[key], speed=zen4.speed * 1.16)
    # ... and triple Graviton4 and it is.
    g4 = speeds["graviton4|1|small_static"]
    speeds["graviton4|1|small_static"] = replace(g4, speed=g4.speed * 3)
    moved = {f.key: f.ratio for f in generation_outliers(replace(model, speeds=speeds))}
    assert not any(k.startswith("zen5|") for k in moved)
    assert "graviton4|1|small_static" in moved and moved["graviton4|1|small_static"] > 1.5
    assert all(math.isfinite(r) for r in moved.values())


def test_a_large_instance_is_capped_by_the_packet_rate_and_says_so(cat):
    work = Workload()
    packets = capacity.packets_per_request(work)
    assert packets == 4  # a 1 KB response is one segment: request, ACK, response, ACK
    big = capacity.instance_capacity(cat["c7g.16xlarge"], work)
    gbps = capacity.network_gbps(cat["c7g.16xlarge"], work)[0]
    budget = capacity.PACKET_RATE[0] * max(1.0, gbps / capacity.PACKET_RATE_GBPS)
    assert big.network_rps == pytest.approx(budget / packets)
    assert big.capacity_rps <= big.network_rps < big.cpu_peak_rps
    assert "packet rate caps it lower" in " ".join(big.basis)
    small = capacity.instance_capacity(cat["c7g.medium"], work)
    assert "packet rate" not in " ".join(small.basis)
    # A network-optimised NIC of more bandwidth passes more packets (seed 002's c7gn ratios).
    gn = capacity.instance_capacity(cat["c7gn.16xlarge"], work)
    assert gn.network_rps > big.network_rps
    large_body = Workload(file_bytes=65536)
    n = math.ceil(capacity.wire_bytes_per_request(large_body) / 1448.0)
    assert capacity.packets_per_request(large_body) == 2 + n + math.ceil(n / 2)


def test_the_packet_count_holds_a_clients_handshakes_not_the_upstream_leg():
    kept = capacity.packets_per_request(Workload(protocol="http"))
    assert kept == 4
    # a new client connection per request: SYN, SYN-ACK, ACK, FIN, ACK (and 4 TLS records)
    assert capacity.packets_per_request(Workload(protocol="http", requests_per_connection=1)) == 9
    assert capacity.packets_per_request(Workload(requests_per_connection=2)) == 4 + 9 / 2
    # a proxy's upstream exchange is not held to the budget (seed 002's c7gn / c6gn ratios)
    proxy = Workload(protocol="http", scenario="reverse_proxy")
    assert capacity.packets_per_request(proxy) == 4
    new_conn = replace(proxy, features=(("proxy_new_connection", 1.0),))
    assert capacity.packets_per_request(new_conn) == 4


def test_the_stand_ins_own_rows_are_scored_without_the_gap(model, obs):
    from sizing.fitting.cloudfit import predict

    rows = obs[(obs["source_id"] == "sparecores-static-web") & (obs["cpu_platform"] == "zen5")]
    pred = predict(model, rows.head(4))
    sp = model.speeds["zen5|1|small_static"]
    no_gap = math.hypot(math.sqrt(sp.rel_sd**2 - sp.stand_in_sd**2), model.spread("small_static"))
    assert min(pred["log_sd"]) < no_gap + 1e-9 < math.hypot(sp.rel_sd, model.spread("small_static"))

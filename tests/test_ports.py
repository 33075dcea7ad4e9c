"""A proxy that closes its new upstream connections itself is capped by its ports."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from sizing.catalog.load import load_catalog
from sizing.errors import InputError
from sizing.model.capacity import model_capacities
from sizing.model.ports import HELD_PORTS, TIME_WAIT_S, time_wait_cap
from sizing.workload.conf import read
from sizing.workload.value import Workload

DATA = Path(__file__).resolve().parent / "data" / "conf"
LOCATION = """
events {{}}
http {{
    {upstream}
    server {{
        listen 80;
        location / {{ proxy_pass {target}; {extra} }}
    }}
}}
"""
ASKS_KEEPALIVE = 'proxy_http_version 1.1; proxy_set_header Connection "";'


def _read(tmp_path: Path, target: str, upstream: str = "", extra: str = ASKS_KEEPALIVE):
    conf = tmp_path / "nginx.conf"
    conf.write_text(LOCATION.format(upstream=upstream, target=target, extra=extra))
    return read(str(conf))


def test_an_http11_request_without_a_pool_leaves_the_close_to_the_proxy(tmp_path: Path) -> None:
    two = "upstream app { server 10.0.0.5:8080; server 10.0.0.6:8080; }"
    r = _read(tmp_path, "http://app", two)
    assert r.workload.upstream_time_wait == 2
    assert dict(r.workload.features) == {"access_log": 1.0, "proxy_new_connection": 1.0}
    assert any("TIME_WAIT" in e for e in r.found.estimates)
    assert _read(tmp_path, "http://10.0.0.5:8080").workload.upstream_time_wait == 1


@pytest.mark.parametrize(
    ("upstream", "extra"),
    [
        # NGINX's default request (HTTP/1.0, Connection: close): the upstream closes first.
        ("", ""),
        ("", "proxy_http_version 1.1;"),  # Connection: close still sent
        # A keepalive pool: connections are reused, none closed per request.
        ("upstream app { server 10.0.0.5:8080; keepalive 16; }", ASKS_KEEPALIVE),
    ],
)
def test_other_proxies_are_not_held(tmp_path: Path, upstream: str, extra: str) -> None:
    target = "http://app" if upstream else "http://10.0.0.5:8080"
    assert _read(tmp_path, target, upstream, extra).workload.upstream_time_wait == 0


def test_the_shipped_fixtures_are_not_held() -> None:
    for name in ("proxy-new-connection.conf", "proxy-keepalive.conf", "static-tuned.conf"):
        assert read(str(DATA / name)).workload.upstream_time_wait == 0


def test_the_cap_is_ports_held_over_their_time_per_address_and_connection() -> None:
    work = Workload(
        scenario="reverse_proxy",
        protocol="http",
        features=(("proxy_new_connection", 0.5),),
        upstream_time_wait=3,
    )
    cap, line = time_wait_cap(work)
    assert cap == pytest.approx(3 * HELD_PORTS[0] / TIME_WAIT_S / 0.5)
    assert "TIME_WAIT" in line and "keepalive pool" in line
    assert time_wait_cap(Workload(scenario="reverse_proxy"))[0] == math.inf
    # Addresses but no new connection per request: nothing to hold.
    assert time_wait_cap(Workload(scenario="reverse_proxy", upstream_time_wait=2))[0] == math.inf


def test_the_capacity_names_the_ports_when_they_bind() -> None:
    inst = next(i for i in load_catalog() if i.instance_type == "c7g.4xlarge")
    new = (("proxy_new_connection", 1.0),)
    held = model_capacities(
        [inst], Workload("reverse_proxy", "http", features=new, upstream_time_wait=1)
    )[0]
    free = model_capacities([inst], Workload("reverse_proxy", "http", features=new))[0]
    assert held.binding_constraint == "ports"
    assert held.capacity_rps == pytest.approx(HELD_PORTS[0] / TIME_WAIT_S)
    assert free.capacity_rps > 10 * held.capacity_rps
    assert any("TIME_WAIT" in line for line in held.basis)


@pytest.mark.parametrize("bad", [-1, True, 1.5, "2"])
def test_a_bad_address_count_is_one_line(bad: object) -> None:
    with pytest.raises(InputError, match="upstream addresses"):
        Workload(upstream_time_wait=bad)  # type: ignore[arg-type]

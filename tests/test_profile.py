"""The CPU profile schema: writer, reader and validation with one clear error line."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from trialtable.profile import (
    COEFFICIENTS,
    Coefficient,
    NewConnections,
    Profile,
    ProfileError,
    Scaling,
    cost_terms,
    from_dict,
    read_profile,
    write_profile,
)

ROOT = Path(__file__).resolve().parents[1]


def _profile(**coefficients: float) -> Profile:
    coefs = coefficients or {
        "request_us": 10.0,
        "byte_ns": 0.1,
        "tls_request_us": 2.0,
        "tls_byte_ns": 1.0,
        "connection_us": 30.0,
        "handshake_full_ecdsa_p256_us": 200.0,
        "handshake_full_rsa2048_us": 900.0,
        "gzip_byte_ns": 20.0,
        "proxy_request_us": 15.0,
        "gateway_request_us": 2.0,
    }
    return Profile(
        created="2026-11-21T22:10:00Z",
        cpu_model="Test CPU",
        arch="x86_64",
        threads_per_core=2,
        measured_over="loopback",
        load_generator="wrk",
        host={"kernel": "6.1"},
        coefficients={
            k: Coefficient(v, v * 0.05, 0.03, COEFFICIENTS[k][0]) for k, v in coefs.items()
        },
        scaling=Scaling([1, 2], [1000.0, 1900.0], [1.0, 0.95]),
        sla_p99_ms=5.0,
        runs=["r1"],
        configs={"static_http_0B": "worker_processes 1;"},
        warnings=[],
    )


def test_round_trip(tmp_path):
    p = write_profile(_profile(), tmp_path / "p.json")
    back = read_profile(p)
    assert back == _profile()
    d = json.loads(p.read_text())
    assert d["schema"] == "nginx-sizing/cpu-profile/1"
    assert d["coefficients"]["request_us"] == {
        "value": 10.0,
        "stderr": 0.5,
        "spread": 0.03,
        "unit": "us/request",
    }


def _cost_us(p: Profile, file_bytes: float, **kw) -> float:
    """A profile's CPU time per request [us]: its coefficients times the formula's terms."""
    return sum(p.coefficients[k].value * x for k, x in cost_terms(file_bytes, **kw).items())


def test_cost_model():
    p = _profile()
    assert _cost_us(p, 0) == pytest.approx(10.0)
    # no body_us / tls_body_us in this profile: a body's fixed cost is in request_us
    terms = cost_terms(1000, https=True)
    assert terms == {
        "request_us": 1.0,
        "byte_ns": 1.0,
        "body_us": 1.0,
        "tls_request_us": 1.0,
        "tls_byte_ns": 1.0,
        "tls_body_us": 1.0,
    }
    cps_rsa = _cost_us(p, 0, https=True, connections=NewConnections(1, "rsa"))
    assert cps_rsa == pytest.approx(10 + 2 + 30 + 900)
    # sizing's key names select the same coefficient as the runners'
    assert cost_terms(0, https=True, connections=NewConnections(1, "rsa2048")) == (
        cost_terms(0, https=True, connections=NewConnections(1, "rsa"))
    )
    half = cost_terms(0, https=True, connections=NewConnections(0.5, tls_resumption=0.25))
    assert half["handshake_full_ecdsa_p256_us"] == pytest.approx(0.375)
    assert half["handshake_resumed_us"] == pytest.approx(0.125)
    gw = _cost_us(p, 0, scenario="api_gateway")
    assert gw == pytest.approx(10 + 15 + 2)
    gz = cost_terms(10_000, gzip=0.5, wire_bytes=3000)
    assert gz["gzip_byte_ns"] == pytest.approx(5.0) and gz["byte_ns"] == pytest.approx(3.0)
    assert cost_terms(0, http_version="2")["http2_request_us"] == 1.0
    assert "http2_request_us" not in cost_terms(0)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(schema="other/1"), "schema is 'other/1'"),
        (lambda d: d.pop("runs"), "missing keys: runs"),
        (lambda d: d.update(created="yesterday"), "not a past UTC time"),
        (lambda d: d.update(created="2026-13-01T00:00:00Z"), "not a past UTC time"),
        (lambda d: d.update(created="9999-12-31T23:59:59Z"), "not a past UTC time"),
        (lambda d: d.update(created="2026-02-30T25:61:00Z"), "not a past UTC time"),
        (lambda d: d.update(created="2026-11-21T22:10:00Z\n"), "not a past UTC time"),
        (lambda d: d.update(arch="sparc"), "arch 'sparc'"),
        (lambda d: d.update(threads_per_core=0), "threads_per_core 0"),
        (lambda d: d.update(measured_over="wifi"), "measured_over 'wifi'"),
        (lambda d: d["coefficients"].update(warp_us={}), "coefficient warp_us is unknown"),
        (lambda d: d["coefficients"]["byte_ns"].update(unit="us/byte"), "expected 'ns/byte'"),
        (lambda d: d["coefficients"]["request_us"].update(value=-1.0), "negative"),
        (lambda d: d["coefficients"]["request_us"].update(value=math.nan), "not a finite"),
        (lambda d: d["coefficients"]["request_us"].update(value="1"), "not a finite"),
        (lambda d: d["coefficients"]["request_us"].update(stderr=-1), "stderr"),
        (lambda d: d["scaling"].update(rps=[1.0]), "differ in length"),
        (lambda d: d.update(configs={"a": 1}), "configs"),
        (lambda d: d.update(warnings="none"), "warnings must be a list"),
    ],
)
def test_validation_names_the_problem(change, message):
    d = json.loads(json.dumps(_profile().to_dict()))
    change(d)
    with pytest.raises(ProfileError, match=message):
        from_dict(d, "x.json")


def test_signed_coefficient_may_be_negative():
    d = json.loads(json.dumps(_profile().to_dict()))
    d["coefficients"]["http2_request_us"] = {
        "value": -0.5,
        "stderr": 0.1,
        "spread": None,
        "unit": "us/request",
    }
    assert from_dict(d).coefficients["http2_request_us"].value == -0.5


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "no such profile file"), ("{", "not valid JSON"), ("[1]", "not a JSON object")],
)
def test_bad_files(tmp_path, content, message):
    path = tmp_path / "p.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ProfileError, match=message):
        read_profile(path)


def test_shipped_profiles_follow_the_schema():
    shipped = sorted((ROOT / "data" / "profiles").glob("*.json"))
    assert shipped, "data/profiles/ holds no profile"
    for path in shipped:
        p = read_profile(path)
        assert p.coefficients["request_us"].value > 0
        assert p.runs and p.configs and p.host.get("cpu_model")
        assert path.with_suffix(".trials.csv").is_file(), "the trials it rests on are shipped"


def test_imports_neither_runners_nor_sizing():
    code = (
        "import sys, trialtable.profile; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('runners', 'sizing')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert out.stdout.strip() == "[]"

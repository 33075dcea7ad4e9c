"""Published current crypto figures and the TLS / JWT costs derived from them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sizing.errors import InputError
from sizing.model import crypto, platforms
from sizing.paths import DATA_DIR

#: Seed 002 (002_5bc85ae220f67db4.txt, "Nginx Performance On AWS Graviton3"): "enabling JWT
#: RS256 results in roughly a 90% decrease in maximum RPS across all the instance types and
#: sizes tested" (C6gn, C7gn, C6in; NGINX Plus auth_jwt, 1 KB HTTPS reverse proxy). A check:
#: nothing is fitted to it.
SEED_002_JWT_DROP = 0.90
SEED_002_PLATFORMS = ("graviton2", "graviton3", "ice_lake")  # C6gn, C7gn (Graviton3E), C6in
RESPONSE_BYTES = 1024 + 250  # 1 KB body + the cost model's 250 B of headers (an estimate)


@pytest.fixture(scope="module")
def figures() -> list[crypto.Figure]:
    return crypto.load_figures()


def speed(pid: str) -> float:
    return platforms.platforms()[pid].core_speed


def test_file_loads_and_every_row_has_a_source(figures):
    assert len(figures) >= 40
    for f in figures:
        assert f.source_id and f.title and f.publisher and f.url, f.line
        assert f.quote, f"line {f.line}: no quote"
    ops = {f.operation for f in figures}
    for op in ("rsa2048_sign", "rsa2048_verify", "ecdsa_p256_sign", "ecdsa_p256_verify"):
        assert op in ops
    assert "aes128gcm_16k" in ops and "nginx_full_handshake_ecdsa_p256" in ops


def _write(tmp_path: Path, edit) -> Path:
    lines = crypto.CSV_PATH.read_text().splitlines()
    lines[1] = edit(lines[1])
    p = tmp_path / "crypto.csv"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_a_row_without_a_source_is_refused_naming_file_line_field(tmp_path):
    header = crypto.CSV_PATH.read_text().splitlines()[0].split(",")
    url_at = header.index("url")

    def drop_url(line: str) -> str:
        # The first data row has no quoted commas before the url column's neighbours.
        parts = line.split(",")
        parts[url_at] = ""
        return ",".join(parts)

    p = _write(tmp_path, drop_url)
    with pytest.raises(InputError, match=r"crypto\.csv:2: field 'url'"):
        crypto.load_figures(p)


def test_a_value_out_of_range_is_refused(tmp_path):
    p = _write(tmp_path, lambda line: line.replace(",1961,ops_per_s,", ",19610000,ops_per_s,"))
    with pytest.raises(InputError, match=r"csv:2: field 'value'.*out of range"):
        crypto.load_figures(p)
    p = _write(tmp_path, lambda line: line.replace(",1961,ops_per_s,", ",-3,ops_per_s,"))
    with pytest.raises(InputError, match=r"csv:2: field 'value'"):
        crypto.load_figures(p)


def test_a_device_is_refused_as_an_input_error():
    with pytest.raises(InputError, match="cannot read"):
        crypto.load_figures("/dev/zero")


@pytest.mark.parametrize(
    "pid", ["cascade_lake", "sapphire_rapids", "altra", "graviton3", "graviton4"]
)
def test_physics_order_of_public_key_operations(figures, pid):
    rsa_sign = crypto.operation_cost(figures, "rsa2048_sign", pid)
    rsa_verify = crypto.operation_cost(figures, "rsa2048_verify", pid)
    ec_sign = crypto.operation_cost(figures, "ecdsa_p256_sign", pid)
    assert ec_sign.value < rsa_sign.value  # ECDSA signs cheaper than RSA
    assert rsa_verify.value < rsa_sign.value / 10  # RSA verify far cheaper than RSA sign
    assert 100 < rsa_sign.value < 5000 and 5 < rsa_verify.value < 150  # us
    assert 5 < ec_sign.value < 100


@pytest.mark.parametrize(
    "pid", ["ice_lake", "sapphire_rapids", "zen3", "zen4", "zen5", "graviton3", "graviton4"]
)
def test_aes_gcm_under_a_nanosecond_per_byte(figures, pid):
    bulk = crypto.tls_bulk_ns_per_byte(figures, pid)
    assert 0.01 < bulk.value < 1.0
    assert bulk.unit == "ns/byte" and bulk.source


@pytest.mark.parametrize(
    "pid", ["ice_lake", "sapphire_rapids", "zen4", "graviton2", "graviton3", "graviton4"]
)
def test_handshakes_sane_and_ordered(figures, pid):
    s = speed(pid)
    rsa = crypto.handshake_full_us(figures, pid, "rsa2048", s)
    ec = crypto.handshake_full_us(figures, pid, "ecdsa_p256", s)
    resumed = crypto.handshake_resumed_us(s)
    assert resumed.value < ec.value < rsa.value
    assert 100 < ec.value < 1000 and 300 < rsa.value < 5000
    # On current x86 cores the figures sit below seed 004's 2015 RSA handshake (2,250 us on
    # Haswell with OpenSSL 1.0.1f). Not on Neoverse N1 (Graviton2, Altra): its published RSA
    # signature alone takes 2.8 ms.
    if platforms.platforms()[pid].arch == "x86_64":
        assert rsa.value < 2250
    for d in (rsa, ec, resumed):
        assert 0 < d.rse < 1 and d.source
    # NGINX's published 2014 rule (handshakes = 45-60% of RSA signs) from older software:
    # the derived RSA handshake lies within a factor two of it.
    lo, hi = crypto.handshake_rule_us(figures, pid)
    assert lo / 2 < rsa.value < hi * 2


def test_fixed_handshake_part_is_an_estimate_from_the_published_rate(figures):
    fixed = crypto.handshake_fixed_ref_us(figures)
    assert 200 < fixed.value < 500
    assert fixed.source.startswith("estimate:") and "NGINX" in fixed.source


def test_jwt_costs_and_sources(figures):
    for pid in ("graviton3", "sapphire_rapids"):
        rs = crypto.jwt_verify_us(figures, pid, "RS256", speed(pid))
        bare = crypto.jwt_verify_us(figures, pid, "RS256", speed(pid), import_key=False)
        es = crypto.jwt_verify_us(figures, pid, "ES256", speed(pid), import_key=False)
        assert bare.value < rs.value
        assert bare.value < es.value  # RSA verifies faster than ECDSA P-256
        assert "estimate: njs" in rs.source and "load" in rs.source
    with pytest.raises(InputError):
        crypto.jwt_verify_us(figures, "graviton3", "HS256")


def _proxied_https_1kb_us(pid: str) -> float:
    """A 1 KB HTTPS reverse-proxy request on one core of ``pid`` from the shipped coefficients."""
    c = json.loads((DATA_DIR / "fits" / "cost-model.json").read_text())["coefficients"]
    v = {k: c[k]["value"] for k in c}
    kb = RESPONSE_BYTES / 1000
    ref = (
        v["request_us"]
        + v["body_us"]
        + v["byte_ns"] * kb
        + v["tls_request_us"]
        + v["tls_byte_ns"] * kb
        + v["proxy_request_us"]
    )
    return ref / speed(pid)


def predicted_drop(figures, pid: str, import_key: bool = True) -> float:
    jwt = crypto.jwt_verify_us(figures, pid, "RS256", speed(pid), import_key=import_key).value
    base = _proxied_https_1kb_us(pid)
    return jwt / (base + jwt)


def test_seed_002_jwt_rps_drop(figures):
    """Seed 002: about 90% fewer RPS with RS256 JWT checks. Not fitted; a check.

    The derived RS256 cost (verification + the per-request key import + njs) predicts 92%
    (C6gn, Graviton2), 94% (C7gn, Graviton3) and 72% (C6in, Ice Lake): mean 86%. The
    signature verification alone (no key import) predicts only 52-71%: the published
    drop needs a per-request cost of several hundred us on Graviton, which the OpenSSL 3.0
    key import (379-394 us published on Neoverse N1/V1 with OpenSSL 3.0.2) supplies, and
    which verification (25 us) does not.
    """
    drops = {pid: predicted_drop(figures, pid) for pid in SEED_002_PLATFORMS}
    bare = {pid: predicted_drop(figures, pid, import_key=False) for pid in SEED_002_PLATFORMS}
    for pid in SEED_002_PLATFORMS:
        assert bare[pid] < drops[pid]  # direction: the key import adds cost
        assert 0.5 < drops[pid] < 0.99  # an honest broad band around "roughly 90%"
        assert 0.3 < bare[pid] < 0.75  # verification alone does not reach 90%
    mean = sum(drops.values()) / len(drops)
    assert abs(mean - SEED_002_JWT_DROP) < 0.15

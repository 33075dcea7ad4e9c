"""``runners search/ab --nginx-conf`` and the run's certificate key of a user's config.

Refusals and the key type are checked without load (certificates made here with
`cryptography`); real nginx and wrk on loopback then search the reference config against
itself, compare a TLS config with an Ed25519 certificate against the reference in pairs, and
serve the run's own certificate of the user's key type.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import socket
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import NameOID

from runners.cli.confsearch import search_measured
from runners.cli.main import main as runners_main
from runners.deploy.conf import ConfTarget
from runners.deploy.nginx import Deployment, NginxHost
from runners.deploy.userconf import read_user_conf
from runners.deploy.userkey import first_certificate, key_name
from runners.hosts import LocalHost
from runners.scenario import Scenario
from runners.search import SearchResult
from tests.conftest import runners_cli, sizing_cli

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "data" / "reference" / "nginx-static.conf"
FAST = ("--duration", "1s", "--warmup", "0", "--cooldown", "0")


def _private_key(kind: str):
    if kind.startswith("rsa"):
        return rsa.generate_private_key(public_exponent=65537, key_size=int(kind[3:]))
    if kind == "ed25519":
        return ed25519.Ed25519PrivateKey.generate()
    return ec.generate_private_key(
        {"ecdsa-p256": ec.SECP256R1(), "ecdsa-p384": ec.SECP384R1()}[kind]
    )


def _cert(folder: Path, kind: str, *, key_first: bool = False, key_after: bool = False) -> Path:
    """A self-signed certificate of key type ``kind`` in ``folder`` (its key only if asked)."""
    key = _private_key(kind)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "user.example")])
    now = datetime.datetime.now(datetime.UTC)
    digest = None if kind == "ed25519" else hashes.SHA256()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .sign(key, digest)
    )
    pem = cert.public_bytes(serialization.Encoding.PEM)
    secret = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    path = folder / f"{kind}.pem"
    path.write_bytes(secret + pem if key_first else pem + secret if key_after else pem)
    return path


def _tls_conf(folder: Path, *certs: str) -> Path:
    """A TLS server naming ``certs``; its key file does not exist (the run never reads it)."""
    lines = "".join(
        f"ssl_certificate {c}; ssl_certificate_key {folder}/missing-{i}.key;\n"
        for i, c in enumerate(certs)
    )
    path = folder / "nginx.conf"
    path.write_text(
        "events {}\nhttp {\n server { listen 8443 ssl;\n"
        + lines
        + "  location / { root /srv/www; } } }\n"
    )
    return path


@pytest.mark.parametrize("kind", ["rsa3072", "ed25519", "ecdsa-p384"])
def test_the_runs_key_is_the_type_of_the_users_certificate(tmp_path, kind):
    conf = read_user_conf(str(_tls_conf(tmp_path, str(_cert(tmp_path, kind)))))
    assert conf.key.name == kind and "public key" in conf.key.note
    text = conf.render(ConfTarget("/run/p", "127.0.0.1", [1], [0]))
    assert f"# the run's certificate key: {kind}" in text


def test_a_relative_certificate_and_two_of_them(tmp_path):
    _cert(tmp_path, "rsa2048")
    _cert(tmp_path, "ecdsa-p256")
    conf = read_user_conf(str(_tls_conf(tmp_path, "rsa2048.pem", "ecdsa-p256.pem")))
    assert conf.key.name == "ecdsa-p256" and "of 2 certificates" in conf.key.note


def test_only_the_certificate_block_is_read(tmp_path):
    path = _cert(tmp_path, "ed25519", key_after=True)
    assert b"PRIVATE" in path.read_bytes()
    pem = first_certificate(str(path))
    assert b"PRIVATE" not in pem and key_name(pem) == "ed25519"


@pytest.mark.parametrize(
    ("cert", "why"),
    [
        ("missing.pem", "No such file"),
        ("$ssl_server_name.pem", "variable"),
        ("KEYFIRST", "another PEM block"),
        ("NOTPEM", "no PEM certificate"),
    ],
)
def test_an_unreadable_certificate_keeps_the_default_in_one_line(tmp_path, cert, why):
    if cert == "KEYFIRST":
        cert = str(_cert(tmp_path, "ecdsa-p256", key_first=True))
    elif cert == "NOTPEM":
        (tmp_path / "x.pem").write_text("not a certificate\n")
        cert = "x.pem"
    conf = read_user_conf(str(_tls_conf(tmp_path, cert)))
    assert conf.key.name == "" and why in conf.key.note
    assert (
        conf.key.note.endswith("the run's key is the --tls-key one") and "\n" not in conf.key.note
    )


def _result(rps, low, high) -> SearchResult:
    return SearchResult(
        1, "static", "adaptive", 5.0, rps, low, high, 1, 8, None, 1.0, 0.0, 5, 9.0, True, False
    )


def test_a_search_ratio_is_the_reference_capacity_over_yours():
    m = search_measured(_result(20000, 19000, 21000), _result(10000, 9500, 10500), 3)
    assert m is not None and m["method"] == "search" and m["ratio"] == pytest.approx(2.0)
    assert m["ratio_low"] < 2.0 < m["ratio_high"] and m["pairs"] == 3
    assert search_measured(_result(20000, 19000, 21000), _result(None, None, None), 3) is None


def test_recommend_runs_reads_a_searched_ratio(tmp_path):
    run = tmp_path / "conf-run"
    run.mkdir()
    doc = {
        "kind": "nginx-conf-cost",
        "method": "search",
        "run_id": run.name,
        "reference_run_id": "ref-run",
        "reference": {"scenario": "static", "protocol": "https", "file_bytes": 1024},
        "ratio": 2.0,
        "ratio_low": 1.8,
        "ratio_high": 2.2,
        "pairs": 3,
    }
    (run / "conf-cost.json").write_text(json.dumps(doc))
    p = sizing_cli(
        "recommend", "--rps", "2e5", "--provider", "aws", "--runs", str(run), "--explain"
    )
    assert p.returncode == 0, p.stderr
    assert "capacities under the p99 SLA" in p.stdout and "two searches" in p.stdout
    (run / "conf-cost.json").write_text(json.dumps({**doc, "method": "guess"}))
    p = sizing_cli("recommend", "--rps", "2e5", "--runs", str(run))
    assert p.returncode == 2 and "method must be one of" in p.stderr


@pytest.mark.parametrize(
    ("command", "conf", "extra", "why"),
    [
        ("search", "load_module modules/ngx_no_such_module.so;\n", (), "module not installed"),
        ("search", "include loop.conf;\n", (), "include loop"),
        ("search", "", ("--vcpus", "1,2"), "one --vcpus"),
        ("search", "", ("--server", "sim"), "--server sim"),
        ("ab", "load_module modules/ngx_no_such_module.so;\n", (), "module not installed"),
        ("ab", "", ("--ab-directive", "gzip on;"), "one B"),
        ("ab", "", ("--nginx-conf-a", "/no/such.conf"), "/no/such.conf"),
        ("ab", "", ("--target-address", "0.0.0.0"), "is a wildcard"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, command, conf, extra, why):
    (tmp_path / "loop.conf").write_text("include loop.conf;\n")
    path = tmp_path / "nginx.conf"
    path.write_text(conf + REFERENCE.read_text())
    out = tmp_path / "runs"
    with pytest.raises(SystemExit) as exc:
        raise SystemExit(
            runners_main([command, "--nginx-conf", str(path), "--out", str(out), *extra])
        )
    err = capsys.readouterr().err
    assert exc.value.code == 2, err
    assert why in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists() or not any(out.iterdir())


def test_ab_nginx_conf_a_needs_a_b_config(capsys):
    code = runners_main(["ab", "--ab-directive", "gzip on;", "--nginx-conf-a", str(REFERENCE)])
    assert code == 2 and "give both" in capsys.readouterr().err


def _served_key(port: int) -> str:
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=30) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
            der = tls.getpeercert(binary_form=True)
    assert der
    pem = x509.load_der_x509_certificate(der).public_bytes(serialization.Encoding.PEM)
    return key_name(pem)


@pytest.mark.parametrize("kind", ["rsa3072", "ecdsa-p384"])
def test_nginx_serves_the_runs_key_of_the_users_type(tmp_path, kind, leaves_no_nginx):
    """Real nginx on loopback: the run's own certificate, of the user's key type."""
    conf = _tls_conf(tmp_path, str(_cert(tmp_path, kind)))
    scenario = Scenario(protocol="https", nginx_conf=str(conf))
    with Deployment(NginxHost(LocalHost(), as_root=os.geteuid() == 0), scenario) as dep:
        dep.start([0])
        assert dep.port and _served_key(dep.port) == kind
        assert str(tmp_path) not in dep.conf  # the user's files are not named


def test_search_of_the_reference_config_against_itself(tmp_path, own_tmpdir, leaves_no_nginx):
    """Real nginx and wrk: two short searches (reference, then yours) and their ratio."""
    p = runners_cli(
        "search", "--nginx-conf", str(REFERENCE), "--protocol", "http", *FAST,
        "--sla-p99", "1s", "--start-connections", "4", "--max-connections", "4",
        "--confirm-duration", "1s", "--format", "json", "--quiet", "--out", str(tmp_path),
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    yours, ref = doc["results"]["yours"], doc["results"]["reference"]
    assert yours["max_rps_under_sla"] > 0 and ref["max_rps_under_sla"] > 0
    cost = json.loads((tmp_path / doc["runs"]["yours"] / "conf-cost.json").read_text())
    assert cost["method"] == "search" and cost["reference_run_id"] == doc["runs"]["reference"]
    # The same config searched twice, one after the other on a shared machine: a ratio, not a
    # bound on it (two 1 s searches on a loaded 2-core host gave x1.65 of itself).
    assert math.isfinite(cost["ratio"]) and 0.1 < cost["ratio"] < 10


def test_ab_of_a_tls_config_with_its_own_key_type(tmp_path, own_tmpdir, leaves_no_nginx):
    """Real nginx and wrk: an Ed25519 TLS config (B) against the reference over HTTPS (A)."""
    conf = _tls_conf(tmp_path, str(_cert(tmp_path, "ed25519")))
    out = tmp_path / "runs"
    p = runners_cli(
        "ab", "--nginx-conf", str(conf), "--protocol", "https", *FAST, "--pairs", "2",
        "--connections", "4", "--format", "json", "--quiet", "--out", str(out),
    )  # fmt: skip
    assert p.returncode in (0, 1), p.stderr
    assert "the run's key is ed25519" in p.stderr
    doc = json.loads(p.stdout)
    cost = json.loads((out / doc["runs"]["b"] / "conf-cost.json").read_text())
    assert cost["tls_key"] == "ed25519" and cost["served_protocol"] == "https"
    assert math.isfinite(cost["ratio"]) and cost["pairs"] == 2
    confs = json.loads((out / doc["runs"]["b"] / "run.json").read_text())["nginx_conf"]
    assert all("# the run's certificate key: ed25519" in c for c in confs.values())

"""Costs the project's runs measure in pairs: the reverse proxy, TLS per byte, HTTP/2."""

from __future__ import annotations

import json

import pytest

from runners.calibrate import fit as calfit
from runners.calibrate import settings as cs
from sizing.errors import InputError
from sizing.fitting import runcosts
from sizing.model.capacity import current_stack
from sizing.model.costmodel import COST_MODEL_PATH, reference_profile
from trialtable.profile import cost_terms

STATIC_HTTP = ("static", "http", "1.1", 1)
PROXY_HTTP = ("reverse_proxy", "http", "1.1", 1)


def stored() -> dict:
    return json.loads(COST_MODEL_PATH.read_text())


def reference() -> dict[str, float]:
    return {k: v["value"] for k, v in stored()["coefficients"].items()}


def test_shipped_proxy_trials_give_a_fixed_and_a_per_byte_cost():
    trials = runcosts.read_trials(runcosts.PROXY_TRIALS)
    pairs = trials.pairs(STATIC_HTTP, PROXY_HTTP)
    assert len({p.body_bytes for p in pairs}) >= 3 and len({p.round_ for p in pairs}) >= 3
    # A proxy costs more than a static file at every size, and more per byte (copies).
    assert all(p.extra_us > 0 for p in pairs)
    line = runcosts.fit_line(pairs)
    assert line.a_us > 2 * line.a_se and line.b_ns > 2 * line.b_se


def test_cost_model_carries_the_measured_terms():
    coefs = stored()["coefficients"]
    terms = runcosts.proxy_terms(reference())
    for name, (value, low, high, why) in terms.items():
        assert coefs[name]["value"] == pytest.approx(value, rel=1e-2)
        assert low < value < high
        assert coefs[name]["source"] == why and "proxy-vs-static-trials.csv" in why
        assert coefs[name]["measured_over"] == "loopback"
    h2 = runcosts.http2_term(reference())
    assert coefs["http2_request_us"]["value"] == pytest.approx(h2[0], rel=1e-2, abs=0.05)
    assert "http2-trials.csv" in coefs["http2_request_us"]["source"]


def test_current_stack_moves_tls_per_byte_and_keeps_the_seeds_fit():
    ref = reference_profile()
    now = current_stack(ref)
    fitted = ref.coef("tls_byte_ns")
    current = now.coef("tls_byte_ns")
    assert fitted is not None and current is not None
    value, low, high, _why = runcosts.tls_byte_current(reference())
    assert current.value == pytest.approx(value, rel=1e-2) and low < current.value < high
    assert "proxy-vs-static-trials.csv" in current.source
    # The seed's own coefficient stays in the stored model (the fidelity checks use it).
    assert stored()["coefficients"]["tls_byte_ns"]["value"] == fitted.value != current.value


def test_formula_copies_the_proxied_body_only():
    static = cost_terms(10_000, scenario="static")
    proxy = cost_terms(10_000, scenario="reverse_proxy")
    gateway = cost_terms(10_000, scenario="api_gateway")
    assert "proxy_byte_ns" not in static
    assert proxy["proxy_byte_ns"] == gateway["proxy_byte_ns"] == 10.0
    assert "proxy_byte_ns" not in cost_terms(0, scenario="reverse_proxy")
    # gzip: the proxy reads the upstream's uncompressed body
    gz = cost_terms(10_000, scenario="reverse_proxy", gzip=1.0, wire_bytes=3000)
    assert gz["proxy_byte_ns"] == pytest.approx(10.0)


def test_campaign_separates_the_proxy_terms_and_old_campaigns_still_fit():
    settings = cs.fit_settings()
    calfit.check_identifiable(settings)
    rows = [calfit._row(s, None) for s in settings]
    names = [n for n in ("proxy_request_us", "proxy_byte_ns") if any(r.get(n) for r in rows)]
    assert calfit._separable(names, rows) == names
    # A campaign stored before the 100 KB proxy setting existed proxied 1 KB only.
    old = [r for s, r in zip(settings, rows, strict=True) if s.name != "reverse_proxy_http_100KB"]
    every = [n for n in calfit.COEFFICIENTS if any(r.get(n) for r in old)]
    kept = calfit._separable(every, old)
    assert "proxy_request_us" in kept and "proxy_byte_ns" not in kept
    assert kept == [n for n in every if n != "proxy_byte_ns"]


HEAD = ",".join(runcosts.COLUMNS) + "\n"


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("round,protocol\n1,http\n", "missing column"),
        (HEAD + "x,r,t,s,c,static,http,1024,16,3,1,1,50,1\n", "must be numbers"),
        (HEAD + "1,r,t,s,c,static,gopher,1024,16,3,1,1,50,1\n", "protocol must be"),
        (HEAD + "1,r,t,s,c,static,http,1024,16,3,0,1,50,1\n", "needs requests"),
        (HEAD, "no trials"),
        (
            HEAD + "1,r,t,s,c,static,http,1024,16,3,9,1,50,1\n" * 2,
            "a second trial",
        ),
    ],
)
def test_bad_trials_file_is_one_line(tmp_path, text, word):
    p = tmp_path / "t.csv"
    p.write_text(text)
    with pytest.raises(InputError) as exc:
        runcosts.read_trials(p)
    assert word in str(exc.value) and "\n" not in str(exc.value)


def test_pairs_need_both_settings(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text(HEAD + "1,r,t,2026-11-24,c,static,http,1024,16,3,9,1,50,1\n")
    with pytest.raises(InputError, match="no round holds both"):
        runcosts.read_trials(p).pairs(STATIC_HTTP, PROXY_HTTP)

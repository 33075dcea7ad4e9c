"""A reverse proxy's extra CPU: measured pairs, the fit, the formula and the campaign."""

from __future__ import annotations

import json

import pytest

from runners import calibrate_fit as calfit
from runners import calibrate_settings as cs
from sizing.errors import InputError
from sizing.model import proxycost
from sizing.model.costmodel import COST_MODEL_PATH
from trialtable.profile import cost_terms


def test_shipped_trials_give_a_fixed_and_a_per_byte_cost():
    pairs = proxycost.read_pairs()
    assert {p.protocol for p in pairs} == {"http", "https"}
    assert len({p.body_bytes for p in pairs}) >= 3 and len({p.round_ for p in pairs}) >= 3
    http = proxycost.fit_line([p for p in pairs if p.protocol == "http"])
    # A proxy costs more than a static file at every size, and more per byte (copies).
    assert all(p.extra_us > 0 for p in pairs if p.protocol == "http")
    assert http.a_us > 2 * http.a_se and http.b_ns > 2 * http.b_se


def test_cost_model_carries_the_measured_terms():
    coefs = json.loads(COST_MODEL_PATH.read_text())["coefficients"]
    ref = {k: coefs[k]["value"] for k in ("request_us", "body_us", "byte_ns")}
    terms = proxycost.proxy_terms(ref)
    for name, (value, low, high, why) in terms.items():
        assert coefs[name]["value"] == pytest.approx(value, rel=1e-2)
        assert low < value < high
        assert coefs[name]["source"] == why and "proxy-vs-static-trials.csv" in why


def test_formula_copies_the_proxied_body_only():
    static = cost_terms(10_000, scenario="static")
    proxy = cost_terms(10_000, scenario="reverse_proxy")
    gateway = cost_terms(10_000, scenario="api_gateway")
    assert "proxy_byte_ns" not in static
    assert proxy["proxy_byte_ns"] == gateway["proxy_byte_ns"] == 10.0
    assert "proxy_byte_ns" not in cost_terms(0, scenario="reverse_proxy")
    # gzip: the proxy reads the upstream's uncompressed body
    assert cost_terms(10_000, scenario="reverse_proxy", gzip=1.0, wire_bytes=3000)[
        "proxy_byte_ns"
    ] == pytest.approx(10.0)


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


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("round,protocol\n1,http\n", "missing column"),
        (
            ",".join(proxycost.COLUMNS) + "\n" + "x,r,t,s,c,static,http,1024,16,3,1,1,50,1\n",
            "must be numbers",
        ),
        (
            ",".join(proxycost.COLUMNS) + "\n" + "1,r,t,s,c,static,gopher,1024,16,3,1,1,50,1\n",
            "protocol must be",
        ),
        (
            ",".join(proxycost.COLUMNS) + "\n" + "1,r,t,s,c,static,http,1024,16,3,0,1,50,1\n",
            "needs requests",
        ),
        (",".join(proxycost.COLUMNS) + "\n", "no round holds"),
    ],
)
def test_bad_trials_file_is_one_line(tmp_path, text, word):
    p = tmp_path / "t.csv"
    p.write_text(text)
    with pytest.raises(InputError) as exc:
        proxycost.read_pairs(p)
    assert word in str(exc.value) and "\n" not in str(exc.value)

import pytest

from sizing.model import datasets


@pytest.fixture(scope="module")
def web():
    return datasets.load_reference("nginx-web-server")


def _value(frame, metric, protocol, size, cpus):
    sel = frame[
        (frame.metric == metric)
        & (frame.protocol == protocol)
        & (frame.file_size == size)
        & (frame.cpus == cpus)
    ]
    assert len(sel) == 1
    return sel.iloc[0]


@pytest.mark.parametrize(
    "metric,protocol,size,cpus,value",
    [
        ("requests_per_s", "https", "1KB", 16, 690_329),
        ("requests_per_s", "http", "0KB", 1, 145_551),
        ("requests_per_s", "http", "0KB", 36, 3_298_511),
        ("requests_per_s", "http", "100KB", 8, 91_640),
        ("requests_per_s", "https", "100KB", 32, 90_430),
        ("requests_per_s", "https", "10KB", 2, 48_654),
        ("connections_per_s", "http", "0KB", 32, 261_033),
        ("connections_per_s", "https", "0KB", 24, 10_274),
        ("throughput_gbps", "http", "1MB", 1, 48),
        ("throughput_gbps", "http", "10MB", 8, 72),
    ],
)
def test_spot_values_match_the_seed_tables(web, metric, protocol, size, cpus, value):
    row = _value(web, metric, protocol, size, cpus)
    assert row.value == value
    assert row.source.startswith("004_2a50d35d485b581a.txt table")


def test_row_counts_and_conditions(web):
    counts = web.groupby("metric").size().to_dict()
    assert counts == {"requests_per_s": 56, "connections_per_s": 14, "throughput_gbps": 21}
    # HTTPS CPS was not run at 32 CPUs; 24 instead.
    assert sorted(web[(web.metric == "connections_per_s") & (web.protocol == "https")].cpus) == [
        1,
        2,
        4,
        8,
        16,
        24,
        36,
    ]
    assert set(web.hyperthreading) == {"off"}
    assert set(web.nginx_version.astype(str)) == {"1.9.7"}
    assert set(web.wrk_version.astype(str)) == {"4.0.0"}
    assert set(web[web.protocol == "https"].tls_cipher) == {"ECDHE-RSA-AES256-GCM-SHA384"}
    assert web.source.notna().all()


def test_relative_claims_carry_sources_and_conditions():
    claims = datasets.load_reference("relative-claims").set_index("claim_id")
    assert claims.loc["000-perf-t2a-vs-n2", "ratio_low"] == pytest.approx(1.15)
    assert claims.loc["000-perf-t2a-vs-n2", "sla_p99_ms"] == 5
    assert claims.loc["002-rp-c7gn-vs-c6in", ["ratio_low", "ratio_high"]].tolist() == [1.54, 1.88]
    assert claims.loc["002-apigw-vs-rp", "ratio_high"] == pytest.approx(0.96)
    assert claims.loc["003-cps-onload-vs-kernel-avg", "ratio_low"] == pytest.approx(3.8)
    assert claims.source.str.match(r"^00[0-4]_[0-9a-f]{16}\.txt ").all()
    assert (claims.ratio_low <= claims.ratio_high).all()


def test_gcp_prices_of_seed_000():
    vms = datasets.load_reference("gcp-32vcpu-test-vms").set_index("instance_type")
    assert vms.price_usd_per_hour.to_dict() == {
        "t2a-standard-32": 1.232,
        "n2-standard-32": 1.553888,
        "n2d-standard-32": 1.351872,
    }


def test_list_reference_names_rows_and_sources():
    listing = {d["name"]: d for d in datasets.list_reference()}
    assert listing["nginx-web-server"]["rows"] == 91
    assert listing["nginx-web-server"]["sources"] == ["004_2a50d35d485b581a.txt"]
    assert set(listing["relative-claims"]["sources"]) >= {
        "000_d3944319585b8126.txt",
        "002_5bc85ae220f67db4.txt",
        "003_b0115bf25db13ad6.txt",
    }


def test_unknown_dataset_is_an_input_error():
    with pytest.raises(datasets.InputError, match="unknown reference dataset 'nope'"):
        datasets.load_reference("nope")


def test_series_are_sorted_and_complete():
    series = datasets.reference_series("nginx-web-server")
    assert len(series) == 13
    assert all(s["x"] == sorted(s["x"]) and len(s["x"]) == 7 for s in series)

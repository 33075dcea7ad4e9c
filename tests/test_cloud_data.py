"""The shipped cloud measurements load, cover enough ground, and hostile rows are refused."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from sizing.errors import InputError
from sizing.fitting import cloudtruth
from sizing.fitting.cloudtruth import COLUMNS, load_cloud_measurements

SHIPPED = Path(__file__).resolve().parent.parent / "data" / "cloud" / "measurements.csv"
SOURCES = SHIPPED.with_name("sources.csv")

GOOD = {
    "source_id": "s1",
    "provider": "aws",
    "instance_type": "c7g.large",
    "vcpus": "2",
    "cpu_platform": "graviton3",
    "server": "nginx",
    "workload_class": "small_static",
    "protocol": "http",
    "body_bytes": "1024",
    "connections": "64",
    "threads": "2",
    "client_placement": "separate_vm",
    "container": "no",
    "metric": "rps",
    "value": "50000",
    "repo": "owner/name",
    "commit": "0" * 40,
    "path": "results/x.log#L3",
    "url": "",
    "quote": "Requests/sec: 50000",
}


def write(tmp_path: Path, *rows: dict[str, str]) -> Path:
    p = tmp_path / "m.csv"
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(GOOD), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    p.write_text(buf.getvalue(), encoding="utf-8")
    return p


@pytest.fixture(scope="module")
def shipped():
    return load_cloud_measurements(SHIPPED, include_held_out=True)


def _cells(quote: str) -> list[str]:
    """The cells of a Markdown table line."""
    return [c.strip() for c in quote.strip().strip("|").split("|")]


def test_default_path_is_the_shipped_file():
    assert cloudtruth.DEFAULT_PATH.resolve() == SHIPPED.resolve()


def test_shipped_file_covers_sources_types_platforms_providers(shipped):
    assert shipped["source_id"].nunique() >= 2
    assert shipped["instance_type"].nunique() >= 40
    assert shipped["cpu_platform"].nunique() >= 8
    assert set(shipped["provider"]) == {"aws", "gcp"}
    assert set(shipped["metric"]) >= {"rps", "cpu_us_per_request"}


def test_sources_file_lists_every_source_and_at_least_three(shipped):
    with SOURCES.open(newline="", encoding="utf-8") as fh:
        sources = {r["source_id"]: r for r in csv.DictReader(fh)}
    assert len(sources) >= 3
    assert set(shipped["source_id"]) <= set(sources)
    for sid, row in sources.items():
        assert row["harness"].strip(), sid
        assert row["url"].strip() or row["repo_commit"].strip(), sid


def test_at_least_three_independent_sources_give_absolute_values(shipped):
    with SOURCES.open(newline="", encoding="utf-8") as fh:
        kinds = {r["source_id"]: r["kind"] for r in csv.DictReader(fh)}
    absolute = {s for s in shipped["source_id"].unique() if kinds.get(s) == "absolute"}
    assert len(absolute) >= 3
    for sid in absolute:
        rows = shipped[shipped["source_id"] == sid]
        assert set(rows["provider"]) & {"aws", "gcp"}, sid
        assert (rows["value"] > 0).all(), sid
    # AWS and GCP each from more than one source.
    for provider in ("aws", "gcp"):
        assert shipped[shipped["provider"] == provider]["source_id"].nunique() >= 2, provider


def test_apisix_rows_are_a_labelled_same_vm_proxy_that_the_fit_leaves_out(shipped):
    from sizing.fitting.cloudfit import observations

    ap = shipped[shipped["source_id"] == "apisix-arm-clouds"]
    assert len(ap) == 3
    assert set(ap["server"]) == {"apisix"}
    assert set(ap["client_placement"]) == {"same_vm"}
    assert set(ap["metric"]) == {"rps"}
    assert set(ap["workload_class"]) == {"proxy", "api_gateway"}
    proxy = ap[ap["workload_class"] == "proxy"]
    by_type = dict(zip(proxy["instance_type"], proxy["value"], strict=True))
    assert by_type == {"c7g.large": 23000.0, "t2a-standard-2": 11300.0}
    for quote, value in zip(ap["quote"], ap["value"], strict=True):
        assert f"{int(value):,}" in quote
    assert ap["path"].str.contains(r"\.md#L\d+$").all()
    obs = observations(shipped)
    assert "apisix-arm-clouds" not in set(obs["source_id"])


def test_held_out_sources_stay_out_of_the_default_table_and_the_fit(shipped):
    from sizing.fitting.cloudfit import observations

    with SOURCES.open(newline="", encoding="utf-8") as fh:
        fit = {r["source_id"]: r["fit"] for r in csv.DictReader(fh)}
    held_out = {s for s, f in fit.items() if f == "no"}
    assert {
        "monolake-nginx-proxy",
        "kong-gateway-perf",
        "apisix-arm-clouds",
        "proxy-benchmarks-nginx-rp",
    } <= held_out
    assert {"sparecores-static-web", "aws-ec2-benchmark-nginx"} <= {
        s for s, f in fit.items() if f == "yes"
    }
    default = load_cloud_measurements(SHIPPED)
    assert set(default["source_id"]) == {s for s in shipped["source_id"] if fit[s] == "yes"}
    assert (default["fit"] == "yes").all()
    assert len(shipped) - len(default) == (shipped["fit"] == "no").sum() > 0
    for sid, grp in shipped.groupby("source_id"):
        assert set(grp["fit"]) == {fit[sid]}
    assert not set(observations(default)["source_id"]) & held_out


def test_monolake_rows_are_nginx_as_a_proxy_on_a_vm_with_a_separate_client(shipped):
    rows = shipped[shipped["source_id"] == "monolake-nginx-proxy"]
    assert len(rows) == 16  # 2 runs (commits) x HTTP and HTTPS x 4 bodies
    assert rows.groupby("commit").size().tolist() == [8, 8]
    assert set(rows["instance_type"]) == {"c5a.xlarge"}
    assert set(rows["server"]) == {"nginx"}
    assert set(rows["workload_class"]) == {"proxy"}
    assert set(rows["container"]) == {"no"}
    assert set(rows["client_placement"]) == {"separate_vm"}
    assert set(rows["body_bytes"]) == {128, 3269, 11268, 165854}
    assert sorted(rows["protocol"]) == ["http"] * 8 + ["https"] * 8
    for r in rows.itertuples():
        case, rps = _cells(r.quote)[:2]
        assert case.startswith(f"{r.protocol}-result-4c-nginx-")
        assert float(rps) == r.value
        assert r.path.startswith("benchmark/README.md#L")
    tiny = rows[(rows["body_bytes"] == 128) & (rows["protocol"] == "http")]
    assert sorted(tiny["value"]) == [183684.88, 187973.44]


def test_proxy_benchmarks_rows_are_nginx_proxying_on_an_m5_xlarge_held_out(shipped):
    rows = shipped[shipped["source_id"] == "proxy-benchmarks-nginx-rp"]
    assert len(rows) == 4  # one per published run (commit)
    assert rows["commit"].nunique() == 4
    assert set(rows["instance_type"]) == {"m5.xlarge"}
    assert set(rows["server"]) == {"nginx"}
    assert set(rows["workload_class"]) == {"proxy"}
    assert set(rows["client_placement"]) == {"separate_vm"}
    assert set(rows["fit"]) == {"no"}
    assert set(rows["connections"]) == {250}
    assert rows["threads"].isna().all()
    # The 2019 run used the distribution's package; the later ones the Docker image.
    assert sorted(rows["container"]) == ["no", "yes", "yes", "yes"]
    for r in rows.itertuples():
        assert r.quote == f"Requests/sec: {r.quote.split()[-1]}"
        assert float(r.quote.split()[-1]) == r.value
        assert r.path.startswith("README.md#L")
    assert sorted(rows["value"]) == [29280.0239, 31702.2366, 33506.2571, 36822.95]


def test_kong_rows_are_a_labelled_gateway_in_kubernetes_without_a_connection_count(shipped):
    rows = shipped[shipped["source_id"] == "kong-gateway-perf"]
    assert len(rows) == 40  # 5 releases x 8 cases
    assert set(rows["instance_type"]) == {"c5.4xlarge"}
    assert set(rows["server"]) == {"kong"}
    assert set(rows["protocol"]) == {"https"}
    assert set(rows["container"]) == {"yes"}
    assert rows["connections"].isna().all()
    assert (rows["workload_class"] == "proxy").sum() == 10
    for r in rows.itertuples():
        cells = _cells(r.quote)
        assert float(cells[2]) == r.value
        assert (r.workload_class == "proxy") == (cells[0] == "Kong proxy with no plugins")
    assert rows["path"].nunique() == 40


def test_every_shipped_row_names_its_source(shipped):
    has_repo = (shipped["repo"] != "") & (shipped["commit"] != "") & (shipped["path"] != "")
    assert (has_repo | (shipped["url"] != "")).all()
    assert (shipped["quote"].str.len() > 0).all()


def test_sparecores_cpu_time_rows_match_their_quoted_run(shipped):
    sc = shipped[shipped["metric"] == "cpu_us_per_request"].head(50)
    assert len(sc) == 50
    for quote, value in zip(sc["quote"], sc["value"], strict=True):
        rec = quote.split(",")
        expected = (float(rec[6]) + float(rec[7])) / (int(rec[3]) * 10.0) * 1e6
        assert value == pytest.approx(expected, rel=1e-3)


def test_a_good_row_loads(tmp_path):
    df = load_cloud_measurements(write(tmp_path, GOOD))
    assert list(df.columns[: len(COLUMNS)]) == list(COLUMNS)
    assert df.loc[0, "value"] == 50000.0
    assert df.loc[0, "vcpus"] == 2


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"repo": "", "url": ""}, "repo", "needs its source"),
        ({"commit": ""}, "repo", "needs its source"),
        ({"quote": "  "}, "quote", "must not be empty"),
        ({"value": "2e9"}, "value", "expected a number in [1, 1e+08] requests/s"),
        ({"value": "nan"}, "value", "expected a number"),
        ({"metric": "cpu_us_per_request", "value": "0.01"}, "value", "CPU microseconds"),
        ({"provider": "oracle"}, "provider", "expected one of aws, azure, gcp"),
        ({"workload_class": "video"}, "workload_class", "expected one of"),
        (
            {"server": "haproxy"},
            "server",
            "expected one of nginx, nginx_plus, binserve, apisix, kong",
        ),
        ({"vcpus": "2.5"}, "vcpus", "expected an integer"),
    ],
)
def test_hostile_rows_are_refused_in_one_line(tmp_path, change, field, words):
    p = write(tmp_path, GOOD, GOOD | change)
    with pytest.raises(InputError) as exc:
        load_cloud_measurements(p)
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.startswith(f"{p}:3: field {field!r}")
    assert words in msg


def test_a_formula_in_a_text_field_is_kept_as_data(tmp_path):
    formula = '=HYPERLINK("http://example.invalid","x")'
    df = load_cloud_measurements(
        write(tmp_path, GOOD | {"quote": formula, "instance_type": formula})
    )
    assert df.loc[0, "quote"] == formula
    assert df.loc[0, "instance_type"] == formula


def test_a_control_character_in_a_refused_value_is_escaped(tmp_path):
    p = write(tmp_path, GOOD | {"provider": "aws\x1b[31m"})
    with pytest.raises(InputError) as exc:
        load_cloud_measurements(p)
    assert "\x1b" not in str(exc.value)
    assert "\\x1b" in str(exc.value)


def test_missing_column_and_missing_file(tmp_path):
    p = tmp_path / "m.csv"
    p.write_text("source_id,provider\ns,aws\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"m\.csv:1: missing column\(s\) instance_type"):
        load_cloud_measurements(p)
    with pytest.raises(InputError, match="does not exist"):
        load_cloud_measurements(tmp_path / "absent.csv")


def test_a_short_row_is_refused(tmp_path):
    p = write(tmp_path, GOOD)
    p.write_text(p.read_text(encoding="utf-8") + "s1,aws\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"m\.csv:3: wrong number of fields"):
        load_cloud_measurements(p)


def test_an_oversized_file_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(cloudtruth, "MAX_BYTES", 100)
    with pytest.raises(InputError, match=r"cannot be read: is .* more than"):
        load_cloud_measurements(write(tmp_path, GOOD, GOOD))


def _sources(tmp_path: Path, **change: str) -> Path:
    row = {
        "source_id": "s1",
        "title": "t",
        "publisher": "p",
        "year": "2024",
        "url": "https://example.invalid/",
        "repo_commit": "",
        "kind": "absolute",
        "fit": "yes",
        "harness": "wrk on another VM",
    } | change
    p = tmp_path / "sources.csv"
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(row), lineterminator="\n")
    writer.writeheader()
    writer.writerow(row)
    p.write_text(buf.getvalue(), encoding="utf-8")
    return p


def test_a_source_marked_fit_no_is_held_out_unless_asked(tmp_path):
    _sources(tmp_path, fit="no")
    p = write(tmp_path, GOOD)
    assert load_cloud_measurements(p).empty
    df = load_cloud_measurements(p, include_held_out=True)
    assert df.loc[0, "fit"] == "no"
    _sources(tmp_path, fit="yes")
    assert load_cloud_measurements(p).loc[0, "fit"] == "yes"


def test_a_row_of_a_source_the_sources_file_lacks_is_refused_in_one_line(tmp_path):
    _sources(tmp_path)
    p = write(tmp_path, GOOD, GOOD | {"source_id": "nobody"})
    with pytest.raises(InputError) as exc:
        load_cloud_measurements(p)
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.startswith(f"{p}:3: field 'source_id': 'nobody' is not a source of")


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"fit": "maybe"}, "fit", "expected one of yes, no, got 'maybe'"),
        ({"kind": "guess"}, "kind", "expected one of absolute, ratio"),
        ({"url": "", "repo_commit": ""}, "url", "a source needs a url or a repo_commit"),
        ({"harness": " "}, "harness", "must not be empty"),
        ({"fit": "yes\x1b[31m"}, "fit", "\\x1b"),
        ({"features": "open_file_cache"}, "features", "'open_file_cache' is not a feature"),
        ({"features": "access_log access_log"}, "features", "'access_log' is not a feature named"),
    ],
)
def test_a_bad_sources_file_is_refused_in_one_line(tmp_path, change, field, words):
    src = _sources(tmp_path, **change)
    with pytest.raises(InputError) as exc:
        load_cloud_measurements(write(tmp_path, GOOD))
    msg = str(exc.value)
    assert "\n" not in msg
    assert "\x1b" not in msg
    assert msg.startswith(f"{src}:2: field {field!r}")
    assert words in msg


def test_a_source_names_the_features_its_nginx_ran_with(tmp_path):
    p = write(tmp_path, GOOD)
    assert load_cloud_measurements(p).loc[0, "features"] == ""
    _sources(tmp_path)
    assert load_cloud_measurements(p).loc[0, "features"] == ""
    _sources(tmp_path, features=" open_file_cache_off  access_log ")
    assert load_cloud_measurements(p).loc[0, "features"] == "open_file_cache_off access_log"


def test_an_empty_connection_count_reads_as_none(tmp_path):
    df = load_cloud_measurements(write(tmp_path, GOOD | {"connections": ""}))
    assert df["connections"].isna().all()


def test_the_extractors_write_the_loaders_columns():
    """`data/cloud/extractlib.py` spells the columns out (it runs without the project)."""
    import importlib.util

    from sizing.fitting import cloudtruth
    from sizing.paths import DATA_DIR

    spec = importlib.util.spec_from_file_location(
        "extractlib", DATA_DIR / "cloud" / "extractlib.py"
    )
    assert spec is not None and spec.loader is not None
    lib = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lib)
    assert sorted(lib.HEADER) == sorted([*cloudtruth.COLUMNS, *cloudtruth.OPTIONAL_COLUMNS])

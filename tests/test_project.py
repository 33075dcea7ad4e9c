import json
import re
import tomllib
from pathlib import Path

import pytest
import yaml

from sizing.paths import FITS_PATH

ROOT = Path(__file__).resolve().parent.parent


def _name(req: str) -> str:
    return re.split(r"[<>=!~ \[]", req, maxsplit=1)[0].strip().lower()


def test_environment_yml_lists_the_same_dependencies_as_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = {d.replace(" ", "") for d in env["dependencies"] if isinstance(d, str)}
    conda_names = {_name(d) for d in conda} - {"python", "pip"}
    assert conda_names == {_name(d) for d in project["dependencies"]}
    # Same lower bounds too.
    assert conda >= {d.replace(" ", "") for d in project["dependencies"]}
    # The Python versions agree: requires-python's lower bound, and an upper bound just past
    # the newest version the classifiers name as supported.
    versions = [
        c.rsplit(" :: ", 1)[1]
        for c in project["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    ]
    newest = max(int(v.split(".")[1]) for v in versions)
    assert f"python{project['requires-python']},<3.{newest + 1}" in conda
    assert versions[0] == project["requires-python"].removeprefix(">=")


@pytest.fixture(scope="module")
def fresh(reference_fit):
    """A fresh fit of the reference (computed once per session, `conftest.reference_fit`)."""
    return reference_fit


def test_precomputed_fits_match_a_fresh_fit(fresh):
    stored = json.loads(FITS_PATH.read_text())["series"]
    assert len(stored) == len(fresh) == 13
    for old, new in zip(stored, fresh, strict=True):
        key = (new["metric"], new["protocol"], new["file_size"])
        assert (old["metric"], old["protocol"], old["file_size"]) == key
        assert old["model"] == new["model"], key
        for name, value in new["params"].items():
            assert old["params"][name] == pytest.approx(value, rel=1e-6), (key, name)
        assert old["link_bound"] == new["link_bound"]


def test_reference_fit_quality(fresh):
    mape = {(s["metric"], s["protocol"], s["file_size"]): s["mape_pct"] for s in fresh}
    # Series whose per-CPU efficiency zig-zags (HTTP CPS: 34.3k, 27.2k, 30.8k per CPU at 1, 2,
    # 4 CPUs; 100 KB throughput: 13, 10, 11.3 Gbps per CPU) cannot be fitted within 3% by any
    # curve whose efficiency changes monotonically; every other series is.
    scatter = {("connections_per_s", "http", "0KB"), ("throughput_gbps", "http", "100KB")}
    for key, value in mape.items():
        assert value <= (5.5 if key in scatter else 3.5), (key, value)
    assert sum(v <= 3.0 for v in mape.values()) >= 8
    for s in fresh:
        assert sum(r["selected"] for r in s["comparison"]) == 1


def test_http_cps_is_not_sqrt_shaped(fresh):
    cps = next(s for s in fresh if s["metric"] == "connections_per_s" and s["protocol"] == "http")
    pe = cps["power_exponent"]
    # The exponent's interval contains 0.5 only because it is wide; sqrt(x) itself fits badly.
    assert pe["low"] < 0.5 < pe["high"]
    sqrt_row = next(r for r in cps["comparison"] if r["model"] == "sqrt")
    assert sqrt_row["mape_pct"] > 15
    assert cps["model"] != "sqrt"


def test_hundred_kb_plateau_is_the_test_link(fresh):
    link = {(s["protocol"], s["file_size"]) for s in fresh if s["link_bound"]}
    assert link == {("http", "100KB"), ("https", "100KB")}

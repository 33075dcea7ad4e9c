"""Property-based tests of both command lines' argument handling.

Every generated command line must end with exit code 0, 1 or 2, no traceback, a failure said in
one line on stderr, within a time and memory bound (tests/fuzzworker.py runs each call
in-process in a capped worker). Values come from the edges: float extremes (1e308, 1e-320,
nan, inf, -0), huge integers, odd units, control characters and plain junk.

The examples are derandomized (the same on every run) and few enough for ``make test``; set
``FUZZ_EXAMPLES`` to run more of them locally.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from tests.fuzzworker import Worker, check_clean

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "0")) or None


def fuzz_settings(n: int) -> settings:
    """Derandomized, no per-example deadline (the machine is busy), ``n`` examples."""
    return settings(
        max_examples=EXAMPLES or n,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
        # Shrinking replays a failure many times (minutes on a busy machine, and for the
        # strict xfails on every run); FUZZ_SHRINK=1 asks for the smallest example.
        phases=list(Phase) if os.environ.get("FUZZ_SHRINK") else PHASES_NO_SHRINK,
    )


PHASES_NO_SHRINK = [p for p in Phase if p is not Phase.shrink]


EDGE_NUMBERS = [
    "1e308",
    "1.7976931348623157e308",
    "1e309",
    "1e-320",
    "5e-324",
    "-1e-320",
    "nan",
    "NaN",
    "-nan",
    "inf",
    "-inf",
    "Infinity",
    "-0",
    "-0.0",
    "0",
    "0.0",
    "1",
    "-1",
    "1e28",
    "1e16",
    "9007199254740993",
    "99999999999999999999999999999999",
    "1_000_000",
    "0x10",
    "1e6",
    "2.5",
    "",
    " ",
    "1,5",
    "١٢٣",  # Arabic-Indic digits: float() accepts them
]
UNITS = ["", "ms", "s", "us", "µs", "m", "h", "%", "KB", "KiB", "MB", "GB", "B", "k", "ms ms"]

numbers = st.one_of(
    st.sampled_from(EDGE_NUMBERS),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
)
words = st.one_of(
    numbers,
    st.tuples(numbers, st.sampled_from(UNITS)).map("".join),
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
        max_size=12,
    ),
    st.sampled_from(["-", "--", "--rps", "-h", "aws", "gcp", "x86_64", "arm64", "a,b,,c"]),
)


def _options(table: dict[str, st.SearchStrategy[str] | None]) -> st.SearchStrategy[list[str]]:
    """Some of the options in ``table`` (a flag when its strategy is None), any order."""
    pairs = [
        st.just([name]) if value is None else value.map(lambda v, n=name: [n, v])
        for name, value in table.items()
    ]
    return st.lists(st.one_of(*pairs), max_size=5).map(lambda xs: [w for x in xs for w in x])


SIZING_SHARED: dict[str, st.SearchStrategy[str] | None] = {
    "--rps": words,
    "--sla-p99": words,
    "--headroom": words,
    "--redundancy": words,
    "--protocol": st.sampled_from(["http", "https", "HTTP", "ftp"]),
    "--file-size": words,
    "--scenario": st.sampled_from(["static", "reverse_proxy", "api_gateway", "cps"]),
    "--provider": words,
    "--region": words,
    "--arch": words,
    "--family": words,
    "--confidence": words,
    "--allow-simulated": None,
}


def sizing_argv() -> st.SearchStrategy[list[str]]:
    """A generated ``python -m sizing`` command line (never ``report`` past validation)."""
    rps = st.one_of(numbers, st.just("1e6"))
    recommend = st.tuples(
        st.just(["recommend", "--rps"]),
        rps.map(lambda v: [v]),
        _options(
            {
                **SIZING_SHARED,
                "--max-count": words,
                "--top": words,
                "--format": st.sampled_from(["table", "json", "csv", "xml"]),
            }
        ),
    ).map(lambda t: [w for part in t for w in part])
    # A real fit of the reference table takes about a minute of CPU: the generated lines end
    # with a dataset that is refused or quick, so the options around it are what is fuzzed.
    fit = st.tuples(
        st.just(["fit"]),
        _options(
            {
                "--format": st.sampled_from(["table", "json", "yaml"]),
                "--compare": None,
                "--allow-simulated": None,
            }
        ),
        st.sampled_from(["relative-claims", "nope", "../etc/passwd", "", "/dev/zero"]).map(
            lambda name: ["--reference", name]
        ),
    ).map(lambda t: [w for part in t for w in part])
    reference = st.tuples(
        st.just(["reference"]),
        _options(
            {
                "--list": None,
                "--show": st.one_of(
                    st.sampled_from(
                        ["nginx-web-server", "relative-claims", "x", "/etc/passwd", "..", ""]
                    ),
                    words,
                ),
            }
        ),
    ).map(lambda t: [w for part in t for w in part])
    catalog = st.tuples(
        st.just(["catalog"]),
        _options(
            {
                "--provider": words,
                "--region": words,
                "--arch": words,
                "--family": words,
                "--catalog": st.sampled_from(["/nonexistent.csv", "/dev/null", "/", ""]),
            }
        ),
    ).map(lambda t: [w for part in t for w in part])
    junk = st.lists(words, max_size=6)
    return st.one_of(recommend, fit, reference, catalog, junk)


# Options of `report` that make it run a notebook: their validation is what is fuzzed, so the
# generated lines always carry one bad value (the valid ones would start papermill).
REPORT_BAD: dict[str, st.SearchStrategy[str]] = {
    "--rps": st.sampled_from(["nan", "inf", "-1", "0", "1e309", "x", "-0", ""]),
    "--sla-p99": st.sampled_from(["5", "0ms", "-1ms", "nanms", "infs", "1e400ms", "ms"]),
    "--headroom": st.sampled_from(["1", "100%", "-0.1", "nan", "inf", "x%"]),
    "--top": st.sampled_from(["0", "-1", "1.5", "nan", "1e3"]),
    "--confidence": st.sampled_from(["1", "nan", "-inf", "2", "101%"]),
    "--file-size": st.sampled_from(["-1", "1Ki", "nan", "inf", "1e400", "1.5.2"]),
}


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    w = Worker(tmp_path_factory.mktemp("fuzz-cwd"))
    yield w
    w.close()


def known_open(argv: list[str]) -> str | None:
    """The reason, when ``argv`` belongs to a failure class still open (see `OPEN_CLASSES`).

    Each class has a strict xfail example below: when the class is fixed, that example
    passes, the test fails, and the class is removed here, so the fuzzing covers it again.
    """
    del argv  # no class is open today
    return None


#: Failure classes the fuzzing found that are not fixed yet (owned by other modules).
OPEN_CLASSES: dict[str, str] = {}


@fuzz_settings(120)
@given(argv=sizing_argv())
def test_sizing_cli_never_crashes(worker: Worker, argv: list[str]) -> None:
    assume(known_open(argv) is None)
    check_clean(worker.run("sizing", argv), "python -m sizing")


def test_huge_rps_ends_with_one_line(worker: Worker) -> None:
    check_clean(
        worker.run("sizing", ["recommend", "--rps", "1e28"], timeout_s=20), "python -m sizing"
    )


@fuzz_settings(40)
@given(
    bad=st.sampled_from(sorted(REPORT_BAD)).flatmap(
        lambda name: REPORT_BAD[name].map(lambda v: (name, v))
    ),
    rest=_options({k: v for k, v in SIZING_SHARED.items() if k != "--rps"}),
)
def test_sizing_report_refuses_bad_values_before_running(
    worker: Worker, tmp_path: Path, bad: tuple[str, str], rest: list[str]
) -> None:
    name, value = bad
    out = tmp_path / f"out-{uuid.uuid4().hex}"
    argv = ["report", "--out", str(out), *rest, name, value]
    if name != "--rps":
        argv += ["--rps", "1e6"]
    result = worker.run("sizing", argv)
    check_clean(result, "python -m sizing")
    assert result.code == 2, (argv, result.stderr)
    assert not out.exists(), "nothing is written for refused arguments"


@pytest.mark.parametrize(
    "argv",
    [
        ["recommend", "--rps", "5e-324"],
        ["recommend", "--rps", "1e6", "--redundancy", "99999999999999999999"],
        ["recommend", "--rps", "1e6", "--max-count", "99999999999999999999"],
        ["recommend", "--rps", "1e6", "--top", "99999999999999999999"],
        ["recommend", "--rps", "1e6", "--sla-p99", "1e-320ms"],
        ["recommend", "--rps", "1e6", "--sla-p99", "1e308s"],
        ["recommend", "--rps", "1e6", "--file-size", "1e300"],
        ["recommend", "--rps", "1e6", "--file-size", "99999999999G"],
        ["recommend", "--rps", "1e6", "--headroom", "0.9999999999999999"],
        ["recommend", "--rps", "1e6", "--confidence", "0.9999999999999999"],
        ["recommend", "--rps", "1e6", "--confidence", "0"],
    ],
    ids=lambda argv: " ".join(argv[1:]),
)
def test_sizing_edges_are_answered_or_refused(worker: Worker, argv: list[str]) -> None:
    check_clean(worker.run("sizing", argv), "python -m sizing")


RUNNERS_OPTIONS: dict[str, st.SearchStrategy[str] | None] = {
    "--vcpus": st.one_of(words, st.sampled_from(["1", "1,2", "0", "-1", "1,,2", "99999999"])),
    "--duration": words,
    "--warmup": words,
    "--cooldown": words,
    "--timeout": words,
    "--sla-p99": words,
    "--max-error-rate": words,
    "--file-size": words,
    "--upstreams": words,
    "--seed": words,
    "--sim-lambda": words,
    "--sim-sigma": words,
    "--sim-kappa": words,
    "--label": words,
    "--scenario": st.sampled_from(["static", "cps", "reverse_proxy", "throughput", "x"]),
    "--protocol": st.sampled_from(["http", "https", "h3"]),
    "--resume": st.sampled_from(["nope", "../..", "", "x" * 300]),
    "--client": st.sampled_from(["local", "netns:", "root@", ":22", "a b"]),
    "--inventory": st.one_of(words, st.sampled_from(["/dev/null", "/", "/etc/hostname"])),
    "--gzip": None,
}
SWEEP_ONLY: dict[str, st.SearchStrategy[str] | None] = {
    "--threads": st.one_of(words, st.sampled_from(["1", "0", "1,2", "100000"])),
    "--connections": st.one_of(words, st.sampled_from(["1", "16", "0", "10000000"])),
}
SEARCH_ONLY: dict[str, st.SearchStrategy[str] | None] = {
    "--strategy": st.sampled_from(["adaptive", "grid", "rate", "x"]),
    "--confirm": words,
    "--confirm-duration": words,
    "--start-connections": words,
    "--max-connections": words,
    "--start-rate": words,
}


def runners_argv(out: str) -> st.SearchStrategy[list[str]]:
    """A ``python -m runners sweep|search`` line; the server is always the simulator.

    The generated options come first, the fixed ones last, so the simulator and the output
    folder always hold (argparse keeps the last value of an option).
    """
    fixed = ["--server", "sim", "--out", out, "--quiet", "--duration", "1s"]

    def line(command: str, table: dict[str, st.SearchStrategy[str] | None]):
        # `--duration 1s` keeps a simulated sweep short; the generated one is checked alone.
        return _options(table).map(
            lambda opts: (
                [command, *opts, *fixed]
                if "--duration" not in opts
                else [command, *opts, "--server", "sim", "--out", out, "--quiet"]
            )
        )

    return st.one_of(
        line("sweep", {**RUNNERS_OPTIONS, **SWEEP_ONLY}),
        line("search", {**RUNNERS_OPTIONS, **SEARCH_ONLY}),
    )


@fuzz_settings(60)
@given(data=st.data())
def test_runners_cli_never_crashes(worker: Worker, tmp_path: Path, data: st.DataObject) -> None:
    argv = data.draw(runners_argv(str(tmp_path / "runs")))
    check_clean(worker.run("runners", argv, timeout_s=120), "python -m runners")

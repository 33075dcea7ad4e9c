"""Hostile input the fuzz tests did not reach: each is one line on stderr and an exit code.

Every case runs the command line in-process (`sizing.cli.main.main`, `runners.cli.main.main`); the
interrupt during start-up runs ``python -m sizing`` as a child.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from runners.cli.main import main as runners_main
from sizing.cli.main import main as sizing_main
from trialtable.files import FileRefused, read_bounded
from trialtable.read import RANGES, read_rows
from trialtable.values import (
    MAX_DURATION_MS,
    MAX_SIZE_BYTES,
    float_between,
    int_between,
    parse_duration_ms,
    parse_fraction,
    parse_int_list,
    parse_rps,
    parse_seconds,
    parse_size,
)

ROOT = Path(__file__).resolve().parents[1]
HUGE = "1" + "0" * 400
HUGER = "1" + "0" * 5000  # past int()'s digit limit


def call(main, argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse refusals
        return int(exc.code or 0)


def one_line(err: str, prog: str) -> str:
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(prog), err
    return lines[0]


def sizing(capfd, *argv: str) -> tuple[int, str, str]:
    code = call(sizing_main, list(argv))
    out, err = capfd.readouterr()
    return code, out, err


def runners(capfd, *argv: str) -> tuple[int, str, str]:
    code = call(runners_main, list(argv))
    out, err = capfd.readouterr()
    return code, out, err


# --------------------------------------------------------------------------------- A: solver output


def test_mixed_fleet_json_and_csv_are_not_mixed_with_solver_output(capfd):
    argv = ["recommend", "--rps", "1e11", "--mix", "3", "--zones", "3"]
    code, out, err = sizing(capfd, *argv, "--format", "json", "--top", "2")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["options"]
    code, out, err = sizing(capfd, *argv, "--format", "csv", "--top", "2")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows and out.startswith("provider,")
    assert "Highs" not in out


# ---------------------------------------------------------------------------- B, C: SLA, confidence


@pytest.mark.parametrize("command", ["recommend", "plan-measurements"])
@pytest.mark.parametrize("sla", ["1e15s", "1e13ms", f"{HUGE}ms", "2e9s"])
def test_an_sla_beyond_the_bound_is_refused(capfd, command, sla):
    code, out, err = sizing(capfd, command, "--rps", "1e6", "--sla-p99", sla)
    assert code == 2 and out == ""
    assert "at most 1e+09s" in one_line(err, f"python -m sizing {command}")


def test_the_longest_sla_accepted_is_answered(capfd):
    code, out, err = sizing(
        capfd, "recommend", "--rps", "1e6", "--sla-p99", "1e9s", "--format", "json", "--top", "1"
    )
    assert code == 0, err
    assert json.loads(out)["options"]


def test_p99_bisection_never_divides_by_zero():
    from sizing.model.capacity import sla_utilization

    assert 0.99 < sla_utilization(1e5, MAX_DURATION_MS) <= 1.0
    assert 0.99 < sla_utilization(1e5, 1e300) <= 1.0


@pytest.mark.parametrize("value", ["1e-17", "0", "1", "0.9999999999", "nan", "-0.5", "100%"])
def test_confidence_outside_its_range_is_refused(capfd, value):
    code, out, err = sizing(capfd, "recommend", "--rps", "1M", "--confidence", value)
    assert code == 2 and out == ""
    line = one_line(err, "python -m sizing recommend")
    assert "--confidence" in line and "[1e-06, 0.999999]" in line


@pytest.mark.parametrize("value", ["1e-6", "0.999999", "99%"])
def test_confidence_at_its_bounds_is_answered(capfd, value):
    code, _out, err = sizing(
        capfd, "recommend", "--rps", "1M", "--confidence", value, "--format", "json", "--top", "1"
    )
    assert code == 0, err


# --------------------------------------------------------------------------------------- D: parsers


@pytest.mark.parametrize(
    "parse",
    [
        parse_rps,
        parse_duration_ms,
        parse_size,
        parse_fraction,
        parse_int_list,
        parse_seconds,
        int_between(0, 10),
        float_between(0.0, 1.0),
    ],
    ids=lambda f: getattr(f, "__name__", "parse"),
)
@pytest.mark.parametrize(
    "word",
    [HUGE, HUGER, "1e309", "inf", "-inf", "nan", f"{HUGE}ms", f"{HUGE}s", f"{HUGE}KB", "-5"],
)
def test_every_value_parser_refuses_extremes_with_its_own_error(parse, word):
    import argparse

    try:
        value = parse(word)
    except argparse.ArgumentTypeError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    # What a parser accepts is a finite value within its bounds.
    values = value if isinstance(value, tuple) else (value,)
    assert all(abs(v) < 1e300 for v in values), (word, value)


def test_size_bound_is_the_trial_tables():
    assert MAX_SIZE_BYTES == RANGES["file_bytes"][1]
    assert parse_size("8388608GB") == MAX_SIZE_BYTES
    with pytest.raises(Exception, match="at most"):
        parse_size("8388609GB")


@pytest.mark.parametrize("size", [HUGE, f"{HUGE}KB", "8388609GB", f"1KB:0.5,{HUGE}:0.5"])
def test_huge_file_size_is_refused_by_both_command_lines(capfd, tmp_path, size):
    code, out, err = sizing(capfd, "recommend", "--rps", "1M", "--file-size", size)
    assert code == 2 and out == ""
    assert "--file-size" in one_line(err, "python -m sizing recommend")
    if ":" in size:
        return
    code, out, err = runners(
        capfd, "sweep", "--server", "sim", "--file-size", size, "--out", str(tmp_path), "--quiet"
    )
    assert code == 2 and out == ""
    assert "--file-size" in one_line(err, "python -m runners sweep")
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--residual-sd", "-5"], "residual sd"),
        (["--residual-sd", "1e309"], "residual sd"),
        (["--seed", HUGER], "--seed"),
    ],
)
def test_plan_measurements_numbers(capfd, args, fragment):
    code, out, err = sizing(capfd, "plan-measurements", "--rps", "1M", *args)
    assert code == 2 and out == ""
    assert fragment in one_line(err, "python -m sizing plan-measurements")


# ----------------------------------------------------------------------------------------- E: --out


def test_report_out_that_is_a_file_is_refused_before_work(capfd, tmp_path):
    target = tmp_path / "X"
    target.write_text("keep me")
    code, out, err = sizing(capfd, "report", "--rps", "1e6", "--out", str(target), "--quiet")
    assert code == 2 and out == ""
    assert "exists and is not a folder" in one_line(err, "python -m sizing report")
    assert target.read_text() == "keep me"


@pytest.mark.parametrize("out_dir", ["/proc/x", "/proc/x/y", "/dev/null/x"])
def test_report_out_that_cannot_be_made_is_refused(capfd, out_dir):
    code, out, err = sizing(capfd, "report", "--rps", "1e6", "--out", out_dir, "--quiet")
    assert code == 2 and out == ""
    assert "cannot create the folder" in one_line(err, "python -m sizing report")


def test_precompute_out_that_cannot_be_made_is_refused(capfd):
    code, out, err = sizing(capfd, "precompute", "--out", "/proc/x/fits.json")
    assert code == 2 and out == ""
    assert "cannot create the folder" in one_line(err, "python -m sizing precompute")


# --------------------------------------------------------------------------------- F: bounded reads


@pytest.fixture
def sparse(tmp_path: Path) -> Path:
    path = tmp_path / "sparse"
    with path.open("wb") as fh:
        fh.truncate(5 * 1024**3)  # 5 GB, no block written
    return path


@pytest.mark.parametrize("option", ["--catalog", "--profile"])
@pytest.mark.parametrize("source", ["/dev/zero", "/dev/urandom", "sparse", "folder"])
def test_loaders_refuse_devices_folders_and_huge_files(capfd, tmp_path, sparse, option, source):
    path = {"sparse": str(sparse), "folder": str(tmp_path)}.get(source, source)
    code, out, err = sizing(capfd, "recommend", "--rps", "1M", option, path)
    assert code == 2 and out == ""
    line = one_line(err, "python -m sizing recommend")
    assert path in line
    expected = {
        "sparse": "5120 MB, more than the",
        "folder": "is a folder",
    }.get(source, "is a device, not a regular file")
    assert expected in line


def test_bounded_read_caps_a_pipe(tmp_path):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: writes more than the cap, then exits
        os.close(r)
        try:
            os.write(w, b"x" * 5000)
        finally:
            os._exit(0)
    os.close(w)
    try:
        with pytest.raises(FileRefused, match="more than the 4096 bytes allowed"):
            read_bounded(f"/proc/self/fd/{r}", 4096)
    finally:
        os.close(r)
        os.waitpid(pid, 0)


def test_bounded_read_reads_a_regular_file(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"abc")
    assert read_bounded(path, 3) == b"abc"
    with pytest.raises(FileRefused, match="is 3 bytes, more than the 2 bytes allowed"):
        read_bounded(path, 2)


def test_runners_inventory_and_run_folders_are_bounded(capfd, tmp_path, sparse):
    code, _out, err = runners(
        capfd, "sweep", "--server", "sim", "--inventory", "/dev/zero", "--out", str(tmp_path)
    )
    assert code == 2  # bad input, refused as the command line is parsed
    assert "--inventory: /dev/zero is a device" in one_line(err, "python -m runners")
    run = tmp_path / "run"
    run.mkdir()
    os.symlink(sparse, run / "trials.csv")
    with pytest.raises(Exception, match="symbolic link"):  # a run's own file, never a link
        read_rows(run)
    os.unlink(run / "trials.csv")
    with open(run / "trials.csv", "wb") as fh:
        fh.truncate(os.stat(sparse).st_size)  # sparse: no disk used
    with pytest.raises(Exception, match="more than the 256 MB allowed"):
        read_rows(run)


def test_a_run_on_many_vcpus_reads_back(tmp_path):
    """A row listing 100,000 pinned CPUs (600 kB in one field) is one the reader takes."""
    from trialtable.schema import TRIAL_COLUMNS

    run = tmp_path / "r1"
    run.mkdir()
    row = dict.fromkeys(TRIAL_COLUMNS, "")
    row.update(run_id="r1", server_cpus=",".join(map(str, range(100_000))), vcpus="100000")
    with (run / "trials.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, TRIAL_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerow(row)
    (rows,) = read_rows(run)
    assert rows["vcpus"] == 100_000


# ------------------------------------------------------------------------------- G: Ctrl-C at start


def test_importing_the_package_loads_no_numerics():
    code = (
        "import sys, sizing; "
        "print(sorted(m for m in ('numpy', 'scipy', 'pandas') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_package_names_still_resolve():
    import sizing

    assert callable(sizing.recommend) and callable(sizing.load_catalog)
    assert sizing.Workload.__name__ == "Workload"
    with pytest.raises(AttributeError):
        _ = sizing.no_such_name


@pytest.mark.parametrize("module", ["sizing.cli.main", "trialtable.read"])
def test_ctrl_c_while_the_cli_loads_is_one_line_and_130(module):
    """The interrupt lands while ``python -m sizing`` imports ``module``: no traceback."""
    code = textwrap.dedent(
        f"""
        import runpy, sys

        class Interrupt:
            def find_spec(self, name, path=None, target=None):
                if name == {module!r}:
                    raise KeyboardInterrupt
                return None

        sys.meta_path.insert(0, Interrupt())
        sys.argv = ["sizing", "recommend", "--rps", "1e6"]
        runpy.run_module("sizing", run_name="__main__", alter_sys=True)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert done.returncode == 130, done.stderr
    assert one_line(done.stderr, "python -m sizing") == "python -m sizing: interrupted"


# -------------------------------------------------------------------------------- H: runner options


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--duration", "1e300s"], "at most 1e+09s"),
        (["--duration", "2e9s"], "at most 1e+09s"),
        (["--warmup", "2e9s"], "at most 1e+09s"),
        (["--sla-p99", "1e15s"], "at most 1e+09s"),
        (["--cooldown", f"{HUGE}s"], "at most 1e+09s"),
        (["--sim-lambda", "1e-320"], "from 1 to 1e9"),
        (["--sim-lambda", "1e300"], "from 1 to 1e9"),
        (["--sim-sigma", "1e300"], ">= 0 and <= 1"),
        (["--sim-kappa", "2"], ">= 0 and <= 1"),
        (["--vcpus", "100001"], "vcpus column"),
        (["--connections", "1,2000000"], "expected positive integers up to"),
        (["--file-size", "8388609GB"], "at most"),
    ],
)
def test_runner_options_outside_the_trial_table_are_refused_up_front(
    capfd, tmp_path, args, fragment
):
    code, out, err = runners(
        capfd, "sweep", "--server", "sim", *args, "--out", str(tmp_path), "--quiet"
    )
    assert code == 2 and out == ""
    assert fragment in one_line(err, "python -m runners sweep")
    assert not any(tmp_path.iterdir())


def test_runner_bounds_come_from_the_reader():
    from trialtable.values import within_column

    check = within_column(parse_int_list, "vcpus")
    assert check(str(int(RANGES["vcpus"][1]))) == (int(RANGES["vcpus"][1]),)
    with pytest.raises(Exception, match=r"\[1, 100000\]"):
        check(str(int(RANGES["vcpus"][1]) + 1))
    assert MAX_DURATION_MS == RANGES["sla_p99_ms"][1] == RANGES["duration_s"][1] * 1000


def test_search_start_rate_beyond_a_rows_range_is_refused(capfd, tmp_path):
    code, out, err = runners(
        capfd,
        "search",
        "--server",
        "sim",
        "--strategy",
        "rate",
        "--start-rate",
        "1e300",
        "--out",
        str(tmp_path),
        "--quiet",
    )
    assert code == 2 and out == ""
    assert "--start-rate" in one_line(err, "python -m runners")


# ------------------------------------------------------------------------------------- smaller ones


def test_csv_escapes_control_characters_from_a_catalog(capfd, tmp_path):
    shipped = ROOT / "data" / "catalog" / "instances.csv"
    with shipped.open(newline="") as fh:
        reader = csv.DictReader(fh)
        row = next(reader)
        fields = reader.fieldnames
    assert fields
    row["instance_type"] = "evil\x1b[31m.large"
    row["source"] = "line\rbreak\x07"
    row["price_usd_hour"] = str(float(row["price_usd_hour"]) / 10)  # cheapest: not pruned
    user = tmp_path / "cat.csv"
    with user.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fields)
        writer.writeheader()
        writer.writerow(row)
    code, out, err = sizing(
        capfd,
        "recommend",
        "--rps",
        "1000",
        "--catalog",
        str(user),
        "--region",
        row["region"],
        "--family",
        row["family"],
        "--format",
        "csv",
    )
    assert code == 0, err  # the catalog takes such a name: it is data
    assert "\x1b" not in out and "\r" not in out and "\x07" not in out
    assert "evil\\x1b[31m.large" in out


def test_report_parameter_messages(capfd, tmp_path):
    from sizing.errors import InputError
    from sizing.report.execute import coerce_parameters

    with pytest.raises(InputError, match="parameter top: 'abc' is not an integer"):
        coerce_parameters("sizing_report", {"top": "abc"})
    with pytest.raises(InputError, match="parameter rps: '-5' is not a positive finite"):
        coerce_parameters("sizing_report", {"rps": "-5"})
    with pytest.raises(InputError, match="parameter headroom: 'x' is not a number"):
        coerce_parameters("sizing_report", {"headroom": "x"})


@pytest.mark.parametrize("opt", ["--sim-lambda", "--sim-sigma"])
def test_negative_number_messages_say_what_is_expected(capfd, tmp_path, opt):
    code, _out, err = runners(
        capfd, "sweep", "--server", "sim", f"{opt}=-5", "--out", str(tmp_path), "--quiet"
    )
    assert code == 2
    line = one_line(err, "python -m runners sweep")
    assert "'-5'" in line and "expected" in line and "is not a float" not in line


# ------------------------------------------------------- report's files up front, empty paths, fit


def _catalog_with_a_malformed_row(tmp_path: Path) -> Path:
    with (ROOT / "data" / "catalog" / "instances.csv").open(newline="") as f:
        reader = csv.DictReader(f)
        row = next(reader)
        fields = list(reader.fieldnames or [])
    row["vcpus"] = "many"
    path = tmp_path / "malformed.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerow(row)
    return path


@pytest.mark.parametrize("case", ["missing catalog", "malformed catalog", "bad profile"])
def test_report_refuses_a_bad_catalog_or_profile_as_recommend_does_and_writes_nothing(
    capfd, tmp_path, case
):
    if case == "missing catalog":
        option = ["--catalog", str(tmp_path / "missing.csv")]
    elif case == "malformed catalog":
        option = ["--catalog", str(_catalog_with_a_malformed_row(tmp_path))]
    else:
        profile = tmp_path / "profile.json"
        profile.write_text("{}")
        option = ["--profile", str(profile)]
    code, _out, err = sizing(capfd, "recommend", "--rps", "1e6", *option)
    assert code == 2
    expected = one_line(err, "python -m sizing recommend: error: ")
    out_dir = tmp_path / "report"
    code, out, err = sizing(
        capfd, "report", "--rps", "1e6", *option, "--out", str(out_dir), "--quiet"
    )
    assert code == 2 and out == ""
    line = one_line(err, "python -m sizing report: error: ")
    assert line.split(": error: ", 1)[1] == expected.split(": error: ", 1)[1]
    assert not out_dir.exists()  # refused before --out is made, let alone the notebook run


SIZING_PATHS = [
    ("recommend", "--rps", "1e6", "--catalog"),
    ("recommend", "--rps", "1e6", "--runs"),
    ("recommend", "--rps", "1e6", "--profile"),
    ("report", "--rps", "1e6", "--out"),
    ("report", "--rps", "1e6", "--out", "r", "--catalog"),
    ("report", "--rps", "1e6", "--out", "r", "--runs"),
    ("report", "--rps", "1e6", "--out", "r", "--profile"),
    ("fit", "--runs"),
    ("fit", "--profile"),
    ("catalog", "--catalog"),
    ("catalog", "build", "--out"),
    ("catalog", "build", "--out", "c.csv", "--aws-dir"),
    ("precompute", "--out"),
    ("plan-measurements", "--rps", "1e6", "--catalog"),
]
RUNNERS_PATHS = [
    ("sweep", "--server", "sim", "--out"),
    ("sweep", "--server", "sim", "--out", "o", "--inventory"),
    ("search", "--server", "sim", "--out", "o", "--wrk2"),
    ("calibrate", "--out"),
    ("cleanup", "--all", "--out"),
    ("facts", "--ssh-config"),
]


@pytest.mark.parametrize("empty", ["", "  "])
@pytest.mark.parametrize(
    "main, argv",
    [(sizing, a) for a in SIZING_PATHS] + [(runners, a) for a in RUNNERS_PATHS],
    ids=lambda v: " ".join(v) if isinstance(v, tuple) else v.__name__,
)
def test_an_empty_path_is_refused_by_every_path_option(
    capfd, tmp_path, monkeypatch, main, argv, empty
):
    monkeypatch.chdir(tmp_path)  # where an empty path would read or write
    code, out, err = main(capfd, *argv, empty)
    assert code == 2 and out == ""
    prog = "python -m sizing" if main is sizing else "python -m runners"
    line = one_line(err, f"{prog} {argv[0]}: error: argument {argv[-1]}: ")
    assert "empty path" in line
    assert not any(tmp_path.iterdir())


def test_every_path_option_of_both_command_lines_refuses_an_empty_path():
    from runners.cli.main import build_parser as runners_parser
    from sizing.cli.main import build_parser as sizing_parser
    from trialtable.values import parse_path

    def path_options(parser, where):
        for action in parser._actions:
            if isinstance(action.choices, dict):  # subcommands
                for name, sub in action.choices.items():
                    yield from path_options(sub, f"{where} {name}")
            elif action.metavar in ("FILE", "DIR", "PATH", "CSV"):
                yield f"{where} {action.option_strings[0]}", action.type

    options = [
        *path_options(sizing_parser(), "sizing"),
        *path_options(runners_parser(), "runners"),
    ]
    assert len(options) > 20
    # Every one is a typed path (`trialtable.pathargs`), which refuses an empty path as
    # parse_path does (tests/test_path_options.py plants the hostile ones).
    assert [name for name, kind in options if getattr(kind, "path_kind", None) is None] == []
    for _name, kind in options:
        with pytest.raises(argparse.ArgumentTypeError, match="empty path"):
            kind("")
    with pytest.raises(argparse.ArgumentTypeError, match="empty path"):
        parse_path(" ")


def test_fit_of_run_folders_without_trials_is_one_line_and_exit_1(capfd, tmp_path):
    argv = ["sweep", "--server", "sim", "--vcpus", "1,2", "--connections", "16", "--quiet"]
    code, _out, err = runners(capfd, *argv, "--out", str(tmp_path))
    assert code == 0, err
    (run,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    trials = run / "trials.csv"
    trials.write_text(trials.read_text().splitlines()[0] + "\n")
    for fmt in ("table", "json"):
        code, out, err = sizing(capfd, "fit", "--runs", str(run), "--format", fmt)
        assert code == 1 and out == ""
        line = one_line(err, "python -m sizing fit: ")
        assert "hold no trials to fit" in line and str(run) in line
    # recommend, given the same folder, also answers exit 1 rather than a table
    code, out, err = sizing(capfd, "recommend", "--rps", "1e6", "--runs", str(run))
    assert code == 1 and out == ""
    one_line(err, "python -m sizing recommend: ")

"""Many clients in one flag: the hosts file, shares of a rate, progress per client, lost clients.

The real runs drive clients in network namespaces this test makes (`tests.netns`) and over
SSH to a test sshd on 127.0.0.1 (`tests.sshd`).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from runners import loadgen
from runners.clients import (
    MAX_CLIENTS,
    ClientList,
    check_offsets,
    client_lines,
    parse_clients,
    per_client,
    shares,
)
from runners.errors import BadHosts
from runners.window import Window
from tests import netns
from tests.conftest import runners_cli
from tests.sshd import free_port, start_sshd

FAST = {"duration_s": 1, "warmup_s": 0, "cooldown_s": 0.0}


def _file(tmp_path: Path, text: str | bytes) -> str:
    path = tmp_path / "hosts.txt"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return f"@{path}"


def test_a_hosts_file_with_comments_and_weights(tmp_path):
    got = parse_clients(_file(tmp_path, "# clients\nnetns:a 2  # the big one\n\nu@h:2222 1\n"))
    assert got == ClientList(("netns:a", "u@h:2222"), (2.0, 1.0))
    assert parse_clients("netns:a,netns:b") == ClientList(("netns:a", "netns:b"))
    assert parse_clients(_file(tmp_path, "netns:a 3\nnetns:b 3\n")).weights == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("netns:a\nnetns:b\nnetns:a\n", "line 3: client netns:a is listed twice (first on line 1)"),
        ("h:22\nh:22 2\n", "client h:22 is listed twice"),
        ("netns:a 0\n", "weight '0' is not a number above 0"),
        ("netns:a nan\n", "weight 'nan'"),
        ("netns:a inf\n", "weight 'inf'"),
        ("netns:a -1\n", "weight '-1'"),
        ("netns:a 1 x\n", "is not 'HOST [WEIGHT]'"),
        ("a b@c@d\n", "weight 'b@c@d'"),
        ("netns:bad/name\n", "is not 'local', 'netns:NAME'"),
        ("# nobody\n\n", "names no client host"),
        (b"\xff\xfe\n", "is not UTF-8 text"),
        ("".join(f"netns:c{i}\n" for i in range(MAX_CLIENTS + 1)), "at most 64"),
    ],
)
def test_a_bad_hosts_file_is_refused(tmp_path, text, message):
    with pytest.raises(BadHosts, match="hosts file") as err:
        parse_clients(_file(tmp_path, text))
    assert message in str(err.value)


def test_the_hosts_file_docs_measure_shows_reads_as_it_says(tmp_path):
    page = (Path(__file__).parents[1] / "docs" / "measure.md").read_text()
    block = page.split("```text\n# the load machines\n", 1)[1].split("```", 1)[0]
    got = parse_clients(_file(tmp_path, block))
    assert got == ClientList(("ops@load1", "ops@load2", "ops@load3:2222"), (1.0, 1.0, 2.0))


def test_an_unreadable_hosts_file_is_refused(tmp_path):
    with pytest.raises(BadHosts, match="cannot read hosts file"):
        parse_clients(f"@{tmp_path}/none.txt")
    with pytest.raises(BadHosts, match="--clients: client netns:a is listed twice"):
        parse_clients("netns:a,netns:a")


def test_shares_follow_the_weights():
    assert shares(900.0, (2.0, 1.0), 2) == [600.0, 300.0]
    assert shares(900.0, (), 3) == [300.0, 300.0, 300.0]
    assert shares(None, (2.0, 1.0), 2) == [None, None]


def test_a_clock_further_off_than_the_trial_is_refused():
    check_offsets({"a": 0.01, "b": -9.0}, 10)
    with pytest.raises(BadHosts, match=r"b's clock is -30.0 s off, more than the 10 s trial"):
        check_offsets({"a": 0.01, "b": -30.0, "c": 12.0}, 10)


def test_each_client_has_a_progress_line():
    ws = [
        Window("a", 0.001, 0.0, 100.002, 102.01, 590.0, 600.0),
        Window("b", -0.002, 0.0, 102.0, 104.0, 200.0, 300.0),
        Window("c", 0.0, 0.0, float("nan"), float("nan"), 0.0),
    ]
    lines = client_lines(ws, {"a": 1.234, "b": 9.0}, 100.0)
    assert lines[0] == (
        "  client a: 590 of 600 rps, p99 1.23 ms, window +0.002..+2.010 s, clock +0.001 s"
    )
    assert "client b: 200 of 300 rps" in lines[1] and "window +2.000..+4.000 s" in lines[1]
    assert "client c: 0 rps, p99 nan ms, window not stamped" in lines[2]


def test_a_pair_is_invalid_when_a_client_was_lost_in_it_or_its_sides_ran_on_other_clients():
    from types import SimpleNamespace

    from runners.interleave import pair_problem

    lost = {"trial_id": "A-0002", "host": "h:22", "reason": "client h:22 lost in the trial: x"}
    runs = [SimpleNamespace(meta={"lost_clients": [lost]}), SimpleNamespace(meta={})]
    rows = [
        {"trial_id": "A-0001", "client_hosts": "local h:22"},
        {"trial_id": "B-0001", "client_hosts": "local h:22"},
    ]
    assert pair_problem(rows, runs) == ""
    rows[0]["trial_id"] = "A-0002"
    assert pair_problem(rows, runs) == "client h:22 lost in the trial: x (trial A-0002)"
    rows[0]["trial_id"] = "A-0003"
    rows[1]["client_hosts"] = "local"
    assert pair_problem(rows, runs) == "its trials ran on different clients (local h:22 / local)"


def test_a_histogram_encoded_in_a_clients_thread_is_stored_byte_for_byte_as_a_plain_one(tmp_path):
    from trialtable.folder import RunFolder, encode_histogram

    pairs = [(95, 2), (100, 3), (4_000_000, 1)]
    hosts = ("netns:a", 'ops@h\u00e9"x')
    lines = []
    for name, value in (("plain", pairs), ("encoded", encode_histogram(pairs))):
        folder = RunFolder.create(tmp_path, {"run_id": name, "simulated": False})
        try:
            row = {"trial_id": "t-\u00e91", "simulated": False}
            folder.append(row, dict.fromkeys(hosts, value))
        finally:
            folder.close()
        lines.append(folder.histograms_path.read_bytes())
    assert lines[0] == lines[1]
    assert json.loads(lines[1])["clients"][hosts[1]] == [list(p) for p in pairs]


def _no_trials(run: Path) -> bool:
    trials = run / "trials.csv"
    return not trials.exists() or len(trials.read_text().splitlines()) <= 1


def _one_line_exit_2(p) -> str:
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    return lines[0]


def _runners_exit_2(capfd, *argv: str) -> str:
    """``python -m runners ARGV`` in this process: exit status 2 and one line; that line."""
    from runners.cli.main import main

    code = main(list(argv))
    _, err = capfd.readouterr()
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_bad_clients_are_one_line_exit_2_and_nothing_is_measured(tmp_path, capfd):
    out = tmp_path / "runs"
    base = ("sweep", "--duration", "1s", "--warmup", "0", "--out", str(out), "--quiet")
    hostile = _file(tmp_path, "local\n\x1b[31mlocal\n")
    line = _runners_exit_2(capfd, *base, "--clients", hostile)
    assert "\x1b" not in line and "is not 'local'" in line
    line = _runners_exit_2(capfd, *base, "--clients", _file(tmp_path, "local\nlocal\n"))
    assert "line 2: client local is listed twice (first on line 1)" in line
    assert not out.exists()
    line = _runners_exit_2(capfd, *base, "--client", "local", "--clients", "local")
    assert "give the clients once" in line
    # A client nobody listens for: refused before any load.
    line = _runners_exit_2(capfd, *base, "--clients", f"local,127.0.0.1:{free_port()}")
    assert "a client cannot be reached: cannot connect to 127.0.0.1:" in line
    assert all(_no_trials(run) for run in out.iterdir())


# -- real clients -----------------------------------------------------------------------------


@pytest.fixture
def two_clients():
    try:
        with netns.bridge("ncl", 2, subnet="10.231.11") as made:
            yield made
    except netns.Unavailable as exc:
        pytest.skip(str(exc))


@pytest.mark.slow
def test_clients_from_a_hosts_file_each_shown_in_the_progress(
    tmp_path, two_clients, leaves_no_nginx
):
    a, b = two_clients.client_hosts
    hosts = _file(tmp_path, f"# clients of this test\n{a} 2\n{b}\n")
    p = runners_cli(
        "sweep",
        *("--server", f"netns:{two_clients.server}", "--clients", hosts),
        *("--duration", "1s", "--warmup", "0", "--cooldown", "0", "--connections", "4"),
        *("--sla-p99", "10s", "--out", str(tmp_path / "runs"), "--format", "json"),
    )
    assert p.returncode == 0, p.stderr
    (row,) = json.loads(p.stdout)
    assert row["clients"] == 2 and row["client_hosts"] == f"{a} {b}"
    assert f"  client {a}: " in p.stderr and f"  client {b}: " in p.stderr
    (run,) = (tmp_path / "runs").iterdir()
    meta = json.loads((run / "run.json").read_text())
    assert meta["plan"]["clients"] == [a, b] and meta["plan"]["client_weights"] == [2.0, 1.0]


@pytest.mark.slow
def test_an_open_loop_rate_is_split_by_the_weights(tmp_path, two_clients, leaves_no_nginx):
    from runners.run import open_run
    from runners.sweep import Plan, target_for

    plan = Plan(
        server=f"netns:{two_clients.server}",
        clients=two_clients.client_hosts,
        client_weights=(3.0, 1.0),
        load_generator="h2load",
        connections=(4,),
        sla_p99_ms=10_000.0,
        **FAST,
    )
    plan, run = open_run(plan, tmp_path, None)
    log = io.StringIO()
    try:
        with target_for(plan, run, mode=loadgen.OPEN, log=log) as session:
            row = session.trial(1, 1, 4, rate_rps=400.0)
    finally:
        run.close()
    assert row["rate_rps"] == 400.0 and row["clients"] == 2
    (trial,) = json.loads((run.path / "run.json").read_text())["windows"]
    assert [c["asked_rps"] for c in trial["clients"]] == [300.0, 100.0]
    assert " of 300 rps" in log.getvalue() and " of 100 rps" in log.getvalue()


@pytest.fixture
def sshd(tmp_path_factory):
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


def _kill_sessions(sshd_pid: int) -> None:
    """End the test sshd's per-connection processes (its children): their clients are lost."""
    children = Path(f"/proc/{sshd_pid}/task/{sshd_pid}/children").read_text().split()
    for pid in map(int, children):
        os.kill(pid, signal.SIGKILL)


def _lose_for_good(sshd) -> None:
    """Stop the test sshd itself, then its sessions: its clients are lost and cannot return."""
    children = Path(f"/proc/{sshd.proc.pid}/task/{sshd.proc.pid}/children").read_text().split()
    sshd.stop()
    for pid in map(int, children):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _after_rows(
    out: Path, faults: dict[int, Callable[[], None]], runs: int = 1
) -> Callable[[], None]:
    """Once each of the ``runs`` runs in ``out`` holds N rows, call ``faults[N]``; a stopper."""
    stop = threading.Event()
    left = dict(faults)

    def watch() -> None:
        while left and not stop.wait(0.02):
            trials = list(out.glob("*/trials.csv"))
            counts = [len(t.read_text().splitlines()) - 1 for t in trials]
            rows = min(counts) if len(counts) == runs else 0
            for n in sorted(k for k in left if k <= rows):
                left.pop(n)()

    watcher = threading.Thread(target=watch)
    watcher.start()

    def done() -> None:
        stop.set()
        watcher.join()

    return done


@pytest.mark.slow
def test_a_lost_client_is_named_comes_back_once_and_then_stays_out(
    tmp_path, sshd, leaves_no_nginx, monkeypatch
):
    """Lost in trial 2 (its session killed), back in 3; lost for good in 4 (sshd stopped).

    With two tries a run (`MAX_RETRIES` set to 2 here, 3 by default), trial 5 tries it a
    second time and fails, and trial 6 does not try: it stays out, and the sweep goes on.
    """
    import runners.clients
    from runners.sweep import Access, Plan, run_sweep

    monkeypatch.setattr(runners.clients, "MAX_RETRIES", 2)
    plan = Plan(
        clients=("local", sshd.spec),
        target_address="127.0.0.1",
        connections=(4, 5, 6, 7, 8, 9),
        sla_p99_ms=10_000.0,
        **FAST,
    )
    out, log = tmp_path / "runs", io.StringIO()
    done = _after_rows(
        out, {1: lambda: _kill_sessions(sshd.proc.pid), 3: lambda: _lose_for_good(sshd)}
    )
    try:
        access = Access(ssh_config=str(sshd.client_config(tmp_path)))
        df = run_sweep(plan, out, access=access, progress=log)
    finally:
        done()
    both, alone = f"local {sshd.spec}", "local"
    assert df["client_hosts"].tolist() == [both, alone, both, alone, alone, alone], log.getvalue()
    ids = df["trial_id"].tolist()
    for lost in (1, 3):
        assert f"client {sshd.spec} lost in the trial" in df.iloc[lost]["invalid_reason"]
        assert not df.iloc[lost]["valid"] and df.iloc[lost]["requests"] > 0
    assert "lost" not in str(df.iloc[2]["invalid_reason"])  # back, with its share
    meta = json.loads(next(out.glob("*/run.json")).read_text())
    assert meta["status"] == "complete"
    assert [(e["trial_id"], e["host"]) for e in meta["lost_clients"]] == [
        (ids[1], sshd.spec),
        (ids[3], sshd.spec),
    ]
    tries = meta["client_retries"]
    assert [(e["trial_id"], e["attempt"], e["returned"]) for e in tries] == [
        (ids[2], 1, True),
        (ids[4], 2, False),
    ]
    assert "cannot connect to" in tries[1]["reason"]
    assert [w["trial_id"] for w in meta["windows"]] == ids[:4]  # none with one client
    assert [c["host"] for c in meta["windows"][2]["clients"]] == ["local", sshd.spec]
    text = log.getvalue()
    assert f"{ids[2]}: client {sshd.spec} is back (try 1 of 2)" in text
    assert f"{ids[4]}: client {sshd.spec} did not come back (try 2 of 2)" in text
    assert text.count("did not come back") == 1


@pytest.mark.slow
def test_ab_measures_a_pair_again_when_a_client_is_lost_in_it(tmp_path, sshd, leaves_no_nginx):
    """``runners ab`` with two clients, one over SSH whose sessions are killed after pair 1.

    Pair 2 loses the client on both sides (each side has its own connection): the pair is
    named invalid and measured again, the client back on both sides; every counted pair ran
    on both clients.
    """
    from runners import interleave
    from runners.sweep import Access, Plan

    plan = Plan(
        clients=("local", sshd.spec),
        target_address="127.0.0.1",
        sla_p99_ms=10_000.0,
        **FAST,
    )
    plan_b = interleave.with_directives(plan, ["variables_hash_max_size 1024"])
    settings = interleave.PairSettings(pairs=2, connections=4)
    out, log = tmp_path / "runs", io.StringIO()
    done = _after_rows(out, {1: lambda: _kill_sessions(sshd.proc.pid)}, runs=2)
    try:
        access = Access(ssh_config=str(sshd.client_config(tmp_path)))
        a, b, run_ids = interleave.run_pairs(
            plan, plan_b, settings, str(out), progress=log, access=access
        )
    finally:
        done()
    text = log.getvalue()
    assert len(a) == len(b) == 2 and all(map(math.isfinite, [*a, *b])), text
    assert f"pair 2/2: invalid, client {sshd.spec} lost in the trial" in text
    assert "measured again (1 of 2 re-runs)" in text and "pair 2/2: B/A" in text
    for run_id in run_ids:
        meta = json.loads((out / run_id / "run.json").read_text())
        rows = (out / run_id / "trials.csv").read_text().splitlines()
        assert len(rows) == 1 + 3  # header, pairs 1 and 2, pair 2 again
        ((pair,),) = [meta["invalid_pairs"]]
        assert pair["pair"] == 2 and sshd.spec in pair["reason"]
        lost = [e["trial_id"] for e in meta["lost_clients"]]
        assert lost == [t for t in pair["trial_ids"] if t.startswith(run_id)]
        assert [e["returned"] for e in meta["client_retries"]] == [True]


@pytest.mark.slow
def test_a_clock_off_by_more_than_the_trial_is_refused_before_any_load(tmp_path):
    """A client whose ``date`` runs 100 s ahead (a fake date first on its PATH over SSH)."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "date").write_text(
        '#!/bin/sh\nif [ "$1" = "+%s.%N" ]; then\n'
        "  /bin/date +%s.%N | awk '{ printf \"%.6f\\n\", $1 + 100 }'\n"
        'else exec /bin/date "$@"; fi\n'
    )
    (fake / "date").chmod(0o755)
    server = start_sshd(tmp_path / "sshd", f"SetEnv PATH={fake}:/usr/local/bin:/usr/bin:/bin\n")
    try:
        out = tmp_path / "runs"
        p = runners_cli(
            "sweep",
            *("--clients", f"local,{server.spec}", "--target-address", "127.0.0.1"),
            *("--ssh-config", str(server.client_config(tmp_path))),
            *("--duration", "5s", "--warmup", "0", "--out", str(out), "--quiet"),
        )
    finally:
        server.stop()
    line = _one_line_exit_2(p)
    assert f"{server.spec}'s clock is +100." in line and "more than the 5 s trial" in line
    (run,) = out.iterdir()
    assert _no_trials(run)


# -- the notebook view ------------------------------------------------------------------------

RECORDED = next((Path(__file__).parent / "data" / "clients").glob("*/run.json")).parent


def test_per_client_reads_each_clients_window_rate_and_p99_from_a_run_folder():
    """The run tests/data/clients/record.py recorded: the second client 1.5 s late in trial 2."""
    rows = per_client(RECORDED)
    assert len(rows) == 9 and len({r["host"] for r in rows}) == 3
    late = [r for r in rows if r["start_s"] - r["common_start_s"] > 1.0]
    (lagging,) = late
    assert lagging["trial_id"].endswith("-0002") and "-c1-" in lagging["host"]
    assert (
        not lagging["valid"] and "started 1.5 s after the common start" in lagging["invalid_reason"]
    )
    assert all(r["p50_ms"] <= r["p99_ms"] for r in rows) and rows[0]["common_start_s"] == 0.0


def test_the_clients_figure_draws_each_client_in_rate_and_p99():
    from sizing.report.plots import clients_figure

    fig = clients_figure(per_client(RECORDED))
    names = [t.name for t in fig.data]
    assert len(names) == 6 and len(set(names)) == 3  # one rate and one p99 line per client
    assert len(fig.layout.shapes) == 6  # the trials' common windows, in both panels
    lagging = next(t for t in fig.data if "-c1-" in t.name)
    starts = [x for x in lagging.x[::3]]
    assert starts[1] - starts[0] > 3.0  # its second trial starts 1.5 s into the window

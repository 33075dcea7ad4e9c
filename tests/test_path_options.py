"""Every path option of both command lines declares its kind, and each kind refuses hostiles.

The test walks the parsers of ``python -m sizing`` and ``python -m runners`` (today's options
and any added later), so a new option that takes a path without `trialtable.pathargs.path_arg`
fails here. Then, for every path option, it plants each hostile target its kind must refuse
(a named pipe nobody writes to, a device node, a folder or file in the wrong place, a symbolic
link, a run folder whose ``trials.csv`` is a link to a secret, the command's own input as its
output) and parses a command line naming it, in this process: one line on stderr, exit 2,
before any work, the planted thing and the file a link points to unchanged, nothing of the
secret echoed.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import socket
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from runners.cli.main import build_parser as runners_parser
from sizing.cli.main import build_parser as sizing_parser
from trialtable import pathargs
from trialtable.pathargs import path_kind, walk_actions
from trialtable.values import parse_path

SECRET = "root:x:0:0:SECRET-LINE:/root:/bin/sh\n"

#: Names and metavars of options that take a path (a new one must declare its kind).
_PATHY = re.compile(
    r"(^|[-_])(out|dir|file|path|log|html|catalog|profile|inventory|runs?|history|config|"
    r"table|folder|cache|csv|json|yaml|key|cert)s?($|[-_])",
    re.IGNORECASE,
)
#: Options whose names look like paths but take something else (with what they take).
NOT_PATHS = {
    "--log-format": "an nginx log_format string",
    "--resume": "a run or campaign id (a name in --out, checked as a name)",
    "run_id": "a run id",
    "--allow-unused-runs": "a flag",
    "--allow-simulated": "a flag",
    "--format": "an output format",
    "--cpu-profile": "a profile name",
    "--file-size": "a response size",
    "--tls-key": "a key type (rsa2048, ec256, ...)",
    "--container-path": "the container runtime's log path measured (cri or ctr)",
}


@functools.cache
def _parsers() -> dict[str, argparse.ArgumentParser]:
    return {"sizing": sizing_parser(), "runners": runners_parser()}


def _options() -> list[tuple[str, tuple[str, ...], argparse.Action]]:
    return [(cli, sub, a) for cli, p in _parsers().items() for sub, a in walk_actions(p)]


def _name(action: argparse.Action) -> str:
    return action.option_strings[0] if action.option_strings else action.dest


def test_every_path_option_declares_its_kind():
    missing = []
    for cli, sub, action in _options():
        if path_kind(action) is not None or action.nargs == 0:
            continue
        names = [*action.option_strings, action.dest, str(action.metavar or "")]
        looks = action.type is parse_path or any(_PATHY.search(n) for n in names)
        if looks and _name(action) not in NOT_PATHS:
            missing.append(f"{cli} {' '.join(sub)} {_name(action)}")
    assert not missing, f"path options without a declared kind: {missing}"


def test_the_walk_finds_the_path_options_of_both_command_lines():
    kinds = {(cli, " ".join(sub), _name(a)): path_kind(a) for cli, sub, a in _options()}
    declared = {k: v for k, v in kinds.items() if v}
    assert len(declared) >= 60
    assert declared[("sizing", "workload", "--out")] == pathargs.OUTPUT_FILE
    assert declared[("runners", "compare", "--html")] == pathargs.OUTPUT_FILE
    assert declared[("runners", "compare", "run_a")] == pathargs.RUN_FOLDER
    assert declared[("sizing", "k8s", "--out")] == pathargs.OUTPUT_FILE
    assert set(declared.values()) == set(pathargs.KINDS)


# -- the hostile targets -------------------------------------------------------------------
class Plant:
    """Hostile paths made once in one folder, and the file links point at."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.victim = root / "victim.txt"
        self.victim.write_text(SECRET)
        (root / "access.log").write_text('127.0.0.1 - - [01/Jan/2026:00:00:00 +0000] "GET / "\n')
        self.folder = root / "folder"
        self.folder.mkdir()
        self.fifo = root / "fifo"
        os.mkfifo(self.fifo)
        self.device = root / "full"
        try:
            os.mknod(self.device, stat.S_IFCHR | 0o666, os.makedev(1, 7))
        except OSError:
            self.device = None  # type: ignore[assignment]
        self.socket = socket.socket(socket.AF_UNIX)
        self.socket.bind(str(root / "sock"))
        for name, target in {
            "link-victim": self.victim,
            "link-fifo": self.fifo,
            "link-folder": self.folder,
            "dangling": root / "nowhere",
        }.items():
            (root / name).symlink_to(target)
        if self.device is not None:
            (root / "link-device").symlink_to(self.device)
        self.run = self._run("run", link=False)
        self.linked_run = self._run("linked-run", link=True)
        self.piped_run = root / "piped-run"
        self.piped_run.mkdir()
        os.mkfifo(self.piped_run / "run.json")

    def _run(self, name: str, *, link: bool) -> Path:
        run = self.root / name
        run.mkdir()
        if link:
            (run / "trials.csv").symlink_to(self.victim)
        else:
            (run / "trials.csv").write_text("run_id\n")
        return run

    def snapshot(self) -> dict[str, tuple[int, int]]:
        out = {}
        for dirpath, dirnames, filenames in os.walk(self.root):
            for n in [*dirnames, *filenames]:
                st = os.lstat(os.path.join(dirpath, n))
                out[os.path.join(dirpath, n)] = (st.st_mode, st.st_size)
        return out

    def hostile(self, kind: str) -> dict[str, Path]:
        """Each hostile value an option of ``kind`` must refuse, by a short name."""
        r = self.root
        dev = {} if self.device is None else {"device": self.device}
        if kind == pathargs.INPUT_FILE:
            devl = {} if self.device is None else {"link-device": r / "link-device"}
            return {
                "fifo": self.fifo,
                "folder": self.folder,
                "socket": r / "sock",
                "link-fifo": r / "link-fifo",
                **dev,
                **devl,
            }
        if kind == pathargs.INPUT_FOLDER:
            return {"fifo": self.fifo, "file": self.victim, "link-file": r / "link-victim", **dev}
        if kind == pathargs.RUN_FOLDER:
            return {
                "fifo": self.fifo,
                "file": self.victim,
                "linked-trials": self.linked_run,
                "piped-run-json": self.piped_run,
                **dev,
            }
        if kind == pathargs.OUTPUT_FILE:
            return {
                "fifo": self.fifo,
                "folder": self.folder,
                "link": r / "link-victim",
                "dangling-link": r / "dangling",
                "in-a-file": self.victim / "x",
                **dev,
            }
        if kind == pathargs.OUTPUT_FOLDER:
            return {"fifo": self.fifo, "file": self.victim, "link": r / "link-folder", **dev}
        assert kind == pathargs.PROGRAM
        return {"fifo": self.fifo, "folder": self.folder, **dev}


def _base(cli: str, sub: tuple[str, ...], plant: Plant) -> dict[str, list[str]]:
    """The smallest command line each subcommand parses, as option -> values."""
    log = plant.root / "access.log"
    rps = {"--rps": ["1e6"]}
    table: dict[str, dict[str, list[str]]] = {
        "sizing compare": {**rps, "--baseline": ["x"]},
        "sizing k8s": rps,
        "sizing report": {**rps, "--out": [str(plant.root / "report")]},
        "sizing plan-measurements": rps,
        "sizing workload": {"--from-log": [str(log)]},
        "runners compare": {"run_a": [str(plant.run)], "run_b": [str(plant.run)]},
        "runners ab": {"--ab-directive": ["gzip on;"]},
        "runners cleanup": {"--all": []},
        "runners import": {"--format": ["k6"], "files": [str(log)]},
    }
    return dict(table.get(f"{cli} {' '.join(sub)}", {}))


def _rivals(parser: argparse.ArgumentParser, sub: tuple[str, ...], action: argparse.Action):
    """The options that may not be given with ``action`` (its mutually exclusive group)."""
    for name in sub:
        subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = subs.choices[name]
    name = _name(action)
    return {
        _name(other)
        for group in parser._mutually_exclusive_groups
        if name in {_name(a) for a in group._group_actions}
        for other in group._group_actions
        if _name(other) != name
    }


def _with(cli, sub, action, value, plant) -> dict[str, list[str]]:
    """The base command line of ``sub`` with ``action`` set to ``value`` (rivals dropped)."""
    opts = _base(cli, sub, plant)
    for rival in _rivals(_parsers()[cli], sub, action):
        opts.pop(rival, None)
    opts[_name(action)] = [value]
    return opts


def _argv(sub: tuple[str, ...], opts: dict[str, list[str]], parser: argparse.ArgumentParser):
    positional = [a.dest for _, a in walk_actions(parser) if not a.option_strings]
    argv = [*sub]
    for name in positional:
        argv += opts.pop(name, [])
    for name, values in opts.items():
        argv += [name, *values]
    return argv


def _cases(plant: Plant):
    """(id, cli, argv, expected secret-free refusal) for every path option and hostile."""
    parsers = _parsers()
    for cli, sub, action in _options():
        kind = path_kind(action)
        if kind is None:
            continue
        name = _name(action)
        for what, value in plant.hostile(kind).items():
            opts = _with(cli, sub, action, str(value), plant)
            yield f"{cli} {' '.join(sub)} {name} {what}", cli, _argv(sub, opts, parsers[cli])
        if kind == pathargs.OUTPUT_FILE:
            yield from _own_input_cases(cli, sub, name, plant, parsers[cli])


def _own_input_cases(cli, sub, out_name, plant, parser):
    """The output named as one of the same command's inputs (a file, or a run's trials.csv)."""
    for s, action in walk_actions(parser):
        kind = path_kind(action)
        if s != sub or kind not in (pathargs.INPUT_FILE, pathargs.RUN_FOLDER):
            continue
        if kind == pathargs.INPUT_FILE:
            given, out = plant.victim, plant.victim
        else:
            given, out = plant.run, plant.run / "trials.csv"
        opts = _with(cli, sub, action, str(given), plant)
        opts[out_name] = [str(out)]
        yield (
            f"{cli} {' '.join(sub)} {out_name} own-input {_name(action)}",
            cli,
            _argv(sub, opts, parser),
        )


def _benign(kind: str, plant: Plant) -> str:
    """A value of ``kind`` every command accepts: what makes a refusal the hostile's."""
    r = plant.root
    return str(
        {
            pathargs.INPUT_FILE: r / "access.log",
            pathargs.INPUT_FOLDER: plant.folder,
            pathargs.RUN_FOLDER: plant.run,
            pathargs.OUTPUT_FILE: r / "new.out",
            pathargs.OUTPUT_FOLDER: r / "new-folder",
            pathargs.PROGRAM: "wrk",
        }[kind]
    )


def test_each_command_line_parses_with_benign_paths(tmp_path, capsys):
    """The hostile cases differ from these in one path only: a refusal is that path's."""
    plant = Plant(tmp_path)
    parsers = _parsers()
    for cli, sub, action in _options():
        kind = path_kind(action)
        if kind is None:
            continue
        opts = _with(cli, sub, action, _benign(kind, plant), plant)
        argv = _argv(sub, opts, parsers[cli])
        try:
            parsers[cli].parse_args(argv)
        except SystemExit:
            pytest.fail(f"{argv} does not parse: {capsys.readouterr().err}")


def _refused(parse: Callable[[list[str]], object], argv: list[str], capsys) -> str | None:
    """None when ``argv`` is refused as it should be, else what happened instead."""
    try:
        parse(argv)
    except SystemExit as exc:
        err = capsys.readouterr().err
        lines = [ln for ln in err.splitlines() if ln.strip()]
        if exc.code != 2 or len(lines) != 1 or "error: " not in lines[0]:
            return f"exit {exc.code}: {err!r}"
        if "SECRET" in err or "Traceback" in err:
            return f"echoed: {err!r}"
        return None
    capsys.readouterr()
    return "accepted"


def test_every_path_option_refuses_every_hostile_target(tmp_path, capsys):
    plant = Plant(tmp_path)
    before = plant.snapshot()
    parsers = _parsers()
    failures = []
    count = 0
    for case, cli, argv in _cases(plant):
        count += 1
        problem = _refused(parsers[cli].parse_args, argv, capsys)
        if problem:
            failures.append(f"{case}: {problem}")
    assert count >= 300, count
    print(f"{count} hostile cases planted")
    assert not failures, f"{len(failures)} of {count} hostile cases not refused:\n" + "\n".join(
        failures
    )
    assert plant.snapshot() == before  # nothing written, replaced or made
    assert plant.victim.read_text() == SECRET


def test_the_command_lines_refuse_before_any_work(tmp_path, capsys):
    """Through each program's ``main``: the same refusal, one line, exit 2."""
    from runners.cli.main import main as runners_main
    from sizing.cli.main import main as sizing_main

    plant = Plant(tmp_path)
    log = tmp_path / "a.log"
    log.write_text("x\n")
    with pytest.raises(SystemExit) as exc:
        sizing_main(["workload", "--from-log", str(log), "--out", str(log)])
    assert exc.value.code == 2 and "one of the inputs" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        runners_main(["compare", str(plant.linked_run), str(plant.run)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "symbolic link" in err and "SECRET" not in err
    with pytest.raises(SystemExit) as exc:
        sizing_main(["recommend", "--rps", "1e6", "--catalog", str(plant.fifo)])
    assert exc.value.code == 2 and "named pipe" in capsys.readouterr().err


def test_an_anonymous_pipe_is_still_an_input(tmp_path):
    """``--catalog <(command)``: a pipe reached through /dev/fd is read, not refused."""
    r, w = os.pipe()
    try:
        assert pathargs.input_file_problem(f"/dev/fd/{r}") is None
        assert pathargs.input_file_problem(f"/proc/self/fd/{r}") is None
    finally:
        os.close(r)
        os.close(w)

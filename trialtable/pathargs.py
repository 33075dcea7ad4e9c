"""Every path a command line takes, typed by what the command does with it, checked up front.

An option that takes a path declares its kind with `path_arg` (``type=path_arg(INPUT_FILE)``):

- `INPUT_FILE`: a file the command reads (a regular file, or an anonymous pipe such as
  ``<(command)``); a named pipe, a device, a socket or a folder is refused;
- `INPUT_FOLDER`: a folder the command reads files from;
- `RUN_FOLDER`: a run folder (``trials.csv``, ``run.json``): a folder, and none of its state
  files a symbolic link or anything but a regular file;
- `OUTPUT_FILE`: a file the command (re)writes through `trialtable.files.write_atomic`: not a
  symbolic link, device, pipe, socket or folder, and none of the command's inputs;
- `OUTPUT_FOLDER`: a folder the command writes in (made when missing): not a link, and
  not a file, device or pipe where the folder should be;
- `PROGRAM`: a program to run, by name (looked up on ``PATH``) or by path (then a regular file).

`check_namespace` runs each declared check after parsing and before the command starts its
work, so a hostile path is one line and exit 2 at once, never a hang on a named pipe, a write
into a device or over an input. The parsers of both command lines (`trialtable.values.Parser`)
call it; a test walks both and fails for any path option without a declared kind. Nothing of a
file's content is read here (a named pipe is never opened: opening one can block).
"""

from __future__ import annotations

import argparse
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from trialtable.files import file_kind

INPUT_FILE = "input file"
INPUT_FOLDER = "input folder"
RUN_FOLDER = "run folder"
OUTPUT_FILE = "output file"
OUTPUT_FOLDER = "output folder"
PROGRAM = "program"
KINDS = (INPUT_FILE, INPUT_FOLDER, RUN_FOLDER, OUTPUT_FILE, OUTPUT_FOLDER, PROGRAM)

#: The files of a run folder a reader trusts as the tool's own (`trialtable.folder`).
RUN_STATE_FILES = ("trials.csv", "run.json")


def path_arg(kind: str) -> Callable[[str], str]:
    """An argparse ``type`` for a path of ``kind`` (one of `KINDS`); blank paths refused.

    The returned function carries ``path_kind``; `check_namespace` checks the file system.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown path kind {kind!r}; expected one of {KINDS}")

    def parse(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(
                f"{text!r} is an empty path; expected a file or folder name"
            )
        if "\0" in text:
            raise argparse.ArgumentTypeError("a path cannot hold a NUL character")
        return text

    parse.path_kind = kind  # type: ignore[attr-defined]
    parse.__name__ = kind.replace(" ", "_")
    return parse


def path_kind(action: argparse.Action) -> str | None:
    """The declared kind of ``action``'s path, or None when it takes no declared path."""
    kind: str | None = getattr(action.type, "path_kind", None)
    return kind


def _what(mode: int) -> str:
    return file_kind(mode, pipe="a named pipe")


def _stat(path: str, follow: bool = True) -> os.stat_result | None:
    try:
        return os.stat(path) if follow else os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        return None  # no permission, a loop: the reader says so in its own words


def _anonymous_pipe(path: str) -> bool:
    """Whether ``path`` leads by links to an anonymous pipe (``/dev/fd/N`` of ``<(cmd)``)."""
    p = path
    for _ in range(40):
        try:
            target = os.readlink(p)
        except OSError:
            return False
        if target.startswith("pipe:["):
            return True
        p = os.path.join(os.path.dirname(p), target)
    return False


def input_file_problem(path: str) -> str | None:
    """Why ``path`` cannot be read as an input file, or None (a missing one is the reader's)."""
    st = _stat(path)
    if st is None or stat.S_ISREG(st.st_mode):
        return None
    if stat.S_ISFIFO(st.st_mode):
        if _anonymous_pipe(path):
            return None
        return "is a named pipe, not a regular file (give a file, or <(command))"
    return f"is {_what(st.st_mode)}, not a regular file"


def input_folder_problem(path: str) -> str | None:
    """Why ``path`` cannot be read as a folder, or None (a missing one is the reader's)."""
    st = _stat(path)
    if st is None or stat.S_ISDIR(st.st_mode):
        return None
    return f"is {_what(st.st_mode)}, not a folder"


def run_folder_problem(path: str) -> str | None:
    """Why ``path`` cannot be a run folder: not a folder, or a state file not the tool's."""
    problem = input_folder_problem(path)
    if problem is not None or _stat(path) is None:
        return problem
    for name in RUN_STATE_FILES:
        st = _stat(os.path.join(path, name), follow=False)
        if st is not None and not stat.S_ISREG(st.st_mode):
            return f"has {name} that is {_what(st.st_mode)}, not the tool's own regular file"
    return None


def output_file_problem(path: str, inputs: tuple[str, ...] = ()) -> str | None:
    """Why ``path`` cannot be (re)written, or None; ``inputs`` are the command's own inputs."""
    st = _stat(path, follow=False)
    parent = os.path.dirname(path) or "."
    pst = _stat(parent)
    if pst is not None and not stat.S_ISDIR(pst.st_mode):
        return f"is in {parent}, which is not a folder"
    if st is None:
        return None
    if not stat.S_ISREG(st.st_mode):
        return f"is {_what(st.st_mode)}, not a regular file the command may replace"
    for src in inputs:
        if _same(src, path) or _inside(path, src):
            return f"is one of the inputs ({src}) of the command"
    return None


def _same(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _inside(path: str, folder: str) -> bool:
    """Whether the existing file ``path`` is a file of the input folder ``folder``."""
    fst = _stat(folder)
    return (
        fst is not None
        and stat.S_ISDIR(fst.st_mode)
        and _same(os.path.dirname(path) or ".", folder)
    )


def output_folder_problem(path: str) -> str | None:
    """Why ``path`` cannot be a folder to write in, or None (a missing one is made later)."""
    st = _stat(path, follow=False)
    if st is None or stat.S_ISDIR(st.st_mode):
        return None
    return f"exists and is not a folder (it is {_what(st.st_mode)})"


def program_problem(path: str) -> str | None:
    """Why ``path`` cannot be a program to run, or None (a bare name is looked up on PATH)."""
    if os.sep not in path:
        return None
    st = _stat(path)
    if st is None or stat.S_ISREG(st.st_mode):
        return None
    return f"is {_what(st.st_mode)}, not a program"


def _values(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _values(v)


def check_namespace(parser: argparse.ArgumentParser, namespace: argparse.Namespace) -> None:
    """Check every declared path of ``parser`` in ``namespace``; ``parser.error`` on the first.

    Inputs (files, folders, run folders) are checked first; then every output against them.
    """
    actions = [(a, path_kind(a)) for a in parser._actions]
    declared = [(a, k) for a, k in actions if k is not None and hasattr(namespace, a.dest)]
    inputs = tuple(
        v
        for a, k in declared
        if k in (INPUT_FILE, INPUT_FOLDER, RUN_FOLDER)
        for v in _values(getattr(namespace, a.dest))
    )
    checks: dict[str, Callable[[str], str | None]] = {
        INPUT_FILE: input_file_problem,
        INPUT_FOLDER: input_folder_problem,
        RUN_FOLDER: run_folder_problem,
        OUTPUT_FILE: lambda p: output_file_problem(p, inputs),
        OUTPUT_FOLDER: output_folder_problem,
        PROGRAM: program_problem,
    }
    for action, kind in sorted(declared, key=lambda ak: ak[1] in (OUTPUT_FILE, OUTPUT_FOLDER)):
        for value in _values(getattr(namespace, action.dest)):
            problem = checks[kind](value)
            if problem is not None:
                name = "/".join(action.option_strings) or action.metavar or action.dest
                parser.error(f"argument {name}: {value} {problem}")


def walk_actions(
    parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.Action]]:
    """Every option of ``parser`` and its subcommands, with the subcommand names before it."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen: set[int] = set()
            for name, sub in action.choices.items():
                if id(sub) not in seen:  # an alias names the same parser twice
                    seen.add(id(sub))
                    yield from walk_actions(sub, (*prefix, name))
        else:
            yield prefix, action


def same_path(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether ``a`` and ``b`` name the same existing file."""
    return _same(str(Path(a)), str(Path(b)))

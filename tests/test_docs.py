"""The README and the pages under docs/ run: every sizing command they show is executed.

Each fenced ``sh`` or ``console`` block of ``README.md`` and ``docs/*.md`` is read. Every
``python -m sizing ...`` (or ``.venv/bin/python -m sizing ...``) command in it runs in-process
through `sizing.cli.main.main`, in a temporary folder, and must exit 0. Where a ``console``
block shows output under a ``$ `` command, the shown lines must appear in the real output:
in order, each run of lines between elisions contiguous (a line ``...`` marks an elision; a
line ending in ``...`` matches a line that starts with the rest).

A sizing command is left out only when it matches a rule of `SKIPPED`, which says why;
commands of other programs (the runners, which start nginx and load, ``make``, ``kubectl``,
``pip``, ``papermill``, shell loops) are never run here: `NOT_SIZING` names them.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 250

#: Sizing commands not run, by a text they contain, with the reason. Each rule must still
#: match a command (a rule no page needs any more fails `test_every_skip_rule_is_used`).
SKIPPED: dict[str, str] = {
    "RUN_ID": "names a run folder the reader measured first (tests/test_first_hour.py sizes "
    "from a run it makes)",
    "sizing report": "runs the report notebook through papermill and Chromium, minutes "
    "(tests/test_notebooks.py builds it)",
    "fit --reference": "the reference fit, 20 s on a quiet machine and more on a busy one "
    "(tests/test_project.py checks it against the stored fit)",
    "--from-log": "reads the reader's own access logs (tests/test_accesslog.py parses logs a "
    "real nginx wrote)",
    "--workload wl.json": "needs the workload file that `workload --from-log` writes "
    "(tests/test_workload_recommend.py sizes one)",
    "catalog build": "rebuilds data/catalog from the providers' upstream files, which are not "
    "shipped (tests/test_catalog_build.py)",
}

#: Programs whose commands the pages show but this test never runs, and why.
NOT_SIZING: dict[str, str] = {
    "runners": "python -m runners starts nginx and load, or needs hosts (tests/test_runner*.py, "
    "tests/test_calibrate*.py and the benchmarks run them)",
    "make": "make targets set up the environment or run the whole suite (CI runs make test)",
    "other": "kubectl, pip, papermill, the benchmarks and shell loops",
}


@dataclass(frozen=True)
class Command:
    """One command of a page, with the output lines its block shows (if any)."""

    page: str
    line: int
    argv: tuple[str, ...]
    shown: tuple[str, ...]

    @property
    def text(self) -> str:
        return " ".join(self.argv)


def _blocks(path: Path) -> list[tuple[str, int, list[str]]]:
    """The ``sh`` and ``console`` blocks of a page: (language, first line, lines)."""
    blocks, lang, start, body = [], None, 0, []
    for number, line in enumerate(path.read_text().split("\n"), 1):
        fence = re.match(r"^\s*```(\w*)\s*$", line)
        if fence and lang is None:
            lang, start, body = fence.group(1) or "-", number + 1, []
        elif fence:
            if lang in ("sh", "console"):
                blocks.append((lang, start, body))
            lang = None
        elif lang is not None:
            body.append(line)
    return blocks


def _logical(lines: list[str], start: int) -> list[tuple[int, str]]:
    """Lines joined where a line ends with a backslash, each with its first line's number."""
    out: list[tuple[int, str]] = []
    pending, first = "", 0
    for offset, line in enumerate(lines):
        if not pending:
            first = start + offset
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        out.append((first, pending + line))
        pending = ""
    return out


def _argv(text: str) -> tuple[str, ...]:
    """The command's words, comments and a redirection of its output dropped."""
    try:
        words = shlex.split(text, comments=True)
    except ValueError:  # unbalanced quotes: a shell construct this reader does not follow
        words = text.split()
    if ">" in words:
        words = words[: words.index(">")]
    return tuple(words)


def _commands(path: Path) -> list[Command]:
    commands: list[Command] = []
    page = str(path.relative_to(ROOT))
    for lang, start, body in _blocks(path):
        if lang == "sh":
            for number, text in _logical(body, start):
                if text.strip():
                    commands.append(Command(page, number, _argv(text), ()))
            continue
        current: list = []
        for number, text in _logical(body, start):
            if text.startswith("$ "):
                if current:
                    commands.append(Command(page, current[0], current[1], tuple(current[2])))
                current = [number, _argv(text[2:]), []]
            elif current:
                current[2].append(text.rstrip())
        if current:
            commands.append(Command(page, current[0], current[1], tuple(current[2])))
    return commands


ALL = [c for path in PAGES for c in _commands(path)]


def _is_sizing(command: Command) -> bool:
    argv = command.argv
    return (
        len(argv) >= 3
        and argv[0] in ("python", ".venv/bin/python")
        and argv[1:3] == ("-m", "sizing")
    )


def _skip_reason(command: Command) -> str | None:
    return next((why for text, why in SKIPPED.items() if text in command.text), None)


#: The commands run, each once however many pages show it: argv -> the places that show it.
RUN: dict[tuple[str, ...], list[Command]] = {}
for _c in ALL:
    if _is_sizing(_c) and _skip_reason(_c) is None:
        RUN.setdefault(_c.argv, []).append(_c)


def _trimmed(lines: list[str]) -> list[str]:
    """The lines without the blank lines at either end."""
    kept = [i for i, line in enumerate(lines) if line.strip()]
    return lines[kept[0] : kept[-1] + 1] if kept else []


def _matches(shown: tuple[str, ...], output: str) -> str | None:
    """None when the shown lines appear in the output, else the first line that does not."""
    lines = [line.rstrip() for line in output.split("\n")]
    chunks: list[list[str]] = [[]]
    for line in shown:
        if line.strip() == "...":
            chunks.append([])
        else:
            chunks[-1].append(line)
    chunks = [_trimmed(c) for c in chunks]
    at = 0

    def same(want: str, got: str) -> bool:
        if want.endswith("...") and want.strip() != "...":
            return got.startswith(want[:-3].rstrip())
        return got == want

    for chunk in filter(None, chunks):
        for start in range(at, len(lines) - len(chunk) + 1):
            if all(same(w, g) for w, g in zip(chunk, lines[start:], strict=False)):
                at = start + len(chunk)
                break
        else:
            return chunk[0]
    return None


@pytest.mark.parametrize("argv", RUN, ids=[f"{c[0].page}:{c[0].line}" for c in RUN.values()])
def test_a_sizing_command_of_the_docs_runs(argv, tmp_path, monkeypatch, capsys):
    from sizing.cli.main import main

    monkeypatch.chdir(tmp_path)
    code = main(list(argv[3:]))
    out, err = capsys.readouterr()
    assert code == 0, f"{' '.join(argv)}: exit {code}: {err[-2000:]}"
    for command in RUN[argv]:
        missing = _matches(command.shown, out)
        assert missing is None, (
            f"{command.page}:{command.line}: {command.text}: "
            f"the page shows a line the output lacks: {missing!r}"
        )


def test_the_pages_hold_commands_and_every_skip_rule_is_used():
    sizing = [c for c in ALL if _is_sizing(c)]
    assert len(RUN) >= 20, [c.text for c in RUN]
    unused = [text for text in SKIPPED if not any(text in c.text for c in sizing)]
    assert not unused, f"skip rules no page needs: {unused}"
    # A command that is neither sizing nor one of the programs named in NOT_SIZING is a typo.
    known = ("python", ".venv/bin/python", ".venv/bin/papermill", "make", "kubectl", "for", "done")
    odd = [c.text for c in ALL if c.argv and not c.argv[0].startswith(known) and c.argv[0]]
    assert not odd, odd


def test_shown_output_is_checked_against_the_real_lines():
    output = "a\nb  \nc\nd\ne\n"
    assert _matches(("a", "b", "...", "d"), output) is None
    assert _matches(("a", "c"), output) == "a"  # a run of lines is contiguous
    assert _matches(("d", "...", "a"), output) == "a"  # in order
    assert _matches(("c...",), "cat\n") is None


def test_readme_is_short_and_names_the_two_commands():
    text = (ROOT / "README.md").read_text()
    assert len(text.split("\n")) <= README_MAX_LINES
    assert "make demo" in text and "make test" in text
    for link in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / link).is_file(), link


def test_every_page_is_in_the_site_navigation():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    nav = {next(iter(entry.values())) for entry in config["nav"]}
    assert nav == {p.name for p in (ROOT / "docs").glob("*.md")}


def test_make_docs_builds_the_site_strictly():
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"(?m)^docs:.*\n((?:\t.*\n)+)", makefile)
    assert recipe and "mkdocs build --strict" in recipe.group(1), "make docs"
    dev = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(d.startswith("mkdocs") for d in dev["dev"])


def test_the_site_builds_strictly(tmp_path):
    pytest.importorskip("mkdocs")
    p = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
         "--config-file", str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr[-3000:]
    assert (tmp_path / "site" / "size" / "index.html").is_file()

"""What the subcommands share: progress bars, the output folder check, the catalog rows."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from sizing.errors import InputError

if TYPE_CHECKING:
    from sizing.catalog.load import Instance


def progress_wanted() -> bool:
    """Progress bars go to a terminal, or anywhere when NGINX_SIZING_PROGRESS=1."""
    return sys.stderr.isatty() or os.environ.get("NGINX_SIZING_PROGRESS") == "1"


@contextlib.contextmanager
def progress_bar(desc: str, unit: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar with an ETA on stderr when it is a terminal; ``tick(done, total)``.

    With stdout piped (``fit --reference | less``) the finished bar stays on stderr, so the
    time it took is still there; a terminal that reports no size gets 80 x 24 (tqdm draws
    nothing in a terminal of 0 x 0).
    """
    from tqdm import tqdm

    try:
        width = os.get_terminal_size(sys.stderr.fileno()).columns
    except (OSError, ValueError, AttributeError):
        width = 0
    bar = tqdm(
        desc=desc,
        unit=unit,
        file=sys.stderr,
        disable=not progress_wanted(),
        leave=not sys.stdout.isatty(),
        ncols=None if width > 0 else 80,
        nrows=None if width > 0 else 24,
    )

    def tick(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)
        bar.refresh()  # each step is seconds long: show it now

    try:
        yield tick
    finally:
        bar.close()


def require_out_folder(path: str) -> None:
    """Make the output folder ``--out`` names, or raise `InputError` saying why it cannot be."""
    from trialtable.files import out_folder_problem

    problem = out_folder_problem(path)
    if problem:
        raise InputError(f"--out: {problem}")


def catalog_rows(args: argparse.Namespace) -> list[Instance]:
    """The catalog rows ``catalog list`` filters to (its own flags, not a sizing request)."""
    from sizing.catalog.load import select_instances

    return select_instances(
        args.catalog,
        provider=args.provider,
        region=args.region,
        arch=args.arch,
        family=args.family,
    )

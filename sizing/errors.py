"""Exceptions the CLI turns into one-line messages."""

from __future__ import annotations


class InputError(ValueError):
    """Bad input from the user or a data file; the message names the value and what is expected."""


class Infeasible(RuntimeError):
    """A well-formed request that no option can satisfy."""


class ReportError(RuntimeError):
    """A report notebook cell failed; the message names the cell and its error."""


def printable(text: str) -> str:
    """``text`` as one printable line: newlines, terminal escapes and other controls escaped.

    Messages quote values from the user and from data files; shown this way, a newline or an
    escape sequence in them is seen, never acted on by the terminal.
    """
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)

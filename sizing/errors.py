"""Exceptions the CLI turns into one-line messages."""

from __future__ import annotations

from trialtable.values import printable

__all__ = ["Infeasible", "InputError", "ReportError", "printable"]


class InputError(ValueError):
    """Bad input from the user or a data file; the message names the value and what is expected."""


class Infeasible(RuntimeError):
    """A well-formed request that no option can satisfy."""


class ReportError(RuntimeError):
    """A report notebook cell failed; the message names the cell and its error."""

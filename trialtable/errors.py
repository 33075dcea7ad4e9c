"""Errors of the trial table's files, shared by its readers and the run folder."""

from __future__ import annotations

__all__ = ["ConfError", "RunFolderError"]


class RunFolderError(RuntimeError):
    """A run folder that cannot be used; the message names the folder, the file and why."""


class ConfError(ValueError):
    """An nginx.conf that cannot be read; the message names the file and line and why."""

"""The one exception the runners' command line turns into a one-line message."""

from __future__ import annotations


class RunnerError(RuntimeError):
    """A host, program or trial problem; the message names the host and what to do."""


class BadInput(RunnerError):
    """Input the user gave that cannot be used: a plan, host, run or file (exit code 2)."""


class BadHosts(BadInput):
    """Client hosts a run cannot use, found before any load (bad input: exit status 2)."""

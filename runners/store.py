"""A run folder's trials for the runners: `load_trials`, with their one-line errors.

The folder itself lives in `trialtable.folder` and the reader in `trialtable.read`.
"""

from __future__ import annotations

import os
from typing import Any

from runners.errors import RunnerError
from trialtable.errors import RunFolderError

__all__ = ["load_trials"]


def load_trials(run_dir: str | os.PathLike[str]) -> Any:
    """A run folder's ``trials.csv`` as a pandas DataFrame with typed columns.

    The reader is `trialtable.read.read_trials`, the one the fit and sizing stages use; a
    folder it refuses is a `RunnerError` (one line on the command line).
    """
    from trialtable.read import read_trials

    try:
        return read_trials(run_dir)
    except RunFolderError as exc:
        raise RunnerError(str(exc)) from None

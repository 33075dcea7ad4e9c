"""The run store, as the runners have always imported it: the run folder and its reader.

The folder itself lives in `trialtable.folder` and the reader in `trialtable.read`; this
module keeps the names the runners and their users import.
"""

from __future__ import annotations

import os
from typing import Any

from runners.errors import RunnerError
from runners.trial import trial_row
from trialtable.folder import RunFolder, RunFolderError, new_run_id
from trialtable.schema import TRIAL_COLUMNS

RunStore = RunFolder

__all__ = ["TRIAL_COLUMNS", "RunStore", "load_trials", "new_run_id", "trial_row"]


def load_trials(run_dir: str | os.PathLike[str]) -> Any:
    """A run folder's ``trials.csv`` as a pandas DataFrame with typed columns.

    The reader is `trialtable.read.read_trials`, the one the fit and sizing stages use.
    """
    from trialtable.read import read_trials

    try:
        return read_trials(run_dir)
    except RunFolderError as exc:
        raise RunnerError(str(exc)) from None

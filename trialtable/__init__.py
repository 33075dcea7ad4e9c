"""The contract between ``runners`` and ``sizing``: trial table, run folder, CPU profiles.

Imports neither ``runners`` nor ``sizing``; both import it.

- `trialtable.schema`: the columns (name, type, unit, meaning), vocabularies, shared rules;
- `trialtable.folder`: the run folder (append-only rows, histograms, ``run.json``, lock,
  the record of what a run started on its hosts);
- `trialtable.read`: the typed reader (`read_trials`, `read_rows`);
- `trialtable.values`: command-line values both CLIs parse.
"""

from trialtable.errors import RunFolderError
from trialtable.folder import RunFolder, RunInUse
from trialtable.schema import COLUMNS, TRIAL_COLUMNS, Column

__all__ = ["COLUMNS", "TRIAL_COLUMNS", "Column", "RunFolder", "RunFolderError", "RunInUse"]

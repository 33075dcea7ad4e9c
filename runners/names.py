"""Names the command line offers, defined once for the modules that act on them.

Cheap to import: ``python -m runners --help`` builds every subcommand's options from these
without loading `runners.search`, `runners.interleave` or `runners.compare`.
"""

from __future__ import annotations

#: Where run folders go unless ``--out`` says otherwise.
DEFAULT_OUT = "data/runs"
#: Search strategies (`runners.search`).
STRATEGY_NAMES = ("adaptive", "grid", "rate")
#: What an A/B pair compares (`runners.interleave`): nginx CPU per request, or 1/RPS.
AB_MEASURES = ("cpu", "rps")
#: How an A/B pair's two trials are placed in time: at the same time, or one after the other.
AB_SCHEDULES = ("together", "alternate")
#: The measures that can decide `runners.compare`'s gate.
COMPARE_GATES = ("max-rps", "p99")

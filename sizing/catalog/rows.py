"""What every provider's catalog build shares: the columns, the result and small readers.

A provider module (`sizing.catalog.providers`) builds its rows as dicts of `BUILD_COLUMNS`
(text) into a `BuildResult`; `sizing.catalog.build` merges, writes and validates them.
Runs with the standard library only.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from sizing.errors import InputError
from trialtable.files import MB, read_bounded

#: The columns every catalog row has, in order (``cpu`` and ``source_date`` may be empty).
COLUMNS = (
    "provider",
    "region",
    "instance_type",
    "family",
    "arch",
    "cpu",
    "vcpus",
    "memory_gib",
    "network_gbps",
    "network_burst",
    "price_usd_hour",
    "source",
    "source_date",
)
#: Optional columns: absent or empty means unknown (or, for prices, not published).
OPTIONAL_COLUMNS = (
    "threads_per_core",
    "burstable",
    "network_burst_gbps",
    "spot_usd_hour",
    "commit_1y_usd_hour",
    "commit_3y_usd_hour",
    "cpu_baseline",
    "coremark",
)
#: Every column of a built catalog, in order; `sizing.catalog.load` reads the same names.
BUILD_COLUMNS = COLUMNS + OPTIONAL_COLUMNS
#: Hours in a billing month, as both providers count them [h].
HOURS_PER_MONTH = 730.0
#: Largest upstream file read [B] (the GCP pricing.yml is about 5 MB).
UPSTREAM_MAX_BYTES = 256 * MB


@dataclass
class BuildResult:
    """The built rows (each a dict of `BUILD_COLUMNS` as text), what was left out, egress rows."""

    rows: list[dict[str, str]] = field(default_factory=list)
    excluded: list[tuple[str, str, str]] = field(default_factory=list)
    egress: list[dict[str, str]] = field(default_factory=list)
    inputs: list[Path] = field(default_factory=list)  # the upstream folders and files read
    egress_read: bool = False  # the build priced egress from the files it read (maybe none)

    def exclusion_counts(self) -> dict[str, int]:
        """How many types each reason left out."""
        return dict(Counter(reason for _, _, reason in self.excluded).most_common())


def num(v: float) -> str:
    """Shortest text that reads back as the same float (10 significant digits at most)."""
    return f"{v:.10g}"


def read_upstream(path: Path) -> str:
    """The text of one upstream file, or InputError in one line."""
    try:
        return read_bounded(path, UPSTREAM_MAX_BYTES).decode("utf-8")
    except FileNotFoundError:
        raise InputError(f"upstream file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"upstream file {path} cannot be read: {exc}") from None


def commit_note(readme: Path, repo: str) -> str:
    """``repo@commit`` when the upstream folder's README names the commit, else ``repo``."""
    try:
        text = readme.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return repo
    m = re.search(re.escape(repo) + r"\S* at (?:commit )?([0-9a-f]{7,40})", text)
    return f"{repo}@{m.group(1)}" if m else repo


#: Columns of ``data/catalog/egress.csv``: one price tier per row. ``kind`` is ``internet``
#: (data transfer out to the internet) or ``inter-zone`` (between zones of one region);
#: a tier covers the month's volume from ``from_gib`` up to ``to_gib`` (empty: no end) [GiB].
EGRESS_COLUMNS = (
    "provider",
    "region",
    "kind",
    "from_gib",
    "to_gib",
    "usd_per_gib",
    "source",
    "source_date",
    "note",
)


def egress_row(
    provider: str,
    region: str,
    kind: str,
    tier: tuple[float, float | None, float],
    source: str,
    date: str,
    note: str = "",
) -> dict[str, str]:
    """One ``egress.csv`` row from a tier ``(from_gib, to_gib or None, usd_per_gib)``."""
    lo, hi, price = tier
    return {
        "provider": provider,
        "region": region,
        "kind": kind,
        "from_gib": num(lo),
        "to_gib": "" if hi is None else num(hi),
        "usd_per_gib": num(price),
        "source": source,
        "source_date": date,
        "note": note,
    }

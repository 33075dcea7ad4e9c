"""What ``gzip_comp_level`` does to a response's CPU and size, from zlib measured here.

The cost model prices gzip at NGINX's default level 1 (``gzip_byte_ns``, and the estimate
`costmodel.ESTIMATES` ``gzip_ratio`` for the output's size). ``data/reference/zlib-levels.csv``
(``python -m runners.calibrate.zlibspeed``: the zlib nginx links, on pieces of web text the
size of a response, each compressed on its own) gives, per level, the CPU per input byte and
the output's size against level 1; a workload's level multiplies both.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from sizing.errors import InputError
from sizing.paths import REFERENCE_DIR
from trialtable.fields import FieldError, printable
from trialtable.files import read_bounded
from trialtable.zlib import GZIP_LEVELS, ZLIB_LEVELS

#: The measured table.
ZLIB_LEVELS_PATH = REFERENCE_DIR / "zlib-levels.csv"
MAX_BYTES = 256 * 1024


@dataclass(frozen=True)
class LevelEffect:
    """A level's CPU per input byte and output size, each over level 1's, and their source."""

    cpu: float
    output: float
    source: str


@cache
def level_effect(level: int) -> LevelEffect:
    """``level``'s effect; level 1 is the model's own (1, 1)."""
    if level == 1:
        return LevelEffect(1.0, 1.0, "zlib level 1, the cost model's")
    row = _table().get(level)
    if row is None:
        raise InputError(
            f"gzip level {level}: not in {ZLIB_LEVELS_PATH.name} "
            f"(levels {GZIP_LEVELS[0]}-{GZIP_LEVELS[-1]})"
        )
    return row


@cache
def _table() -> dict[int, LevelEffect]:
    return load_levels()


def load_levels(path: str | Path | None = None) -> dict[int, LevelEffect]:
    """Each level's effect from ``zlib-levels.csv`` (or ``path``); InputError naming the place."""
    p = Path(path) if path is not None else ZLIB_LEVELS_PATH
    try:
        text = read_bounded(p, MAX_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(printable(f"{p}: cannot read the zlib levels ({exc})")) from None
    out: dict[int, LevelEffect] = {}
    for i, r in enumerate(csv.DictReader(io.StringIO(text)), start=2):
        try:
            v = ZLIB_LEVELS.parse_row(r, f"{p}:{i}")
        except FieldError as exc:
            raise InputError(str(exc)) from None
        level, cpu, size = v["level"], v["cpu_vs_level1"], v["output_vs_level1"]
        why = (
            f"zlib {printable(v['zlib_version'])} level {level}: x{cpu:.2f} level 1's CPU per "
            f"input byte, x{size:.2f} its output (measured on "
            f"{printable(v['cpu_model'])[:40]}, {printable(v['measured_at'])}; "
            f"{p.name})"
        )
        out[int(level)] = LevelEffect(float(cpu), float(size), why)
    return out

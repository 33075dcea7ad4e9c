"""The columns of ``data/reference/zlib-levels.csv``, for its writer and its reader.

``runners.calibrate.zlibspeed`` writes one row per zlib level (1-9): the CPU per input byte it
measured and the output's size, each also over level 1's; ``sizing.model.gzip`` reads the two
ratios to price a configuration's ``gzip_comp_level``.
"""

from __future__ import annotations

from trialtable.fields import Field, Fields

#: zlib's levels, as NGINX's ``gzip_comp_level`` takes them.
GZIP_LEVELS = range(1, 10)
ZLIB_LEVELS = Fields(
    "zlib levels",
    (
        Field("level", "int", "", GZIP_LEVELS[0], GZIP_LEVELS[-1]),
        Field("ns_per_byte", "float", "ns/byte", 0.01, 1e4),
        Field("ns_low", "float", "ns/byte", 0.01, 1e4),
        Field("ns_high", "float", "ns/byte", 0.01, 1e4),
        Field("cpu_vs_level1", "float", "", 0.1, 100.0),
        Field("output_ratio", "float", "", 1e-4, 2.0),
        Field("output_vs_level1", "float", "", 0.01, 2.0),
        Field("pieces", "int", "", 1, 1e9),
        Field("piece_bytes", "int", "B", 1, 1e9),
        Field("corpus_bytes", "int", "B", 1, 1e12),
        Field("zlib_version", "str"),
        Field("cpu_model", "str"),
        Field("measured_at", "str"),
    ),
)
#: The table's columns, in order.
ZLIB_LEVEL_COLUMNS = tuple(f.name for f in ZLIB_LEVELS)

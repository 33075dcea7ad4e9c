"""zlib's CPU per input byte and output size at each level: ``data/reference/zlib-levels.csv``.

NGINX's gzip filter compresses each response with zlib (deflate, a 32 KB window by default)
at ``gzip_comp_level``, 1 unless set. The cost model prices level 1 (``gzip_byte_ns``); this
measures, with this host's zlib (the library nginx links: ``ldd $(which nginx)``), how much
more CPU per input byte each level takes than level 1 and how much smaller it makes the
output, so that a configuration's level moves both.

The corpus is text a web server sends: JavaScript (plotly.js's minified bundle, as the
environment installs it), Markdown prose (this project's documentation) and JSON (its fitted
model file), cut into pieces of `PIECE_BYTES`, each compressed by a fresh compressor as nginx
compresses each response. Levels are timed in rotating order, `REPEATS` times, with the
process's CPU clock; a level's figure is the median over repeats, its spread their range.

Run::

    python -m runners.calibrate.zlibspeed --out data/reference/zlib-levels.csv
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import time
import zlib
from collections.abc import Sequence
from pathlib import Path

from runners.calibrate.features import loadavg
from runners.hosts import LocalHost, facts
from trialtable.files import write_atomic
from trialtable.output import table_csv
from trialtable.pathargs import OUTPUT_FILE, check_namespace, path_arg
from trialtable.values import int_between
from trialtable.zlib import GZIP_LEVELS, ZLIB_LEVEL_COLUMNS

ROOT = Path(__file__).resolve().parents[2]
#: A response's size in the corpus [B] (nginx compresses each response on its own).
PIECE_BYTES = 16 * 1024
#: Timings of each level, in rotating order.
REPEATS = 7
#: The text a web server sends, as files of this checkout (relative to its root).
CORPUS = (
    ("javascript", ".venv/lib/python3.11/site-packages/plotly/package_data/plotly.min.js"),
    ("markdown", "docs"),
    ("json", "data/fits/cloud-model.json"),
)


def corpus(root: Path = ROOT) -> list[bytes]:
    """The corpus's pieces, each `PIECE_BYTES` long (a file's last, shorter piece dropped)."""
    pieces: list[bytes] = []
    for _kind, rel in CORPUS:
        path = root / rel
        files = sorted(path.glob("*.md")) if path.is_dir() else [path] if path.is_file() else []
        data = b"".join(f.read_bytes() for f in files)
        pieces += [
            data[i : i + PIECE_BYTES] for i in range(0, len(data) - PIECE_BYTES + 1, PIECE_BYTES)
        ]
    return pieces


def compress_all(pieces: Sequence[bytes], level: int) -> tuple[float, int]:
    """CPU seconds to compress every piece at ``level`` with its own compressor, and bytes out."""
    out = 0
    start = time.process_time()
    for p in pieces:
        c = zlib.compressobj(level, zlib.DEFLATED, 31)  # gzip framing, a 32 KB window
        out += len(c.compress(p)) + len(c.flush())
    return time.process_time() - start, out


def measure(
    pieces: Sequence[bytes], repeats: int = REPEATS, cpu_model: str = ""
) -> list[dict[str, object]]:
    """One row per level 1-9: median ns per input byte, its range, output ratio, vs level 1."""
    total = sum(len(p) for p in pieces)
    times: dict[int, list[float]] = {level: [] for level in GZIP_LEVELS}
    sizes: dict[int, int] = {}
    for r in range(repeats):
        order = list(GZIP_LEVELS)
        turn = r % len(order)
        for level in order[turn:] + order[:turn]:
            seconds, sizes[level] = compress_all(pieces, level)
            times[level].append(seconds * 1e9 / total)
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    base, base_out = statistics.median(times[1]), sizes[1] / total
    return [
        {
            "level": level,
            "ns_per_byte": round(statistics.median(times[level]), 3),
            "ns_low": round(min(times[level]), 3),
            "ns_high": round(max(times[level]), 3),
            "cpu_vs_level1": round(statistics.median(times[level]) / base, 3),
            "output_ratio": round(sizes[level] / total, 4),
            "output_vs_level1": round(sizes[level] / total / base_out, 4),
            "pieces": len(pieces),
            "piece_bytes": PIECE_BYTES,
            "corpus_bytes": total,
            "zlib_version": zlib.ZLIB_RUNTIME_VERSION,
            "cpu_model": cpu_model,
            "measured_at": when,
        }
        for level in GZIP_LEVELS
    ]


def notes(rows: Sequence[dict[str, object]], command: str, before: str, after: str) -> str:
    """The table's notes: how it was measured, on what, and the figures."""
    first = rows[0]
    kinds = ", ".join(f"{kind} ({rel})" for kind, rel in CORPUS)
    lines = [
        "# zlib's CPU and output by level, measured on this host",
        "",
        f"- Command: `{command}`",
        f"- Date (UTC): {first['measured_at']}; CPU: {first['cpu_model']}; zlib "
        f"{first['zlib_version']} (the library nginx links on this host)",
        f"- Load average (1, 5, 15 min) before: {before}, after: {after}",
        f"- Corpus: {first['pieces']} pieces of {first['piece_bytes']} B "
        f"({first['corpus_bytes']} B in all) of {kinds}; each piece compressed by a fresh "
        "compressor (gzip framing, a 32 KB window), as nginx compresses each response",
        "- Each level timed `--repeats` times (default 7), levels "
        "in rotating order, with the process's CPU clock: the median, and the range over repeats",
        "- Read by `sizing.model.gzip`: `cpu_vs_level1` multiplies the cost model's gzip CPU per "
        "byte (level 1), `output_vs_level1` its output size",
        "",
        "| level | ns per input byte (range) | CPU vs level 1 | output / input "
        "| output vs level 1 |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['level']} | {r['ns_per_byte']} ({r['ns_low']}-{r['ns_high']}) | "
        f"x{r['cpu_vs_level1']} | {r['output_ratio']} | x{r['output_vs_level1']} |"
        for r in rows
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Measure every level and write the table; 2 on a bad option or a missing corpus."""
    p = argparse.ArgumentParser(prog="python -m runners.calibrate.zlibspeed", description=__doc__)
    p.add_argument(
        "--out", type=path_arg(OUTPUT_FILE), required=True, help="the CSV to write (notes in .md)"
    )
    p.add_argument(
        "--repeats",
        type=int_between(1, 1000),
        default=REPEATS,
        help=f"timings per level ({REPEATS})",
    )
    args = p.parse_args(argv)
    check_namespace(p, args)
    out = Path(args.out)
    if not out.parent.is_dir():
        print(f"zlibspeed: {out.parent} is not a folder", file=sys.stderr)
        return 2
    pieces = corpus()
    if not pieces:
        print("zlibspeed: the corpus is missing (run from a checkout with .venv)", file=sys.stderr)
        return 2
    host = LocalHost()
    load_before = loadavg(host)
    rows = measure(pieces, args.repeats, facts(host)["cpu_model"])
    write_atomic(out, table_csv(rows, ZLIB_LEVEL_COLUMNS))
    command = "python -m runners.calibrate.zlibspeed " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    write_atomic(out.with_suffix(".md"), notes(rows, command, load_before, loadavg(host)))
    for r in rows:
        print(
            f"level {r['level']}: {r['ns_per_byte']} ns/byte (x{r['cpu_vs_level1']}), "
            f"output {r['output_ratio']} (x{r['output_vs_level1']})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

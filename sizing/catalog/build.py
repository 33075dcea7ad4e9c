"""Build the instance catalog from the providers' public files, read as they are published.

Each provider module (`sizing.catalog.providers`: `sizing.catalog.aws`, `sizing.catalog.gcp`)
reads its own files and says what it leaves out and why; this module merges their rows,
writes the catalog CSV, its compact form, the exclusion list and the egress prices
(``egress.csv``), and validates the catalog by reading it back.

Kept and marked: shared-core and credit-based types (AWS t2, t3, t3a, t4g; GCP e2-micro,
e2-small, e2-medium, f1-micro, g1-small) are ``burstable=true``; their ``cpu_baseline`` gives
the sustained vCPUs where the file publishes it. The recommendation leaves them out unless
asked (their burst is not sustained capacity).

Runs with the standard library only.
"""

from __future__ import annotations

import csv
import io
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path

from sizing.catalog import providers
from sizing.catalog.aws import DEFAULT_BURST_TABLE
from sizing.catalog.rows import BUILD_COLUMNS, EGRESS_COLUMNS, BuildResult
from sizing.errors import InputError
from trialtable.files import check_output, write_atomic
from trialtable.output import csv_cell, csv_row

__all__ = [
    "BUILD_COLUMNS",
    "DEFAULT_BURST_TABLE",
    "BuildResult",
    "build_providers",
    "catalog_csv",
    "egress_csv",
    "excluded_csv",
    "iter_summary",
    "write_catalog",
]


def build_providers(
    folders: Mapping[str, str | Path], burst_table: str | Path | None = None
) -> BuildResult:
    """Build the catalog rows and egress prices from each provider's upstream folder.

    Parameters
    ----------
    folders : mapping of str to path
        Provider name (`sizing.catalog.providers`) to the folder of its public files.
    burst_table : path, optional
        AWS "up to" bandwidth peaks (default: the shipped ``aws-network-burst.csv``).
    """
    if not folders:
        flags = ", ".join(f"--{n}-dir" for n in providers.names())
        raise InputError(f"give the folder of one provider's public files or more: {flags}")
    result = BuildResult()
    result.inputs = [Path(p) for p in (*folders.values(), burst_table) if p is not None]
    for name, folder in folders.items():
        module = providers.get(name)
        part = module.build(Path(folder), None if burst_table is None else Path(burst_table))
        result.rows += part.rows
        result.excluded += part.excluded
        result.egress += module.egress_rows(Path(folder))
    result.rows.sort(
        key=lambda r: (
            r["provider"],
            r["region"],
            r["family"],
            int(r["vcpus"]),
            float(r["memory_gib"]),
            r["instance_type"],
        )
    )
    # One line per excluded type (AWS repeats per region).
    result.excluded = sorted(set(result.excluded))
    return result


def catalog_csv(rows: Iterable[dict[str, str]]) -> str:
    """The rows as catalog CSV text (header first, Unix line ends)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(BUILD_COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: csv_cell(v) for k, v in r.items()} for r in rows)
    return buf.getvalue()


def excluded_csv(excluded: Iterable[tuple[str, str, str]]) -> str:
    """What the build left out and why, as CSV."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["provider", "instance_type", "reason"])
    writer.writerows(csv_row(e) for e in excluded)
    return buf.getvalue()


def iter_summary(result: BuildResult) -> Iterator[str]:
    """Lines that say what was built and what was left out."""
    by = Counter((r["provider"], r["region"]) for r in result.rows)
    providers = Counter(r["provider"] for r in result.rows)
    regions = {p: sum(1 for (q, _) in by if q == p) for p in providers}
    yield f"{len(result.rows)} rows: " + ", ".join(
        f"{p} {n} in {regions[p]} region(s)" for p, n in sorted(providers.items())
    )
    for reason, n in result.exclusion_counts().items():
        yield f"left out: {n} type(s): {reason}"


def egress_csv(rows: Iterable[dict[str, str]]) -> str:
    """Egress price rows as CSV (`sizing.catalog.rows.EGRESS_COLUMNS`)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(EGRESS_COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: csv_cell(v) for k, v in r.items()} for r in rows)
    return buf.getvalue()


def write_catalog(result: BuildResult, out: str | Path) -> tuple[Path, ...]:
    """Write the catalog CSV, validate it by reading it back, and write its companions.

    Returns
    -------
    tuple of Path
        The CSV, its compact form (see `sizing.catalog.load.write_compact`), the list of what
        was left out (``<name>.excluded.csv``) and, when the build priced egress, the egress
        prices (``egress.csv`` beside it).
    """
    from sizing.catalog.egress import read_egress
    from sizing.catalog.load import compact_path, read_catalog, write_compact

    path = Path(out)
    if not result.rows:
        raise InputError("the upstream files gave no catalog rows")
    excluded = path.with_name(path.name.removesuffix(".csv") + ".excluded.csv")
    egress = path.with_name("egress.csv")
    targets = [path, compact_path(path), excluded] + ([egress] if result.egress else [])
    inputs = [f for p in result.inputs for f in ([p, *p.rglob("*")] if p.is_dir() else [p])]
    for target in targets:  # every output checked before any write
        try:
            check_output(target, inputs=inputs)
        except OSError as exc:
            raise InputError(f"cannot write {target}: it {exc.strerror}") from None
    text = catalog_csv(result.rows)
    try:
        with tempfile.TemporaryDirectory() as tmp:  # checked by reading it back, privately
            items = read_catalog(write_atomic(Path(tmp) / path.name, text))
            if result.egress:  # the egress prices too, by the reader that uses them
                read_egress(write_atomic(Path(tmp) / egress.name, egress_csv(result.egress)))
        write_atomic(path, text, inputs=inputs)
        compact = write_compact(path, [replace(i, catalog_file=str(path)) for i in items])
        write_atomic(excluded, excluded_csv(result.excluded), inputs=inputs)
        if result.egress:
            write_atomic(egress, egress_csv(result.egress), inputs=inputs)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror}") from None
    if not result.egress:
        return path, compact, excluded
    return path, compact, excluded, egress

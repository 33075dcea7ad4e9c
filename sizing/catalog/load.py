"""The instance catalog: instance types with vCPUs, network bandwidth and hourly prices.

Loaded with the standard library only (this sits on the interactive ``recommend`` path).
The shipped catalog (``data/catalog/instances.csv``, built from the providers' public files by
``python -m sizing catalog build``) has a compact companion, ``instances.compact.jsonl``,
written and validated at build time and bound to the CSV by its SHA-256: when the two agree
only the regions asked for are read from it, otherwise the CSV is read and validated.
"""

from __future__ import annotations

import csv
import io
import json
import marshal
import os
from collections.abc import Collection, Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from sizing.catalog import cache as _cache
from sizing.catalog.providers import default_regions
from sizing.catalog.rows import BUILD_COLUMNS, COLUMNS
from sizing.errors import InputError
from sizing.paths import CATALOG_DIR
from sizing.report.render import clean
from trialtable.fields import Field, FieldError, Fields, FieldValue, csv_rows, cut
from trialtable.files import MB, read_bounded, write_atomic
from trialtable.jsonvalue import JsonObject
from trialtable.profile import ARCHES as ARCHES  # re-exported

DEFAULT_CATALOG = CATALOG_DIR / "instances.csv"
COMPACT_SUFFIX = ".compact.jsonl"
COMPACT_SCHEMA = "nginx-sizing/catalog-compact/1"
#: Regions compared when the user names none: every provider module's `DEFAULT_REGIONS`.
DEFAULT_REGIONS = default_regions()
#: Pricing model -> the column holding its USD/hour.
PRICING_COLUMNS = {
    "on-demand": "price_usd_hour",
    "spot": "spot_usd_hour",
    "1y": "commit_1y_usd_hour",
    "3y": "commit_3y_usd_hour",
}
#: The catalog's fields: type, unit and sane range of each; every reader of a catalog (the CSV
#: and its compact form) checks each row against this one table.
CATALOG = Fields(
    "catalog",
    (
        Field("provider", "str"),
        Field("region", "str"),
        Field("instance_type", "str"),
        Field("family", "str"),
        Field("arch", "str", choices=ARCHES),
        Field("cpu", "str", required=False),
        Field("vcpus", "int", "vCPUs", 1, 4096),
        Field("memory_gib", "float", "GiB", 0.05, 65536),
        Field("network_gbps", "float", "Gbit/s", 0.001, 10000),
        Field("network_burst", "bool", required=False),
        Field("price_usd_hour", "float", "USD/h", 1e-6, 10000),
        Field("source", "str", max_len=2000),
        Field("source_date", "str", required=False),
        Field("catalog_file", "str", required=False, max_len=4096),
        Field("threads_per_core", "int", "vCPUs per core", 1, 2, required=False),
        Field("burstable", "bool", required=False),
        Field("network_burst_gbps", "float", "Gbit/s", 0.001, 10000, required=False),
        Field("spot_usd_hour", "float", "USD/h", 1e-6, 10000, required=False),
        Field("commit_1y_usd_hour", "float", "USD/h", 1e-6, 10000, required=False),
        Field("commit_3y_usd_hour", "float", "USD/h", 1e-6, 10000, required=False),
        Field("cpu_baseline", "float", "vCPUs", 0.01, 4096, required=False),
        Field("coremark", "float", "CoreMark", 1, 1e9, required=False),
    ),
)
#: Sane range of every number in a catalog row: (low, high, unit) (from `CATALOG`).
RANGES: dict[str, tuple[float, float, str]] = {
    f.name: (f.low, f.high, f.unit) for f in CATALOG.numbers() if f.name != "threads_per_core"
}
#: What capacity can depend on: every column but the region and the prices.
SHAPE_FIELDS = tuple(
    c for c in BUILD_COLUMNS if c != "region" and c not in PRICING_COLUMNS.values()
)
#: What dominated types are compared within (`sizing.fleet.recommend.prune_dominated`).
LIKE_FIELDS = (
    "provider",
    "region",
    "cpu",
    "arch",
    "vcpus",
    "threads_per_core",
    "burstable",
    "cpu_baseline",
)
MAX_ROWS = 200_000
#: Largest catalog file read [B]: 256 MB, far above MAX_ROWS rows of sane width (the shipped
#: catalog is about 5 MB); a larger file, a device or a folder is refused before it is
#: read, and a pipe is read up to it.
CATALOG_MAX_BYTES = 256 * MB


@dataclass(frozen=True)
class Instance:
    """One instance type in one region.

    Attributes
    ----------
    vcpus : int
        Virtual CPUs [1].
    memory_gib : float
        Memory [GiB].
    network_gbps : float
        Sustained network bandwidth [Gbit/s] (AWS baseline; GCP per-VM egress ceiling).
    network_burst : bool
        Whether the provider sells the size as "up to" a higher peak.
    price_usd_hour : float
        On-demand hourly price [USD/h].
    threads_per_core : int or None
        vCPUs that share one physical core (1 or 2); None means the CPU platform's usual value
        (optional column ``threads_per_core``).
    burstable : bool
        Shared-core or credit-based CPU whose burst is not sustained (optional column
        ``burstable``).
    network_burst_gbps : float or None
        The "up to" peak bandwidth [Gbit/s] where the provider publishes one (optional column
        ``network_burst_gbps``); None when unknown.
    spot_usd_hour, commit_1y_usd_hour, commit_3y_usd_hour : float or None
        Spot, 1-year and 3-year committed-use hourly prices [USD/h]; None when not published.
    cpu_baseline : float or None
        Sustained vCPUs of a shared-core type (e.g. 0.25 for GCP e2-micro) [vCPUs].
    coremark : float or None
        The provider's published CoreMark score of the whole instance [1].
    """

    provider: str
    region: str
    instance_type: str
    family: str
    arch: str
    cpu: str
    vcpus: int
    memory_gib: float
    network_gbps: float
    network_burst: bool
    price_usd_hour: float
    source: str
    source_date: str
    catalog_file: str = ""
    threads_per_core: int | None = None
    burstable: bool = False
    network_burst_gbps: float | None = None
    spot_usd_hour: float | None = None
    commit_1y_usd_hour: float | None = None
    commit_3y_usd_hour: float | None = None
    cpu_baseline: float | None = None
    coremark: float | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        """Unique key: provider, region, instance type."""
        return (self.provider, self.region, self.instance_type)

    def price(self, pricing: str = "on-demand") -> float | None:
        """Hourly price [USD/h] under a pricing model of `PRICING_COLUMNS` (None: unpublished)."""
        value = getattr(self, PRICING_COLUMNS[pricing])
        return None if value is None else float(value)

    def to_dict(self) -> JsonObject:
        """Plain dict of the fields."""
        return asdict(self)


FIELD_NAMES = tuple(f.name for f in fields(Instance))

_TYPES: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "float": (int, float),
    "bool": (bool,),
    "str": (str,),
}
#: The Python types each field's value may have (``X | None`` adds None), from `Instance`.
FIELD_TYPES: tuple[tuple[type, ...], ...] = tuple(
    tuple(t for part in str(f.type).split("|") for t in _TYPES.get(part.strip(), (type(None),)))
    for f in fields(Instance)
)


def values_typed(values: object) -> bool:
    """Whether ``values`` is a list of one value per field, each of its field's type.

    A cached row (`sizing.catalog.cache`) is checked so before use: a damaged cache is
    rebuilt, never trusted (``True`` is not a vCPU count, nor text a price).
    """
    if not isinstance(values, list) or len(values) != len(FIELD_NAMES):
        return False
    for v, types in zip(values, FIELD_TYPES, strict=True):
        if not isinstance(v, types) or (isinstance(v, bool) and bool not in types):
            return False
    return True


def _cached_ok(cached: object) -> bool:
    """Whether a cache entry has the shape `_read_compact` stores: order, regions, groups."""
    if not isinstance(cached, tuple) or len(cached) != 3:
        return False
    order, all_regions, done = cached
    return (
        isinstance(order, list)
        and all(isinstance(g, str) and "/" in g for g in order)
        and isinstance(all_regions, list)
        and all(isinstance(r, str) for r in all_regions)
        and isinstance(done, dict)
        and all(isinstance(g, str) and isinstance(b, bytes) for g, b in done.items())
    )


def _cached_rows(data: bytes) -> list[list[FieldValue]]:
    """The rows one group's cache bytes hold; ValueError when any is not typed as its fields."""
    try:
        rows = marshal.loads(data)
    except (EOFError, TypeError, MemoryError, OverflowError):
        raise ValueError("a damaged cache entry") from None
    if not isinstance(rows, list) or not all(values_typed(v) for v in rows):
        raise ValueError("a damaged cache entry")
    return rows


def parse_row(p: Path, i: int, row: dict[str, str]) -> Instance:
    """One validated catalog row (``i`` is its line number, for messages)."""
    if None in row or any(v is None for v in row.values()):
        raise InputError(f"{p}:{i}: wrong number of fields")
    values = dict(row)
    values["catalog_file"] = str(p)
    try:
        v = CATALOG.parse_row(values, f"{p}:{i}")
    except FieldError as exc:
        raise InputError(str(exc)) from None
    v["provider"] = v["provider"].lower()
    v["source_date"] = v["source_date"] or ""
    v["cpu"] = v["cpu"] or ""
    return _relations(Instance(**v), f"{p}:{i}")


def _relations(inst: Instance, where: str) -> Instance:
    """``inst`` unless two of its fields contradict each other (the burst peak, the baseline)."""
    peak, network = inst.network_burst_gbps, inst.network_gbps
    if peak is not None and peak < network:
        raise InputError(
            f"{where}: field 'network_burst_gbps': the peak {peak:g} Gbit/s is below "
            f"the baseline network_gbps {network:g}"
        )
    baseline = inst.cpu_baseline
    if baseline is not None and baseline > inst.vcpus:
        raise InputError(
            f"{where}: field 'cpu_baseline': {baseline:g} sustained vCPUs exceed vcpus {inst.vcpus}"
        )
    return inst


def read_catalog(path: str | Path) -> list[Instance]:
    """Read and validate one catalog CSV file.

    Raises
    ------
    InputError
        Naming the file, line and field of the first problem: a missing file or column,
        an empty required field, a number outside its sane range (`RANGES`), an unknown
        architecture, an over-long text, or a duplicate (provider, region, instance_type).
    """
    p = Path(path)
    out: list[Instance] = []
    seen: dict[tuple[str, str, str], int] = {}
    lines = csv_rows(p, CATALOG_MAX_BYTES, what="catalog", columns=COLUMNS, max_rows=MAX_ROWS)
    try:
        for line, row in lines:
            inst = parse_row(p, line, row)
            if inst.key in seen:
                raise InputError(
                    f"{p}:{line}: duplicate instance {clean('/'.join(inst.key))} "
                    f"(first on line {seen[inst.key]})"
                )
            seen[inst.key] = line
            out.append(inst)
    except FieldError as exc:
        raise InputError(str(exc)) from None
    return out


# ----------------------------------------------------------------------------- compact form


def compact_path(csv_path: str | Path) -> Path:
    """Where the compact companion of a catalog CSV lives."""
    p = Path(csv_path)
    return p.with_name(p.name.removesuffix(".csv") + COMPACT_SUFFIX)


def _sha256(path: Path) -> str:
    import hashlib  # only when the private cache does not already know the files

    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_compact(csv_path: str | Path, instances: Sequence[Instance] | None = None) -> Path:
    """Validate a catalog CSV and write its compact companion (one JSON line per region).

    Line 1 holds the schema, the CSV's SHA-256, the field names, the shared text tables and
    the line of each (provider, region) group; every further line is one group's rows.
    """
    src = Path(csv_path)
    items = list(instances) if instances is not None else read_catalog(src)
    groups: dict[str, list[list[Any]]] = {}
    sources: dict[str, int] = {}
    for inst in items:
        row = [getattr(inst, name) for name in FIELD_NAMES]  # astuple less its deep copies
        row[FIELD_NAMES.index("source")] = sources.setdefault(inst.source, len(sources))
        row[FIELD_NAMES.index("catalog_file")] = ""
        groups.setdefault(f"{inst.provider}/{inst.region}", []).append(row)
    header = {
        "schema": COMPACT_SCHEMA,
        "csv": src.name,
        "csv_sha256": _sha256(src),
        "fields": list(FIELD_NAMES),
        "sources": list(sources),
        "groups": {g: i + 2 for i, g in enumerate(groups)},
        "regions": sorted({inst.region for inst in items}),
        "rows": len(items),
    }
    out = compact_path(src)
    lines = [json.dumps(header, separators=(",", ":"))]
    lines += [json.dumps(rows, separators=(",", ":")) for rows in groups.values()]
    return write_atomic(out, "\n".join(lines) + "\n", inputs=[src])


#: Bumped when what the cache holds for a compact file changes.
_CACHE_VERSION = 1
#: The cache entry this process read last for each catalog file (its path: slot -> key,
#: entry): `catalog_regions` and `load_catalog` of one run read the file once, and a
#: long-lived process keeps one entry per catalog, not one per version of it.
_LOADED: dict[str, tuple[str, Any]] = {}


def _read_compact(
    csv_path: Path, regions: Collection[str] | None
) -> tuple[list[Instance], list[str]] | None:
    """Rows of the wanted regions and every region, or None when the compact form is stale.

    Rows already checked by an earlier run of unchanged files come from the private cache
    (`sizing.catalog.cache`): no hash of the CSV, no check of the rows again.
    """
    cp = compact_path(csv_path)
    file_name = str(csv_path)
    file_i = FIELD_NAMES.index("catalog_file")
    stats = _cache.stat_key(csv_path, cp)
    key = f"{COMPACT_SCHEMA}|{_CACHE_VERSION}|{','.join(FIELD_NAMES)}|{stats}"
    slot = os.path.realpath(csv_path)
    last = _LOADED.get(slot)
    cached = last[1] if stats and last is not None and last[0] == key else None
    if cached is None and stats:
        cached = _cache.load(key, slot)
        if not _cached_ok(cached):
            cached = None
        if cached is not None:
            _LOADED[slot] = (key, cached)
    try:
        # Each group's checked rows are kept as their own marshal bytes: a run decodes only
        # the regions it asks for.
        if cached is not None:
            order, all_regions, done = cached
            wanted = [g for g in order if regions is None or g.split("/", 1)[1] in regions]
            try:
                if all(g in done for g in wanted):
                    out: list[Instance] = []
                    for g in wanted:
                        for values in _cached_rows(done[g]):
                            values[file_i] = file_name
                            out.append(_instance(values))
                    return out, list(all_regions)
            except ValueError:  # damaged: checked again from the compact file, and kept anew
                _LOADED.pop(slot, None)
                done = {}
        else:
            done = {}
        text = cp.read_text(encoding="utf-8")
        lines = text.split("\n")
        header = json.loads(lines[0])
        if (
            header.get("schema") != COMPACT_SCHEMA
            or header.get("fields") != list(FIELD_NAMES)
            or header.get("csv_sha256") != _sha256(csv_path)
        ):
            return None
        sources = header["sources"]
        src_i = FIELD_NAMES.index("source")
        out = []
        fresh = False
        for group, line in header["groups"].items():
            if regions is not None and group.split("/", 1)[1] not in regions:
                continue
            if group in done:
                for values in _cached_rows(done[group]):
                    values[file_i] = file_name
                    out.append(_instance(values))
                continue
            where = f"{cp}:{line}"
            rows = json.loads(lines[line - 1])
            for row in rows:
                if not isinstance(row, list) or len(row) != len(FIELD_NAMES):
                    raise InputError(f"{where}: a row of {len(row)} fields, not {len(FIELD_NAMES)}")
                row[src_i] = sources[row[src_i]]
                row[file_i] = file_name
            # The same table as the CSV's: a value the CSV refuses is refused here too.
            try:
                checked = CATALOG.check_rows(rows, FIELD_NAMES, where)
            except FieldError as exc:
                raise InputError(str(exc)) from None
            out += [_relations(_instance(values), where) for values in checked]
            done[group] = marshal.dumps(
                [[*values[:file_i], "", *values[file_i + 1 :]] for values in checked]
            )
            fresh = True
        if fresh and stats:
            _cache.store(key, (list(header["groups"]), list(header["regions"]), done), slot)
        return out, list(header["regions"])
    except (OSError, ValueError, KeyError, IndexError, TypeError, EOFError) as exc:
        if isinstance(exc, InputError):
            raise
        return None


def _instance(values: Sequence[FieldValue]) -> Instance:
    """An `Instance` of checked values in `FIELD_NAMES` order, without the keyword call.

    The same object ``Instance(**dict(zip(FIELD_NAMES, values)))`` makes (the class has no
    ``__post_init__``), at a fraction of the cost for the tens of thousands of rows of
    ``--region all``.
    """
    inst = object.__new__(Instance)
    inst.__dict__.update(zip(FIELD_NAMES, values, strict=True))
    return inst


#: Catalogs built from shipped extracts this process made without a private cache folder.
_TEMP_BUNDLED: dict[str, Path] = {}
#: The digest of each provider's extracts and build code, by their stat key.
_DIGESTS: dict[str, str] = {}


def bundled_catalogs() -> list[Path]:
    """The catalogs of the providers whose rows are built from shipped extracts (Azure).

    Such a provider module names its extracts (``FOLDER``, ``FILES``); its catalog is built
    from them once (CSV read back by `read_catalog`: checked as any catalog, with its
    compact form) into the private cache folder (`sizing.catalog.cache`), named by the
    SHA-256 of the extracts and the module's code, and read from there by every later run.
    Without a cache folder it is built into a private temporary folder, once per process.
    """
    from sizing.catalog.providers import providers

    out = []
    for name, module in providers().items():
        folder = getattr(module, "FOLDER", None)
        if folder is None:
            continue
        files = [Path(str(module.__file__)), *(Path(folder) / f for f in module.FILES)]
        stats = _cache.stat_key(*files)
        digest = _DIGESTS.get(stats or "", "")
        if not digest:
            import hashlib

            h = hashlib.sha256()
            for f in files:
                try:
                    h.update(read_bounded(f, CATALOG_MAX_BYTES))
                except OSError as exc:
                    raise InputError(f"{f} cannot be read: {exc.strerror}") from None
            digest = h.hexdigest()[:16]
            if stats:
                _DIGESTS[stats] = digest
        out.append(_bundled_file(name, module, Path(folder), digest))
    return out


def _bundled_file(name: str, module: Any, folder: Path, digest: str) -> Path:
    """The built catalog of one provider's extracts (built now when missing).

    Written as CSV, read back by `read_catalog` (every row checked as in any catalog) and
    compacted by `write_compact`.
    """
    home = _cache.cache_dir()
    target = (home / f"{name}-{digest}.csv") if home is not None else _TEMP_BUNDLED.get(digest)
    if target is not None and target.is_file() and compact_path(target).is_file():
        return target
    if target is None:  # no cache folder: a private folder, removed when the process ends
        import atexit
        import shutil
        import tempfile

        private = tempfile.mkdtemp(prefix="nginx-sizing-")
        atexit.register(shutil.rmtree, private, ignore_errors=True)
        target = Path(private) / f"{name}-{digest}.csv"
        _TEMP_BUNDLED[digest] = target
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(BUILD_COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows(module.build(folder).rows)
    write_atomic(target, buf.getvalue())
    for written in (target, write_compact(target)):
        # Named by the digest of what made them, these files never change once written: dated
        # back past the cache's racy window so that this very run may keep their rows.
        past = written.stat().st_mtime_ns - 2 * _cache.RACY_NS
        os.utime(written, ns=(past, past))
    return target


def catalog_files(base: str | Path | None, regions: Collection[str] | None = None) -> list[Path]:
    """``base``, and beside the shipped catalog the bundled ones (`bundled_catalogs`).

    A bundled catalog is built and read only when ``regions`` (None: all) holds one of its
    provider's regions (`bundled_regions`).
    """
    if base is None:
        return []
    p = Path(base)
    if p != DEFAULT_CATALOG:
        return [p]
    if regions is not None and not set(regions) & set(bundled_regions()):
        return [p]
    return [p, *bundled_catalogs()]


def bundled_regions() -> list[str]:
    """The regions of every provider whose catalog is built from shipped extracts.

    Each such module's ``regions()`` reads them from its extracts, without building.
    """
    from sizing.catalog.providers import providers

    return [
        r
        for module in providers().values()
        if getattr(module, "FOLDER", None) is not None
        for r in module.regions()
    ]


def catalog_regions(base: str | Path | None = DEFAULT_CATALOG) -> list[str]:
    """Every region of a catalog file (from the compact form when it is current)."""
    out: set[str] = set()
    for p in catalog_files(base, ()):
        compact = _read_compact(p, ()) if p.exists() else None
        if compact is not None:
            out.update(compact[1])
        else:
            out.update(i.region for i in read_catalog(p))
    if base is not None and Path(base) == DEFAULT_CATALOG:
        out.update(bundled_regions())
    return sorted(out)


def load_catalog(
    extra: Iterable[str | Path] = (),
    base: str | Path | None = DEFAULT_CATALOG,
    regions: Collection[str] | None = None,
) -> list[Instance]:
    """Load the shipped catalog, then add or replace entries from the user's files.

    Parameters
    ----------
    extra : iterable of path
        User catalog files, same columns; an entry with the same provider, region and
        instance type replaces the shipped one, any other is added (all of them, whatever
        ``regions`` says).
    base : path or None
        The catalog to start from; None starts empty.
    regions : collection of str, optional
        Read only these regions of ``base`` (fast with a current compact form); None: all.
    """
    items: list[Instance] = []
    for p in catalog_files(base, regions):
        compact = _read_compact(p, regions) if p.exists() else None
        if compact is not None:
            items += compact[0]
        else:
            items += [i for i in read_catalog(p) if regions is None or i.region in regions]
    extra = list(extra)
    if not extra:
        return items  # keys are unique within one validated file
    merged = {inst.key: inst for inst in items}
    for path in extra:
        for inst in read_catalog(path):
            merged[inst.key] = inst
    return list(merged.values())


def select_instances(
    extra: Sequence[str | Path] = (),
    provider: str | Sequence[str] | None = None,
    region: str | Sequence[str] | None = None,
    arch: str | Sequence[str] | None = None,
    family: str | Sequence[str] | None = None,
    base: str | Path | None = DEFAULT_CATALOG,
) -> list[Instance]:
    """Load and filter the catalog the way ``recommend`` does.

    ``region`` None means the default regions (`DEFAULT_REGIONS`, plus every region of the
    user's files); ``"all"`` means every region; otherwise a value, a list or ``"a,b"``.

    Raises
    ------
    InputError
        For a filter value no instance has (the message lists the known ones).
    """
    user = [i for path in extra for i in read_catalog(path)]
    wanted = norm_values(region)
    if wanted is not None and "all" in wanted:
        if len(wanted) > 1:
            raise InputError("--region all cannot be combined with other regions")
        regions: set[str] | None = None
    elif wanted is None:
        named = sorted(norm_values(provider) or ())
        regions = set(default_regions(named)) | {i.region for i in user}
    else:
        known = {r.lower(): r for r in [*catalog_regions(base), *(i.region for i in user)]}
        unknown = sorted(wanted - set(known))
        unpriced_region(unknown)
        if unknown:
            raise InputError(
                f"unknown region {listing(unknown)}; expected all or one of: "
                + listing(sorted(set(known.values())))
            )
        regions = {known[w] for w in wanted}
    items = load_catalog((), base, regions)
    if user:
        merged = {i.key: i for i in items}
        merged.update({i.key: i for i in user})
        items = [i for i in merged.values() if regions is None or i.region in regions]
    return filter_catalog(items, provider=provider, arch=arch, family=family)


def unpriced_region(regions: Sequence[str]) -> None:
    """InputError for an AWS region with known types but no bundled prices, else nothing.

    The types are known from the Spot Advisor feed (`sizing.catalog.spot`); the message is one
    line with the command that fetches the region's prices.
    """
    from sizing.catalog.spot import aws_regions

    known = aws_regions()
    for region in regions:
        if region in known:
            out = f"aws-{region}.csv"
            raise InputError(
                f"AWS region {region} offers {known[region]:,} instance types (AWS Spot "
                "Advisor) but its prices are not bundled; fetch them with: python -m sizing "
                f"catalog update --provider aws --region {region} --out {out}, then add "
                f"--catalog {out}"
            )


def listing(values: Sequence[str], limit: int = 40) -> str:
    """``a, b, c`` (control characters escaped), cut after ``limit`` values of 40 characters."""
    shown = ", ".join(clean(cut(v)) for v in values[:limit])
    return shown + (f" and {len(values) - limit} more" if len(values) > limit else "")


def norm_values(values: str | Sequence[str] | None) -> set[str] | None:
    """The values of a filter, comma lists split, lower case (None for none)."""
    if values is None:
        return None
    if isinstance(values, str):
        values = [values]
    out = {v.strip().lower() for item in values for v in item.split(",") if v.strip()}
    if not out and any(item.strip() for item in values):
        raise InputError(f"{listing([str(v) for v in values])}: a comma list that names nothing")
    return out or None


def filter_catalog(
    instances: Iterable[Instance],
    provider: str | Sequence[str] | None = None,
    region: str | Sequence[str] | None = None,
    arch: str | Sequence[str] | None = None,
    family: str | Sequence[str] | None = None,
) -> list[Instance]:
    """Keep the instances that match every given filter (each a value, a list, or "a,b").

    Raises
    ------
    InputError
        If a filter names a value that no instance in the catalog has.
    """
    items = list(instances)
    filters = {
        "provider": norm_values(provider),
        "region": norm_values(region),
        "arch": norm_values(arch),
        "family": norm_values(family),
    }
    for field, wanted in filters.items():
        if wanted is None:
            continue
        known = {str(getattr(i, field)).lower() for i in items}
        unknown = sorted(wanted - known)
        if unknown:
            raise InputError(
                f"unknown {field} {listing(unknown)}; expected one of: {listing(sorted(known))}"
            )
        items = [i for i in items if str(getattr(i, field)).lower() in wanted]
    return items

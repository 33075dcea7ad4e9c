"""The instance catalog: instance types with vCPUs, network bandwidth and hourly price.

Loaded with the standard library only (this sits on the interactive ``recommend`` path).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sizing.errors import InputError
from sizing.paths import CATALOG_DIR

DEFAULT_CATALOG = CATALOG_DIR / "instances.csv"
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
ARCHES = ("x86_64", "arm64")


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

    @property
    def key(self) -> tuple[str, str, str]:
        """Unique key: provider, region, instance type."""
        return (self.provider, self.region, self.instance_type)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict of the fields."""
        return asdict(self)


def _positive(path: Path, line: int, field: str, raw: str, integer: bool = False) -> float:
    kind = "a positive integer" if integer else "a positive number"
    try:
        value = float(raw)
    except ValueError:
        raise InputError(f"{path}:{line}: field {field!r}: expected {kind}, got {raw!r}") from None
    if not math.isfinite(value) or value <= 0 or (integer and value != int(value)):
        raise InputError(f"{path}:{line}: field {field!r}: expected {kind}, got {raw!r}")
    return value


def _bool(path: Path, line: int, field: str, raw: str) -> bool:
    low = raw.strip().lower()
    if low in ("true", "1", "yes"):
        return True
    if low in ("false", "0", "no", ""):
        return False
    raise InputError(f"{path}:{line}: field {field!r}: expected true or false, got {raw!r}")


def _threads(path: Path, line: int, raw: str) -> int | None:
    raw = raw.strip()
    if not raw:
        return None
    if raw not in ("1", "2"):
        raise InputError(
            f"{path}:{line}: field 'threads_per_core': expected 1, 2 or empty, got {raw!r}"
        )
    return int(raw)


def read_catalog(path: str | Path) -> list[Instance]:
    """Read and validate one catalog CSV file.

    Raises
    ------
    InputError
        Naming the file, line and field of the first problem: a missing file or column,
        an empty required field, a non-positive number, an unknown architecture, or a
        duplicate (provider, region, instance_type).
    """
    p = Path(path)
    try:
        fh = p.open(newline="", encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"catalog file {p} does not exist") from None
    except OSError as exc:
        raise InputError(f"catalog file {p} cannot be read: {exc.strerror}") from None
    with fh:
        reader = csv.DictReader(fh)
        try:
            header = reader.fieldnames or []
        except (csv.Error, UnicodeDecodeError) as exc:
            raise InputError(f"{p}:1: malformed CSV header: {exc}") from None
        missing = [c for c in COLUMNS if c not in header]
        if missing:
            raise InputError(f"{p}:1: missing column(s) {', '.join(missing)}")
        out: list[Instance] = []
        seen: dict[tuple[str, str, str], int] = {}
        try:
            rows = list(reader)
        except (csv.Error, UnicodeDecodeError) as exc:
            raise InputError(f"{p}: malformed CSV: {exc}") from None
        for i, row in enumerate(rows, start=2):
            if None in row or any(v is None for v in row.values()):
                raise InputError(f"{p}:{i}: wrong number of fields")
            for field in ("provider", "region", "instance_type", "family", "arch", "source"):
                if not row[field].strip():
                    raise InputError(f"{p}:{i}: field {field!r}: must not be empty")
            arch = row["arch"].strip()
            if arch not in ARCHES:
                raise InputError(
                    f"{p}:{i}: field 'arch': expected one of {', '.join(ARCHES)}, got {arch!r}"
                )
            inst = Instance(
                provider=row["provider"].strip().lower(),
                region=row["region"].strip(),
                instance_type=row["instance_type"].strip(),
                family=row["family"].strip(),
                arch=arch,
                cpu=row["cpu"].strip(),
                vcpus=int(_positive(p, i, "vcpus", row["vcpus"], integer=True)),
                memory_gib=_positive(p, i, "memory_gib", row["memory_gib"]),
                network_gbps=_positive(p, i, "network_gbps", row["network_gbps"]),
                network_burst=_bool(p, i, "network_burst", row["network_burst"]),
                price_usd_hour=_positive(p, i, "price_usd_hour", row["price_usd_hour"]),
                source=row["source"].strip(),
                source_date=row["source_date"].strip(),
                catalog_file=str(p),
                threads_per_core=_threads(p, i, row.get("threads_per_core") or ""),
                burstable=_bool(p, i, "burstable", row.get("burstable") or ""),
                network_burst_gbps=(
                    _positive(p, i, "network_burst_gbps", row["network_burst_gbps"])
                    if (row.get("network_burst_gbps") or "").strip()
                    else None
                ),
            )
            if inst.key in seen:
                first = seen[inst.key]
                raise InputError(
                    f"{p}:{i}: duplicate instance {'/'.join(inst.key)} (first on line {first})"
                )
            seen[inst.key] = i
            out.append(inst)
    return out


def load_catalog(
    extra: Iterable[str | Path] = (), base: str | Path | None = DEFAULT_CATALOG
) -> list[Instance]:
    """Load the shipped catalog, then add or replace entries from the user's files.

    Parameters
    ----------
    extra : iterable of path
        User catalog files, same columns; an entry with the same provider, region and
        instance type replaces the shipped one, any other is added.
    base : path or None
        The catalog to start from; None starts empty.
    """
    merged: dict[tuple[str, str, str], Instance] = {}
    if base is not None:
        for inst in read_catalog(base):
            merged[inst.key] = inst
    for path in extra:
        for inst in read_catalog(path):
            merged[inst.key] = inst
    return list(merged.values())


def _norm(values: str | Sequence[str] | None) -> set[str] | None:
    if values is None:
        return None
    if isinstance(values, str):
        values = [values]
    out = {v.strip().lower() for item in values for v in item.split(",") if v.strip()}
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
        "provider": _norm(provider),
        "region": _norm(region),
        "arch": _norm(arch),
        "family": _norm(family),
    }
    for field, wanted in filters.items():
        if wanted is None:
            continue
        known = {str(getattr(i, field)).lower() for i in items}
        unknown = sorted(wanted - known)
        if unknown:
            raise InputError(
                f"unknown {field} {', '.join(unknown)}; expected one of: {', '.join(sorted(known))}"
            )
        items = [i for i in items if str(getattr(i, field)).lower() in wanted]
    return items

"""``--prices FILE``: the user's own prices (negotiated, reserved, savings plans) over ours.

The file is a CSV with these columns (one header line, then one price per line)::

    provider,region,instance_type,pricing,usd_per_hour,source
    aws,us-east-1,c7g.large,on-demand,0.0612,EDP 15% off list (contract 2026-03)
    gcp,us-central1,n2-standard-8,1y,0.2301,committed use quote

``pricing`` is one of on-demand, spot, 1y, 3y (the ``--pricing`` choices); ``usd_per_hour`` a
positive number; ``source`` (optional) says where the price comes from and is added to the
row's source. A price replaces the catalog's for that instance in that region; a line for an
instance the selected regions do not hold, a duplicate line, an unknown column or a bad number
is refused with the file and line named.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from sizing.catalog.load import PRICING_COLUMNS, Instance, listing
from sizing.errors import InputError, printable
from trialtable.files import MB, read_bounded

COLUMNS = ("provider", "region", "instance_type", "pricing", "usd_per_hour", "source")
REQUIRED = COLUMNS[:5]
#: Largest price file read [B]: about 350,000 lines, read in seconds (a price for each of the
#: 17,022 shipped rows and each of the four pricings is about 4 MB; 64 MB took over 20 s).
MAX_BYTES = 16 * MB


def read_prices(path: str | Path) -> dict[tuple[str, str, str], list[tuple[str, float, str]]]:
    """``(provider, region, type) -> [(pricing, USD/hour, source)]`` of a price file.

    Raises
    ------
    InputError
        Naming the file and line: unreadable, an unknown, missing or doubled column, a bad
        pricing, a price that is not a positive finite number, a line given twice, or no
        price at all.
    """
    p = Path(path)
    name = printable(str(p))
    try:
        text = read_bounded(p, MAX_BYTES).decode("utf-8-sig")  # a spreadsheet's BOM is no column
    except FileNotFoundError:
        raise InputError(f"price file {name} does not exist") from None
    except OSError as exc:
        raise InputError(f"price file {name} cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"price file {name} cannot be read: {exc}") from None
    reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
    try:
        header = reader.fieldnames or []
    except csv.Error as exc:
        raise InputError(f"{name}:1: malformed CSV: {exc}") from None
    unknown = [c for c in header if c not in COLUMNS]
    missing = [c for c in REQUIRED if c not in header]
    doubled = sorted({c for c in header if header.count(c) > 1})
    if unknown or missing or doubled:
        parts = [f"unknown column(s) {listing(unknown, 5)}"] if unknown else []
        parts += [f"missing {', '.join(missing)}"] if missing else []
        parts += [f"column(s) given twice: {listing(doubled, 5)}"] if doubled else []
        what = "; ".join(parts)
        raise InputError(f"{name}:1: {what}; expected {','.join(COLUMNS)}")
    out: dict[tuple[str, str, str], list[tuple[str, float, str]]] = {}
    seen: set[tuple[str, str, str, str]] = set()
    try:
        for row in reader:
            where = f"{name}:{reader.line_num}"
            if None in row or any(v is None for v in row.values()):
                raise InputError(f"{where}: wrong number of fields")
            key = (row["provider"].strip().lower(), row["region"].strip(), row["instance_type"])
            pricing = row["pricing"].strip()
            if pricing not in PRICING_COLUMNS:
                raise InputError(
                    f"{where}: pricing {printable(pricing)!r}, expected one of "
                    + ", ".join(PRICING_COLUMNS)
                )
            try:
                usd = float(row["usd_per_hour"])
            except ValueError:
                usd = math.nan
            if not (math.isfinite(usd) and 0 < usd < 10000):
                raise InputError(f"{where}: usd_per_hour must be a positive number below 10000")
            if (*key, pricing) in seen:
                raise InputError(f"{where}: {printable('/'.join(key))} {pricing} given twice")
            seen.add((*key, pricing))
            note = printable((row.get("source") or "").strip()[:200]) or "your price"
            out.setdefault(key, []).append((pricing, usd, note))
    except csv.Error as exc:
        raise InputError(f"{name}:{reader.line_num}: malformed CSV: {exc}") from None
    if not out:
        raise InputError(f"{name}: no price lines under the header")
    return out


def apply_prices(items: Iterable[Instance], path: str | Path) -> list[Instance]:
    """The instances with the price file's prices over theirs (InputError for a stray line)."""
    prices = read_prices(path)
    items = list(items)
    regions = {i.region for i in items}
    keys = {i.key for i in items}
    for key in prices:
        if key[1] in regions and key not in keys:
            raise InputError(
                f"price file {printable(str(path))}: {printable('/'.join(key))} is not in the "
                "catalog"
            )
    out = []
    for inst in items:
        found = prices.get(inst.key)
        if found:
            change: dict[str, object] = {}
            notes = []
            for pricing, usd, note in found:
                change[PRICING_COLUMNS[pricing]] = usd
                notes.append(f"{pricing} {usd:g} USD/h from {printable(Path(path).name)} ({note})")
            change["source"] = (inst.source + "; " + "; ".join(notes))[:2000]
            inst = replace(inst, **change)  # type: ignore[arg-type]
        out.append(inst)
    return out

"""``catalog update``: a region's AWS on-demand prices from AWS's public offer file, streamed.

AWS publishes one price-list offer file per region, unauthenticated (`OFFER_URL`): a CSV of a
few hundred MB whose first lines are metadata (``"FormatVersion"``, ``"Publication Date"``...)
and whose header starts with ``"SKU"``. It is read a line at a time, never whole; the rows
kept are Linux, shared tenancy, on-demand, hourly compute instances with no pre-installed
software (`_wanted`). Each priced type takes the shape of its row in the shipped catalog (its
vCPUs, CPU, bandwidth); a type the shipped catalog does not hold is left out, with its reason.

The catalog is written only when the whole file was read and checked
(`sizing.catalog.build.write_catalog`): a cut-off download, an HTML page instead of data, a
bad price or a file that changed while read leave the previous catalog untouched.
"""

from __future__ import annotations

import csv
import http.client
import io
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from sizing.catalog.load import DEFAULT_CATALOG, Instance, load_catalog
from sizing.catalog.rows import BUILD_COLUMNS, BuildResult, num
from sizing.catalog.spot import spot_table
from sizing.errors import InputError, printable

OFFER_URL = (
    "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/{region}/index.csv"
)
#: Largest offer file read [B]: today's are under 1 GB.
OFFER_MAX_BYTES = 4 * 1024**3
#: The region whose shipped rows give each type's shape.
SHAPE_REGION = "us-east-1"
#: Column -> value a kept row must have.
_WANTED = {
    "TermType": "OnDemand",
    "Product Family": "Compute Instance",
    "Tenancy": "Shared",
    "Operating System": "Linux",
    "Pre Installed S/W": "NA",
    "CapacityStatus": "Used",
    "Unit": "Hrs",
    "Currency": "USD",
}


def _bounded(lines: Iterable[str], where: str) -> Iterator[str]:
    """The lines, InputError once more than `OFFER_MAX_BYTES` have come."""
    total = 0
    for line in lines:
        total += len(line)
        if total > OFFER_MAX_BYTES:
            raise InputError(f"{where}: larger than {OFFER_MAX_BYTES // 1024**3} GB")
        yield line


def parse_offer(lines: Iterable[str], where: str) -> tuple[dict[str, float], str]:
    """On-demand Linux USD/hour per instance type, and the publication date, of an offer file.

    Raises
    ------
    InputError
        Naming ``where``: HTML instead of CSV, no header, a missing column, a bad price, a
        type priced twice, a row of another length than the header's (a damaged or cut-off
        file), or no price at all (a cut-off file).
    """
    it = _bounded(lines, where)
    date = ""
    header: list[str] | None = None
    for line in it:
        if line.lstrip().startswith("<"):
            raise InputError(f"{where}: an HTML page, not the AWS offer CSV")
        cells = next(csv.reader([line]), [])
        if cells[:1] == ["Publication Date"] and len(cells) > 1:
            date = cells[1][:10]
        if cells[:1] == ["SKU"]:
            header = cells
            break
    if header is None:
        raise InputError(f'{where}: no header line starting with "SKU" (not an offer file?)')
    missing = [c for c in (*_WANTED, "Instance Type", "PricePerUnit") if c not in header]
    if missing:
        raise InputError(f"{where}: missing column(s) {', '.join(missing)}")
    at = {c: header.index(c) for c in (*_WANTED, "Instance Type", "PricePerUnit")}
    wanted = [(at[c], v) for c, v in _WANTED.items()]
    prices: dict[str, float] = {}
    reader = csv.reader(it)
    try:
        for row in reader:
            if len(row) != len(header):
                raise InputError(
                    f"{where}: a row of {len(row)} fields under a header of {len(header)} "
                    "(a damaged or cut-off file)"
                )
            if any(row[i] != v for i, v in wanted):
                continue
            name = row[at["Instance Type"]]
            try:
                price = float(row[at["PricePerUnit"]])
            except ValueError:
                price = -1.0
            if not 0 <= price < 10000 or price != price:
                raise InputError(f"{where}: bad price {printable(row[at['PricePerUnit']][:40])}")
            if name in prices and prices[name] != price:
                raise InputError(f"{where}: {printable(name)} has two on-demand Linux prices")
            if price > 0:
                prices[name] = price
    except csv.Error as exc:
        raise InputError(f"{where}: malformed CSV after the header: {exc}") from None
    if not prices:
        raise InputError(f"{where}: no on-demand Linux instance price (a cut-off file?)")
    return prices, date


def _open(source: str) -> tuple[IO[str], str]:
    """The offer text stream of a path or an http(s) URL, and how to name it."""
    if source.startswith(("https://", "http://")):
        import urllib.request

        try:
            resp = urllib.request.urlopen(source, timeout=60)
        except OSError as exc:
            raise InputError(f"{printable(source)}: cannot download: {exc}") from None
        kind = resp.headers.get("Content-Type", "")
        if "html" in kind:
            raise InputError(f"{printable(source)}: returned {printable(kind)}, not CSV")
        return io.TextIOWrapper(resp, encoding="utf-8", newline=""), printable(source)
    try:
        return open(source, encoding="utf-8", newline=""), printable(source)
    except OSError as exc:
        raise InputError(f"{printable(source)}: cannot be read: {exc.strerror}") from None


def read_offer(source: str) -> tuple[dict[str, float], str]:
    """`parse_offer` of a file or URL, streamed; a local file must not change while read."""
    before = os.stat(source) if os.path.exists(source) else None
    stream, where = _open(source)
    try:
        with stream:
            out = parse_offer(stream, where)
            left = getattr(getattr(stream, "buffer", None), "length", None)  # missing HTTP bytes
    except UnicodeDecodeError:
        raise InputError(f"{where}: not UTF-8 text") from None
    except http.client.IncompleteRead:
        raise InputError(f"{where}: the download was cut off") from None
    except (OSError, http.client.HTTPException) as exc:
        raise InputError(f"{where}: read failed: {printable(str(exc))}") from None
    if left:
        raise InputError(f"{where}: the download was cut off ({left} B of its length missing)")
    if before is not None:
        after = os.stat(source)
        if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
            raise InputError(f"{where}: changed while it was read")
    return out


def shaped_row(inst: Instance, region: str, price: float, source: str) -> dict[str, str]:
    """A catalog row (`BUILD_COLUMNS` as text) of a shipped row moved to ``region``."""
    row: dict[str, str] = {}
    for col in BUILD_COLUMNS:
        v = getattr(inst, col)
        row[col] = (
            ""
            if v is None
            else ("true" if v else "false")
            if isinstance(v, bool)
            else (num(v) if isinstance(v, float) else str(v))
        )
    spot = spot_table().get((region, inst.instance_type))
    row.update(
        region=region,
        price_usd_hour=num(price),
        spot_usd_hour="" if spot is None else num(price * (100 - spot.savings_pct) / 100.0),
        commit_1y_usd_hour="",
        commit_3y_usd_hour="",
        source=source,
    )
    return row


def update_aws(region: str, offer: str, date_hint: str = "") -> BuildResult:
    """The catalog rows of one AWS region from its offer file (path or URL)."""
    prices, date = read_offer(offer)
    shapes = {
        i.instance_type: i
        for i in load_catalog((), DEFAULT_CATALOG, {SHAPE_REGION})
        if i.provider == "aws"
    }
    source_base = f"AWS Price List offer file {offer} (Publication Date {date or 'unknown'}, "
    result = BuildResult()
    for name in sorted(prices):
        inst = shapes.get(name)
        if inst is None:
            result.excluded.append(("aws", name, f"not in the shipped {SHAPE_REGION} catalog"))
            continue
        source = source_base + f"Linux on-demand, shared tenancy); shape: {inst.source}"
        row = shaped_row(inst, region, prices[name], source[:2000])
        row["source_date"] = date or date_hint
        result.rows.append(row)
    if not result.rows:
        raise InputError(f"{offer}: none of its types is in the shipped {SHAPE_REGION} catalog")
    return result


def offer_url(region: str) -> str:
    """AWS's offer file of one region."""
    return OFFER_URL.format(region=region)


def default_out(region: str) -> Path:
    """Where ``catalog update`` writes when not told: ``aws-<region>.csv`` here."""
    return Path(f"aws-{region}.csv")

"""``catalog update --provider azure``: a region's Azure prices from the Azure Retail Prices API.

Microsoft's Azure Retail Prices API (`RETAIL_URL`, unauthenticated; "Azure Retail Prices
overview", learn.microsoft.com/rest/api/cost-management/retail-prices/azure-retail-prices)
answers an OData ``$filter`` with JSON pages of at most 100 price items (``Items``), each page
naming the next in ``NextPageLink`` (empty on the last). One page is read at a time, each
bounded (`PAGE_MAX_BYTES`, `MAX_PAGES`). The items kept (`_kind`) are hourly USD consumption
prices of the primary meter region: the Linux on-demand price of a size (products named
"... Windows", "Low Priority" meters and dedicated hosts dropped) and its Spot price (meters
named "... Spot"), which fills the spot column. Each priced size takes the shape the bundled
Azure build gives it (`sizing.catalog.azure`: vCPUs, CPU, bandwidth from the shipped
extracts); a size those extracts do not hold, or hold as inactive or an accelerator, is left
out with its reason.

The catalog is written only when every page was read and checked
(`sizing.catalog.build.write_catalog`): a cut-off page, an HTML page instead of JSON, a bad or
doubled price, or a next link to another host leave the previous catalog untouched.
"""

from __future__ import annotations

import http.client
import json
import os
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sizing.catalog import azure
from sizing.catalog.rows import BuildResult, num
from sizing.errors import InputError, printable

RETAIL_URL = "https://prices.azure.com/api/retail/prices"
#: The OData filter of one region's virtual-machine consumption prices.
FILTER = (
    "serviceName eq 'Virtual Machines' and priceType eq 'Consumption' "
    "and armRegionName eq '{region}'"
)
#: Largest page read [B]: a page of 100 items is about 60 kB.
PAGE_MAX_BYTES = 16 * 1024**2
#: Most pages followed: a region's virtual machines take about 100.
MAX_PAGES = 2000
#: Item field -> value a kept item must have.
_WANTED = {"type": "Consumption", "unitOfMeasure": "1 Hour", "currencyCode": "USD"}


def region_url(region: str) -> str:
    """The API's first page of one region's virtual-machine consumption prices."""
    query = urllib.parse.urlencode({"$filter": FILTER.format(region=region)}, safe="$'")
    return f"{RETAIL_URL}?{query}"


def _read_page(source: str) -> bytes:
    """The bytes of one page (a URL or a file), at most `PAGE_MAX_BYTES`, or InputError."""
    where = printable(source)
    try:
        if source.startswith(("https://", "http://")):
            import urllib.request

            with urllib.request.urlopen(source, timeout=60) as resp:
                kind = resp.headers.get("Content-Type", "")
                if "html" in kind:
                    raise InputError(f"{where}: returned {printable(kind)}, not JSON")
                data = resp.read(PAGE_MAX_BYTES + 1)
                length = resp.headers.get("Content-Length", "")
            if length.isdigit() and int(length) != len(data) <= PAGE_MAX_BYTES:
                raise InputError(f"{where}: the download was cut off ({len(data)} of {length} B)")
        else:
            before = os.stat(source)
            with open(source, "rb") as fh:
                data = fh.read(PAGE_MAX_BYTES + 1)
            after = os.stat(source)
            if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
                raise InputError(f"{where}: changed while it was read")
    except http.client.IncompleteRead:
        raise InputError(f"{where}: the download was cut off") from None
    except (OSError, http.client.HTTPException) as exc:
        raise InputError(f"{where}: cannot be read: {printable(str(exc))}") from None
    if len(data) > PAGE_MAX_BYTES:
        raise InputError(f"{where}: a page larger than {PAGE_MAX_BYTES // 1024**2} MB")
    return data


def _page(source: str) -> tuple[list[Any], str]:
    """The ``Items`` and ``NextPageLink`` of one page, checked, or InputError."""
    where = printable(source)
    data = _read_page(source)
    if data.lstrip()[:1] == b"<":
        raise InputError(f"{where}: an HTML page, not the Azure Retail Prices JSON")
    try:
        page = json.loads(data)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise InputError(f"{where}: not complete JSON (a cut-off download?)") from None
    if not isinstance(page, dict) or not isinstance(page.get("Items"), list):
        raise InputError(f"{where}: no Items list (not an Azure Retail Prices answer)")
    link = page.get("NextPageLink") or ""
    if not isinstance(link, str):
        raise InputError(f"{where}: NextPageLink is not text")
    return page["Items"], link


def iter_pages(first: str) -> Iterator[tuple[str, list[Any]]]:
    """Each page's source and items, following ``NextPageLink`` on the first URL's host.

    A local file is one whole answer: a next link in it means a saved first page only.
    """
    source, seen = first, 0
    host = urllib.parse.urlsplit(first).hostname
    while source:
        seen += 1
        if seen > MAX_PAGES:
            raise InputError(f"{printable(first)}: more than {MAX_PAGES} pages")
        items, link = _page(source)
        yield source, items
        if link and host is None:
            raise InputError(f"{printable(first)}: NextPageLink set: a saved first page only")
        if link and urllib.parse.urlsplit(link).hostname != host:
            raise InputError(f"{printable(source)}: NextPageLink leaves {printable(host or '')}")
        source = link


def _kind(item: Any, region: str) -> str:
    """``"on-demand"``, ``"spot"`` or ``""`` (not kept) for one price item."""
    if not isinstance(item, dict) or any(item.get(k) != v for k, v in _WANTED.items()):
        return ""
    if item.get("armRegionName") != region or item.get("isPrimaryMeterRegion") is False:
        return ""
    product, meter = str(item.get("productName", "")), str(item.get("meterName", ""))
    if product.endswith(" Windows") or "Dedicated Host" in product:
        return ""
    if meter.endswith(" Low Priority"):
        return ""
    return "spot" if meter.endswith(" Spot") else "on-demand"


def _price(item: dict[str, Any], where: str) -> float:
    """The item's ``retailPrice`` [USD/hour], or InputError."""
    price = item.get("retailPrice")
    if isinstance(price, bool) or not isinstance(price, (int, float)):
        raise InputError(f"{where}: bad retailPrice {printable(repr(price))[:60]}")
    if not 0 <= price < 10000:
        raise InputError(f"{where}: bad retailPrice {price!r}")
    return float(price)


def read_retail(first: str, region: str) -> tuple[dict[str, dict[str, float]], str]:
    """Per kind (on-demand, spot), USD/hour per size of every page, and the newest start date.

    One row per size and kind, by one rule: the items `_kind` drops (Windows products, Low
    Priority meters, dedicated hosts, other price types such as DevTestConsumption, other
    meter regions) never count; a size listed again with the same price (another meterId,
    productName or page) is the same row; a zero price or an item without ``armSkuName``
    prices nothing; two different prices of one kind for a size stop the update.

    Raises
    ------
    InputError
        Naming the page: see `_page`; a size with two different prices of one kind; no
        on-demand price at all.
    """
    prices: dict[str, dict[str, float]] = {"on-demand": {}, "spot": {}}
    date = ""
    for source, items in iter_pages(first):
        for item in items:
            kind = _kind(item, region)
            if not kind:
                continue
            name = str(item.get("armSkuName", ""))
            price = _price(item, printable(source))
            if price <= 0 or not name:  # a free or unnamed meter prices nothing
                continue
            known = prices[kind].get(name)
            if known is not None and known != price:
                raise InputError(f"{printable(source)}: {printable(name)} has two {kind} prices")
            prices[kind][name] = price
            date = max(date, str(item.get("effectiveStartDate", ""))[:10])
    if not prices["on-demand"]:
        raise InputError(f"{printable(first)}: no Linux on-demand price for {region}")
    return prices, date


def _shapes() -> dict[str, dict[str, str]]:
    """Each size's row of the bundled Azure build, region and price empty (`azure.build`)."""
    folder = azure.FOLDER
    sizes = azure.extract_rows(folder / "sizes.csv")
    bandwidth = azure.read_bandwidth(folder)
    source = f"{azure.source_comment(folder / 'sizes.csv')} (shape)"
    return {
        s["size"]: azure.shared_row(s, bandwidth, source)
        for s in sizes
        if not azure.exclusion(s, priced=True)
    }


def update_azure(region: str, first: str) -> BuildResult:
    """The catalog rows of one Azure region from the Retail Prices API (first page URL or file)."""
    prices, date = read_retail(first, region)
    shapes = _shapes()
    when = date or "unknown"
    base = f"Azure Retail Prices API {printable(first)} (effective {when}, Linux consumption)"
    result = BuildResult()
    for name in sorted(prices["on-demand"]):
        shape = shapes.get(name)
        if shape is None:
            result.excluded.append((azure.NAME, name, "not an active size of the Azure sizes"))
            continue
        spot = prices["spot"].get(name)
        row = dict(shape, region=region, source_date=date)
        row.update(
            price_usd_hour=num(prices["on-demand"][name]),
            spot_usd_hour="" if spot is None else num(spot),
            source=f"{base}; {shape['source']}"[:2000],
        )
        result.rows.append(row)
    if not result.rows:
        raise InputError(f"{printable(first)}: none of its sizes is an active Azure size")
    return result


def default_out(region: str) -> Path:
    """Where ``catalog update --provider azure`` writes when not told."""
    return Path(f"azure-{region}.csv")

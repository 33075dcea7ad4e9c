"""``catalog update --provider gcp --from FILE``: a region's GCP prices from a saved SKU list.

Google's Cloud Billing Catalog API (``cloudbilling.googleapis.com/v1/services/6F81-5844-456A/
skus``, Compute Engine) needs an API key, so it is not fetched here: the user saves its answer
(``{"skus": [...]}``, one page or the pages' ``skus`` joined) and names the file. Compute
Engine prices a predefined machine type per vCPU-hour and per GiB-hour of its series
("N2 Instance Core running in Americas", "N2 Instance Ram running in Americas"); the SKUs kept
are on-demand USD hourly prices of a series' cores and RAM offered in the region (`_part`).
Each shipped GCP type of a priced series (not the shared-core ones, whose price is not per
vCPU, nor the ``-lssd`` ones, whose bundled local SSD is priced apart) costs vCPUs x core
price + GiB x RAM price, with its other columns from the shipped catalog; a series without
both prices is left out, with its reason.

The catalog is written only when the whole file was read and checked
(`sizing.catalog.build.write_catalog`).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from sizing.catalog.load import DEFAULT_CATALOG, load_catalog
from sizing.catalog.offer import shaped_row
from sizing.catalog.rows import BuildResult
from sizing.errors import InputError, printable

#: Largest SKU file read [B]: Compute Engine's whole list is about 30 MB.
SKU_MAX_BYTES = 512 * 1024**2
#: "<SERIES>[ AMD| Arm| Intel][ Predefined] Instance Core|Ram running in <place>".
_DESCRIPTION = re.compile(
    r"^(?P<series>[A-Z][A-Z0-9]*)(?: (?:AMD|Arm|Intel))?(?: Predefined)? Instance "
    r"(?P<part>Core|Ram) running in "
)
#: The region whose shipped GCP rows give each type's shape.
SHAPE_REGION = "us-central1"


def _load(path: str) -> list[Any]:
    """The ``skus`` list of a saved answer, or InputError naming the file."""
    where = printable(path)
    try:
        before = os.stat(path)
        with open(path, "rb") as fh:
            data = fh.read(SKU_MAX_BYTES + 1)
        after = os.stat(path)
    except OSError as exc:
        raise InputError(f"{where}: cannot be read: {exc.strerror}") from None
    if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
        raise InputError(f"{where}: changed while it was read")
    if len(data) > SKU_MAX_BYTES:
        raise InputError(f"{where}: larger than {SKU_MAX_BYTES // 1024**2} MB")
    if data.lstrip()[:1] == b"<":
        raise InputError(f"{where}: an HTML page, not the Cloud Billing Catalog JSON")
    try:
        page = json.loads(data)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise InputError(f"{where}: not complete JSON (a cut-off download?)") from None
    if not isinstance(page, dict) or not isinstance(page.get("skus"), list):
        raise InputError(f"{where}: no skus list (not a Cloud Billing Catalog answer)")
    if page.get("nextPageToken"):
        raise InputError(f"{where}: nextPageToken set: join every page's skus into one file")
    return page["skus"]


def _hourly_usd(sku: dict[str, Any], where: str) -> float | None:
    """The SKU's first-tier USD price per hour (per GiB-hour for RAM), None if not hourly."""
    try:
        info = sku["pricingInfo"][0]["pricingExpression"]
        rate = info["tieredRates"][-1]["unitPrice"]
        if info["usageUnit"] not in ("h", "GiBy.h") or rate["currencyCode"] != "USD":
            return None
        price = int(rate["units"]) + int(rate["nanos"]) * 1e-9
    except (KeyError, IndexError, TypeError, ValueError):
        raise InputError(f"{where}: SKU {printable(str(sku.get('skuId')))}: bad pricing") from None
    if not 0 <= price < 10000:
        raise InputError(f"{where}: SKU {printable(str(sku.get('skuId')))}: bad price {price}")
    return price


def _part(sku: Any, region: str) -> tuple[str, str] | None:
    """(series, "Core" or "Ram") of an on-demand SKU offered in the region, else None."""
    if not isinstance(sku, dict) or region not in (sku.get("serviceRegions") or ()):
        return None
    category = sku.get("category") or {}
    if not isinstance(category, dict) or category.get("usageType") != "OnDemand":
        return None
    m = _DESCRIPTION.match(str(sku.get("description", "")))
    return (m.group("series").lower(), m.group("part")) if m else None


def read_skus(path: str, region: str) -> dict[tuple[str, str], float]:
    """USD/hour per (series, Core|Ram) of the region, or InputError (none, or priced twice)."""
    out: dict[tuple[str, str], float] = {}
    for sku in _load(path):
        key = _part(sku, region)
        if key is None:
            continue
        price = _hourly_usd(sku, printable(path))
        if price is None:
            continue
        if key in out and out[key] != price:
            raise InputError(f"{printable(path)}: {key[0]} {key[1]} has two prices in {region}")
        out[key] = price
    if not out:
        raise InputError(f"{printable(path)}: no on-demand core or RAM price for {region}")
    return out


def update_gcp(region: str, path: str) -> BuildResult:
    """The catalog rows of one GCP region from a saved Cloud Billing Catalog SKU list."""
    prices = read_skus(path, region)
    shapes = [i for i in load_catalog((), DEFAULT_CATALOG, {SHAPE_REGION}) if i.provider == "gcp"]
    result = BuildResult()
    how = "on-demand, vCPUs x core + GiB x RAM price"
    base = f"Cloud Billing Catalog SKUs {printable(path)} ({how})"
    for inst in sorted(shapes, key=lambda i: i.instance_type):
        series = inst.instance_type.split("-")[0]
        core, ram = prices.get((series, "Core")), prices.get((series, "Ram"))
        lssd = inst.instance_type.endswith("-lssd")
        if inst.burstable or lssd or core is None or ram is None:
            why = f"no {series} core and RAM price"
            why = "shared-core" if inst.burstable else "local SSD priced apart" if lssd else why
            result.excluded.append(("gcp", inst.instance_type, why))
            continue
        price = inst.vcpus * core + inst.memory_gib * ram
        row = shaped_row(inst, region, price, f"{base}; shape: {inst.source}"[:2000])
        row["source_date"] = ""
        result.rows.append(row)
    if not result.rows:
        raise InputError(f"{printable(path)}: no shipped GCP type is priced by it in {region}")
    return result


def default_out(region: str) -> Path:
    """Where ``catalog update --provider gcp`` writes when not told."""
    return Path(f"gcp-{region}.csv")

"""What serving the traffic costs: data transfer out, priced per provider and region.

``data/catalog/egress.csv`` (written by ``python -m sizing catalog build`` from each provider
module's ``egress_rows``) holds one price tier per row (`sizing.catalog.rows.EGRESS_COLUMNS`):
internet egress in monthly volume tiers, and the price of traffic between zones of a region.
Where clients are:

``internet``
    Every response leaves the provider's network: the month's volume is priced in the
    internet tiers of the fleet's region (first tier first).
``vpc``
    Clients sit in the same VPC, spread evenly over the fleet's zones, and the load balancer
    sends a request to any zone: an estimated ``(zones - 1) / zones`` of the responses cross a
    zone and pay the inter-zone price; traffic inside one zone is free.

Volumes are in GiB (both providers bill a "GB" as 2^30 bytes) over a 730-hour month.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import NotRequired, TypedDict

from sizing.catalog.rows import HOURS_PER_MONTH
from sizing.errors import InputError
from sizing.paths import CATALOG_DIR
from sizing.vocabulary import CLIENTS as CLIENTS  # re-exported
from trialtable.fields import Field, FieldError, Fields
from trialtable.files import MB, read_bounded

DEFAULT_EGRESS = CATALOG_DIR / "egress.csv"
KINDS = ("internet", "inter-zone")
GIB = 2.0**30
EGRESS_MAX_BYTES = 16 * MB


@dataclass(frozen=True)
class Tier:
    """One price tier of a month's volume.

    Attributes
    ----------
    from_gib, to_gib : float
        The tier covers the volume from ``from_gib`` to ``to_gib`` (``inf``: no end) [GiB].
    usd_per_gib : float
        Price of each GiB in the tier [USD/GiB].
    """

    from_gib: float
    to_gib: float
    usd_per_gib: float


@dataclass(frozen=True)
class Prices:
    """The tiers of one (provider, region, kind), with their source."""

    provider: str
    region: str
    kind: str
    tiers: tuple[Tier, ...]
    source: str
    source_date: str
    note: str = ""

    def monthly_usd(self, gib: float) -> float:
        """Cost of ``gib`` in a month, each GiB at the price of the tier it falls in [USD]."""
        total = 0.0
        for t in self.tiers:
            if gib <= t.from_gib:
                break
            total += (min(gib, t.to_gib) - t.from_gib) * t.usd_per_gib
        return total


#: The fields of an egress price row: type, unit and sane range of each.
EGRESS = Fields(
    "egress prices",
    (
        Field("provider", "str"),
        Field("region", "str"),
        Field("kind", "str", choices=KINDS),
        Field("from_gib", "float", "GiB", 0, 1e12),
        Field("to_gib", "float", "GiB", 0, 1e12, required=False),
        Field("usd_per_gib", "float", "USD/GiB", 0, 100),
        Field("source", "str", max_len=2000),
        Field("source_date", "str", required=False),
        Field("note", "str", required=False, max_len=2000),
    ),
)


def read_egress(path: str | Path = DEFAULT_EGRESS) -> dict[tuple[str, str, str], Prices]:
    """Egress prices by (provider, region, kind), tiers checked to follow each other.

    Raises
    ------
    InputError
        For a missing or malformed file, a tier that does not start where the last ended.
    """
    p = Path(path)
    try:
        text = read_bounded(p, EGRESS_MAX_BYTES).decode("utf-8")
    except FileNotFoundError:
        raise InputError(f"egress prices {p} do not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"egress prices {p} cannot be read: {exc}") from None
    return parse_egress(text, p)


def parse_egress(text: str, p: Path) -> dict[tuple[str, str, str], Prices]:
    """`read_egress` of the text of an egress file (``p`` names it in messages)."""
    rows: dict[tuple[str, str, str], list[tuple[Tier, dict[str, str]]]] = {}
    reader = csv.DictReader(io.StringIO(text))
    need = {"provider", "region", "kind", "from_gib", "to_gib", "usd_per_gib", "source"}
    if not need <= set(reader.fieldnames or ()):
        raise InputError(f"{p}: needs the columns {', '.join(sorted(need))}")
    try:
        for i, r in enumerate(reader, start=2):
            if None in r or any(v is None for v in r.values()):
                raise InputError(f"{p}:{i}: wrong number of fields")
            try:
                v = EGRESS.parse_row(r, f"{p}:{i}")
            except FieldError as exc:
                raise InputError(str(exc)) from None
            lo = v["from_gib"]
            hi = math.inf if v["to_gib"] is None else v["to_gib"]
            if hi <= lo:
                raise InputError(f"{p}:{i}: field 'to_gib': must be above from_gib")
            tier = Tier(lo, hi, v["usd_per_gib"])
            key = (v["provider"].lower(), v["region"], v["kind"])
            rows.setdefault(key, []).append((tier, r))
    except csv.Error as exc:
        raise InputError(f"{p}:{reader.line_num}: malformed CSV: {exc}") from None
    out = {}
    for key, found in rows.items():
        found.sort(key=lambda tr: tr[0].from_gib)
        tiers = tuple(t for t, _ in found)
        edge = 0.0
        for t in tiers:
            if t.from_gib != edge:
                raise InputError(
                    f"{p}: the {'/'.join(key)} tiers leave a gap or overlap at {edge:g} GiB"
                )
            edge = t.to_gib
        first = found[0][1]
        notes = "; ".join(dict.fromkeys(r.get("note", "") for _, r in found if r.get("note")))
        out[key] = Prices(*key, tiers, first["source"], first.get("source_date", ""), notes)
    return out


@cache
def shipped_egress() -> dict[tuple[str, str, str], Prices]:
    """The shipped ``data/catalog/egress.csv``, read once, and the bundled providers' prices.

    A provider whose catalog is built from shipped extracts (``FOLDER``, as Azure's) gives its
    egress rows from its module's ``egress_rows``; the shipped file wins for a key in both.
    """
    from sizing.catalog.providers import providers
    from sizing.catalog.rows import EGRESS_COLUMNS

    out: dict[tuple[str, str, str], Prices] = {}
    for module in providers().values():
        if getattr(module, "FOLDER", None) is None:
            continue
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(EGRESS_COLUMNS), lineterminator="\n")
        writer.writeheader()
        writer.writerows(module.egress_rows(module.FOLDER))
        out.update(parse_egress(buf.getvalue(), Path(module.FOLDER) / "prices.csv"))
    out.update(read_egress(DEFAULT_EGRESS))
    return out


def traffic(target_rps: float, bytes_per_request: float) -> tuple[float, float]:
    """Traffic the fleet sends: (Gbit/s, GiB a month)."""
    per_s = target_rps * bytes_per_request
    return per_s * 8 / 1e9, per_s * HOURS_PER_MONTH * 3600 / GIB


def cross_zone_share(zones: int) -> float:
    """Estimated share of responses that cross a zone with clients in the VPC [1].

    Clients spread evenly over ``zones`` and a load balancer without zone affinity: a
    response stays in its zone with probability ``1 / zones``.
    """
    return (zones - 1) / zones if zones > 1 else 0.0


class EgressCost(TypedDict):
    """`egress_cost`'s answer: the volume billed, its price, what it rests on.

    ``basis`` (one line) is set on every answer once the price is known or found missing.
    """

    clients: str
    kind: str
    monthly_gib: float
    share: float
    billed_gib: float
    usd_month: float | None
    usd_per_gib_marginal: float | None
    source: str
    source_date: str
    basis: NotRequired[str]


def egress_cost(
    provider: str,
    region: str,
    monthly_gib: float,
    clients: str = "internet",
    zones: int = 1,
    prices: dict[tuple[str, str, str], Prices] | None = None,
) -> EgressCost:
    """The month's data transfer cost of a fleet in one region, with what it rests on.

    Parameters
    ----------
    provider, region : str
        Where the fleet runs.
    monthly_gib : float
        Bytes the fleet sends in a month [GiB].
    clients : str
        ``internet`` or ``vpc`` (see the module docstring).
    zones : int
        Zones the fleet (and, with ``vpc``, its clients) are spread over.
    prices : dict, optional
        From `read_egress` (default: the shipped prices).

    Returns
    -------
    dict
        ``kind``, ``billed_gib`` (the volume priced) [GiB], ``usd_month`` (None when no price
        is published for the region) [USD], ``usd_per_gib_marginal`` (the price of the last
        GiB) [USD/GiB], ``share`` (of the volume billed) [1], ``source`` and ``basis`` (one line).
    """
    if clients not in CLIENTS:
        raise InputError(f"unknown clients {clients!r}; expected one of: {', '.join(CLIENTS)}")
    table = shipped_egress() if prices is None else prices
    kind = "internet" if clients == "internet" else "inter-zone"
    share = 1.0 if clients == "internet" else cross_zone_share(zones)
    billed = monthly_gib * share
    out: EgressCost = {
        "clients": clients,
        "kind": kind,
        "monthly_gib": monthly_gib,
        "share": share,
        "billed_gib": billed,
        "usd_month": None,
        "usd_per_gib_marginal": None,
        "source": "",
        "source_date": "",
    }
    if share == 0.0:
        out["usd_month"] = 0.0
        out["basis"] = "clients in the fleet's one zone: no transfer charge"
        return out
    found = table.get((provider, region, kind))
    if found is None:
        out["basis"] = f"no {kind} transfer price for {provider} {region} in the egress table"
        return out
    last = next((t for t in found.tiers if t.from_gib <= billed < t.to_gib), found.tiers[-1])
    out["usd_month"] = found.monthly_usd(billed)
    out["usd_per_gib_marginal"] = last.usd_per_gib
    out["source"] = found.source
    out["source_date"] = found.source_date
    if kind == "internet":
        out["basis"] = (
            f"internet egress {billed:,.0f} GiB/month in {provider} {region}'s tiers "
            f"(last GiB at ${last.usd_per_gib:g}/GiB; {found.source}, {found.source_date})"
        )
    else:
        out["basis"] = (
            f"estimate: {share:.0%} of responses cross a zone (clients spread over {zones} "
            f"zones, no zone affinity), {billed:,.0f} GiB/month at ${last.usd_per_gib:g}/GiB "
            f"({found.source}, {found.source_date})"
        )
    return out

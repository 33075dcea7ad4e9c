"""Units for the ``sizing`` command line and for readers: values in, numbers out.

The command-line value parsers are shared with ``runners`` and live in `trialtable.values`;
they are re-exported here. The display helpers below format numbers for people.
"""

from __future__ import annotations

import argparse
import math

from trialtable.values import (
    DEFAULT_PROTOCOL,
    HelpFormatter,
    Parser,
    int_at_least,
    number_or_percent,
    parse_duration_ms,
    parse_fraction,
    parse_rps,
    parse_size,
)

__all__ = [
    "CONFIDENCE_RANGE",
    "DEFAULT_PROTOCOL",
    "HelpFormatter",
    "Parser",
    "finite_json",
    "fmt_rps",
    "fmt_sig",
    "fmt_usd",
    "int_at_least",
    "parse_confidence",
    "parse_duration_ms",
    "parse_fraction",
    "parse_rps",
    "parse_size",
]

#: The probabilities ``--confidence`` may take: the count at confidence rests on the capacity's
#: ``1 - confidence`` quantile, which a probability of 0 or 1 (or one within a float's
#: rounding of them) does not have.
CONFIDENCE_RANGE = (1e-6, 1 - 1e-6)


def parse_confidence(text: str) -> float:
    """A probability in `CONFIDENCE_RANGE`: ``0.95`` or ``95%``."""
    low, high = CONFIDENCE_RANGE
    value = number_or_percent(text, "a probability", "0.95 or 95%")
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(
            f"{text!r} is outside [{low:g}, {high:g}]; expected a probability such as 0.95"
        )
    return value


# ----------------------------------------------------------------------------- display


def fmt_sig(value: float, digits: int = 3) -> str:
    """``value`` with ``digits`` significant digits, no float noise (``1e-14`` -> ``0``).

    Infinite values read ``unbounded``, NaN ``-``; magnitudes below 1e-9 of one show as 0.
    """
    if value is None or math.isnan(value):
        return "-"
    if math.isinf(value):
        return "unbounded" if value > 0 else "-unbounded"
    if abs(value) < 1e-9:
        return "0"
    text = f"{value:,.{digits}g}" if abs(value) < 10**digits else f"{value:,.0f}"
    if "e" in text:
        mant, exp = text.split("e")
        text = f"{mant}e{int(exp)}"
    return text


def fmt_rps(value: float) -> str:
    """A request rate for a reader: ``1.25M``, ``84.1k``, ``950``."""
    if value is None or not math.isfinite(value):
        return fmt_sig(value)
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{fmt_sig(value / scale, 3)}{suffix}"
    return fmt_sig(value, 3)


def fmt_usd(value: float | None, decimals: int = 2) -> str:
    """Dollars with thousands separators: ``$1,234.56`` (``-`` for none)."""
    if value is None or not math.isfinite(value):
        return "-"
    return f"${value:,.{decimals}f}"


def fmt_usd_small(value: float | None, digits: int = 3) -> str:
    """Dollars with ``digits`` significant digits, never in exponent form: ``$0.000217``."""
    if value is None or not math.isfinite(value):
        return "-"
    if value == 0:
        return "$0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    return f"${value:,.{decimals}f}"


def finite_json(obj: object) -> object:
    """Replace non-finite floats (inf AICc, nan LOO) with None so the JSON is standard."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite_json(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [finite_json(v) for v in obj]
    return obj

"""Argument types shared by the ``sizing`` and ``runners`` command lines.

Each parser turns one command-line word into a value in the unit its name says, or raises
``argparse.ArgumentTypeError`` with a message that names the word and what was expected.
"""

from __future__ import annotations

import argparse
import math
import re
from typing import Any, NoReturn

from sizing.errors import printable


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr and exit code 2."""

    def error(self, message: str) -> NoReturn:
        """Print ``message`` as one line (controls escaped) and exit with status 2."""
        self.exit(2, f"{self.prog}: error: {printable(message)}\n")


def parse_rps(text: str) -> float:
    """Positive finite requests per second, e.g. ``1e6`` or ``250000``."""
    try:
        value = float(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number; expected a positive request rate such as 1e6"
        ) from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a positive finite request rate; expected e.g. 1e6"
        )
    return value


_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(us|µs|ms|s)\s*$")
_DURATION_MS = {"us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1000.0}


def parse_duration_ms(text: str) -> float:
    """A positive duration with a unit (``5ms``, ``0.005s``, ``500us``) in milliseconds."""
    m = _DURATION.match(text)
    if not m:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration with a unit; expected e.g. 5ms, 0.005s or 500us"
        )
    value = float(m.group(1)) * _DURATION_MS[m.group(2)]
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a duration must be longer than zero")
    return value


_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([kmg]?)(i?b?)\s*$", re.IGNORECASE)
_SIZE_MULT = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def parse_size(text: str) -> int:
    """A response size: plain bytes, or with K/KB/KiB, M/MB/MiB, G (powers of 1024)."""
    m = _SIZE.match(text)
    if not m or (m.group(3).lower() == "i"):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a size; expected bytes or a size such as 0, 1KB, 53KB, 1MB"
        )
    return round(float(m.group(1)) * _SIZE_MULT[m.group(2).lower()])


def parse_fraction(text: str) -> float:
    """A fraction in [0, 1): ``0.2`` or ``20%``."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a fraction; expected e.g. 0.2 or 20%"
        ) from None
    if not (0 <= value < 1):
        raise argparse.ArgumentTypeError(f"{text!r} is outside [0, 1); expected e.g. 0.2 or 20%")
    return value


def int_at_least(low: int) -> Any:
    """An argument type for integers no smaller than ``low``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{text!r} must be >= {low}")
        return value

    return parse

"""Command-line values both CLIs share: each turns one word into a value in its unit.

Each parser raises ``argparse.ArgumentTypeError`` with a message naming the word and what was
expected; `Parser` turns that into one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TypeAlias, TypeVar

from trialtable.fields import printable as printable  # messages of both CLIs escape by it
from trialtable.pathargs import check_namespace
from trialtable.read import RANGES

#: The protocol both ``runners`` (what is measured) and ``sizing`` (what is sized) assume
#: unless told, so that a measurement made with defaults is used by a sizing with defaults.
DEFAULT_PROTOCOL = "https"


#: Largest vCPU, thread or connection count a list may hold (bounds the work it asks for).
MAX_COUNT = 1_000_000

#: Longest duration a command line takes [ms]: 1e12 ms (about 32 years), the trial table's
#: bound on an SLA and on a trial's length (`trialtable.read.RANGES`). Longer is a typo; it
#: would only overflow the arithmetic built on it.
MAX_DURATION_MS = min(RANGES["sla_p99_ms"][1], RANGES["duration_s"][1] * 1000.0)

#: Largest response size a command line takes [B]: the trial table's ``file_bytes`` bound
#: (2^53 B, 8 PiB, where a float still holds every byte count exactly).
MAX_SIZE_BYTES = int(RANGES["file_bytes"][1])


class HelpFormatter(argparse.HelpFormatter):
    """Help that shows every option's default (unless its text already speaks of one)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            not action.option_strings
            or action.required
            or action.nargs == 0
            or default is argparse.SUPPRESS
            or re.search(r"\bdefault\b", text)
        ):
            return text
        if default is None or default == []:
            return text + " (default: not set)"
        return text + " (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr and exit code 2."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        """Print ``message`` as one line and exit with status 2."""
        self.exit(2, f"{self.prog}: error: {printable(message)}\n")

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """Parse, then check every declared path (`trialtable.pathargs`) before work starts."""
        parsed, extras = super().parse_known_args(args, namespace)
        check_namespace(self, parsed)
        return parsed, extras


#: What ``add_subparsers(parser_class=Parser)`` returns: each subcommand adds its parser to it.
Subcommands: TypeAlias = "argparse._SubParsersAction[Parser]"


def format_option(p: argparse.ArgumentParser, formats: tuple[str, ...] = ("table", "json")) -> None:
    """Add ``--format`` to a command that prints a table.

    ``formats`` are the choices, the first one the default.
    """
    p.add_argument("--format", choices=formats, default=formats[0], help="output format")


#: Longest word a number parser reads: longer is refused before any pattern runs on it.
MAX_WORD = 1000


def _too_long(text: str) -> None:
    if len(text) > MAX_WORD:
        raise argparse.ArgumentTypeError(
            f"{text[:20]!r}... is {len(text)} characters long; a value has at most {MAX_WORD}"
        )


# Each number is one unambiguous pattern (digits, then an optional fraction), so a long
# word that does not match fails in linear time.
_RPS = re.compile(
    r"^\s*([-+]?(?:(?:[0-9_]+(?:\.[0-9_]+)?|\.[0-9_]+)(?:[eE][-+]?[0-9]+)?|inf|nan))"
    r"\s*([kKmMgG]?)\s*$"
)
_RPS_MULT = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9}


def parse_rps(text: str) -> float:
    """Positive finite requests per second: ``1e6``, ``250000``, ``250k``, ``1M`` or ``1.5G``."""
    _too_long(text)
    m = _RPS.match(text)
    if not m:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number; expected a positive request rate such as 1e6, 250k or 1M"
        )
    try:
        value = float(m.group(1).replace("_", "")) * _RPS_MULT[m.group(2).lower()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number; expected a positive request rate such as 1e6, 250k or 1M"
        ) from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a positive finite request rate; expected e.g. 1e6, 250k or 1M"
        )
    return value


_DURATION = re.compile(
    r"^\s*((?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)\s*(us|µs|ms|s)\s*$"
)
_DURATION_MS = {"us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1000.0}


def parse_duration_ms(text: str) -> float:
    """A positive duration with a unit (``5ms``, ``0.005s``, ``500us``) in milliseconds."""
    _too_long(text)
    m = _DURATION.match(text)
    if not m:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration with a unit; expected e.g. 5ms, 0.005s or 500us"
        )
    value = float(m.group(1)) * _DURATION_MS[m.group(2)]
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a duration must be longer than zero")
    if not value <= MAX_DURATION_MS:  # also inf, from a number too long for a float
        raise argparse.ArgumentTypeError(
            f"{text!r}: a duration must be at most {MAX_DURATION_MS / 1000:g}s"
        )
    return value


_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?|\.[0-9]+)\s*([kmg]?)(i?b?)\s*$", re.IGNORECASE)
_SIZE_MULT = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def parse_size(text: str) -> int:
    """A response size: plain bytes, or with K/KB/KiB, M/MB/MiB, G (powers of 1024).

    At most `MAX_SIZE_BYTES`.
    """
    _too_long(text)
    m = _SIZE.match(text)
    if not m or (m.group(3).lower() == "i"):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a size; expected bytes or a size such as 0, 1KB, 53KB, 1MB"
        )
    value = float(m.group(1)) * _SIZE_MULT[m.group(2).lower()]
    if not value <= MAX_SIZE_BYTES:  # also inf, from a number too long for a float
        raise argparse.ArgumentTypeError(
            f"{text!r}: a size must be at most {MAX_SIZE_BYTES} bytes (8 PiB)"
        )
    return round(value)


def number_or_percent(text: str, what: str, example: str) -> float:
    """``text`` as a number, or as a percentage (``20%`` is 0.2).

    ``what`` and ``example`` word the refusal: ``'x' is not WHAT; expected e.g. EXAMPLE``.
    """
    _too_long(text)
    try:
        return float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not {what}; expected e.g. {example}"
        ) from None


def parse_fraction(text: str) -> float:
    """A fraction in [0, 1): ``0.2`` or ``20%``."""
    value = number_or_percent(text, "a fraction", "0.2 or 20%")
    if not (0 <= value < 1):
        raise argparse.ArgumentTypeError(f"{text!r} is outside [0, 1); expected e.g. 0.2 or 20%")
    return value


def int_at_least(low: int) -> Callable[[str], int]:
    """An argument type for integers no smaller than ``low``."""
    return int_between(low, None)


def int_between(low: int, high: int | None) -> Callable[[str], int]:
    """An argument type for integers in ``[low, high]`` (no upper bound when ``high`` is None)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{text!r} must be >= {low}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"{text!r} must be <= {high}")
        return value

    return parse


def float_between(low: float, high: float, what: str = "") -> Callable[[str], float]:
    """An argument type for finite numbers in ``[low, high]``; ``what`` names them in errors."""
    expected = what or f"a number from {low:g} to {high:g}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a number; expected {expected}"
            ) from None
        if not low <= value <= high:  # also NaN
            raise argparse.ArgumentTypeError(f"{text!r}: expected {expected}")
        return value

    return parse


def parse_path(text: str) -> str:
    """A file or folder path, as given; an empty or blank one is refused.

    The operating system reads ``""`` (after ``Path``, ``"."``) as the current folder, so an
    empty value (an unset shell variable) would read or write there unasked.
    """
    if not text.strip():
        raise argparse.ArgumentTypeError(
            f"{text!r} is an empty path; expected a file or folder name"
        )
    return text


def parse_int_list(text: str) -> tuple[int, ...]:
    """``"1,2,4"`` -> ``(1, 2, 4)``; every value a positive integer."""
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a comma-separated list of integers, e.g. 1,2,4"
        ) from None
    if not values or min(values) < 1 or max(values) > MAX_COUNT:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected positive integers up to {MAX_COUNT}, e.g. 1,2,4"
        )
    return values


def parse_seconds(text: str, *, allow_zero: bool = False) -> int:
    """A duration with a unit in whole seconds [s] (load generators run whole seconds)."""
    if allow_zero and text.strip() in ("0", "0s"):
        return 0
    ms = parse_duration_ms(text)
    seconds = ms / 1000.0
    if not math.isclose(seconds, round(seconds)) or round(seconds) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: wrk runs whole seconds; use e.g. 3s or 10s")
    return round(seconds)


#: What a checked option parses to: a number, or a tuple of numbers (a list option).
Parsed = TypeVar("Parsed", bound=float | tuple[float, ...])


def within_column(
    parse: Callable[[str], Parsed], column: str, scale: float = 1.0
) -> Callable[[str], Parsed]:
    """``parse``, then refuse a value the trial table refuses in ``column``.

    The bounds are the reader's (`trialtable.read.RANGES`), so an option a run accepts is
    one its own rows can hold. ``scale`` converts the parsed value to the column's unit; a
    tuple (a list option) is checked value by value.
    """
    low, high = RANGES[column]

    def parse_within(text: str) -> Parsed:
        value = parse(text)
        for v in value if isinstance(value, tuple) else (value,):
            if not low <= v * scale <= high:
                raise argparse.ArgumentTypeError(
                    f"{text!r} is outside [{low / scale:g}, {high / scale:g}], the range "
                    f"of the trial table's {column} column"
                )
        return value

    parse_within.__name__ = getattr(parse, "__name__", "value")
    return parse_within


#: Longest trial a command line runs [s]: one day. A longer one is a typo (``1e8s``); the
#: trial table's own bound (`RANGES`) is for reading, and far beyond any load test.
MAX_TRIAL_SECONDS = 86_400

#: Longest free-text label a row stores [characters].
MAX_LABEL = 200


def parse_trial_seconds(text: str) -> int:
    """A trial's length in whole seconds [s], 1 to `MAX_TRIAL_SECONDS`."""
    seconds = parse_seconds(text)
    if seconds > MAX_TRIAL_SECONDS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is longer than {MAX_TRIAL_SECONDS:,} s (one day), the longest trial"
        )
    return seconds


def parse_label(text: str) -> str:
    """A free-text label stored in each row: printable, at most `MAX_LABEL` characters.

    A control character (an escape, a bell, a newline) would reach every terminal and
    spreadsheet that shows the table; it is refused, not stored.
    """
    if len(text) > MAX_LABEL:
        raise argparse.ArgumentTypeError(f"a label has at most {MAX_LABEL} characters")
    if not text.isprintable():
        raise argparse.ArgumentTypeError(
            f"{printable(text)!r} holds a control character; a label is printable text"
        )
    return text

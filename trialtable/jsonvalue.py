"""The type of a JSON document, declared once for both packages.

`JsonValue` is what ``json.loads`` can return (and what ``json.dumps`` takes): a text, a
number, a flag, null, or a list or object of JSON values. Lists and objects are read as
`Sequence` and `Mapping`, so that a document may be built from any list, tuple or dict whose
items are JSON values. `JsonObject` is one object, as a dict that may still be filled in.
A reader narrows a value with ``isinstance`` where it leaves the document.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

#: A JSON scalar: text, number, flag or null.
JsonScalar: TypeAlias = str | int | float | bool | None
#: Any JSON value: a scalar, a list of values or an object of values.
JsonValue: TypeAlias = "JsonScalar | Sequence[JsonValue] | Mapping[str, JsonValue]"
#: A JSON object, as a dict (being built, or just parsed).
JsonObject: TypeAlias = "dict[str, JsonValue]"


def as_float(value: JsonValue) -> float:
    """``float(value)`` of a scalar: a number, a flag or a number's text.

    Raises
    ------
    TypeError
        For null, a list or an object (``float`` refuses them the same way).
    ValueError
        For a text that is not a number.
    """
    if isinstance(value, str | int | float):
        return float(value)
    raise TypeError(f"expected a number, got {type(value).__name__}")


def as_int(value: JsonValue) -> int:
    """``int(value)`` of a scalar: an integer, a flag, a float (truncated) or an integer's text.

    Raises
    ------
    TypeError
        For null, a list or an object (``int`` refuses them the same way).
    ValueError
        For a text that is not an integer, or a float that is not finite.
    """
    if isinstance(value, str | int | float):
        return int(value)
    raise TypeError(f"expected an integer, got {type(value).__name__}")

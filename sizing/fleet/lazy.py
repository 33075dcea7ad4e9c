"""A list whose items are made when read: the options and exclusions of a large answer.

`sizing.fleet.engine` hands out its options and excluded rows as `Lazy` lists: the printed
table reads ten options of tens of thousands, so only those are made.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, SupportsIndex, TypeVar, overload

__all__ = ["Lazy"]

T = TypeVar("T")
#: Items made at a time while a `Lazy` list is iterated.
_CHUNK = 32


class Lazy(list[T]):
    """A list of ``n`` items made on first use by ``make(start, stop)`` (items start..stop-1).

    Indexing, slicing and iterating make only the items up to the one asked for; any other
    list operation makes them all first. A copy or a pickle is a plain list.
    """

    def __init__(self, n: int, make: Callable[[int, int], list[T]]) -> None:
        super().__init__()
        self._n = n
        self._make = make

    def _fill(self, upto: int) -> None:
        have = list.__len__(self)
        upto = min(upto, self._n)
        if have < upto:
            list.extend(self, self._make(have, upto))

    def _all(self) -> None:
        self._fill(self._n)

    def __len__(self) -> int:
        return self._n

    def __bool__(self) -> bool:
        return self._n > 0

    def __iter__(self) -> Iterator[T]:
        for i in range(self._n):
            if i >= list.__len__(self):
                self._fill(i + _CHUNK)
            yield list.__getitem__(self, i)

    @overload
    def __getitem__(self, key: SupportsIndex) -> T: ...

    @overload
    def __getitem__(self, key: slice) -> list[T]: ...

    def __getitem__(self, key: SupportsIndex | slice) -> T | list[T]:
        if isinstance(key, slice):
            start, stop, step = key.indices(self._n)
            if step > 0:
                self._fill(stop)
                return list.__getitem__(self, slice(start, stop, step))
            self._all()
            return list.__getitem__(self, key)
        i = key.__index__()
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError("list index out of range")
        self._fill(i + 1)
        return list.__getitem__(self, i)

    def __reduce_ex__(self, protocol: SupportsIndex) -> Any:
        return (list, (list(iter(self)),))

    def __repr__(self) -> str:
        self._all()
        return list.__repr__(self)


def _whole(name: str) -> Any:
    """A list method that first makes every item (and then knows the new length)."""
    method = getattr(list, name)

    def run(self: Lazy[Any], *args: Any, **kwargs: Any) -> Any:
        for item in (self, *args):  # another Lazy list compared or added is made too
            if isinstance(item, Lazy):
                item._all()
        out = method(self, *args, **kwargs)
        self._n = list.__len__(self)
        return out

    run.__name__ = name
    run.__doc__ = method.__doc__
    return run


for _name in (
    "__contains__",
    "__reversed__",
    "__eq__",
    "__ne__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__add__",
    "__iadd__",
    "__mul__",
    "__rmul__",
    "__imul__",
    "__setitem__",
    "__delitem__",
    "append",
    "extend",
    "insert",
    "pop",
    "remove",
    "index",
    "count",
    "sort",
    "reverse",
    "copy",
    "clear",
):
    setattr(Lazy, _name, _whole(_name))
Lazy.__hash__ = None

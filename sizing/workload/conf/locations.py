"""Which location of a server NGINX sends a URI to, as its ``try_files`` fallback does.

NGINX's order (https://nginx.org/en/docs/http/ngx_http_core_module.html#location): an exact
``=`` match; else the longest prefix, final when it is ``^~``; else the first regex (``~``,
``~*``) in the order written that matches; else that longest prefix. Only the server's own
locations are searched (not nested ones), and a regex is tried only if it cannot backtrack for
long (`tame`): a configuration is data, and ``(a+)+$`` on a short path would run for minutes.
Python's ``re`` stands in for NGINX's PCRE; a pattern it cannot read is passed over.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

from trialtable.nginxconf import Statement

#: Python's own pattern parser and its opcodes (Python 3.11's ``re`` package: private modules,
#: read only to see a pattern as the matcher will).
_parser = importlib.import_module("re._parser")
sre = importlib.import_module("re._constants")
#: The longest fallback URI or location regex followed (longer: not followed).
MAX_URI = 200
#: A regex is tried only with at most this many repeats (``*``, ``+``, ``?``, ``{}``), each of
#: one character or class: at most about ``MAX_URI ** MAX_REPEATS`` steps on a path.
MAX_REPEATS = 3
#: The ``location`` modifiers, longest first (written apart or glued to the path, as NGINX
#: reads both: ``location ~ \.php$`` and ``location ~\.php$``).
MODIFIERS = ("~*", "^~", "=", "~")
#: What a URI's arguments are written as after its path (cut before the path is matched).
ARGUMENTS = re.compile(r"\?|\$is_args|\$args|\$query_string")
_ATOMS = {sre.LITERAL, sre.NOT_LITERAL, sre.IN, sre.ANY}
_REPEATS = {sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT}
_NESTS = {sre.SUBPATTERN: 3, sre.ASSERT: 1, sre.ASSERT_NOT: 1}


def modifier(location: Statement) -> tuple[str, str]:
    """A location's modifier (empty for a prefix or a named location) and its path or regex."""
    if len(location.args) >= 2:
        return location.args[0], location.args[1]
    arg = location.args[0] if location.args else ""
    for mod in MODIFIERS:
        if len(arg) > len(mod) and arg.startswith(mod):
            return mod, arg[len(mod) :]
    return "", arg


def fallback_target(server: Statement, target: str) -> tuple[Statement, ...] | None:
    """The location a ``try_files`` fallback (``@name`` or a URI) goes to, if one can tell."""
    locations = [s for s in server.block or () if s.name == "location"]
    if target.startswith("@"):
        return next(((s,) for s in locations if s.args == [target]), None)
    path = ARGUMENTS.split(target, maxsplit=1)[0]
    if not path.startswith("/") or "$" in path or len(path) > MAX_URI:
        return None
    return match(locations, path)


def match(locations: list[Statement], path: str) -> tuple[Statement, ...] | None:
    """The location of ``locations`` NGINX picks for ``path``, or None."""
    prefix: tuple[int, Statement, str] | None = None
    regexes = []
    for loc in locations:
        mod, arg = modifier(loc)
        if mod == "=" and arg == path:
            return (loc,)
        if mod in ("", "^~") and path.startswith(arg) and (prefix is None or len(arg) > prefix[0]):
            prefix = (len(arg), loc, mod)
        elif mod in ("~", "~*"):
            flags = re.IGNORECASE if mod == "~*" else 0
            if tame(arg, flags):
                regexes.append((loc, arg, flags))
    if prefix is not None and prefix[2] == "^~":
        return (prefix[1],)
    for loc, pattern, flags in regexes:
        try:
            if re.search(pattern, path, flags):
                return (loc,)
        except (re.error, OverflowError, RecursionError, ValueError):
            continue
    return (prefix[1],) if prefix else None


def tame(pattern: str, flags: int = 0) -> bool:
    """``pattern`` is short and repeats at most `MAX_REPEATS` single characters or classes.

    Read through Python's own pattern parser, so escapes, verbose mode and nesting are seen
    as the matcher sees them; a group, branch or backreference under a repeat, or a pattern
    the parser refuses, is not tame.
    """
    if len(pattern) > MAX_URI:
        return False
    try:
        parsed = _parser.parse(pattern, flags)
    except (re.error, OverflowError, RecursionError, ValueError):
        return False
    budget = [MAX_REPEATS]
    return _tame_items(list(parsed), budget)


def _tame_items(items: list[tuple[Any, Any]], budget: list[int]) -> bool:
    for op, av in items:
        if op in _ATOMS or op is sre.AT:
            continue
        if op in _REPEATS:
            budget[0] -= 1
            repeated = list(av[2])
            if budget[0] < 0 or len(repeated) != 1 or repeated[0][0] not in _ATOMS:
                return False
        elif op is sre.BRANCH:
            if not all(_tame_items(list(b), budget) for b in av[1]):
                return False
        elif op in _NESTS:
            if not _tame_items(list(av[_NESTS[op]]), budget):
                return False
        else:
            return False  # a backreference, a conditional, an atomic group ...
    return True

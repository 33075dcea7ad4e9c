"""Read an nginx.conf and the files it includes, bounded, through ``crossplane``.

Parsing never runs anything: each file is read once with `trialtable.files.read_bounded`
(a regular file or a link to one: a pipe, device or folder is refused at once), checked for
size and line length, and handed to crossplane's parser as text. ``include`` is followed here,
not by crossplane, so that a glob, a loop and the number of files stay bounded; the included
statements are spliced in place and checked against the context they land in by crossplane's
own analyzer.

Every refusal is a `ConfError` of one line naming the file and line. Shared: ``python -m
sizing workload --from-conf`` derives a workload from what it reads
(`sizing.workload.conf`), ``python -m runners sweep --nginx-conf`` runs it
(`runners.deploy.userconf`).
"""

from __future__ import annotations

import errno
import fnmatch
import glob
import itertools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Required, TypedDict

import crossplane
import crossplane.analyzer
import crossplane.ext.lua
import crossplane.lexer
import crossplane.parser
from crossplane.errors import NgxParserBaseException

from trialtable.errors import ConfError
from trialtable.files import read_bounded

MiB = 1024 * 1024
#: Largest file read [B]: crossplane lexes a character at a time, about 3 s per MB on a busy
#: core (a 10 MB map took 29 s and 430 MB); a hand-written configuration is kilobytes.
MAX_FILE_BYTES = 4 * MiB
#: Longest line of a file [B].
MAX_LINE_BYTES = MiB
#: Most files one ``include`` glob may match.
MAX_GLOB_MATCHES = 1000
#: Most folder entries one ``include`` glob may look at while it searches (a pattern such as
#: ``/*/*/*/*/*/x.conf`` would otherwise walk the whole file system before it matches nothing).
MAX_GLOB_SCANNED = 100_000
#: Most files read for one configuration (includes counted each time they are read).
MAX_FILES = 2000
#: Most bytes read for one configuration, all files together [B] (crossplane lexes about 1 MB
#: per second of CPU).
MAX_TOTAL_BYTES = 4 * MiB
#: Deepest chain of includes.
MAX_DEPTH = 32

#: Directives of modules crossplane does not list (Lua, NDK, headers-more) or of NGINX
#: versions newer than its table; anything else unknown is refused as a module not known.
EXTRA_DIRECTIVES = frozenset(
    {
        *crossplane.ext.lua.LuaBlockPlugin.directives,
        *(
            f"{phase}_by_lua{kind}"
            for phase in (
                "init",
                "init_worker",
                "exit_worker",
                "set",
                "rewrite",
                "access",
                "content",
                "balancer",
                "header_filter",
                "body_filter",
                "log",
                "ssl_certificate",
                "ssl_session_fetch",
                "ssl_session_store",
                "ssl_client_hello",
                "server_rewrite",
            )
            for kind in ("", "_block", "_file")
        ),
        *(
            f"lua_{name}"
            for name in (
                "package_path package_cpath code_cache shared_dict socket_log_errors "
                "need_request_body ssl_verify_depth ssl_trusted_certificate max_pending_timers "
                "max_running_timers sa_restart load_resty_core use_default_type "
                "capture_error_log socket_keepalive_timeout socket_pool_size "
                "socket_connect_timeout socket_read_timeout socket_send_timeout "
                "check_client_abort transform_underscores_in_response_headers "
                "http10_buffering regex_cache_max_entries regex_match_limit "
                "malloc_trim ssl_protocols ssl_ciphers ssl_conf_command"
            ).split()
        ),
        "set_by_lua",
        "access_by_lua",
        "more_set_headers",
        "more_clear_headers",
        "more_set_input_headers",
        "more_clear_input_headers",
        "set_escape_uri",
        "set_unescape_uri",
        "ndk_set_var_value",
        "http2",
        "http3",
        "quic_retry",
        "keepalive_time",
        "ssl_conf_command",
        "ssl_reject_handshake",
        "proxy_ssl_conf_command",
        "js_import",
        "js_header_filter",
        "js_body_filter",
        "js_var",
        "js_fetch_trusted_certificate",
        "js_shared_dict_zone",
        "js_periodic",
        "js_engine",
    }
)


@dataclass
class Statement:
    """One directive: where it is, its arguments and its block (includes spliced in)."""

    name: str
    args: list[str]
    file: str
    line: int
    block: list[Statement] | None = None

    @property
    def where(self) -> str:
        """``file:line``."""
        return f"{self.file}:{self.line}"


@dataclass
class Config:
    """A configuration read: its top-level statements and the files read, in order."""

    path: str
    statements: list[Statement]
    files: list[str] = field(default_factory=list)


@dataclass
class _Budget:
    files: int = 0
    bytes: int = 0


def _read(path: str, budget: _Budget) -> str:
    """The text of one file, within every bound."""
    try:
        data = read_bounded(path, MAX_FILE_BYTES, regular_only=True)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ConfError(f"{path}: a loop of symbolic links") from None
        raise ConfError(f"{path}: {exc.strerror or exc}") from None
    budget.files += 1
    budget.bytes += len(data)
    if budget.files > MAX_FILES or budget.bytes > MAX_TOTAL_BYTES:
        raise ConfError(
            f"{path}: the configuration reads more than {MAX_FILES} files or "
            f"{MAX_TOTAL_BYTES // MiB} MB in all; refused"
        )
    start = 0
    for number in itertools.count(1):
        end = data.find(b"\n", start)
        stop = len(data) if end < 0 else end
        if stop - start > MAX_LINE_BYTES:
            raise ConfError(f"{path}:{number}: a line over {MAX_LINE_BYTES // MiB} MB; refused")
        if end < 0:
            break
        start = end + 1
    return data.decode("utf-8", errors="replace")


@contextmanager
def _lexing(text: str) -> Iterator[None]:
    """The crossplane parser, lexing ``text`` instead of opening its file name again."""

    def lex(filename: str) -> Iterator[tuple[str, int, bool]]:
        tokens = crossplane.lexer._lex_file_object([text])
        yield from crossplane.lexer._balance_braces(tokens, filename)

    saved = crossplane.parser.lex
    crossplane.parser.lex = lex
    try:
        yield
    finally:
        crossplane.parser.lex = saved


class ParsedStatement(TypedDict, total=False):
    """One statement as ``crossplane.parse`` gives it: directive, arguments, line, block."""

    directive: Required[str]
    args: Required[list[str]]
    line: Required[int]
    block: list[ParsedStatement]


def _statements(payload: list[ParsedStatement], path: str) -> list[Statement]:
    out = []
    for s in payload:
        block = s.get("block")
        out.append(
            Statement(
                s["directive"],
                list(s["args"]),
                path,
                s["line"],
                _statements(block, path) if block is not None else None,
            )
        )
    return out


def parse_file(path: str, budget: _Budget) -> list[Statement]:
    """One file's statements (``include`` not followed), refused on any error."""
    text = _read(path, budget)
    with _lexing(text):
        try:
            payload = crossplane.parse(
                path, single=True, catch_errors=False, check_ctx=False, comments=False
            )
        except NgxParserBaseException as exc:
            raise ConfError(f"{path}:{exc.lineno or '?'}: {exc.strerror}") from None
        except (RecursionError, StopIteration, RuntimeError):
            raise ConfError(f"{path}: does not parse (unbalanced or nested too deep)") from None
    for error in payload["errors"][:1]:  # crossplane keeps a file's last error in the payload
        reason = str(error["error"]).removesuffix(f" in {path}:{error['line']}")
        line = f":{error['line']}" if error["line"] else ""
        raise ConfError(f"{path}{line}: {reason or 'does not parse as an nginx configuration'}")
    return _statements(payload["config"][0]["parsed"], path)


#: Blocks whose entries are data, not directives (``types``, ``map`` ...): not checked.
DATA_BLOCKS = frozenset({"types", "map", "geo", "split_clients", "match", "charset_map"})


@dataclass
class _Walk:
    """The state of one `load`: the folder relative includes start from, the budget."""

    prefix: str
    budget: _Budget = field(default_factory=_Budget)
    files: list[str] = field(default_factory=list)


def _check(s: Statement, ctx: tuple[str, ...]) -> None:
    """Refuse a directive no known module has, or one in a context NGINX refuses it in."""
    known = s.name in crossplane.analyzer.DIRECTIVES or s.name in EXTRA_DIRECTIVES
    if not known:
        raise ConfError(
            f'{s.where}: unknown directive "{s.name}" (a module this reader does not know)'
        )
    stmt = {"directive": s.name, "line": s.line, "args": s.args}
    term = "{" if s.block is not None else ";"
    try:
        crossplane.analyzer.analyze(s.file, stmt, term, ctx, check_ctx=True, check_args=False)
    except NgxParserBaseException as exc:
        raise ConfError(f"{s.where}: {exc.strerror}") from None


def _matches(s: Statement, walk: _Walk) -> list[str]:
    """The files an ``include`` names (a glob: at most `MAX_GLOB_MATCHES`, sorted)."""
    if len(s.args) != 1:
        raise ConfError(f'{s.where}: "include" takes one file name or pattern')
    if "\0" in s.args[0]:
        raise ConfError(f'{s.where}: "include" of a name with a NUL byte (no file has one)')
    pattern = os.path.join(walk.prefix, s.args[0])
    if not glob.has_magic(pattern):
        return [pattern]
    found = _glob(pattern, s)
    if len(found) > MAX_GLOB_MATCHES:
        raise ConfError(
            f"{s.where}: include {s.args[0]} matches more than {MAX_GLOB_MATCHES} files; refused"
        )
    return sorted(f for f in found if not os.path.isdir(f))


def _glob(pattern: str, s: Statement) -> list[str]:
    """What the absolute ``pattern`` matches, looking at `MAX_GLOB_SCANNED` folder entries at most.

    One folder level at a time, as `glob.glob` matches (a name starting with a dot only by a
    part starting with one; a folder that cannot be read matches nothing).
    """
    root, *parts = Path(pattern).parts
    found, scanned = [root], 0
    for i, part in enumerate(parts):
        last, matched = i == len(parts) - 1, []
        for base in found:
            if not glob.has_magic(part):
                path = os.path.join(base, part)
                matched += [path] if os.path.lexists(path) else []
                continue
            try:
                with os.scandir(base) as listing:
                    entries = list(itertools.islice(listing, MAX_GLOB_SCANNED - scanned + 1))
            except OSError:
                continue
            scanned += len(entries)
            if scanned > MAX_GLOB_SCANNED:
                raise ConfError(
                    f"{s.where}: include {s.args[0]} looks through more than "
                    f"{MAX_GLOB_SCANNED:,} folder entries; refused"
                )
            matched += [
                e.path
                for e in entries
                if fnmatch.fnmatchcase(e.name, part)
                and (part.startswith(".") or not e.name.startswith("."))
                and (last or os.path.isdir(e.path))
            ]
        found = matched
    return found


def _identity(path: str) -> tuple[int, int]:
    try:
        st = os.stat(path)
    except OSError as exc:
        raise ConfError(f"{path}: {exc.strerror or exc}") from None
    return st.st_dev, st.st_ino


def _expand(
    statements: list[Statement],
    ctx: tuple[str, ...],
    walk: _Walk,
    stack: tuple[tuple[int, int], ...],
) -> list[Statement]:
    """``statements`` with every include replaced by the statements it reads, checked."""
    out: list[Statement] = []
    for s in statements:
        _check(s, ctx)
        if s.name == "include":
            if len(stack) > MAX_DEPTH:
                raise ConfError(f"{s.where}: includes nested more than {MAX_DEPTH} deep")
            for path in _matches(s, walk):
                inner = parse_file(path, walk.budget)
                here = _identity(path)
                if here in stack:
                    raise ConfError(f"{s.where}: include loop: {path} includes itself")
                walk.files.append(path)
                out += _expand(inner, ctx, walk, (*stack, here))
            continue
        if s.block is not None and s.name not in DATA_BLOCKS:
            inner_ctx = tuple(crossplane.analyzer.enter_block_ctx({"directive": s.name}, ctx))
            s.block = _expand(s.block, inner_ctx, walk, stack)
        out.append(s)
    return out


def load(path: str | os.PathLike[str]) -> Config:
    """The configuration at ``path`` with its includes, every bound checked.

    Relative include paths start from the folder of ``path`` (NGINX's own rule when it is
    started with ``-c path``).

    Raises
    ------
    ConfError
        One line naming the file (and line) for a file that does not parse, an include loop,
        a glob of too many files, a file or line too large, a pipe, device, folder or loop of
        links, or a directive of an unknown module.
    """
    root = str(path)
    walk = _Walk(str(Path(root).absolute().parent))
    top = parse_file(root, walk.budget)
    walk.files.append(root)
    statements = _expand(top, (), walk, (_identity(root),))
    return Config(root, statements, walk.files)

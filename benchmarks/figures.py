"""The size a reader must hold, in figures: ``python benchmarks/figures.py [--list]``.

Counts, over ``sizing/``, ``runners/`` and ``trialtable/``: functions over 100 lines,
functions over 8 parameters, private names imported across modules, vocabularies (the same
values as a module-level tuple of strings named in capitals, in more than one module),
functions with ``Any`` in their signature, imports inside functions; and the README's lines
and the default ``recommend`` output's lines. ``--list`` names the places behind each figure.
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("sizing", "runners", "trialtable")


def _functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    return (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = fn.args
    names = [*a.posonlyargs, *a.args, *a.kwonlyargs]
    return len(names) - (1 if names and names[0].arg in ("self", "cls") else 0)


def _has_any(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    a = fn.args
    notes = [x.annotation for x in (*a.posonlyargs, *a.args, *a.kwonlyargs) if x.annotation]
    notes += [x.annotation for x in (a.vararg, a.kwarg) if x is not None and x.annotation]
    notes += [fn.returns] if fn.returns is not None else []
    return any(isinstance(n, ast.Name) and n.id == "Any" for note in notes for n in ast.walk(note))


def _vocabulary(node: ast.stmt) -> tuple[str, tuple[str, ...]] | None:
    """The name and values of a module-level tuple of strings named in capitals, else None."""
    if not isinstance(node, ast.Assign | ast.AnnAssign) or not isinstance(node.value, ast.Tuple):
        return None
    target = node.targets[0] if isinstance(node, ast.Assign) else node.target
    elts = node.value.elts
    if not (isinstance(target, ast.Name) and target.id.isupper() and len(elts) > 1):
        return None
    if all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in elts):
        return target.id, tuple(e.value for e in elts)  # type: ignore[attr-defined]
    return None


def code_figures() -> dict[str, list[str]]:
    """Each figure's name -> the places behind it."""
    out: dict[str, list[str]] = defaultdict(list)
    vocab: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT)
            tree = ast.parse(path.read_text())
            for fn in _functions(tree):
                where = f"{rel}:{fn.lineno} {fn.name}"
                if fn.end_lineno is not None and fn.end_lineno - fn.lineno + 1 > 100:
                    out["functions over 100 lines"].append(where)
                if _params(fn) > 8:
                    out["functions over 8 parameters"].append(where)
                if _has_any(fn):
                    out["functions with Any in their signature"].append(where)
                for inner in ast.walk(fn):
                    if isinstance(inner, ast.Import | ast.ImportFrom):
                        out["imports inside functions"].append(f"{rel}:{inner.lineno}")
            for node in ast.walk(tree):
                top = (getattr(node, "module", None) or "").split(".")[0]
                if isinstance(node, ast.ImportFrom) and top in PACKAGES:
                    for a in node.names:
                        if a.name.startswith("_") and not a.name.startswith("__"):
                            out["private names imported across modules"].append(
                                f"{rel}:{node.lineno} {node.module}.{a.name}"
                            )
            for node in tree.body:
                found = _vocabulary(node)
                if found:
                    vocab[found[1]].append(f"{rel} {found[0]}")
    for values, places in sorted(vocab.items()):
        if len(places) > 1:
            out["vocabularies declared in two modules"].append(
                f"{', '.join(values)}: {'; '.join(places)}"
            )
    return out


def output_lines() -> dict[str, int]:
    """The README's lines and the default answer's."""
    answer = subprocess.run(
        [sys.executable, "-m", "sizing", "recommend", "--rps", "1e6"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    return {
        "README lines": len((ROOT / "README.md").read_text().splitlines()),
        "recommend --rps 1e6 output lines": len(answer.splitlines()),
    }


def main() -> None:
    """Print each figure (and with ``--list`` its places)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="name the places behind each figure")
    args = parser.parse_args()
    names = (
        "functions over 100 lines",
        "functions over 8 parameters",
        "private names imported across modules",
        "vocabularies declared in two modules",
        "functions with Any in their signature",
        "imports inside functions",
    )
    figures = code_figures()
    for name in names:
        print(f"{name:45} {len(figures.get(name, [])):6,}")
        if args.list:
            for place in figures.get(name, []):
                print(f"    {place}")
    for name, count in output_lines().items():
        print(f"{name:45} {count:6,}")


if __name__ == "__main__":
    main()

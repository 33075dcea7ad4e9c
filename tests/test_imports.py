"""The import graph: runners -> trialtable <- sizing, nothing else across, and no cycles."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("runners", "sizing", "trialtable")


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Project modules ``path`` imports (at any depth: lazy imports count too)."""
    tree = ast.parse(path.read_text())
    module = _module(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                names = [".".join([*base, node.module] if node.module else base)]
            else:
                names = [node.module or ""]
        else:
            continue
        out.update(n for n in names if n.split(".")[0] in PACKAGES)
    return out


def graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports."""
    return {_module(p): _imports(p) for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def test_packages_import_in_one_direction():
    bad = [
        f"{m} imports {i}"
        for m, imports in graph().items()
        for i in imports
        if (m.startswith("runners") and i.startswith("sizing"))
        or (m.startswith("sizing") and i.startswith("runners"))
        or (m.startswith("trialtable") and not i.startswith("trialtable"))
    ]
    assert not bad, bad


def test_no_package_level_cycles_and_no_module_cycles():
    g = graph()
    top = {m.split(".")[0]: set() for m in g}
    for m, imports in g.items():
        top[m.split(".")[0]].update(
            i.split(".")[0] for i in imports if i.split(".")[0] != m.split(".")[0]
        )
    assert top["trialtable"] == set()
    assert "runners" not in top["sizing"] and "sizing" not in top["runners"]
    # Module cycles through top-level (import-time) imports only: a lazy import inside a
    # function may close a loop on purpose.
    eager = {
        _module(p): _top_level_imports(p) for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")
    }
    seen: dict[str, int] = {}

    def visit(m: str, stack: list[str]) -> None:
        seen[m] = 1
        for i in eager.get(m, ()):
            if i not in eager:
                continue
            if seen.get(i) == 1:
                raise AssertionError(" -> ".join([*stack, m, i]))
            if i not in seen:
                visit(i, [*stack, m])
        seen[m] = 2

    for m in eager:
        if m not in seen:
            visit(m, [])


def _top_level_imports(path: Path) -> set[str]:
    """Project modules imported at import time (a name from a package counts as its module)."""
    module = _module(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    modules = {_module(p) for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    out = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            name = node.module if not node.level else f"{package}.{node.module}"
            for a in node.names:
                out.add(f"{name}.{a.name}" if f"{name}.{a.name}" in modules else name)
    return {n for n in out if n.split(".")[0] in PACKAGES}

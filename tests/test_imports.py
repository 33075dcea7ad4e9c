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


def _modules() -> set[str]:
    return {_module(p) for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}


def _all_imports(path: Path, modules: set[str]) -> set[str]:
    """Project modules ``path`` imports anywhere in it: at the top, in functions, under
    ``TYPE_CHECKING``; ``from package import module`` counts as that module."""
    module = _module(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                name = f"{base}.{node.module}" if node.module else base
            else:
                name = node.module or ""
            for a in node.names:
                full = f"{name}.{a.name}"
                out.add(full if full in modules else name)
    return {n for n in out if n in modules and n != module}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[v] = min(low[v], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_cycle_finder_finds_a_lazy_cycle():
    """The check can fail: a loop closed by an import inside a function is a cycle."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_among_sizing_modules_lazy_imports_included():
    modules = _modules()
    graph = {_module(p): _all_imports(p, modules) for p in sorted((ROOT / "sizing").rglob("*.py"))}
    assert "sizing.fleet.counts" in graph["sizing.fleet.decision"]  # the graph sees modules
    assert cycles(graph) == []


def _notebook_imports(path: Path) -> set[str]:
    import json

    out: set[str] = set()
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] != "code":
            continue
        src = "".join(cell["source"])
        src = "\n".join(
            "" if line.lstrip().startswith(("%", "!")) else line for line in src.splitlines()
        )
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.Import):
                out.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                out.update(f"{node.module}.{a.name}" for a in node.names)
                out.add(node.module)
    return out


def test_no_notebook_imports_a_cli_module():
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert notebooks
    bad = {
        nb.name: sorted(i for i in _notebook_imports(nb) if "cli" in i.split("."))
        for nb in notebooks
    }
    bad = {k: v for k, v in bad.items() if v}
    assert not bad, bad
    assert "sizing.pipeline" in _notebook_imports(ROOT / "notebooks" / "sizing_report.ipynb")


def test_no_module_cycles_in_any_package_lazy_imports_included():
    """runners, trialtable and sizing: no loop of imports, imports inside functions counted."""
    g = graph()

    def module_of(name: str) -> str | None:
        while name not in g and "." in name:
            name = name.rsplit(".", 1)[0]
        return name if name in g else None

    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for imported in g[m]:
            i = module_of(imported)
            if i is None or i == m:
                continue
            if state.get(i) == 1:
                cycles.append(" -> ".join([*stack[stack.index(i) :], i]))
            elif i not in state:
                visit(i)
        stack.pop()
        state[m] = 2

    for m in sorted(g):
        if m not in state:
            visit(m)
    assert not cycles, cycles


#: sizing's layers, lowest first, as docs/architecture.md draws them: a module
#: imports only modules of its own layer or below.
SIZING_LAYERS = (
    ("sizing.errors", "sizing.units", "sizing.paths", "sizing.vocabulary", "sizing.report.render"),
    ("sizing.workload",),
    ("sizing.catalog",),
    ("sizing.model",),
    ("sizing.fitting",),
    ("sizing.fleet",),
    ("sizing.request",),
    ("sizing.evidence",),
    ("sizing.pipeline",),
    ("sizing.analyses",),
    ("sizing.report",),
    ("sizing.cli", "sizing.__main__", "sizing"),
)


def _layer(module: str) -> int:
    """The layer of ``module``: that of the longest prefix named in `SIZING_LAYERS`."""
    best, length = -1, -1
    for i, names in enumerate(SIZING_LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > length:
                best, length = i, len(name)
    return best


def test_sizing_imports_point_down_its_layers():
    modules = _modules()
    up = {
        (m, i)
        for p in sorted((ROOT / "sizing").rglob("*.py"))
        for m in [_module(p)]
        for i in _all_imports(p, modules)
        if i.startswith("sizing") and _layer(i) > _layer(m)
    }
    assert all(_layer(m) >= 0 for m in modules if m.startswith("sizing"))
    assert up == set()

"""The package as users get it: a wheel built from the checkout, installed outside it.

The wheel must carry everything the commands read (the data, the notebooks, the wrk reporter,
the Jupyter kernel) and find it with no checkout around. `test_installed_wheel_runs` installs
the wheel into a fresh virtual environment that sees this environment's libraries (so it
takes seconds); `test_wheel_with_its_dependencies` (slow) lets pip install the declared
dependencies themselves into another fresh environment, proving the list is complete.
"""

from __future__ import annotations

import ast
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# What a build must not see: environments, caches, earlier builds, local runs.
_SKIP = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", "test-artifacts"
)


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float) -> str:
    proc = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert proc.returncode == 0, f"{cmd}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def _clean_env(tmp: Path) -> dict[str, str]:
    """This environment less anything that points into the checkout or another Jupyter."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTHON", "JUPYTER", "NGINX_SIZING", "VIRTUAL_ENV"))
    }
    # Only the environment's own kernels: not ones registered for the user elsewhere.
    env["JUPYTER_DATA_DIR"] = str(tmp / "jupyter-data")
    env["JUPYTER_PREFER_ENV_PATH"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built from a copy of the checkout (links kept, local runs left out)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    shutil.copytree(ROOT, src, symlinks=True, ignore=_SKIP)
    for run in (src / "data" / "runs").iterdir():
        if run.name != ".gitkeep":
            shutil.rmtree(run) if run.is_dir() else run.unlink()
    out = tmp / "wheels"
    _run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(src)],
        tmp,
        _clean_env(tmp),
        900,
    )
    (whl,) = out.glob("nginx_sizing-*.whl")
    return whl


def test_wheel_carries_the_shipped_files(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {
        f"sizing/{p.relative_to(ROOT).as_posix()}"
        for folder in ("data", "notebooks")
        for p in (ROOT / folder).rglob("*")
        if p.is_file() and "runs" not in p.relative_to(ROOT).parts and not p.name.startswith(".")
    }
    assert shipped, "nothing to ship?"
    assert shipped <= names, sorted(shipped - names)
    assert "runners/report.lua" in names
    kernel = [n for n in names if n.endswith("share/jupyter/kernels/nginx-sizing/kernel.json")]
    assert kernel, "the report kernel is registered by installing"
    assert not [n for n in names if n.startswith(("tests/", "sizing/data/runs/"))]


def _venv(where: Path, env: dict[str, str], *, libraries_from: Path | None = None) -> Path:
    """A fresh venv; with ``libraries_from``, that site-packages is on its path after its own."""
    _run([sys.executable, "-m", "venv", str(where)], where.parent, env, 300)
    python = where / "bin" / "python"
    if libraries_from is not None:
        site = Path(
            _run(
                [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                where.parent,
                env,
                60,
            ).strip()
        )
        (site / "libraries.pth").write_text(f"{libraries_from}\n")
        # Their Jupyter data too (nbconvert's templates), but not their kernels.
        share = where / "share" / "jupyter"
        share.mkdir(parents=True, exist_ok=True)
        for entry in (Path(sys.prefix) / "share" / "jupyter").iterdir():
            if entry.name != "kernels" and not (share / entry.name).exists():
                (share / entry.name).symlink_to(entry)
    return python


def _use(python: Path, cwd: Path, env: dict[str, str]) -> None:
    """``recommend`` and ``report`` from an installed package, far from the checkout."""
    where = _run(
        [
            str(python),
            "-c",
            "import sizing, runners.loadgen.wrk as w; print(sizing.__file__, w.REPORTER)",
        ],
        cwd,
        env,
        120,
    )
    assert str(ROOT) not in where, where
    assert Path(where.split()[1]).is_file(), "runners/report.lua is installed"
    out = _run([str(python), "-m", "sizing", "recommend", "--rps", "1e6"], cwd, env, 300)
    assert "Rests on" in out and "instance" in out, out
    report = cwd / "report"
    out = _run(
        [str(python), "-m", "sizing", "report", "--rps", "2e5", "--top", "3", "--out", str(report)],
        cwd,
        env,
        900,
    )
    html = report / "sizing_report.html"
    assert str(html) in out
    assert "<html" in html.read_text(encoding="utf-8")[:2000].lower()


@pytest.mark.slow
def test_installed_wheel_runs(wheel: Path, tmp_path: Path) -> None:
    env = _clean_env(tmp_path)
    python = _venv(tmp_path / "venv", env, libraries_from=Path(sysconfig.get_path("purelib")))
    # No kernel yet: the one the report runs on must come with the wheel.
    assert not (tmp_path / "venv" / "share" / "jupyter" / "kernels").exists()
    _run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--ignore-installed",
            str(wheel),
        ],
        tmp_path,
        env,
        300,
    )
    _use(python, tmp_path, env)


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("NGINX_SIZING_FULL_WHEEL_TEST") != "1",
    reason="installs every dependency afresh (about 15 minutes on a busy 2-core machine); "
    "set NGINX_SIZING_FULL_WHEEL_TEST=1",
)
def test_wheel_with_its_dependencies(wheel: Path, tmp_path: Path) -> None:
    env = _clean_env(tmp_path)
    python = _venv(tmp_path / "venv", env)
    # pip's own index and cache settings: offline machines point them at a wheel folder.
    _run([str(python), "-m", "pip", "install", "--quiet", str(wheel)], tmp_path, env, 1800)
    _run([str(python), "-m", "pip", "check"], tmp_path, env, 120)
    _use(python, tmp_path, env)


def _dist(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_imported_library_is_a_declared_dependency() -> None:
    """What the packages import is what the wheel asks pip for (test tools stay in dev)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {_dist(re.split(r"[<>=!~ \[;]", d, maxsplit=1)[0]) for d in project["dependencies"]}
    own = {"sizing", "runners", "trialtable"}
    imported: dict[str, str] = {}
    for package in own:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module]
                    if isinstance(node, ast.ImportFrom) and node.module and not node.level
                    else []
                )
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in own:
                        imported.setdefault(top, str(path.relative_to(ROOT)))
    dists = importlib.metadata.packages_distributions()
    missing = {
        f"{top} ({where})": dists.get(top, [top])
        for top, where in imported.items()
        if not {_dist(d) for d in dists.get(top, [top])} & declared
    }
    assert not missing, f"imported but not in [project] dependencies: {missing}"
    dev_only = {"pytest", "hypothesis", "nbval", "ruff", "mypy"}
    assert not dev_only & declared, "test tools belong in the dev extra"

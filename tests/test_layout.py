"""The package's layout reads as the data path: stage packages, one-way dependencies, no cycles."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import perfpages

PACKAGE = Path(perfpages.__file__).resolve().parent
# Which stage packages each stage may import (besides itself and `perfpages.errors`).
ALLOWED = {
    "archive": set(),
    # the Locust engine runs Locust from its tool venv; children that die with the harness
    "loadgen": {"archive", "tools", "perfpages.processes"},
    "analysis": {"archive"},
    "run": {"archive", "loadgen", "perfpages", "perfpages.cache",  # `perfpages.__version__`
            "perfpages.processes"},
    "cli": {"analysis", "archive", "run", "site", "loadgen", "perfpages", "perfpages.settings"},
    # a build installs nothing; `perfpages.cache`: where the site cache keeps its key
    "site": {"analysis", "archive", "perfpages.settings", "perfpages.cache"},
    "tools": {"perfpages.cache"},  # external tools in venvs of their own (Locust)
}


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    deps = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("perfpages"):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                deps.add(full if full in modules else node.module)
        elif isinstance(node, ast.Import):
            deps.update(a.name for a in node.names if a.name.startswith("perfpages"))
    return deps


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: {d for d in _imports(path, modules) if d in modules and d != name}
            for name, path in modules.items()}


def _stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in ALLOWED) else module


def test_no_import_cycles() -> None:
    graph = _graph()
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> None:
        if node in path:
            cycle = [*path[path.index(node):], node]
            raise AssertionError("import cycle: " + " -> ".join(cycle))
        if node in done:
            return
        for dep in sorted(graph[node]):
            visit(dep, [*path, node])
        done.add(node)

    for module in sorted(graph):
        visit(module, [])


def test_stages_depend_one_way() -> None:
    wrong = []
    for module, deps in _graph().items():
        stage = _stage(module)
        if stage not in ALLOWED:
            continue
        for dep in deps:
            target = _stage(dep)
            if target not in (stage, "perfpages.errors") and target not in ALLOWED[stage]:
                wrong.append(f"{module} imports {dep}")
    assert not wrong, wrong


def test_every_module_sits_in_a_stage_and_stays_small() -> None:
    top = {name for name in _modules() if name.count(".") == 1}
    assert top == {"perfpages.errors", "perfpages.testing", "perfpages.sizing",
                   "perfpages.__main__", "perfpages.settings", "perfpages.cache",
                   "perfpages.processes",
                   *(f"perfpages.{s}" for s in ALLOWED)}
    long = {name: n for name, path in _modules().items()
            if (n := len(path.read_text().splitlines())) > 420}
    assert not long, long


def test_public_api_is_one_import() -> None:
    names = set(perfpages.__all__) - {"__version__"}
    assert names == set(perfpages._PUBLIC)
    for name in names:
        assert getattr(perfpages, name).__name__ == name
    assert (PACKAGE / "py.typed").is_file()


def test_reading_runs_never_imports_psycopg() -> None:
    code = ("import sys\nfrom perfpages.cli import console\n"
            "from perfpages.analysis import report, cite\n"
            "from perfpages.site import plugin\nfrom perfpages.archive import reader\n"
            "assert 'psycopg' not in sys.modules, 'psycopg imported'\n")
    subprocess.run([sys.executable, "-c", code], check=True)

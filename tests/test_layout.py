"""The package's layout reads as the data path: stage packages, one-way dependencies, no cycles."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Collection
from pathlib import Path

import perfpages

PACKAGE = Path(perfpages.__file__).resolve().parent
PACKAGES = {".".join(p.relative_to(PACKAGE.parent).parts[:-1])
            for p in PACKAGE.rglob("__init__.py")}
ARCHITECTURE = PACKAGE.parents[1] / "docs" / "guide" / "architecture.md"
# Leaves: every module may import them, and they import nothing of perfpages.
LEAVES = {"perfpages.errors", "perfpages._version"}
# Which stage packages each stage may import (besides itself and the leaves).
ALLOWED = {
    "archive": set(),
    # the Locust engine runs Locust from its tool venv; children that die with the harness
    "loadgen": {"archive", "tools", "perfpages.processes"},
    "analysis": {"archive"},
    "run": {"archive", "loadgen", "perfpages.cache", "perfpages.processes"},
    "cli": {"analysis", "archive", "run", "site", "loadgen", "perfpages.settings"},
    # a build installs nothing; `perfpages.cache`: where the site cache keeps its key
    "site": {"analysis", "archive", "perfpages.settings", "perfpages.cache"},
    "tools": {"perfpages.cache"},  # external tools in venvs of their own (Locust)
    # the top-level modules
    # the facade: the public names, imported lazily (`load`: a run's rows, from analysis)
    "perfpages": {"analysis", "archive", "loadgen", "run"},
    "perfpages.__main__": {"cli"},
    "perfpages.errors": set(),
    "perfpages._version": set(),
    "perfpages.cache": set(),
    "perfpages.processes": set(),
    "perfpages.settings": set(),
    "perfpages.sizing": set(),
    # synthetic runs, written by the real writer; their preflights decided by the run's rule
    "perfpages.testing": {"archive", "run"},
}


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(source: str, name: str, modules: Collection[str]) -> set[str]:
    """The perfpages modules `source` (module `name`) imports: absolute or relative, at the
    top, in a function or under TYPE_CHECKING alike."""
    deps = set()
    package = name if name in PACKAGES else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # `from . import x`, `from ..archive import y`
                up = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1])
                base = f"{up}.{base}" if base else up
            if base.split(".")[0] == "perfpages":
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    deps.add(full if full in modules else base)
        elif isinstance(node, ast.Import):
            deps.update(a.name for a in node.names if a.name.split(".")[0] == "perfpages")
    return deps


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph = {name: {d for d in _imports(path.read_text(), name, modules)
                    if d in modules and d != name}
             for name, path in modules.items()}
    # The facade imports its public names by name (`_PUBLIC`), unseen by `ast`: its edges too.
    graph["perfpages"] |= set(perfpages._PUBLIC.values())
    return graph


def _stage(module: str) -> str:
    """A stage package's modules are the stage (`run`); a top-level module is its own."""
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


def _wrong(graph: dict[str, set[str]]) -> list[str]:
    """Each import a stage may not make: a leaf's of anything of perfpages, another's of a
    stage outside its ALLOWED (top-level modules are stages of their own)."""
    wrong = []
    for module, deps in sorted(graph.items()):
        stage = _stage(module)
        if stage not in ALLOWED:
            wrong.append(f"{module}: a module outside every stage (add it to ALLOWED)")
        for dep in sorted(deps):
            target = _stage(dep)
            if stage in LEAVES or (target != stage and target not in LEAVES
                                   and target not in ALLOWED.get(stage, set())):
                wrong.append(f"{module} imports {dep}")
    return wrong


def test_stages_depend_one_way() -> None:
    wrong = _wrong(_graph())
    assert not wrong, wrong


def test_the_layout_catches_what_it_forbids() -> None:
    """Planted holes the issue found: errors importing archive, run importing the facade for
    the version, a top-level module importing a stage, a relative import, run → analysis."""
    planted = {
        "perfpages.errors": {"perfpages.archive.secrets"},
        "perfpages._version": {"perfpages.errors"},
        "perfpages.run.machine": {"perfpages"},
        "perfpages.sizing": {"perfpages.analysis.decision"},
        "perfpages.run.schedule": {"perfpages.analysis.machine_load"},
        "perfpages.archive.writer": {"perfpages.analysis.rows"},
        "perfpages.newmodule": set(),
    }
    assert _wrong(planted) == [
        "perfpages._version imports perfpages.errors",
        "perfpages.archive.writer imports perfpages.analysis.rows",
        "perfpages.errors imports perfpages.archive.secrets",
        "perfpages.newmodule: a module outside every stage (add it to ALLOWED)",
        "perfpages.run.machine imports perfpages",
        "perfpages.run.schedule imports perfpages.analysis.machine_load",
        "perfpages.sizing imports perfpages.analysis.decision"]
    modules = set(_modules())
    assert _imports("from ..analysis import rows\nfrom . import errors\n",
                    "perfpages.archive.writer", modules) == {
        "perfpages.analysis.rows", "perfpages.archive"}
    assert _imports("from . import errors\nimport perfpages.run.machine\n", "perfpages.cache",
                    modules) == {"perfpages.errors", "perfpages.run.machine"}


def test_every_module_sits_in_a_stage_and_stays_small() -> None:
    top = {name for name in _modules() if name.count(".") == 1}
    assert top == {s if "." in s else f"perfpages.{s}" for s in ALLOWED if s != "perfpages"}
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


def _rows(text: str) -> dict[str, str]:
    """architecture.md's package table: each row by the package its first cell names."""
    rows = {}
    for line in text.splitlines():
        if line.startswith("| `perfpages"):
            rows[line.split("`")[1]] = line
    return rows


def _unnamed(text: str, modules: Collection[str]) -> list[str]:
    """The modules architecture.md's `text` does not name: a stage package's module by its
    short name in backticks (`runner`, or `run.runner`) in its package's row of the table, a
    top-level module by its dotted name in backticks (`perfpages.cache`); either by its dotted
    name anywhere (`analysis.noise`, `perfpages.analysis.noise`). Backticks, not bare words:
    `seal` must not pass for being part of "sealed"."""
    rows = _rows(text)
    missing = []
    for name in sorted(modules):
        parts = name.split(".")
        if len(parts) == 1 or (len(parts) == 2 and parts[1] in ALLOWED):  # a package: its row
            found = name in rows
        elif len(parts) == 2:
            found = f"`{name}`" in text
        else:
            row = rows.get(".".join(parts[:2]), "")
            dotted = (".".join(parts[1:]), name)
            found = (any(f"`{n}`" in text for n in dotted)
                     or any(f"`{parts[-1]}{end}" in row for end in "`/."))
        if not found:
            missing.append(name)
    return missing


def test_architecture_names_every_module() -> None:
    missing = _unnamed(ARCHITECTURE.read_text(), _modules())
    assert not missing, f"architecture.md does not name: {', '.join(missing)}"


def test_an_unnamed_module_fails() -> None:
    """Take a module's name out of architecture.md and the check names that module."""
    text, modules = ARCHITECTURE.read_text(), _modules()
    assert _unnamed(text.replace("`perfpages.sizing`", "`sizing`"), modules) == [
        "perfpages.sizing"]
    row = _rows(text)["perfpages.archive"]
    assert _unnamed(text.replace(row, row.replace("`completeness` (", "completeness (")),
                    modules) == ["perfpages.archive.completeness"]
    # a package's row gone: the package, and its modules that row named
    tools = _unnamed(text.replace("| `perfpages.tools` |", "| tools |"), modules)
    assert tools[0] == "perfpages.tools"
    assert all(n.startswith("perfpages.tools.") for n in tools[1:])


def test_architecture_lists_the_public_api() -> None:
    row = _rows(ARCHITECTURE.read_text())["perfpages"]
    missing = [n for n in perfpages.__all__ if n != "__version__" and f"`{n}`" not in row]
    assert not missing, f"architecture.md's perfpages row does not name: {', '.join(missing)}"

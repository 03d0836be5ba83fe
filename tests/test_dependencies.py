"""Every third-party distribution perfpages imports is declared in pyproject.toml, and one whose
internals perfpages reads has an upper bound."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import perfpages
from perfpages.tools import locust

PACKAGE = Path(perfpages.__file__).resolve().parent
PYPROJECT = PACKAGE.parents[1] / "pyproject.toml"
# Modules run in a venv of their own, with the requirements perfpages installs there.
OWN_VENV = {"tools/locustfile.py": locust.REQUIREMENTS}
# Distributions whose private modules or attributes perfpages reads (archive/histogram.py:
# hdrh.codec's headers and cookies, pyhdrh's varint decoder, HdrHistogram's counters).
# invoke: cli/names.py teaches invoke's own Program class, and reads its parse errors' wording.
INTERNALS = {"hdrhistogram", "invoke"}


def _name(requirement: str) -> str:
    """A requirement's distribution name, normalised (PEP 503)."""
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match.group(0)).lower()


def _project() -> dict[str, list[str]]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    return {"": project["dependencies"], **project["optional-dependencies"]}


def _declared(requirements: list[str]) -> set[str]:
    return {_name(r) for r in requirements}


def _imports(path: Path) -> set[str]:
    """The top-level names of every module a file imports (relative imports aside)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module.split(".")[0])
    return out


def test_every_imported_distribution_is_declared() -> None:
    distributions = packages_distributions()
    everything = {name for group in _project().values() for name in _declared(group)}
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        declared = _declared(OWN_VENV[relative]) if relative in OWN_VENV else everything
        for module in sorted(_imports(path) - set(sys.stdlib_module_names) - {"perfpages"}):
            if relative in OWN_VENV and module not in distributions:
                continue  # installed only in that venv: its requirements say which
            names = {_name(d) for d in distributions.get(module, [module])}
            if not names & declared:
                missing.append(f"{relative} imports {module} ({', '.join(sorted(names))})")
    assert not missing, missing


def test_internals_have_an_upper_bound() -> None:
    for requirement in _project()[""]:
        if _name(requirement) in INTERNALS:
            assert "<" in requirement.split(";")[0], f"{requirement}: bound it above"

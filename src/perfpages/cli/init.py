"""`perfpages init`: a working starting point in an existing git repository.

Writes mkdocs.yml (Material, the perfpages plugin), docs/index.md, an example suite and page
that work as written, results/, tasks.py, a CI workflow and the `[tool.perfpages]` section of
pyproject.toml. It never overwrites: if any of these exists, it writes nothing and says which.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from perfpages import __version__
from perfpages.errors import PerfpagesError
from perfpages.settings import DEFAULTS, PYPROJECT

WORKFLOW = ".github/workflows/perfpages.yml"
SECTION = """
[tool.perfpages]
suites = "{suites}"    # suite modules: {suites}/NAME.py
results = "results"    # archived runs, one directory each (immutable once complete)
# site-url = "https://example.org/"   # the published site: bench.cite links to run pages
"""


@dataclass(frozen=True)
class Planned:
    path: str  # relative to the repository root
    text: str
    append: bool = False  # added to the end of an existing file (pyproject.toml)


def _template(name: str) -> str:
    return resources.files("perfpages.cli").joinpath(f"scaffold/{name}.tmpl").read_text()


def git_root(start: Path) -> Path:
    done = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=start,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise PerfpagesError(f"{start} is not in a git repository", key="perfpages init",
                             fix="run `git init` first (runs record the commit they measured)")
    return Path(done.stdout.strip())


def _project_name(root: Path) -> str:
    try:
        data = tomllib.loads((root / PYPROJECT).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return ""
    name = data.get("project", {}).get("name", "")
    return name if isinstance(name, str) else ""


def install_command(root: Path) -> str:
    """How CI installs perfpages: this checkout itself in perfpages' own repository."""
    if _project_name(root) == "perfpages":
        return 'pip install -e ".[docs]"'
    return f'pip install "perfpages[docs]=={__version__}"'


def plan(root: Path, suites: str = DEFAULTS["suites"],
         suites_list: str = "example") -> list[Planned]:
    """What init writes; `suites_list`: the suites CI replays (tests/test_workflow.py)."""
    name = re.sub(r"[^\w.-]+", "-", root.name) or "project"
    fill = {"{{name}}": name, "{{suites}}": suites, "{{suites_list}}": suites_list,
            "{{install}}": install_command(root)}

    def text(template: str) -> str:
        out = _template(template)
        for key, value in fill.items():
            out = out.replace(key, value)
        return out

    section = SECTION.format(suites=suites)
    pyproject = root / PYPROJECT
    existing = pyproject.read_text(encoding="utf-8") if pyproject.is_file() else ""
    return [
        Planned("mkdocs.yml", text("mkdocs.yml")),
        Planned("docs/index.md", text("index.md")),
        Planned("docs/performance/example/v1.md", text("page.md")),
        Planned(f"{suites}/example.py", text("suite.py")),
        Planned(f"{suites}/example/sort.sql", text("sort.sql")),
        Planned("results/.gitkeep", ""),
        Planned("tasks.py", text("tasks.py")),
        Planned(WORKFLOW, text("workflow.yml")),
        Planned(PYPROJECT, ("\n" if existing and not existing.endswith("\n") else "")
                + (section if existing else section.lstrip()), append=bool(existing)),
    ]


def conflicts(root: Path, planned: list[Planned]) -> list[str]:
    """What init would overwrite: existing files, and a [tool.perfpages] section already there."""
    found = [p.path for p in planned if not p.append and (root / p.path).exists()]
    pyproject = root / PYPROJECT
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise PerfpagesError(f"not valid TOML: {exc}", where=pyproject,
                                 fix="fix it before running perfpages init") from None
        if "perfpages" in data.get("tool", {}):
            found.append(f"{PYPROJECT} [tool.perfpages]")
    return found


def init(start: Path, suites: str = DEFAULTS["suites"]) -> list[str]:
    """Write the scaffold; returns the paths written. Refuses (writing nothing) to overwrite."""
    root = git_root(start)
    planned = plan(root, suites)
    taken = conflicts(root, planned)
    if taken:
        more = f" (and {len(taken) - 1} more)" if len(taken) > 1 else ""
        raise PerfpagesError(f"{taken[0]} already exists{more}; nothing was written",
                             where=root, key="perfpages init",
                             fix="move it aside, or add perfpages by hand "
                                 "(perfpages guide adopt)")
    written = []
    for item in planned:
        path = root / item.path
        path.parent.mkdir(parents=True, exist_ok=True)
        if item.append:
            with path.open("a", encoding="utf-8") as f:
                f.write(item.text)
        else:
            path.write_text(item.text, encoding="utf-8")
        written.append(item.path)
    return written

"""A repository's perfpages settings: `[tool.perfpages]` in its pyproject.toml, in one place.

    [tool.perfpages]
    suites = "benchmarks"              # suite modules (NAME.py) and their assets
    results = "results"                # archived runs
    site-url = "https://example.org/"  # the published site (default: mkdocs.yml's site_url)
    snapshots = "tests/golden/pages"   # what versioned pages must render (pytest plugin)
    mkdocs = "mkdocs.yml"              # the site's configuration

Paths are relative to the repository root: the nearest directory, from the working directory
up, that holds a pyproject.toml with a `[tool.perfpages]` table, else a mkdocs.yml, else the
git root, else the working directory. Command-line flags override any of them.
"""

from __future__ import annotations

import os
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from perfpages.errors import PerfpagesError

PYPROJECT = "pyproject.toml"
DEFAULTS = {"suites": "benchmarks", "results": "results", "site-url": "",
            "snapshots": "tests/golden/pages", "mkdocs": "mkdocs.yml"}


def regular_text(path: Path) -> str:
    """A regular file's UTF-8 text. A FIFO, a device or a directory in its place is an OSError
    before anything waits on it (opened without blocking, then checked)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("not a regular file (a FIFO, a device or a directory)")
        return fh.read().decode("utf-8")


@dataclass(frozen=True)
class Settings:
    root: Path
    suites: Path
    results: Path
    site_url: str
    snapshots: Path
    mkdocs: Path
    source: Path | None  # the pyproject.toml read, if any


def _table(path: Path) -> dict[str, Any] | None:
    """`[tool.perfpages]` of a pyproject.toml, None when it has none."""
    try:
        data = tomllib.loads(regular_text(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise PerfpagesError(f"cannot read it: {exc}", where=path,
                             fix="fix the file's permissions or encoding") from None
    except tomllib.TOMLDecodeError as exc:
        raise PerfpagesError(f"not valid TOML: {exc}", where=path,
                             fix="fix the TOML syntax") from None
    table = data.get("tool", {}).get("perfpages") if isinstance(data.get("tool"), dict) else None
    if table is None:
        return None
    if not isinstance(table, dict):
        raise PerfpagesError("[tool.perfpages] is not a table", where=path, key="tool.perfpages",
                             fix="write it as a [tool.perfpages] section")
    return table


def find_root(start: Path) -> tuple[Path, dict[str, Any], Path | None]:
    start = start.resolve()
    candidates = [start, *start.parents]
    for directory in candidates:
        pyproject = directory / PYPROJECT
        if pyproject.is_file():
            table = _table(pyproject)
            if table is not None:
                return directory, table, pyproject
    for marker in ("mkdocs.yml", ".git"):
        for directory in candidates:
            if (directory / marker).exists():
                return directory, {}, None
    return start, {}, None


def load(start: Path | None = None, *, suites: str | None = None, results: str | None = None,
         site_url: str | None = None) -> Settings:
    """The settings of the repository around `start` (default: the working directory), with
    command-line overrides (relative override paths are taken from the working directory)."""
    root, table, source = find_root(start or Path.cwd())
    unknown = sorted(set(table) - set(DEFAULTS))
    if unknown:
        raise PerfpagesError(f"unknown setting {unknown[0]!r}", where=source,
                             key=f"tool.perfpages.{unknown[0]}",
                             fix="use " + ", ".join(DEFAULTS))
    values = {**DEFAULTS}
    for key, value in table.items():
        if not isinstance(value, str):
            raise PerfpagesError(f"{key} must be a string, got {value!r}", where=source,
                                 key=f"tool.perfpages.{key}", fix=f'write it as {key} = "…"')
        if not value.strip() and key != "site-url":  # "" is the repository root itself
            raise PerfpagesError(f"{key} is empty", where=source, key=f"tool.perfpages.{key}",
                                 fix=f'name a path, e.g. {key} = "{DEFAULTS[key]}", or remove '
                                     "the line for the default")
        values[key] = value
    mkdocs = root / values["mkdocs"]
    url = site_url if site_url is not None else values["site-url"] or mkdocs_site_url(mkdocs)
    return Settings(root=root,
                    suites=Path(suites).resolve() if suites else root / values["suites"],
                    results=Path(results).resolve() if results else root / values["results"],
                    site_url=url, snapshots=root / values["snapshots"], mkdocs=mkdocs,
                    source=source)


class TolerantLoader(yaml.SafeLoader):
    """mkdocs.yml may use !ENV and !!python tags; reading site_url needs none of them."""


TolerantLoader.add_multi_constructor("", lambda loader, suffix, node: None)


def mkdocs_site_url(mkdocs_yml: Path) -> str:
    """The published site's address from mkdocs.yml's site_url ('' when there is none)."""
    try:
        config = yaml.load(regular_text(mkdocs_yml), Loader=TolerantLoader) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return ""
    url = config.get("site_url") if isinstance(config, dict) else None
    return str(url) if url else ""

"""`perfpages init`'s edit of pyproject.toml: the `[tool.perfpages]` section, added with tomlkit so
the file's comments and layout survive, every value is escaped, and the result is always TOML
that parses to what the file held plus the section (checked with tomllib before it is written).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import Table

from perfpages.errors import PerfpagesError
from perfpages.settings import PYPROJECT

_KINDS = {str: "a string", list: "an array", bool: "a boolean", int: "a number", float: "a number"}
SITE_URL = 'site-url = "https://example.org/"   # the published site: bench.cite links to run pages'


def read(path: Path) -> str:
    """The file's text as UTF-8; "" when there is none."""
    if not path.exists():
        return ""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise PerfpagesError(f"not UTF-8 (byte {exc.start}); nothing was written", where=path,
                             fix="save it as UTF-8, as TOML requires, then run perfpages init "
                                 "again") from None
    except OSError as exc:
        raise PerfpagesError(f"cannot read it: {exc.strerror}; nothing was written", where=path,
                             fix="fix its permissions, then run perfpages init again") from None


def _parse(text: str, where: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PerfpagesError(f"not valid TOML: {exc}; nothing was written", where=where,
                             fix="fix the TOML syntax, then run perfpages init again") from None


def project_name(text: str) -> str:
    """`[project] name`, "" when there is none (or the file does not parse)."""
    try:
        name = tomllib.loads(text).get("project", {}).get("name", "")
    except (tomllib.TOMLDecodeError, AttributeError):
        return ""
    return name if isinstance(name, str) else ""


def has_settings(text: str, where: Path = Path(PYPROJECT)) -> bool:
    tool = _parse(text, where).get("tool")
    return isinstance(tool, dict) and "perfpages" in tool


def _section(suites: str) -> Table:
    table = tomlkit.table()
    table.add("suites", suites)
    table.add("results", "results")
    table["suites"].comment(f"suite modules: {suites}/NAME.py")
    table["results"].comment("archived runs, one directory each (immutable once complete)")
    for key in ("suites", "results"):
        table[key].trivia.comment_ws = "  "
    table.add(tomlkit.comment(SITE_URL))
    table.add(tomlkit.nl())  # a blank line before whatever table follows
    return table


def with_settings(text: str, suites: str, where: Path = Path(PYPROJECT)) -> str:
    """`text` (a pyproject.toml, possibly empty) with a `[tool.perfpages]` section added."""
    before = _parse(text, where)
    if text and not text.endswith("\n"):
        text += "\n"  # else tomlkit glues the new header to the last line
    try:
        doc = tomlkit.parse(text)
    except TOMLKitError as exc:  # tomllib accepted it: a tomlkit limitation, reported as such
        raise PerfpagesError(f"cannot edit it: {exc}; nothing was written", where=where,
                             fix="add the [tool.perfpages] section by hand (perfpages guide adopt)"
                             ) from None
    tool = doc.get("tool")
    if tool is None:
        outer = tomlkit.table(is_super_table=True)
        outer.add("perfpages", _section(suites))
        doc.add("tool", outer)
    elif isinstance(tool, Table):  # [tool], [tool.x] or dotted tool.x keys
        tool.add("perfpages", _section(suites))
    else:
        kind = "an inline table" if isinstance(tool, dict) else _KINDS.get(
            type(before["tool"]), "a value")
        raise PerfpagesError(f"`tool` is {kind}, not a table; nothing was written", where=where,
                             key="tool", fix="make it a [tool] table (pyproject.toml keeps `tool` "
                             "for tools' [tool.NAME] sections), then run perfpages init again")
    out = tomlkit.dumps(doc)
    if out.endswith("\n\n"):
        out = out[:-1]
    expected = {**before, "tool": {**before.get("tool", {}),
                                   "perfpages": {"suites": suites, "results": "results"}}}
    try:
        same = tomllib.loads(out) == expected
    except tomllib.TOMLDecodeError:
        same = False
    if not same:
        raise PerfpagesError("adding [tool.perfpages] would change what the file means; "
                             "nothing was written", where=where,
                             fix="add the section by hand (perfpages guide adopt)")
    return out

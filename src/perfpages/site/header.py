"""What a reader sees under a page's title before any figure: the warnings of its pinned runs
(each run's reading's ranked items, `perfpages.analysis.reading`, in one box) and the machine
they were measured on.

The header is added by the MkDocs plugin outside the page's snapshot (like the note above an
older version): a published page's snapshot stays as it was while its readers see what is now
known about its runs. A run's reading is made once per run and cached beside its cells.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from urllib.parse import quote

from perfpages.analysis.method import machine_name
from perfpages.analysis.warnings import Item
from perfpages.archive.manifest import Manifest
from perfpages.archive.reader import Run
from perfpages.archive.vocabulary import SCOPE_TEXTS, SCOPE_TITLES
from perfpages.site import escape
from perfpages.site.macros import source_link
from perfpages.site.store import Loaded, reading


def items(loaded: Loaded, run: Run | None = None) -> list[Item]:
    """What a reader must know about one run: its reading's ranked items (`run`: the same run
    already open, so that it is not read again)."""
    return reading(loaded, run).items


def _link(alias: str, run_id: str, page_src: str | None, run_pages: str | None) -> str:
    if page_src is None or run_pages is None:
        return escape.code(alias)
    target = posixpath.relpath(f"{run_pages}/{run_id}.md", posixpath.dirname(page_src) or ".")
    return f"[{escape.code(alias)}]({quote(target)})"


def box(runs: Mapping[str, Loaded], page_src: str | None = None,
        run_pages: str | None = None) -> str:
    """One `!!! warning` listing every pinned run's warnings ("" when there are none); each
    links its run's page when `page_src` (the page under docs/) and `run_pages` (where run pages
    are, runpages.PREFIX) are given."""
    lines = []
    for alias, loaded in runs.items():
        link = _link(alias, loaded.manifest.id, page_src, run_pages)
        lines += [f"    - {link}: {escape.md(i.text)}" for i in items(loaded)]
    return _listed("warning", "Before the figures", "What is known about the runs this page "
                   "pins (each run's page has the details):", lines)


def _listed(kind: str, title: str, intro: str, lines: list[str]) -> str:
    """An admonition listing `lines` under its intro; "" with nothing to list."""
    if not lines:
        return ""
    return "\n".join([f'!!! {kind} "{title}"', "", f"    {intro}", "", *lines, "", ""])


def not_measured(m: Manifest) -> list[str]:
    """The box atop a run's page whose figures are no measurement here: synthetic values, or
    a table transcribed from its source."""
    if m.scope == "synthetic":
        return [f'!!! warning "{SCOPE_TITLES["synthetic"]}"', "",
                f"    {_sentence(SCOPE_TEXTS['synthetic'])}.", ""]
    if m.source is not None:
        return [f'!!! note "{SCOPE_TITLES["transcribed"]}"', "",
                f"    {_sentence(SCOPE_TEXTS['transcribed'])}: figures from "
                f"{source_link(m.source)}.", ""]
    return []


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def transcribed(runs: Mapping[str, Loaded]) -> str:
    """A note naming each pinned run whose figures were transcribed from elsewhere (`perfpages
    import`): its source's title, link and date. "" when every run was measured here."""
    lines = []
    for alias, loaded in runs.items():
        source = loaded.manifest.source
        if source is not None:
            lines.append(f"    - {escape.code(alias)}: {source_link(source)}")
    return _listed("note", SCOPE_TITLES["transcribed"], f"The figures of these runs: "
                   f"{SCOPE_TEXTS['transcribed']}, from where they were published:", lines)


def machine(runs: Mapping[str, Loaded]) -> str:
    """"Measured on …" for the pinned runs, or the note that they come from different
    machines (CPU model or cores differ). Transcribed runs ran on no machine here."""
    groups: dict[str, list[str]] = {}
    runs = {a: r for a, r in runs.items() if r.manifest.source is None}
    for alias, loaded in runs.items():
        m = loaded.manifest.machine
        groups.setdefault(machine_name(m), []).append(alias)
    if not groups:
        return ""
    if len(groups) == 1:
        aliases = next(iter(groups.values()))
        named = ", ".join(escape.code(a) for a in aliases)
        m = next(iter(runs.values())).manifest.machine
        return (f"Measured on {escape.md(machine_name(m))} "
                f"(run{'s' * (len(aliases) > 1)} {named}).\n\n")
    each = "; ".join(", ".join(escape.code(a) for a in aliases) + " on "
                     + escape.md(machine_name(runs[aliases[0]].manifest.machine))
                     for aliases in groups.values())
    return ('!!! warning "Different machines"\n\n'
            f"    These runs come from different machines: {each}. Figures from different "
            "runs are not comparable as numbers.\n\n")


def markdown(runs: Mapping[str, Loaded], page_src: str | None = None,
             run_pages: str | None = None) -> str:
    """The whole header: the warning box, transcribed runs' sources, then the machine."""
    return box(runs, page_src, run_pages) + transcribed(runs) + machine(runs)


def under_title(text: str, header: str) -> str:
    """`header` under the page's `# title` (at the top when the page starts otherwise)."""
    if not header:
        return text
    title, _, rest = text.partition("\n") if text.startswith("# ") else ("", "", text)
    return (f"{title}\n\n" if title else "") + header + rest.lstrip("\n")

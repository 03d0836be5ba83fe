"""What a reader sees under a page's title before any figure: the warnings of its pinned runs
(`perfpages.analysis.warnings`, one box) and the machine they were measured on.

The header is added by the MkDocs plugin outside the page's snapshot (like the note above an
older version): a published page's snapshot stays as it was while its readers see what is now
known about its runs. A run's warnings are gathered once per run and cached beside its cells.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import quote

from perfpages.analysis import certification, warnings
from perfpages.analysis.decision import Rule
from perfpages.analysis.method import machine_text
from perfpages.analysis.warnings import Floor, Item, Pair, Windows
from perfpages.archive import preflight
from perfpages.archive.manifest import Manifest
from perfpages.archive.reader import Run, open_run
from perfpages.errors import AnalysisError
from perfpages.site import escape
from perfpages.site.facts import floor_drift
from perfpages.site.macros import source_link
from perfpages.site.pins import Pins
from perfpages.site.store import Loaded, product_cache, read_entry, write_entry
from perfpages.site.verdicts import aa_found

PRODUCT = "warnings"


def _windows(loaded: Loaded, run: Run | None) -> list[Windows]:
    """Per block: first attempts, windows measured again, counted windows on a busy machine
    (reads results.jsonl, unless the caller has the run open: called once per run, then
    cached)."""
    from perfpages.archive.frame import counted  # pandas: imported when first needed

    measured = (run if run is not None else open_run(loaded.path)).measured
    blocks: dict[str, list[int]] = {}
    for w in measured:
        entry = blocks.setdefault(w.block, [0, 0, 0])
        entry[0 if w.attempt == 1 else 1] += 1
    for w in counted(measured):
        blocks[w.block][2] += preflight.busy(w.machine)
    return [Windows(b, *counts) for b, counts in blocks.items()]


def _floors(loaded: Loaded) -> list[Floor]:
    out = []
    for block in dict.fromkeys(r.block for r in loaded.floors):
        try:
            d = floor_drift(loaded, block, "pgbench")
        except AnalysisError:
            continue  # no pgbench floor here, or one side of it missing: nothing decided
        out.append(Floor(block, d.metric, d.before.median, d.after.median, d.flagged))
    return out


def _pairs(loaded: Loaded) -> list[Pair]:
    found = aa_found(Pins({"run": loaded}), "run")
    out: dict[str, Pair] = {}
    for block, _, _, change in found:
        p = out.get(block, Pair(block, 0, 0))
        out[block] = Pair(block, p.cells + 1, p.clear + change.clear)
    if Rule.of(loaded.manifest.method).holm:  # 2.1: Holm over the cells, and a resolution
        certs = {c.block: c for c in certification.certificates([], found)}
        return [replace(p, certificate=certs[p.block]) for p in out.values()]
    return list(out.values())


def items(loaded: Loaded, run: Run | None = None) -> list[Item]:
    """The warnings of one run (cached in memory and, for a complete run, on disk); `run`: the
    same run already open, so that its windows are not read and validated again."""
    if PRODUCT in loaded.memo:
        memo: list[Item] = loaded.memo[PRODUCT]
        return memo
    path = product_cache(loaded, PRODUCT)
    out = None
    saved = read_entry(path, loaded.cache_key) if path is not None else None
    if saved is not None:
        try:
            out = [Item.from_json(x) for x in saved]
        except (ValueError, TypeError, KeyError):
            out = None  # a cache is never a reason for a build to fail: decide again
    if out is None:
        out = warnings.decide(exact=Rule.of(loaded.manifest.method).exact,
                              blocks=dict.fromkeys(r.block for r in loaded.cells),
                              preflights=preflight.read(loaded.path),
                              windows=_windows(loaded, run), floors=_floors(loaded),
                              pairs=_pairs(loaded))
        if path is not None:
            write_entry(path, loaded.cache_key, [i.to_json() for i in out])
    loaded.memo[PRODUCT] = out
    return out


def machine_short(machine: Mapping[str, Any]) -> str:
    """"AMD EPYC 7B13 ×2": the CPU model and its cores."""
    cores = machine.get("cores")
    return f"{machine.get('cpu') or 'unknown CPU'}" + (f" ×{cores}" if cores else "")


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
        for i in items(loaded):
            where = f", block {escape.md(i.block)}" if i.block else ""
            lines.append(f"    - {link}{where}: {escape.md(i.text)}")
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
        return ['!!! warning "Synthetic run"', "",
                "    Generated values written by the real archive writer: not a measurement.", ""]
    if m.source is not None:
        return ['!!! note "Transcribed, not measured here"', "", "    Figures transcribed from "
                f"{source_link(m.source)}: perfpages did not measure them.", ""]
    return []


def transcribed(runs: Mapping[str, Loaded]) -> str:
    """A note naming each pinned run whose figures were transcribed from elsewhere (`perfpages
    import`): its source's title, link and date. "" when every run was measured here."""
    lines = []
    for alias, loaded in runs.items():
        source = loaded.manifest.source
        if source is not None:
            lines.append(f"    - {escape.code(alias)}: {source_link(source)}")
    return _listed("note", "Transcribed, not measured here", "The figures of these runs are "
                   "transcribed from where they were published; perfpages did not measure "
                   "them:", lines)


def machine(runs: Mapping[str, Loaded]) -> str:
    """"Measured on …" for the pinned runs, or the note that they come from different
    machines (CPU model or cores differ). Transcribed runs ran on no machine here."""
    groups: dict[tuple[str, str], list[str]] = {}
    runs = {a: r for a, r in runs.items() if r.manifest.source is None}
    for alias, loaded in runs.items():
        m = loaded.manifest.machine
        groups.setdefault((str(m.get("cpu")), str(m.get("cores"))), []).append(alias)
    if not groups:
        return ""
    if len(groups) == 1:
        aliases = next(iter(groups.values()))
        named = ", ".join(escape.code(a) for a in aliases)
        m = next(iter(runs.values())).manifest.machine
        return (f"Measured on {escape.md(machine_text(m))} "
                f"(run{'s' * (len(aliases) > 1)} {named}).\n\n")
    each = "; ".join(", ".join(escape.code(a) for a in aliases) + " on "
                     + escape.md(machine_text(runs[aliases[0]].manifest.machine))
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

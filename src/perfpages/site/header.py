"""What a reader sees under a page's title before any figure: the warnings of its pinned runs
(each run's reading's ranked items, `perfpages.analysis.reading`, in one box) and the machine
they were measured on.

The header is added by the MkDocs plugin outside the page's snapshot (like the note above an
older version): a published page's snapshot stays as it was while its readers see what is now
known about its runs. A run's reading is made once per run and cached beside its cells.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence, Set
from typing import Any
from urllib.parse import quote

from perfpages.analysis import warnings
from perfpages.analysis.comparable import machine_name, same_machine
from perfpages.analysis.format import format_percent
from perfpages.analysis.warnings import Item
from perfpages.archive.manifest import Manifest
from perfpages.archive.reader import Run
from perfpages.archive.vocabulary import SCOPE_TEXTS, SCOPE_TITLES
from perfpages.site import escape, lint
from perfpages.site.claims import Claim
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


# What changes a conclusion: shown first, above the fold (at most FIRST lines with the
# certification line); everything else the runs' readings say is folded below.
CONCLUSIVE = (warnings.SCOPE, warnings.FAULTS, warnings.DRIFT, warnings.MIXED)
FIRST = 5
NO_PAIR = "not certified: no A/A pair"


def _certified(runs: Mapping[str, Loaded]) -> tuple[str, dict[tuple[str, str], bool]]:
    """The one line saying which blocks are certified at what level, and per (alias, block)
    whether it is (blocks of runs decided by the ranges rule, or without a pair, are not)."""
    done: list[str] = []
    status: dict[tuple[str, str], bool] = {}
    for alias, loaded in runs.items():
        read = reading(loaded)
        for c in read.certification or []:
            status[alias, str(c["block"])] = bool(c["certified"])
        good = [c for c in read.certification or [] if c["certified"]]
        if good:
            done.append(f"{escape.code(alias)} {_blocks(good)}")
    said: dict[str, list[str]] = {}  # a run-wide reason → the runs it holds for
    for alias, loaded in runs.items():
        for i in items(loaded):
            if i.kind == warnings.UNCERTIFIED and i.block is None:
                said.setdefault(i.text, []).append(escape.code(alias))
    whole = [f"{', '.join(aliases)}: {escape.md(text)}" for text, aliases in said.items()]
    shown = "; ".join(done) if done else "none"
    return (f"    - **Certified by their A/A pair:** {shown}"
            + (f" ({'; '.join(whole)})" if whole else "") + ".", status)


def _blocks(good: Sequence[Mapping[str, Any]]) -> str:
    """"callers, pages at 1 %": the certified blocks of one run and their level; blocks whose
    A/A test could not fail at their rounds (the certificate's `vacuous`) said apart, so that a
    certification no cell could fail is never read as one the pair passed."""
    out = []
    for vacuous in (False, True):
        same = [c for c in good if bool(c.get("vacuous")) == vacuous]
        if not same:
            continue
        alpha = same[0].get("certify_alpha")
        text = ", ".join(escape.md(str(c["block"])) for c in same) + (
            f" at {alpha * 100:g} %" if alpha is not None else "")
        if vacuous:
            rounds = " or ".join(str(r) for r in sorted({c["rounds"] for c in same}))
            text += f" (but no A/A cell could fail at {rounds} rounds)"
        out.append(text)
    return ", ".join(out)


def _uncertified_claims(claims: Sequence[Claim], links: Mapping[str, str],
                        status: Mapping[tuple[str, str], bool]) -> list[str]:
    """The claims resting on blocks their A/A pair does not certify, with their lines: one
    line for a run and block, else one line naming each run's blocks."""
    lines: dict[tuple[str, str], set[int]] = {}
    for claim in claims:
        for j in claim.condition.judged:
            if j.run in links and not status.get((j.run, j.block), False):
                lines.setdefault((j.run, j.block), set()).add(claim.line)
    if len(lines) == 1:
        [((alias, block), at)] = lines.items()
        many = len(at) > 1
        return [f"    - {links[alias]}: {len(at)} claim{'s' * many} (line{'s' * many} "
                f"{', '.join(map(str, sorted(at)))}) rest{'' if many else 's'} on block "
                f"{escape.md(block)}, which no A/A pair certifies: read "
                f"{'them' if many else 'it'} as unconfirmed"]
    runs: dict[str, list[str]] = {}  # one line for them all: the open part stays short
    for (alias, block), at in lines.items():
        runs.setdefault(alias, []).append(
            f"{escape.md(block)} (line{'s' * (len(at) > 1)} {', '.join(map(str, sorted(at)))})")
    count = len(set().union(*lines.values()))  # a claim on two blocks counted once
    each = "; ".join(links[alias] + " " + ", ".join(where) for alias, where in runs.items())
    return ([f"    - {count} claims rest on blocks no A/A pair certifies, read them as "
             f"unconfirmed: {each}"] if lines else [])


Replays = Sequence[tuple[str, str, list[int | None]]]  # (alias, replay's id, failed lines)


def _replayed(replays: Replays, links: Mapping[str, str]) -> list[str]:
    """A line per replay on which claims of the page did not hold (`warnings.replayed`)."""
    return [f"    - {links[alias]}: {escape.md(i.text)}" for alias, second, lines in replays
            if alias in links for i in warnings.replayed(second, lines)]


def across_blocks(runs: Mapping[str, Loaded], links: Mapping[str, str],
                  blocks: Set[tuple[str, str]]) -> list[str]:
    """A line per run whose blocks the page reads measured one configuration more than once
    (`analysis.consistency`, on the run's page): how far apart they are, at worst."""
    out = []
    for alias, loaded in runs.items():
        rows = [r for r in reading(loaded).consistency
                if sum((alias, b["block"]) in blocks for b in r["blocks"]) > 1
                and r["spread_percent"] is not None]
        if not rows:
            continue
        worst = max(rows, key=lambda r: abs(r["spread_percent"]))
        names = ", ".join(dict.fromkeys(b["block"] for r in rows for b in r["blocks"]))
        out.append(f"    - {links[alias]}: blocks {escape.md(names)} measured the same "
                   f"configuration ({len(rows)} cell{'s' * (len(rows) > 1)} in more than one "
                   f"block), medians up to {format_percent(worst['spread_percent'])} apart "
                   f"({escape.md(worst['label'])}, {escape.md(worst['metric'])}, "
                   f"{escape.md(worst['parameters'])}): the machine moved between blocks; the "
                   "run's page has each in its consistency table")
    return out


def box(runs: Mapping[str, Loaded], page_src: str | None = None,
        run_pages: str | None = None, claims: Sequence[Claim] = (),
        replays: Replays = (), blocks: Set[tuple[str, str]] = frozenset(),
        mixed: str = "", folded: Sequence[str] = ()) -> str:
    """One `!!! warning` ranking what is known of the pinned runs ("" when nothing is): first
    what changes a conclusion (claims that failed on a replay, `replays`, as the page's
    reproduction read it; claims on uncertified blocks; blocks the page reads, `blocks`, that
    measured one configuration apart; drift, faults, a run's scope, mixed runs), at most four
    lines, then `mixed` (the runs' machines differ, `mixed_machines`) and which blocks are
    certified at what level; the rest in one fold below with its count, blocks designed
    without an A/A pair in one line per run, then the `folded` paragraphs (the machine, which
    run each section reads). Open, the box stays within the first screen, so the page's short
    answer does too. Each item links its run's page when `page_src` (the page under docs/)
    and `run_pages` (where run pages are, runpages.PREFIX) are given."""
    first: list[str] = []
    rest: list[str] = []
    links = {alias: _link(alias, loaded.manifest.id, page_src, run_pages)
             for alias, loaded in runs.items()}
    for alias, loaded in runs.items():
        link = links[alias]
        unpaired = [i.block for i in items(loaded) if i.kind == warnings.UNCERTIFIED
                    and i.block is not None and i.text.startswith(f"{i.block}: {NO_PAIR}")]
        for i in items(loaded):
            if i.kind == warnings.UNCERTIFIED and (i.block is None or i.block in unpaired):
                continue  # said by the certification line, or in one line below
            if i.kind == warnings.SCOPE and loaded.manifest.source is not None:
                continue  # transcribed: said, with its source, by the note below the box
            (first if i.kind in CONCLUSIVE else rest).append(f"    - {link}: {escape.md(i.text)}")
        if unpaired:
            rest.append(f"    - {link}: designed without an A/A pair, so not certified: "
                        f"{', '.join(escape.md(str(b)) for b in unpaired)}")
    failed = _replayed(replays, links)
    vacuous = any(c.get("vacuous") and c["certified"] for loaded in runs.values()
                  for c in reading(loaded).certification or [])
    if not failed and not vacuous and not mixed \
            and not any(items(loaded) for loaded in runs.values()) \
            and not across_blocks(runs, links, blocks):
        return ""
    line, status = _certified(runs)
    first = (failed + _uncertified_claims(claims, links, status)
             + across_blocks(runs, links, blocks) + first)
    rest = first[FIRST - 1:] + rest
    first = [*first[:FIRST - 1], *([f"    - {mixed}"] if mixed else []), line]
    out = ['!!! warning "Before the figures"', "", *first, ""]
    if rest or folded:
        more = f"{len(rest)} more about these runs" if rest else "Where these runs ran"
        out += [f'    ??? note "{more}{"; where they ran" if rest and folded else ""}"', "",
                *(f"    {x}" for x in rest), ""]
        out += [f"        {x.strip()}\n" for x in folded]
    return "\n".join([*out, ""])


def _listed(kind: str, title: str, intro: str, lines: list[str]) -> str:
    """An admonition listing `lines` under its intro; "" with nothing to list."""
    if not lines:
        return ""
    return "\n".join([f'!!! {kind} "{title}"', "", *([f"    {intro}", ""] if intro else []),
                      *lines, "", ""])


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
    same: dict[str, list[str]] = {}  # a source, as linked → the runs transcribed from it
    for alias, loaded in runs.items():
        source = loaded.manifest.source
        if source is not None:
            same.setdefault(source_link(source), []).append(escape.code(alias))
    lines = [f"    - {', '.join(aliases)}: {link}" for link, aliases in same.items()]
    return _listed("note", SCOPE_TITLES["transcribed"], "", lines)  # its title says what


def _machines(runs: Mapping[str, Loaded]) -> list[list[str]]:
    """The measured runs' aliases grouped by machine (`comparable.same_machine`: a run that
    predates a build key is not told apart by it); transcribed runs ran on none."""
    groups: list[list[str]] = []
    for alias, loaded in runs.items():
        if loaded.manifest.source is not None:
            continue
        m = loaded.manifest.machine
        group = next((g for g in groups if same_machine(runs[g[0]].manifest.machine, m)), None)
        if group is None:
            groups.append([alias])
        else:
            group.append(alias)
    return groups


def _name(runs: Mapping[str, Loaded], aliases: list[str]) -> str:
    """A group's machine by its fullest record, and which runs lack the CPU flags (the one
    part of a name older runs did not record)."""
    names = {a: machine_name(runs[a].manifest.machine) for a in aliases}
    fullest = max(names.values(), key=len)
    partial = [a for a in aliases if names[a] != fullest]
    return escape.md(fullest) + (" (" + ", ".join(escape.code(a) for a in partial)
                                 + ": no CPU flags recorded)" if partial else "")


def _each(runs: Mapping[str, Loaded], groups: list[list[str]]) -> str:
    return "; ".join(", ".join(escape.code(a) for a in aliases) + " on " + _name(runs, aliases)
                     for aliases in groups)


def mixed_machines(runs: Mapping[str, Loaded]) -> str:
    """The box's line when the pinned runs come from different machines; "" when not."""
    groups = _machines(runs)
    if len(groups) < 2:
        return ""
    return (f"**Different machines:** {_each(runs, groups)}. Figures from different runs are "
            "not comparable as numbers.")


def machine(runs: Mapping[str, Loaded]) -> str:
    """"Measured on …" for the pinned runs, or the note that they come from different
    machines. Transcribed runs ran on no machine here."""
    groups = _machines(runs)
    if not groups:
        return ""
    if len(groups) == 1:
        aliases = groups[0]
        named = ", ".join(escape.code(a) for a in aliases)
        return (f"Measured on {_name(runs, aliases)} "
                f"(run{'s' * (len(aliases) > 1)} {named}).\n\n")
    return ('!!! warning "Different machines"\n\n'
            f"    These runs come from different machines: {_each(runs, groups)}. Figures "
            "from different runs are not comparable as numbers.\n\n")


INTRO = "Introduction"  # what a page says before its first `## ` section
HEADING = re.compile(r"^##\s+(.*?)\s*(?:\{[^}]*\})?\s*#*\s*$")


def sections(body: str, read: Sequence[tuple[int, str]]) -> dict[str, list[str]]:
    """The runs each `## ` section of a page's body reads, in page order: `read` is what its
    macros read, (line of the body, alias) as `Pins.read` notes them; a section whose macros
    read no run is left out."""
    lines = body.split("\n")
    starts: list[tuple[int, str]] = [(1, INTRO)]
    for number, (text, code) in enumerate(zip(lines, lint.fenced(lines), strict=True), 1):
        found = None if code else HEADING.match(text)
        if found:
            starts.append((number, found.group(1)))
    out: dict[str, list[str]] = {}
    for line, alias in sorted(read):
        title = next(t for start, t in reversed(starts) if start <= line)
        if alias not in out.setdefault(title, []):
            out[title].append(alias)
    order = [t for _, t in starts]
    return {t: out[t] for t in sorted(out, key=order.index)}


def reads(runs: Mapping[str, Loaded], by_section: Mapping[str, list[str]],
          page_src: str | None = None, run_pages: str | None = None) -> str:
    """One line saying which run each section reads, generated from what its macros read:
    "Every section reads `run`." when one run serves them all, else the sections grouped by the
    runs they read ("The short answer, Calls: `a` · Network: `b`"); pinned runs no section
    reads are named too. "" when no section reads a run."""
    if not by_section:
        return ""

    def named(alias: str) -> str:
        run_id = runs[alias].manifest.id
        return _link(run_id, run_id, page_src, run_pages)

    groups: dict[tuple[str, ...], list[str]] = {}
    for title, read in by_section.items():  # each group's runs in front matter order
        groups.setdefault(tuple(a for a in runs if a in read), []).append(title)
    unread = [a for a in runs if not any(a in g for g in groups)]
    idle = (f" Pinned, read by no section: {', '.join(named(a) for a in unread)}."
            if unread else "")
    if len(groups) == 1:
        return (f"Every section reads {' and '.join(named(a) for a in next(iter(groups)))}."
                f"{idle}\n\n")
    each = " · ".join(f"{', '.join(escape.md(t) for t in titles)}: "
                      f"{' and '.join(named(a) for a in aliases)}"
                      for aliases, titles in groups.items())
    return f"Runs by section: {each}.{idle}\n\n"


def markdown(runs: Mapping[str, Loaded], page_src: str | None = None,
             run_pages: str | None = None, claims: Sequence[Claim] = (),
             by_section: Mapping[str, list[str]] | None = None, replays: Replays = (),
             blocks: Set[tuple[str, str]] = frozenset()) -> str:
    """The whole header: the warning box, transcribed runs' sources, the machine, then which
    run each section reads (`by_section`, from `sections`)."""
    on, read = machine(runs), reads(runs, by_section or {}, page_src, run_pages)
    mixed = mixed_machines(runs)
    folded = [x for x in ("" if mixed else on, read) if x]
    warned = box(runs, page_src, run_pages, claims, replays, blocks, mixed, folded)
    if warned:  # the machine and the runs by section in its fold: the answer comes sooner
        return warned + transcribed(runs)
    if on.startswith("Measured on") and read:  # one paragraph: a line less above the answer
        on = on.rstrip("\n") + " "
    return transcribed(runs) + on + read


def under_title(text: str, header: str) -> str:
    """`header` under the page's `# title` (at the top when the page starts otherwise)."""
    if not header:
        return text
    title, _, rest = text.partition("\n") if text.startswith("# ") else ("", "", text)
    return (f"{title}\n\n" if title else "") + header + rest.lstrip("\n")

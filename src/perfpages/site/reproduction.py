"""Reproduction on the site: the claims of every page that pins a run, evaluated on a second
run of its suite, and how a reproduction reads on a page.

A page is evaluated on the second run by rendering it with its front matter's `runs:` entry for
the original pointed at the second run's id; nothing else changes (`swapped`). Such a rendering
is *nested*: its own `reproduction` macros print nothing and its `reproduced` conditions are
`SKIPPED`, so a page never recurses into itself, and claims on them are not counted.
`perfpages.site.page` renders the pages (`page.claims_on`, `page.reproduce`) and binds the macro
and the condition; this module holds everything else, so that it need not import the page.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from perfpages import settings
from perfpages.analysis import decision
from perfpages.analysis import reproduction as analysis
from perfpages.analysis.decision import Cell
from perfpages.analysis.metric import format_number
from perfpages.errors import PerfpagesError
from perfpages.site import escape
from perfpages.site.claims import Claim, Condition
from perfpages.site.pins import parse_front_matter
from perfpages.site.store import Loaded

SHOWN = 6  # claims named in a condition's data before "… and N more"


@dataclass(frozen=True)
class Docs:
    """Where a site's pages are: `base` is mkdocs.yml's directory (pages are named relative to
    it, as the build names them), `root` its docs_dir. One Docs serves one build: it keeps the
    reproductions made from its pages (`page.reproduce`), which a run's page and every page
    pinning the run would otherwise each make again."""

    base: Path
    root: Path
    reproduced: dict[tuple[str, str], dict[str, Any]] = field(
        default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_mkdocs(cls, mkdocs_yml: Path) -> Docs:
        try:
            config = yaml.load(mkdocs_yml.read_text(encoding="utf-8"),
                               Loader=settings.TolerantLoader)
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            config = None  # no site, or one the build itself will refuse: MkDocs' default
        docs = config.get("docs_dir") if isinstance(config, dict) else None
        base = mkdocs_yml.parent
        return cls(base, base / (docs if isinstance(docs, str) else "docs"))

    @classmethod
    def find(cls) -> Docs:
        """The repository's pages, from its mkdocs.yml ([tool.perfpages] mkdocs)."""
        return cls.from_mkdocs(settings.load().mkdocs)

    def pages(self) -> list[Path]:
        return sorted(self.root.rglob("*.md")) if self.root.is_dir() else []

    def shown(self, file: Path) -> str:
        return Path(os.path.relpath(file, self.base)).as_posix()


class Skipped(Condition):
    """A `reproduced` condition inside a nested rendering: not evaluated, not counted."""


SKIPPED = Skipped(True, "not evaluated inside a reproduction", "—")


def pins(meta: Mapping[str, Any], shown: str, run_id: str) -> bool:
    """Whether a page's front matter pins run `run_id` (pins it can read: a page whose `runs:`
    is malformed fails its own build)."""
    try:
        return run_id in parse_front_matter(meta, shown).values()
    except PerfpagesError:
        return False


def swapped(meta: Mapping[str, Any], original: str, second: str) -> dict[str, Any]:
    """The front matter with every pin of `original` pointed at `second`, aliases kept (a run
    pinned in list form keeps its id as its alias, so the page's macros still name it)."""
    aliases = parse_front_matter(meta, "")
    runs = {alias: second if run_id == original else run_id for alias, run_id in aliases.items()}
    return {**meta, "runs": runs}


def cells(loaded: Loaded) -> dict[analysis.Key, Cell]:
    return {(r.block, r.parameters, r.label, r.metric): Cell(r.values, r.rounds)
            for r in loaded.cells}


def compare(original: Loaded, second: Loaded) -> dict[str, Any]:
    """The cells and changes of two runs the site has loaded (their cells cached: no pandas)."""
    return analysis.compare_cells(original.manifest, cells(original), second.manifest,
                                  cells(second))


def _condition(claim: Claim | None) -> dict[str, Any] | None:
    if claim is None:
        return None
    c = claim.condition
    return {"holds": c.holds, "expected": c.expected, "data": c.data}


def pair_claims(shown: str, original: list[Claim] | str,
                second: list[Claim] | str) -> list[dict[str, Any]]:
    """A page's claims as rendered on the original and on the second run (or the one line why
    the page could not be rendered), one item per claim; a page that cannot be rendered on
    the second run and states no claim is one item, so it is never left out silently."""
    def keyed(claims: list[Claim] | str) -> dict[tuple[int, str, int], Claim]:
        seen: Counter[tuple[int, str]] = Counter()
        out = {}
        for c in claims if isinstance(claims, list) else []:
            if not isinstance(c.condition, Skipped):
                seen[c.line, c.sentence] += 1
                out[c.line, c.sentence, seen[c.line, c.sentence]] = c
        return out

    def page_item(reason: str) -> dict[str, Any]:
        return {"page": shown, "line": None, "sentence": "", "original": None, "second": None,
                "reason": reason, "reproduces": False}

    if isinstance(original, str):
        return [page_item(f"the page cannot be rendered on the original run: {original}")]
    a, b = keyed(original), keyed(second)
    failed = f"the page cannot be rendered on the second run: {second}" \
        if isinstance(second, str) else None
    items = []
    for key in dict.fromkeys([*a, *b]):
        one, two = a.get(key), b.get(key)
        claim = one or two
        assert claim is not None
        items.append({"page": shown, "line": claim.line, "sentence": claim.sentence,
                      "original": _condition(one), "second": _condition(two),
                      "reason": failed or (None if two else "the claim is not on the page "
                                                            "rendered on the second run"),
                      "reproduces": bool(two and two.holds)})
    return items or ([page_item(failed)] if failed else [])


def with_claims(data: dict[str, Any], items: list[dict[str, Any]],
                pages: list[str]) -> dict[str, Any]:
    """The reproduction report with the claims of the pages pinning the original."""
    held = sum(item["reproduces"] for item in items)
    line = (f"{held} of {len(items)} claims hold on {data['name']}" if pages else
            f"no page pins run {data['original']['id']}: no claim to evaluate")
    return {**data, "claims": {"held": held, "total": len(items), "line": line,
                               "pages": pages, "items": items},
            "lines": [*data["lines"], line]}


def where(item: Mapping[str, Any], line: bool = True) -> str:
    """The claim's page (and line: a terminal's reader opens it; a site's reader has no use)."""
    return f"{item['page']}:{item['line']}" if line and item["line"] is not None \
        else item["page"]


def side(condition: Mapping[str, Any] | None) -> str:
    if condition is None:
        return "not stated"
    return f"{_holds(condition)} (expected {condition['expected']}, data {condition['data']})"


def failures(data: Mapping[str, Any], line: bool = True) -> list[str]:
    """A line per claim that does not hold on the second run, naming both values (`line`: its
    page's line, for a terminal)."""
    out = []
    name = data["name"]
    for item in data["claims"]["items"]:
        one, two = item["original"], item["second"]
        if item["reproduces"]:
            continue
        if not item["sentence"]:
            out.append(f"{where(item, line)}: {item['reason']}")
            continue
        head = f"{where(item, line)}: \"{item['sentence']}\" — "
        if one and two and one["expected"] == two["expected"]:
            out.append(f"{head}expected {one['expected']}; data on the original: {one['data']}"
                       f" ({_holds(one)}); on {name}: {two['data']} ({_holds(two)})")
        else:
            out.append(f"{head}on the original: {side(one)}; on {name}: "
                       + (side(two) if two else item["reason"]))
    return out


def _holds(condition: Mapping[str, Any] | None) -> str:
    return "—" if condition is None else "holds" if condition["holds"] else "does not hold"


def claim_rows(data: Mapping[str, Any], line: bool = True) -> list[list[str]]:
    """A row per claim: where, the sentence, whether it holds on each run."""
    return [[where(i, line), i["sentence"] or i["reason"] or "", _holds(i["original"]),
             _holds(i["second"])] for i in data["claims"]["items"]]


def condition(data: Mapping[str, Any], at_least: float) -> Condition:
    """`reproduced(original, second, at_least=…)`: at least that share of the claims of the
    pages pinning the original hold on the second run (decision.share_holds)."""
    claims = data["claims"]
    wrong = failures(data, line=False)
    listing = "; ".join(wrong[:SHOWN]) + (f"; … and {len(wrong) - SHOWN} more"
                                          if len(wrong) > SHOWN else "")
    return Condition(decision.share_holds(claims["held"], claims["total"], at_least),
                     f"at least {format_number(at_least * 100)} % of the claims of "
                     f"the pages pinning {data['original']['id']} holding on "
                     f"{data['second']['id']}",
                     f"{claims['line']}" + (f"; not: {listing}" if wrong else ""))


def markdown(data: Mapping[str, Any], *, level: int = 2, full: bool = False,
             esc: Callable[[object], str] = escape.md, lines: bool = False) -> str:
    """The report as Markdown under `level` headings: summary, then (full) every cell, change
    and claim, or only what did not reproduce; `lines`: claims by page and line (a terminal's
    report), else by page only (a site has no use for the source's line numbers)."""
    head = "#" * level
    out = analysis.to_markdown(data, level=level, full=full, esc=esc)
    claims = data["claims"]
    if claims["items"]:
        out += [f"{head} Claims", "", esc(f"The claims of the pages pinning run "
                                          f"{data['original']['id']}: {claims['line']}."), ""]
        if full:
            out += [escape.table([esc(c) for c in ("claim", "sentence", "original",
                                                   analysis.second_column(data))],
                                 [[esc(c) for c in row] for row in claim_rows(data, lines)]), ""]
        wrong = failures(data, lines)
        if wrong:
            out += [esc("Not reproduced:"), "", *[f"- {esc(line)}" for line in wrong], ""]
    return "\n".join(out).rstrip() + "\n"

"""`{{ verdict(base, other, metrics=[…], block=…) }}`: the answer to one comparison at a glance.

A card per comparison: per metric the change with its interval (one cell) or its range across
cells, whether it is clear, what it resolves (`site.verdicts.resolution`), and whether its block
is certified (`site.family`, settled once every claim of the page is in). Every change goes
through `site.verdicts.judge`, so the page's ledger (`{{ verdicts() }}`) counts it. The card is
HTML laid out by the stylesheet (STYLE): a grid of metrics that falls to one column on a phone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from math import isfinite
from typing import Any

from perfpages.analysis.certification import Certificate
from perfpages.analysis.decision import Change
from perfpages.analysis.format import format_change, format_range, format_resolution
from perfpages.analysis.metric import info
from perfpages.errors import AnalysisError
from perfpages.site.pins import Pins, Side, side_text
from perfpages.site.verdicts import across, judge, resolution

CLASS = "perfpages-card"


@dataclass(frozen=True)
class Row:
    """One metric of a card: as printed, and the verdicts it rests on."""

    metric: str
    title: str
    change: str  # "+8.1 %", "+7 % to +13 %"
    span: str  # "across calls", "across 4 cells"; "" for one cell
    interval: str  # "+5.0…+11.2 %"; "" for a range or a run without intervals
    clear: str  # "clear gain", "not clear", "clear in 3 of 4"
    resolves: str  # "7.9 %", "7.9–15 %", "—" under the ranges rule
    changes: tuple[Change, ...]


@dataclass(frozen=True)
class Card:
    base: str
    other: str
    blocks: tuple[tuple[str, str], ...]  # (run alias, block) of every comparison
    rows: tuple[Row, ...]


def build(pins: Pins, base: Side, other: Side, metrics: list[str] | str | None,
          **filters: Any) -> Card:
    """The card's rows, each change judged now (so the ledger counts it wherever
    `{{ verdicts() }}` stands)."""
    wanted = [metrics] if isinstance(metrics, str) else list(metrics or ["throughput"])
    if not wanted:
        raise AnalysisError("verdict() needs at least one metric",
                            fix='write metrics=["throughput", "p50"]')
    rows, blocks = [], []
    for metric in wanted:
        pairs = pins.pairs(base, other, metric=metric, **filters)
        if not pairs:
            raise AnalysisError(f"verdict(): no cells of {metric!r} compare "
                                f"{side_text(base)} with {side_text(other)}",
                                fix="check block=, where={…} and run= against "
                                    "`invoke bench.report`")
        changes = tuple(judge(pins, a, b, metric) for a, b in pairs)
        found = [resolution(pins, a, b, c) for (a, b), c in zip(pairs, changes, strict=True)]
        blocks += [(a.run, a.block) for a, _ in pairs]
        rows.append(_row(metric, changes, found, across(pairs)))
    return Card(side_text(base), side_text(other), tuple(dict.fromkeys(blocks)), tuple(rows))


def _row(metric: str, changes: tuple[Change, ...], found: list[float], span: str) -> Row:
    one = changes[0]
    if len(changes) == 1:
        full = format_change(one)  # "+8.1 % (+5.0…+11.2 %)"
        head, _, rest = full.partition(" (")
        interval, span = rest.removesuffix(")"), ""
        clear = one.verdict if one.clear else "not clear"
    else:
        head, interval = format_range(list(changes)), ""
        said = list(dict.fromkeys(c.verdict for c in changes if c.clear))
        count = sum(c.clear for c in changes)  # "clear gain in 2 of 2", or just "clear in …"
        clear = "not clear" if not count else \
            f"{said[0] if len(said) == 1 else 'clear'} in {count} of {len(changes)}"
    return Row(metric, info(metric).title, head, span, interval, clear, _resolves(found),
               changes)


def _resolves(found: list[float]) -> str:
    known = [r for r in found if r == r]  # nan: the ranges rule states none
    if not known:
        return "—"
    low, high = min(known), max(known)
    if format_resolution(low) == format_resolution(high) or not isfinite(high):
        return format_resolution(high)
    return f"{format_resolution(low).removesuffix(' %')}–{format_resolution(high)}"


def render(card: Card, certify: Callable[[str, str], Certificate | None]) -> str:
    """The card as HTML; `certify(alias, block)` is the block's certificate (None: a run
    archived before method v2, which states no resolution)."""
    marks = []
    for alias, block in card.blocks:
        cert = certify(alias, block)
        state = "not certified (a run before method v2)" if cert is None \
            else f"not certified ({cert.why})" if not cert.certified \
            else f"certified, but no A/A cell could fail at {cert.rounds} rounds" \
            if cert.vacuous else "certified"
        marks.append(f"block {block}" + (f" of {alias}" if len({a for a, _ in card.blocks}) > 1
                                         else "") + f": {state}")
    out = [f'<div class="{CLASS}">',
           f'<p class="{CLASS}-head"><strong>{escape(card.base)} → {escape(card.other)}'
           f'</strong> <span class="{CLASS}-blocks">{escape("; ".join(marks))}</span></p>']
    for row in card.rows:
        state = "clear" if row.clear != "not clear" else "unclear"
        out.append(f'<dl class="{CLASS}-metric {CLASS}-{state}">'
                   f"<dt>{escape(row.title)}</dt>"
                   f'<dd class="{CLASS}-change">{escape(row.change)}</dd>'
                   + (f"<dd>{escape(row.span)}</dd>" if row.span else "")
                   + (f'<dd>interval {escape(row.interval)}</dd>' if row.interval else "")
                   + f'<dd class="{CLASS}-verdict">{escape(row.clear)}</dd>'
                   f"<dd>resolves {escape(row.resolves)}</dd></dl>")
    return "\n\n" + "".join(out) + "</div>\n\n"


# Appended to the stylesheet the plugin ships (assets/perfpages.css), with the charts' and
# tables' rules: a grid of metrics at 1280 px, one column on a phone; Material's colours, so
# dark mode follows.
STYLE = """\
/* Verdict cards (cards.py): one comparison, a cell per metric. */
.md-typeset .perfpages-card {
  margin: 1em 0; padding: .6em .8em; border-radius: .2rem;
  border: .05rem solid var(--md-default-fg-color--lightest);
  background-color: var(--md-code-bg-color);
  display: grid; gap: .4em .8em; grid-template-columns: repeat(auto-fit, minmax(9.5rem, 1fr));
}
.md-typeset .perfpages-card-head { grid-column: 1 / -1; margin: 0; }
.md-typeset .perfpages-card-blocks { color: var(--md-default-fg-color--light); font-size: .9em; }
.md-typeset .perfpages-card-metric { margin: 0; min-width: 0; }
.md-typeset .perfpages-card-metric dt { font-weight: 700; }
.md-typeset .perfpages-card-metric dd { margin: 0; overflow-wrap: anywhere; }
.md-typeset .perfpages-card-change { font-size: 1.25em; font-variant-numeric: tabular-nums; }
.md-typeset .perfpages-card-clear .perfpages-card-verdict { color: var(--md-accent-fg-color); }
.md-typeset .perfpages-card-unclear .perfpages-card-verdict {
  color: var(--md-default-fg-color--light);
}
@media screen and (max-width: 30em) {
  .md-typeset .perfpages-card { grid-template-columns: 1fr; }
}
"""

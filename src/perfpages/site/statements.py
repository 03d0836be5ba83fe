"""Statement differences between two labels as Markdown (`perfpages.analysis.statements`):
a table of the largest changes per call, the plan differences under it, and what the
comparison covers. Every text from the archive is escaped: SQL is full of `*`, `|` and `<`.
"""

from __future__ import annotations

import math
import re

from perfpages.analysis.metric import format_number
from perfpages.analysis.statements import Change, Differences, PerCall
from perfpages.site import escape

WIDTH = 72  # characters of a statement in a table cell
KINDS = {"added": "added", "removed": "removed", "cheaper": "cheaper", "dearer": "dearer",
         "same": "same", "unranked": "not ranked in both"}
# A select list longer than this reads as "SELECT … FROM": the tables and conditions are what
# tell statements apart.
_SELECT = re.compile(r"^(SELECT(?:\s+DISTINCT)?)\s+(.{24,}?)\s+(FROM\s.*)$",
                     re.IGNORECASE | re.DOTALL)


def shorten(query: str, width: int = WIDTH) -> str:
    """A statement for a table cell: whitespace collapsed, a long select list elided, cut
    at `width` characters with an ellipsis."""
    flat = " ".join(query.split())
    m = _SELECT.match(flat)
    if m:
        flat = f"{m.group(1)} … {m.group(3)}"
    return flat if len(flat) <= width else flat[: width - 1].rstrip() + "…"


def figure(value: float) -> str:
    """format_number, with three significant figures below 0.1 too: a statement that runs
    once per thousand calls reads 0.000987, not 0.001."""
    size = abs(value)
    if size == 0:
        return "0"
    if size < 0.1:
        return format_number(value, min(8, 2 - math.floor(math.log10(size))))
    return format_number(value)


def _signed(value: float) -> str:
    return ("+" if value > 0 else "−" if value < 0 else "±") + figure(abs(value))


def _pair(base: PerCall | None, head: PerCall | None, attr: str, scale: float = 1.0) -> str:
    def one(p: PerCall | None) -> str:
        return "—" if p is None else figure(getattr(p, attr) * scale)
    return f"{one(base)} → {one(head)}"


def _row(i: int, c: Change) -> list[str]:
    buffers = " / ".join(_pair(c.base, c.head, a) for a in ("hit", "read"))
    return [str(i), escape.code(shorten(c.query)), KINDS[c.kind],
            escape.md(f"{_pair(c.base, c.head, 'ms', 1000)} ({_signed(c.delta_ms * 1000)})"),
            escape.md(_pair(c.base, c.head, "statements", 1)),
            escape.md(_pair(c.base, c.head, "rows")), escape.md(buffers)]


def changes_table(diff: Differences, top: int = 5) -> str:
    """The `top` statements whose execution time per call changed most from base to head
    (`same` left out), with their calls and rows per call; then their plan differences and,
    for a partial comparison, what it covers. A sentence instead when the run archived no
    statements for the labels, or none changed."""
    if not diff.archived:
        return "\n\n" + escape.md(diff.reason) + "\n\n"
    shown = diff.top(top)
    parts = []
    if not shown:
        parts.append(escape.md(f"No statement's execution time per call changed from "
                               f"{diff.base} to {diff.head} in {diff.block}."))
    else:
        header = ["#", "statement", "change", "µs per call", "statements per call",
                  "rows per call", "buffers hit / read per call"]
        parts.append(escape.table(header, [_row(i, c) for i, c in enumerate(shown, 1)]))
        served = " and ".join(f"{format_number(n)} by {label}" for n, label in zip(
            diff.served, (diff.base, diff.head), strict=True))
        parts.append(escape.md(f"Per call served while the statements were counted "
                               f"({served}); {diff.base} → {diff.head}."))
    lines = plan_lines(shown)
    if lines:
        parts.append("\n".join(lines))
    if diff.coverage:
        parts.append(escape.md(diff.coverage))
    return "\n\n" + "\n\n".join(parts) + "\n\n"


def plan_lines(changes: list[Change]) -> list[str]:
    """A Markdown list item per plan difference of the numbered changes: "#1: Seq Scan on t →
    Index Scan using t_pkey on t"."""
    return [f"- {escape.md(f'#{i} plan: {line}')}"
            for i, c in enumerate(changes, 1) for line in c.plan]

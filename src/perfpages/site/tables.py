"""Wide tables on perfpages' pages: each in a box of its own that scrolls sideways, its first
column (the row names) held in place, numbers on one line and right-aligned, smaller on a phone.

Material's JavaScript already wraps every plain table in `.md-typeset__scrollwrap`, which
scrolls; but squeezed into the content column the cells wrap each figure over two or three lines
("3.92 (3.39–" / "4.60)"), an overlay scrollbar (macOS, phones) shows nothing, so a wide table
read as cut off at the column's edge, and scrolling took the row names away. The wrapper is
added to the built HTML, not to the Markdown, so the published pages' snapshots (the rendered
Markdown) keep every byte; the <table> keeps no class, so Material still styles and wraps it.
"""

from __future__ import annotations

import re

CLASS = "perfpages-table"
_TABLE = re.compile(r"<table\b.*?</table>", re.S)

# Appended to the charts' rules in the one stylesheet the plugin ships (assets/perfpages.css).
STYLE = """\
/* Tables on pages that pin runs and on run pages (tables.py): Material's scrollwrap scrolls
   them; these keep each figure on one line, the row names in view, and fit a phone. */
.md-typeset .perfpages-table .md-typeset__scrollwrap { scrollbar-width: thin; }
/* Material clips its wrapped table (overflow: hidden), which would hold the sticky column. */
.md-typeset .perfpages-table .md-typeset__table table:not([class]) { overflow: visible; }
.md-typeset .perfpages-table table:not([class]) td { white-space: nowrap; }
/* Material's cells pad 1.25em each side: half of it lets a nine-column table fit 1,400 px. */
.md-typeset .perfpages-table table:not([class]) th,
.md-typeset .perfpages-table table:not([class]) td { padding: .8em .7em; }
.md-typeset .perfpages-table table:not([class]) td:not(:first-child),
.md-typeset .perfpages-table table:not([class]) th:not(:first-child) {
  text-align: right; font-variant-numeric: tabular-nums;
}
.md-typeset .perfpages-table table:not([class]) tr > :first-child {
  position: sticky; left: 0; z-index: 1;
  background-color: var(--md-default-bg-color);
  box-shadow: inset -.05rem 0 0 var(--md-typeset-table-color);
}
@media screen and (max-width: 30em) {
  .md-typeset .perfpages-table table:not([class]) { font-size: .56rem; }
  .md-typeset .perfpages-table table:not([class]) th,
  .md-typeset .perfpages-table table:not([class]) td { padding: .5em .5em; min-width: 0; }
}
"""


def folded(header: list[str], rows: list[list[str]], summary: str) -> str:
    """Secondary columns (intervals, resolutions) folded under their table: an HTML table in a
    `<details>`, one block, so the table above fits the column. Cells come escaped."""
    def line(cells: list[str], tag: str) -> str:
        return "<tr>" + "".join(f"<{tag}>{c}</{tag}>" for c in cells) + "</tr>"

    return (f'<details class="perfpages-detail"><summary>{summary}</summary><table><thead>'
            + line(header, "th") + "</thead><tbody>" + "".join(line(r, "td") for r in rows)
            + "</tbody></table></details>")


def wrap(html: str) -> str:
    """Every table of a page's HTML inside `<div class="perfpages-table">`."""
    return _TABLE.sub(lambda m: f'<div class="{CLASS}">{m.group(0)}</div>', html)

"""Tables on perfpages' pages, laid out to fit the text column (688 px on a laptop, 358 px on a
phone).

Each table of a page that pins runs, and of a run page, goes in `<div class="perfpages-table">`
(added to the built HTML, not the Markdown, so the published pages' snapshots keep every byte;
the <table> keeps no class, so Material still styles and wraps it):

- A table that fits keeps its rows and columns, numbers on one line and right-aligned.
- A table estimated wider than the column is stacked (`perfpages-stack`, or
  `perfpages-stack-narrow` on a phone only): each row becomes a block, its name on a line of its
  own and its cells below it, each under its column's header (`data-label`), as many to a line
  as fit. A sweep of twelve columns reads as four blocks of eleven labelled figures.
- Whatever still cannot fit scrolls inside its own box within the column, its first column (the
  row names) held in place. Material's own scroll wrapper reaches 0.8rem past the column on each
  side; here it keeps to the column, on every page.
"""

from __future__ import annotations

import re
from html import escape, unescape

CLASS = "perfpages-table"
STACK = "perfpages-stack"  # stacked at every width
STACK_NARROW = "perfpages-stack-narrow"  # stacked on a phone only
_TABLE = re.compile(r"<table\b.*?</table>", re.S)
_HEAD = re.compile(r"<thead\b.*?</thead>", re.S)
_CELL = re.compile(r"<(t[hd])\b[^>]*>(.*?)</\1>", re.S)
_ROW = re.compile(r"<tr\b.*?</tr>", re.S)
_ROW_OR_TD = re.compile(r"<tr\b[^>]*>|<td\b")
_TAG = re.compile(r"<[^>]+>")

# The column's width and what a table's cells take, px (Material's table text is .64rem,
# 12.8 px, about 7.2 px a character of figures; .56rem on a phone). Measured in Chromium by
# benchmarks/browser_layout.py; the estimate errs wide, and a table it lets through still
# scrolls in its own box.
COLUMN, COLUMN_NARROW = 688.0, 358.0
CHAR, CHAR_NARROW = 7.4, 6.5
PAD, PAD_NARROW = 18.0, 11.0  # a cell's padding, both sides
HEADER_CHARS = 12  # a header wraps: it takes about this many characters of width at least
NAME_CHARS = 24  # a row's name wraps too, past about this many characters
FILL = 0.9  # stacked past this share of the column: borders, and text wider than its count


def _text(cell: str) -> str:
    return " ".join(unescape(_TAG.sub("", cell)).split())


def estimate(header: list[str], rows: list[list[str]], char: float, pad: float) -> float:
    """The table's width in px: figures on one line, headers and row names wrapped."""
    width = 0.0
    for col, head in enumerate(header):
        cells = [len(r[col]) for r in rows if col < len(r)]
        chars = max([min(len(head), HEADER_CHARS), *cells])
        chars = min(chars, NAME_CHARS) if col == 0 else chars
        width += chars * char + pad
    return width


def layout(table: str) -> tuple[str, str]:
    """(the wrapper's classes, the table with each body cell labelled by its column's header)."""
    head = _HEAD.search(table)
    if head is None:
        return CLASS, table
    header = [_text(c) for _, c in _CELL.findall(head.group(0))]
    body = table[head.end():]
    rows = [[_text(c) for _, c in _CELL.findall(r)] for r in _ROW.findall(body)]
    if len(header) < 2:
        return CLASS, table
    if estimate(header, rows, CHAR, PAD) > FILL * COLUMN:
        classes = f"{CLASS} {STACK}"
    elif estimate(header, rows, CHAR_NARROW, PAD_NARROW) > FILL * COLUMN_NARROW:
        classes = f"{CLASS} {STACK_NARROW}"
    else:
        return CLASS, table
    column = -1

    def label(m: re.Match[str]) -> str:
        nonlocal column
        if m.group(0).startswith("<tr"):
            column = -1
            return m.group(0)
        column += 1
        name = header[column] if column < len(header) else ""
        return f'<td data-label="{escape(name, quote=True)}"'

    return classes, table[:head.end()] + _ROW_OR_TD.sub(label, body)


def folded(header: list[str], rows: list[list[str]], summary: str) -> str:
    """Secondary columns (intervals, resolutions) folded under their table: an HTML table in a
    `<details>`, one block, so the table above fits the column. Cells come escaped."""
    def line(cells: list[str], tag: str) -> str:
        return "<tr>" + "".join(f"<{tag}>{c}</{tag}>" for c in cells) + "</tr>"

    return (f'<details class="perfpages-detail"><summary>{summary}</summary><table><thead>'
            + line(header, "th") + "</thead><tbody>" + "".join(line(r, "td") for r in rows)
            + "</tbody></table></details>")


def wrap(html: str) -> str:
    """Every table of a page's HTML inside `<div class="perfpages-table">`, stacked where it
    would not fit (`layout`)."""
    def boxed(m: re.Match[str]) -> str:
        classes, table = layout(m.group(0))
        return f'<div class="{classes}">{table}</div>'

    return _TABLE.sub(boxed, html)


def _stacked(scope: str) -> str:
    """The rules that stack a table's rows, for tables under `scope`."""
    t = f".md-typeset {scope} table:not([class])"
    return f"""\
.md-typeset {scope} .md-typeset__table {{ display: block; padding: 0; }}
{t}, {t} thead, {t} tbody, {t} tr, {t} th, {t} td {{ display: block; }}
{t} {{ width: 100%; }}
{t} thead th:not(:first-child) {{ display: none; }}
{t} thead th {{ min-width: 0; }}
{t} tbody tr {{
  display: grid; grid-template-columns: repeat(auto-fill, minmax(8.5rem, 1fr));
  border-top: .05rem solid var(--md-typeset-table-color); padding: .3em 0;
}}
{t} td {{ border-top: 0; white-space: normal; text-align: left; padding: .25em .7em; }}
{t} tr > :first-child {{ grid-column: 1 / -1; font-weight: 700; position: static;
  box-shadow: none; background-color: transparent; }}
{t} td:not(:first-child), {t} th:not(:first-child) {{ text-align: left; }}
{t} td[data-label]:not(:first-child)::before {{
  content: attr(data-label); display: block; font-size: .85em;
  color: var(--md-default-fg-color--light);
}}
"""


# Appended to the charts' rules in the one stylesheet the plugin ships (assets/perfpages.css).
STYLE = f"""\
/* Material's scroll wrapper keeps to the text column (it reached 0.8rem past each side), so a
   table that cannot fit scrolls inside a box of its own, on every page. */
.md-typeset .md-typeset__scrollwrap {{ margin-left: 0; margin-right: 0; }}
.md-typeset .md-typeset__table,
.md-typeset .admonition .md-typeset__table,
.md-typeset details .md-typeset__table {{ padding-left: 0; padding-right: 0; }}
/* Tables on pages that pin runs and on run pages (tables.py): each figure on one line, the row
   names in view, stacked rows where a table would not fit. */
.md-typeset .perfpages-table .md-typeset__scrollwrap {{ scrollbar-width: thin; }}
/* Material clips its wrapped table (overflow: hidden), which would hold the sticky column. */
.md-typeset .perfpages-table .md-typeset__table table:not([class]) {{ overflow: visible; }}
.md-typeset .perfpages-table table:not([class]) td {{ white-space: nowrap; }}
/* a row's name may wrap (a comparison's name is a phrase); its figures may not */
.md-typeset .perfpages-table table:not([class]) td:first-child {{
  white-space: normal; min-width: 8em;
}}
/* Material holds each header at least 5rem wide: seven short columns took 700 px. */
.md-typeset .perfpages-table table:not([class]) th {{ min-width: 0; }}
/* Material's cells pad 1.25em each side: half of it lets more columns fit. */
.md-typeset .perfpages-table table:not([class]) th,
.md-typeset .perfpages-table table:not([class]) td {{ padding: .8em .7em; }}
.md-typeset .perfpages-table table:not([class]) td:not(:first-child),
.md-typeset .perfpages-table table:not([class]) th:not(:first-child) {{
  text-align: right; font-variant-numeric: tabular-nums;
}}
.md-typeset .perfpages-table table:not([class]) tr > :first-child {{
  position: sticky; left: 0; z-index: 1;
  background-color: var(--md-default-bg-color);
  box-shadow: inset -.05rem 0 0 var(--md-typeset-table-color);
}}
{_stacked(f".{STACK}")}\
@media screen and (max-width: 30em) {{
  /* every page's tables on a phone (the guide's too): smaller, less padding, long words break */
  .md-typeset table:not([class]) {{ font-size: .56rem; }}
  .md-typeset table:not([class]) th,
  .md-typeset table:not([class]) td {{ padding: .5em .5em; min-width: 0; }}
  .md-typeset table:not([class]) td {{ overflow-wrap: anywhere; }}
{_stacked(f".{STACK_NARROW}")}\
}}
"""

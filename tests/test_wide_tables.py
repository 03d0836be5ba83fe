"""Wide tables: on pages that pin runs and on run pages every table sits in a
`perfpages-table` box (added to the HTML, not the Markdown), stacked where it would not fit the
column, and the one stylesheet holds the rules that stack it, or make it scroll sideways inside
the column with its row names in place."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from perfpages.site import tables
from sites import DEMO, build_site, make_results

PAGE = f"""---
runs:
  demo: {DEMO}
---
# Demo

{{{{ table("throughput", rows="call", columns="label", block="callers", change="v1.0") }}}}

| typed | by hand |
|---|---|
| 1 | 2 |
"""
PLAIN = "# Guide\n\n| option | meaning |\n|---|---|\n| a | b |\n"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = make_results(tmp_path_factory.mktemp("results"))
    built, warnings = build_site(tmp_path_factory.mktemp("site"),
                                 {"index.md": PLAIN, "perf.md": PAGE}, results)
    assert warnings == []
    return built


def boxed(html: str) -> tuple[int, int]:
    """(tables, tables directly inside a perfpages-table box)."""
    return (len(re.findall(r"<table\b", html)),
            len(re.findall(r'<div class="perfpages-table[^"]*"><table>', html)))


def test_tables_of_a_page_that_pins_runs_are_boxed(site: Path) -> None:
    html = (site / "perf" / "index.html").read_text(encoding="utf-8")
    assert boxed(html) == (2, 2)  # the macro's and the hand-typed one
    assert html.count("</table></div>") == 2
    assert "<table class" not in html  # Material still styles and wraps the table itself


def test_run_pages_tables_are_boxed_and_other_pages_are_not(site: Path) -> None:
    run = (site / "runs" / DEMO / "index.html").read_text(encoding="utf-8")
    found, inside = boxed(run)
    assert found >= 2 and inside == found
    index = (site / "runs" / "index.html").read_text(encoding="utf-8")
    assert boxed(index)[0] == boxed(index)[1] == 1
    guide = (site / "index.html").read_text(encoding="utf-8")
    assert boxed(guide) == (1, 0)


def test_the_stylesheet_scrolls_the_box_and_holds_the_row_names(site: Path) -> None:
    css = (site / "assets" / "perfpages.css").read_text(encoding="utf-8")
    assert ".perfpages-chart svg" in css  # one stylesheet: the charts' rules and the tables'
    rules = dict(re.findall(r"([^{}]+)\{([^}]*)\}", re.sub(r"/\*.*?\*/", "", css, flags=re.S)))
    by = {" ".join(k.split()): v for k, v in rules.items()}
    first = by[".md-typeset .perfpages-table table:not([class]) tr > :first-child"]
    assert "position: sticky" in first and "left: 0" in first and "background-color" in first
    assert "white-space: nowrap" in by[".md-typeset .perfpages-table table:not([class]) td"]
    numbers = [v for k, v in by.items() if "td:not(:first-child)" in k]
    assert numbers and "text-align: right" in numbers[0]
    assert "overflow: visible" in by[
        ".md-typeset .perfpages-table .md-typeset__table table:not([class])"]
    phone = css[css.index("@media screen and (max-width: 30em)"):]
    assert "font-size: .56rem" in phone


def test_wrap_boxes_every_table_once() -> None:
    html = "<p>a</p><table><tr><td>1</td></tr></table><table>\n<tr><td>2</td></tr></table>"
    out = tables.wrap(html)
    assert out.count('<div class="perfpages-table"><table>') == 2
    assert out.count("</table></div>") == 2 and out.startswith("<p>a</p>")


def table(header: list[str], rows: list[list[str]]) -> str:
    """A table as Python-Markdown writes it."""
    head = "".join(f"<th>{h}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>\n" for r in rows)
    return f"<table>\n<thead>\n<tr>{head}</tr>\n</thead>\n<tbody>\n{body}</tbody>\n</table>"


SWEEP = table(["throughput, per second, by call", "0.42.0", "0.43.0", "0.43.0+cache",
               "0.43.0 vs 0.42.0", "0.43.0+cache vs 0.42.0"],
              [[call, "271 (218–324)", "294 (236–328)", "432 (368–480)",
                "+5.8 % (clear gain)", "+59 % (clear gain)"] for call in ("page", "write")])
SETTINGS = table(["setting", "0.42.0", "0.43.0", "0.43.0-quiet", "0.43.0+cache"],
                 [["max&#95;connections", "200", "200", "200", "200"],
                  ["work_mem", "4MB", "4MB", "4MB", "4MB"]])
SHORT = table(["option", "meaning"], [["a", "b"]])


def test_a_sweep_too_wide_for_the_column_is_stacked_with_each_cell_labelled() -> None:
    out = tables.wrap(SWEEP)
    assert out.startswith(f'<div class="{tables.CLASS} {tables.STACK}"><table>')
    cells = re.findall(r'<td data-label="([^"]*)">([^<]*)</td>', out)
    assert len(cells) == 2 * 6  # every body cell, by its column's header
    assert [label for label, _ in cells[:6]] == [
        "throughput, per second, by call", "0.42.0", "0.43.0", "0.43.0+cache",
        "0.43.0 vs 0.42.0", "0.43.0+cache vs 0.42.0"]
    assert cells[6] == ("throughput, per second, by call", "write")  # labels restart per row
    assert out.count("<th>") == 6  # the header row stays (the first one titles the blocks)


def test_a_table_that_fits_a_laptop_but_not_a_phone_is_stacked_on_the_phone_only() -> None:
    out = tables.wrap(SETTINGS)
    assert out.startswith(f'<div class="{tables.CLASS} {tables.STACK_NARROW}"><table>')
    assert '<td data-label="setting">max&#95;connections</td>' in out  # labels stay escaped
    assert out.count("data-label=") == 2 * 5


def test_a_table_that_fits_keeps_its_rows_and_columns() -> None:
    assert tables.wrap(SHORT) == f'<div class="{tables.CLASS}">{SHORT}</div>'


def test_the_stylesheet_stacks_rows_and_keeps_every_scroll_box_in_the_column() -> None:
    css = re.sub(r"/\*.*?\*/", "", tables.STYLE, flags=re.S)
    rules = {" ".join(k.split()): v for k, v in re.findall(r"([^{}]+)\{([^}]*)\}", css)}
    assert "margin-left: 0" in rules[".md-typeset .md-typeset__scrollwrap"]
    phone = css[css.index("@media screen and (max-width: 30em)"):]
    for scope, within in ((tables.STACK, css[:css.index("@media")]), (tables.STACK_NARROW, phone)):
        t = f".md-typeset .{scope} table:not([class])"
        assert f"{t} tbody tr" in " ".join(within.split())
        grid = rules[f"{t} tbody tr"]
        assert "display: grid" in grid and "auto-fill" in grid
        assert "attr(data-label)" in rules[f"{t} td[data-label]:not(:first-child)::before"]
        assert "position: static" in rules[f"{t} tr > :first-child"]  # no sticky column

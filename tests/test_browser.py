"""The shipped site in a real browser: Debian's Chromium (driven by Playwright, headless) over
the repository's site built once and served over HTTP on loopback, every shipped page at 1280 px
and 390 px, light and dark (Material's slate scheme set on the same load: the palette is CSS).

A page fails when a table is wider than the text column outside a scroll box of its own in the
column, when chart text renders below 11 px, or when a verdict card reaches past the viewport;
a performance page, when its short answer's first number is not on the first screen (1280 px)
or the first one and a half (390 px) as it loads, its folds closed.
Today's failures are strict xfails, one per (page, width): a fix turns its case into an XPASS,
which fails, so the fixer removes the case from KNOWN. Marker `browser`: the fast loop leaves
it out (pytest -m "not browser")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from perfpages.site import viewport
from perfpages.site.viewport import ANSWER_SCREENS, SMALLEST_TEXT_PX, WIDTHS, Layout

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytest.importorskip("playwright", reason="Playwright for Python (the dev extra)")
pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
QAG, SKY, SIZING = "performance/queryapigate/", "performance/sky/", "performance/sizing/"
# What fails today, by (page, width), as strict xfails: nothing. Every table fits its column or
# scrolls in a box of its own within it (tables.py stacks the wide ones), and every chart is
# drawn narrow for a phone (geometry.py). A new failure goes here with its issue.
KNOWN: dict[tuple[str, int], str] = {}


def expected() -> list[str]:
    """The pages the site ships, from their sources: the home page, performance/ and guide/
    pages, the runs index and a page per archived run."""
    docs = ROOT / "docs"
    pages = [""] + [f"{p.relative_to(docs).with_suffix('').as_posix()}/"
                    for part in ("performance", "guide")
                    for p in sorted((docs / part).rglob("*.md"))]
    runs = sorted(p.parent.name for p in (ROOT / "results").glob("*/run.json"))
    return pages + ["runs/"] + [f"runs/{run}/" for run in runs]


PAGES = expected()


def case(page: str, width: int) -> object:
    reason = KNOWN.get((page, width))
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(page, width, marks=marks, id=f"/{page}@{width}")


class Measured:
    """One browser, a tab per width, each page loaded once per width and measured in light and
    in dark mode; the layouts kept for every test of the module."""

    def __init__(self, base: str, tabs: dict[int, Page]) -> None:
        self.base, self.tabs = base, tabs
        self.done: dict[tuple[str, int], list[Layout]] = {}

    def __call__(self, page: str, width: int) -> list[Layout]:
        if (page, width) not in self.done:
            tab = self.tabs[width]
            light = viewport.measure(tab, self.base, page, width, "light")
            tab.evaluate("document.body.setAttribute('data-md-color-scheme', 'slate')")
            dark = viewport.measure(tab, self.base, page, width, "dark", load=False)
            self.done[page, width] = [light, dark]
        return self.done[page, width]


@pytest.fixture(scope="module")
def site(repository_site: Path) -> Path:
    """The repository's site, built once per session as `invoke docs.build` builds it (strictly:
    tests/conftest.py), and shared with test_site's strict build."""
    return repository_site


@pytest.fixture(scope="module")
def chrome() -> Iterator[Browser]:
    with viewport.browser() as launched:
        yield launched


@pytest.fixture(scope="module")
def measured(site: Path, chrome: Browser) -> Iterator[Measured]:
    with viewport.served(site) as base, viewport.viewer(chrome, 1280, "light") as wide, \
            viewport.viewer(chrome, 390, "light") as narrow:
        yield Measured(base, {1280: wide, 390: narrow})


# A page made to fail every check, in the theme's markup: a 300 px column; a table too wide, one
# as wide in a scroll box of its own, one in a closed <details>; a chart drawn at half its size;
# a card wider than the phone; the short answer's number 900 px down.
MADE = """<!doctype html><html><body style="margin:0">
<article class="md-content__inner md-typeset" style="width:300px;padding:0 10px;margin:0">
<h2>The short answer</h2><p style="margin-top:900px">A 12 % gain.</p>
<table style="width:500px"><tr><td>a</td></tr></table>
<div style="overflow-x:auto"><table style="width:500px"><tr><td>b</td></tr></table></div>
<details><summary>more</summary><table style="width:400px"><tr><td>c</td></tr></table></details>
<figure class="perfpages-chart"><svg viewBox="0 0 640 340" width="320" font-size="13">
<text x="10" y="20">tick</text><text x="10" y="40" font-size="26">title</text></svg></figure>
<div class="perfpages-card" style="width:500px">card</div>
</article></body></html>"""


def test_the_measure_on_a_page_made_to_fail(chrome: Browser, tmp_path: Path) -> None:
    (tmp_path / "made").mkdir()
    (tmp_path / "made" / "index.html").write_text(MADE)
    with viewport.served(tmp_path) as base, viewport.viewer(chrome, 390, "light") as tab:
        layout = viewport.measure(tab, base, "made/", 390, "light")
    assert layout.column == 300
    assert [(t.index, t.width, t.scrolled) for t in layout.tables] == [
        (0, 500, False), (1, 500, True), (2, 400, False)]
    assert [t.index for t in layout.overflowing] == [0, 2] and len(layout.wide) == 3
    assert layout.texts == [("tick", 6.5), ("title", 13.0)]  # 13 and 26 px at half size
    assert [c["cut"] for c in layout.cards] == [True]
    assert layout.answer is not None and 900 < layout.answer < 1000
    # as it loads, its folds closed: the fold below the answer does not move it
    assert layout.answer_closed == layout.answer and layout.first_screens is not None
    assert layout.first_screens == pytest.approx(layout.answer / 844)  # in phone screens


def test_every_shipped_page_is_checked(site: Path) -> None:
    assert sorted(viewport.shipped(site)) == sorted(PAGES)


@pytest.mark.parametrize(("page", "width"), [case(p, w) for p in PAGES for w in WIDTHS])
def test_a_page_reads_at_its_width(measured: Measured, page: str, width: int) -> None:
    problems = []
    for layout in measured(page, width):
        at = f"/{page} at {width} px, {layout.scheme}"
        problems += [f"{at}: table {t.index} is {t.width:.0f} px in a {layout.column:.0f} px "
                     "column, no scroll box of its own" for t in layout.overflowing]
        problems += [f"{at}: chart text {text!r} renders at {px:.1f} px"
                     for text, px in layout.texts if px < SMALLEST_TEXT_PX][:3]
        problems += [f"{at}: verdict card {c['index']} spans {c['left']:.0f}–{c['right']:.0f} px "
                     f"of a {width} px viewport" for c in layout.cards if c["cut"]]
    assert not problems, "\n".join(problems)


# The pages with a short answer: every shipped performance page, each of which now has its
# short answer's first number on the first screen (issue 35; KNOWN_LATE for one that has not)
ANSWERED = [p for p in PAGES if p.startswith("performance/")]
KNOWN_LATE: dict[tuple[str, int], str] = {}


def late(page: str, width: int) -> object:
    reason = KNOWN_LATE.get((page, width))
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(page, width, marks=marks, id=f"/{page}@{width}")


@pytest.mark.parametrize(("page", "width"), [late(p, w) for p in ANSWERED for w in WIDTHS])
def test_the_short_answer_is_on_the_first_screen(measured: Measured, page: str,
                                                 width: int) -> None:
    """As the page loads (its folds closed), the short answer's first number is within the
    first screen on a laptop and the first one and a half on a phone: the header above it
    keeps only what changes a conclusion open (site/header.py)."""
    light = measured(page, width)[0]  # the loads the other checks measure: no page loaded again
    assert light.first_screens is not None, f"/{page}: no short answer with a number found"
    assert light.first_screens <= ANSWER_SCREENS[width], (
        f"/{page} at {width} px: the short answer's first number is {light.answer_closed:,.0f} "
        f"px down ({light.first_screens:.2f} screens; at most {ANSWER_SCREENS[width]:g})")


def test_the_measure_finds_what_it_checks(measured: Measured) -> None:
    # v2 has tables, charts and a short answer: each measure finds something to judge
    light, dark = measured("performance/queryapigate/v2/", 1280)
    assert light.column == pytest.approx(688, abs=1) and len(light.tables) > 10
    assert light.texts and light.answer is not None
    assert len(dark.tables) == len(light.tables) and dark.background != light.background

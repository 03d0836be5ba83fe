"""A built page as a reader's browser lays it out at one viewport: tables wider than the text
column, the smallest chart text as rendered, verdict cards cut at the viewport's edge, and how
far down the short answer's first number sits.

Measured in a real Chromium (Debian's `chromium`, driven by Playwright; no browser download) by
tests/test_browser.py and benchmarks/browser_layout.py. Playwright is a dev dependency: it is
imported only by `browser`.
"""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from perfpages.errors import PerfpagesError

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

WIDTHS = {1280: 800, 390: 844}  # a laptop, a phone: viewport width → height
Scheme = Literal["light", "dark"]  # mkdocs.yml's palette follows prefers-color-scheme
SMALLEST_TEXT_PX = 11.0  # chart text below this is unreadable on a phone
# Debian's wrapper script sets flags and execs this binary; Playwright drives the binary itself.
CHROMIUM = ("/usr/lib/chromium/chromium", "/usr/bin/chromium")

# Runs in the page. Every <details> is opened first: what a reader can unfold is checked too.
# The column is the typeset article's content box; a table fits when it is no wider, or when its
# nearest ancestor that scrolls sideways (overflow-x auto/scroll) lies within the column.
# Material's own wrapper (.md-typeset__scrollwrap) reaches 0.8rem past the column on each side:
# it does not count, so a table that cannot fit needs a scroll box of its own in the column.
OPEN = 'document.querySelectorAll("details").forEach(d => { d.open = true; });'
MEASURE = """() => {
  OPEN
  const col = document.querySelector("article.md-content__inner");
  const cs = getComputedStyle(col), box = col.getBoundingClientRect();
  const left = box.left + parseFloat(cs.paddingLeft);
  const right = box.right - parseFloat(cs.paddingRight);
  const tables = [...col.querySelectorAll("table")].map((t, index) => {
    const width = t.getBoundingClientRect().width;
    let scrolled = false;
    for (let a = t.parentElement; a && a !== col; a = a.parentElement) {
      const ox = getComputedStyle(a).overflowX;
      if (ox === "auto" || ox === "scroll") {
        const r = a.getBoundingClientRect();
        scrolled = r.left >= left - 0.5 && r.right <= right + 0.5;
        break;
      }
    }
    return {index, width, scrolled};
  });
  const texts = [...col.querySelectorAll("figure.perfpages-chart svg text")].flatMap(t => {
    const ctm = t.getScreenCTM(), size = parseFloat(getComputedStyle(t).fontSize);
    if (!ctm || !t.textContent.trim() || t.getBoundingClientRect().width === 0) return [];
    return [{text: t.textContent.trim().slice(0, 40), px: size * Math.hypot(ctm.a, ctm.b)}];
  });
  const vw = document.documentElement.clientWidth;
  const cards = [...col.querySelectorAll(".perfpages-card")].map((c, index) => {
    const r = c.getBoundingClientRect();
    return {index, left: r.left, right: r.right, cut: r.left < -0.5 || r.right > vw + 0.5};
  });
  let answer = null;
  const heading = [...col.querySelectorAll("h1,h2,h3,h4,h5,h6")]
    .find(h => /short answer/i.test(h.textContent));
  if (heading) {
    const level = +heading.tagName[1];
    for (let e = heading.nextElementSibling; e && answer === null; e = e.nextElementSibling) {
      if (/^H[1-6]$/.test(e.tagName) && +e.tagName[1] <= level) break;
      const walk = document.createTreeWalker(e, NodeFilter.SHOW_TEXT);
      for (let n = walk.nextNode(); n; n = walk.nextNode()) {
        const at = n.textContent.search(/[0-9]/);
        if (at < 0) continue;
        const range = document.createRange();
        range.setStart(n, at); range.setEnd(n, at + 1);
        const r = range.getBoundingClientRect();
        if (r.height === 0) continue;
        answer = r.top + window.scrollY;
        break;
      }
    }
  }
  const background = getComputedStyle(document.body).backgroundColor;
  return {column: right - left, tables, texts, cards, answer, background};
}"""
# The page as it loads, its folds closed (a reader's first screen), and with every fold open
AS_LOADED = MEASURE.replace("OPEN", "", 1)
MEASURE = MEASURE.replace("OPEN", OPEN, 1)
# The short answer's first number within this many screens (viewport heights) from the top,
# its folds closed: a laptop's first screen, a phone's first one and a half (issue 35)
ANSWER_SCREENS = {1280: 1.0, 390: 1.5}


@dataclass(frozen=True)
class Table:
    index: int  # the table's place on the page, from 0
    width: float
    scrolled: bool  # inside its own horizontal scroll box that fits the column


@dataclass(frozen=True)
class Layout:
    """One page at one viewport and colour scheme."""

    page: str
    width: int
    scheme: str
    column: float  # the text column's width, px
    tables: list[Table]
    texts: list[tuple[str, float]]  # chart text and its rendered size, px
    cards: list[dict[str, Any]]
    answer: float | None  # px from the page's top to the short answer's first number
    background: str  # the page's computed background colour: tells the schemes apart
    answer_closed: float | None = None  # the same as the page loads, its folds closed

    @property
    def first_screens(self) -> float | None:
        """The short answer's first number as the page loads, in viewport heights."""
        return None if self.answer_closed is None else self.answer_closed / WIDTHS[self.width]

    @property
    def wide(self) -> list[Table]:
        """Tables wider than the column (with or without their own scroll box)."""
        return [t for t in self.tables if t.width > self.column + 0.5]

    @property
    def overflowing(self) -> list[Table]:
        """Tables wider than the column that do not scroll inside their own box."""
        return [t for t in self.wide if not t.scrolled]

    @property
    def smallest_text(self) -> float | None:
        return min((px for _, px in self.texts), default=None)

    @property
    def screens(self) -> float | None:
        """The short answer's first number, in viewport heights from the top."""
        return None if self.answer is None else self.answer / WIDTHS[self.width]


def shipped(site: Path) -> list[str]:
    """Every shipped page of a built site, as its path under the site ("performance/sky/v2/"):
    the home page, performance/, guide/ and runs/."""
    pages = [""] if (site / "index.html").is_file() else []
    for part in ("performance", "guide", "runs"):
        pages += sorted(f"{p.parent.relative_to(site).as_posix()}/"
                        for p in (site / part).rglob("index.html"))
    return pages


@contextmanager
def served(site: Path) -> Iterator[str]:
    """The built site over HTTP on a free loopback port: its base URL, while open."""
    handler = functools.partial(_Quiet, directory=str(site))
    # port 0: the kernel picks a free port as it binds (no window for another to take it)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass  # a line per request is noise


def chromium() -> str:
    """The installed Chromium binary, or one line saying how to install it."""
    for path in CHROMIUM:
        if Path(path).is_file():
            return path
    found = shutil.which("chromium")
    if found:
        return found
    raise PerfpagesError("no Chromium installed", key="chromium",
                         fix="apt-get install chromium (Debian's package; nothing is downloaded)")


@contextmanager
def browser() -> Iterator[Browser]:
    """One headless Chromium for many pages."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=chromium(), headless=True)
        try:
            yield launched
        finally:
            launched.close()


@contextmanager
def viewer(chrome: Browser, width: int, scheme: Scheme) -> Iterator[Page]:
    """A tab at one viewport and colour scheme, reused for page after page."""
    context = chrome.new_context(viewport={"width": width, "height": WIDTHS[width]},
                                 color_scheme=scheme, device_scale_factor=1)
    tab = context.new_page()
    # the search index (a megabyte per load) is not under test: not fetched
    tab.route("**/search/search_index.json", lambda route: route.abort())
    try:
        yield tab
    finally:
        context.close()


def measure(tab: Page, base: str, page: str, width: int, scheme: str, *,
            load: bool = True) -> Layout:
    """Load one page in `tab` and measure it once its fonts and scripts are done (`load`
    False: the page already loaded, measured again, e.g. in the other colour scheme; its folds
    already open, so no `answer_closed`)."""
    closed = None
    if load:
        tab.goto(base + page, wait_until="load")
        tab.evaluate("document.fonts.ready")
        closed = tab.evaluate(AS_LOADED)["answer"]  # before MEASURE opens the folds
    data = tab.evaluate(MEASURE)
    return Layout(page=page, width=width, scheme=scheme, column=data["column"],
                  tables=[Table(t["index"], t["width"], t["scrolled"]) for t in data["tables"]],
                  texts=[(t["text"], t["px"]) for t in data["texts"]], cards=data["cards"],
                  answer=data["answer"], background=data["background"],
                  answer_closed=closed)

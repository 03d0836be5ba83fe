"""The shipped site as a reader sees it, in a real Chromium (issue 35's benchmark).

For every shipped page (performance/, guide/, runs/, the home page) at 1280 px (a laptop) and
390 px (a phone): how many tables are wider than the text column (inside a scroll box of their
own in the column, and not), the smallest chart text as rendered (target ≥ 11 px), and how far
down the first number of the "short answer" section sits, in px and in screens (viewport heights;
target: within 1 screen at 1280 px, 1.5 at 390 px): once with every fold (<details>) open, as
the tables are measured, and once as the page loads, its folds closed, as a reader first sees
it. Light mode: the layout does not change with the colour scheme (tests/test_browser.py checks
both).

Needs Debian's chromium (apt-get install chromium) and Playwright for Python (the dev extra).

    python benchmarks/browser_layout.py [--site DIR]   # DIR: an already built site (mkdocs build)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from perfpages.site import viewport

ROOT = Path(__file__).resolve().parent.parent


def build(site: Path) -> None:
    """`mkdocs build` of this repository's site into `site`, as `invoke docs.build` runs it."""
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "-q", "-d", str(site)], cwd=ROOT,
                   check=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


def row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def down(px: float | None, width: int) -> str:
    """How far down the page, in px and in screens of that viewport."""
    return "—" if px is None else f"{px:,.0f} px ({px / viewport.WIDTHS[width]:.2f} screens)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, help="a built site (default: build one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        site = args.site or Path(tmp) / "site"
        if args.site is None:
            build(site)
        pages = viewport.shipped(site)
        started = time.monotonic()
        layouts = []
        with viewport.served(site) as base, viewport.browser() as chrome:
            for width in viewport.WIDTHS:
                with viewport.viewer(chrome, width, "light") as tab:
                    layouts += [viewport.measure(tab, base, page, width, "light")
                                for page in pages]
        seconds = time.monotonic() - started
    print(row(["page", "width", "tables", "too wide, own scroll box", "too wide, no box",
               "smallest chart text", "short answer's first number",
               "the same, folds closed"]))
    print(row(["---"] * 2 + ["---:"] * 6))
    for layout in sorted(layouts, key=lambda lay: (lay.page, -lay.width)):
        text = layout.smallest_text
        answer = down(layout.answer, layout.width)
        closed = down(layout.answer_closed, layout.width)
        print(row([f"/{layout.page}", f"{layout.width} px", str(len(layout.tables)),
                   str(len(layout.wide) - len(layout.overflowing)), str(len(layout.overflowing)),
                   "—" if text is None else f"{text:.1f} px", answer, closed]))
    for width in viewport.WIDTHS:
        at = [lay for lay in layouts if lay.width == width]
        texts = [lay.smallest_text for lay in at if lay.smallest_text is not None]
        small = sum(t < viewport.SMALLEST_TEXT_PX for t in texts)
        print(f"\n{width} px: {sum(len(lay.overflowing) for lay in at)} tables too wide without "
              f"their own scroll box on {sum(bool(lay.overflowing) for lay in at)} of {len(at)} "
              f"pages; smallest chart text {min(texts, default=0):.1f} px; chart text below "
              f"{viewport.SMALLEST_TEXT_PX:g} px on {small} of {len(texts)} pages with charts; "
              f"{sum(len(lay.wide) for lay in at)} tables wider than the column in all")
        answered = [lay for lay in at if lay.first_screens is not None]
        within = sum(lay.first_screens is not None
                     and lay.first_screens <= viewport.ANSWER_SCREENS[width] for lay in answered)
        print(f"{width} px: the short answer's first number within "
              f"{viewport.ANSWER_SCREENS[width]:g} screens, folds closed, on {within} of "
              f"{len(answered)} pages with one")
    print(f"\n{len(layouts)} page loads in {seconds:.0f} s")


if __name__ == "__main__":
    main()

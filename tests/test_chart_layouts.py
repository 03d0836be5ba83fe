"""Charts legible on a phone (issue 35): every chart is drawn wide and narrow, the narrow one at
the phone's column width with its text at 11 px or more as drawn, its x labels clear of each
other and inside the chart; the stylesheet switches layouts where the wide text is still 11 px,
and hides the flame graph below the width its text needs."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter
from itertools import pairwise

import pytest

from perfpages.archive.stacks import parse
from perfpages.site import charts, flamediff
from perfpages.site.geometry import NARROW, WIDE

SVG = "{http://www.w3.org/2000/svg}"
SMALLEST = 11.0  # px: tests/test_browser.py's threshold
COLUMN = 358  # px: the text column at a 390 px viewport


def layouts(figure: str) -> dict[str, ET.Element]:
    """The figure's SVGs by layout (wide, narrow); each must parse."""
    found = [ET.fromstring(m) for m in re.findall(r"<svg .*?</svg>", figure, re.S)]
    assert figure.count("<figure") == 1 and len(found) == 2
    return {svg.get("class", "").removeprefix("perfpages-"): svg for svg in found}


def sizes(svg: ET.Element) -> list[float]:
    """Every text's font size in the SVG's own units (its own, or the SVG's)."""
    return [float(t.get("font-size") or svg.get("font-size") or 0) for t in svg.iter(f"{SVG}text")
            if (t.text or "").strip()]


def x_labels(svg: ET.Element) -> list[tuple[float, str]]:
    """The x axis' tick labels (centred, on the line under the plot), left to right."""
    height = float(svg.get("viewBox", "").split()[3])
    return sorted((float(t.get("x") or 0), t.text or "") for t in svg.iter(f"{SVG}text")
                  if t.get("y") == f"{height - NARROW.bottom + 18:g}")


def _series(names: list[str], xs: list[float]) -> list[charts.Series]:
    return [charts.Series(name, [charts.Point(x, (i + 1) * x, ((i + 1) * x * 0.9,))
                                 for x in xs]) for i, name in enumerate(names)]


RELEASES = [f"0.{i}.0" for i in range(1, 51)]
LONG = "0.43.0-noaccess with the cache, 32 concurrent callers, lookup-governed"
FIGURES = {
    "chart": charts.svg(_series(["p50", LONG], [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]),
                        title="t", x_title="concurrent callers", y_title="latency, ms",
                        style=2),
    "first style": charts.svg(_series(["v1.0"], [10, 20, 30]), title="t", x_title="callers",
                              y_title="throughput"),
    "categories": charts.svg([charts.Series("calls", [
        charts.Point(name, 2.0, ()) for name in ("0.42.0", "0.43.0-noaccess", "0.43.0+cache",
                                                   "0.43.0-governed", "0.44.0-rc1")])],
        title="t", x_title="label", y_title="calls", style=2),
    "spectrum": charts.spectrum([charts.Curve("lookup", [(50.0, 1.0), (99.999, 40.0)])],
                                title="t", y_title="latency, ms", unit="ms", top=99.999),
    "history": charts.history([charts.Series("lookup", [charts.Point(r, 2.0, (1.9, 2.1))
                                                        for r in RELEASES])],
                              releases=RELEASES, title="t", y_title="p99 latency, ms"),
    "timeline": charts.timeline(_series(["slowest"], [float(s) for s in range(0, 600, 5)]),
                                title="t", x_title="seconds from the start of the window",
                                y_title="slowest call, ms"),
}


@pytest.mark.parametrize("kind", FIGURES)
def test_every_chart_has_both_layouts_the_narrow_one_legible_at_its_width(kind: str) -> None:
    drawn = layouts(FIGURES[kind])
    assert set(drawn) == {"wide", "narrow"}
    narrow = drawn["narrow"]
    width = float(narrow.get("viewBox", "").split()[2])
    assert width == NARROW.width == COLUMN  # drawn at the phone's column: shown at 1:1
    assert min(sizes(narrow)) * COLUMN / width >= SMALLEST
    assert float(drawn["wide"].get("viewBox", "").split()[2]) == WIDE.width
    # the x labels keep clear of each other and of the chart's edges
    labels = x_labels(narrow)
    assert len(labels) >= 2
    extents = [(x - NARROW.char * len(t) / 2, x + NARROW.char * len(t) / 2) for x, t in labels]
    assert all(a[1] < b[0] for a, b in pairwise(extents))
    assert extents[0][0] >= 0 and extents[-1][1] <= width
    # nothing of the legend reaches past the right edge
    for t in narrow.iter(f"{SVG}text"):
        if t.get("text-anchor") is None and t.get("transform") is None:
            assert float(t.get("x") or 0) + NARROW.char * len(t.text or "") <= width + 1


def test_the_narrow_layout_thins_labels_from_the_newest_and_cuts_long_names() -> None:
    history = layouts(FIGURES["history"])
    wide, narrow = ([t for _, t in x_labels(history[k])] for k in ("wide", "narrow"))
    assert narrow[-1] == wide[-1] == "0.50.0" and 2 <= len(narrow) < len(wide)
    chart = layouts(FIGURES["chart"])
    legend = [t.text or "" for t in chart["narrow"].iter(f"{SVG}text") if "noaccess" in
              (t.text or "")]
    assert len(legend) == 1 and legend[0].endswith("…") and LONG.startswith(legend[0][:-1])
    assert LONG in [t.text for t in chart["wide"].iter(f"{SVG}text")]  # the wide keeps it all
    assert f"<title>{LONG}</title>" in FIGURES["chart"]  # and the tooltip, in both


def test_the_stylesheet_switches_where_the_wide_text_is_still_legible() -> None:
    # below the switch the narrow layout shows; at it the wide text is drawn at 13 × B / 640
    found = re.search(r"@container \(width < (\d+)px\) \{\s*\.perfpages-chart "
                      r"svg\.perfpages-wide \{ display: none; \}", charts.STYLE)
    assert found and charts.FONT * float(found.group(1)) / WIDE.width >= SMALLEST
    assert re.search(r"\.perfpages-chart svg\.perfpages-narrow,\s*\.perfpages-flamediff "
                     r"\.perfpages-flame-note \{ display: none; \}", charts.STYLE)
    flame = re.search(r"@container \(width < (\d+)px\) \{\s*\.perfpages-flamediff "
                      r"svg\.perfpages-flame \{ display: none; \}", charts.STYLE)
    assert flame and flamediff.FONT * float(flame.group(1)) / flamediff.WIDTH >= SMALLEST
    assert 688 * flamediff.FONT / flamediff.WIDTH >= SMALLEST  # the 1280 px column shows it


def test_the_flame_graph_carries_its_note_for_narrow_screens() -> None:
    stacks: Counter[tuple[str, ...]] = parse('process 1:"p";main (a.py:1);f (a.py:2) 10\n')
    image = flamediff.diff_svg(stacks, stacks, "a → b")
    svg = ET.fromstring(image[image.index("<svg"):image.index("</svg>") + 6])
    assert svg.get("class") == "perfpages-flame"
    assert min(sizes(svg)) >= flamediff.FONT
    assert f'<p class="perfpages-flame-note">{flamediff.NARROW_NOTE}</p></figure>' in image

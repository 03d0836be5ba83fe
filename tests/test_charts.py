"""Charts people read at a glance: named axes, log value axes, the latency spectrum from the
archived histograms, the history chart; every one well-formed SVG, and the first style intact."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

import pytest

from perfpages.analysis.metric import axis_title, metrics_title, parameter, titled
from perfpages.archive.histogram import Latency
from perfpages.archive.reader import open_run
from perfpages.errors import AnalysisError, PerfpagesError
from perfpages.site import charts, store
from perfpages.site.axes import Categories, Log, Nines, nines, percentile_grid
from perfpages.site.page import render_file
from perfpages.site.pins import Pins
from perfpages.site.plots import Plots
from perfpages.site.store import RunStore
from sites import DEMO, SWEEP, build_site, failed_build_lines, make_results

SVG = "{http://www.w3.org/2000/svg}"
GOLDEN = Path(__file__).parent / "golden" / "charts.html"
PAGE = f"""---
runs:
  sweep: {SWEEP}
charts: 2
---
# Charts

{{{{ chart("callers", ["p50", "p99"], label="v1.0") }}}}

{{{{ spectrum(where={{"callers": 32}}, top=99.9) }}}}
"""


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_results(tmp_path_factory.mktemp("results"))


def svgs(text: str, layout: str = "wide") -> list[ET.Element]:
    """Every chart's SVG in one layout, parsed: a chart that is not well-formed XML fails
    here."""
    every = [ET.fromstring(m.group(0)) for m in re.finditer(r"<svg .*?</svg>", text, re.S)]
    return [svg for svg in every if svg.get("class") == f"perfpages-{layout}"]


def texts(svg: ET.Element) -> list[str]:
    return [t.text or "" for t in svg.iter(f"{SVG}text")]


def render(tmp_path: Path, results: Path, body: str, front: str = "charts: 2\n",
           run: str = DEMO) -> str:
    page = tmp_path / "v1.md"
    page.write_text(f"---\nruns:\n  demo: {run}\n{front}---\n{body}", encoding="utf-8")
    return render_file(page, path="docs/x/v1.md", store=RunStore(results)).markdown


def test_axis_titles_come_from_the_metric_and_the_parameter() -> None:
    assert titled(*parameter("share_pct")) == "offered load, % of capacity"
    assert titled(*parameter("clients")) == "concurrent clients"
    assert titled(*parameter("threads")) == "threads per worker"
    assert titled(*parameter("warmup_ms")) == "warmup, ms"  # unknown: spelled from its name
    assert titled(*parameter("batch_size")) == "batch size"
    assert axis_title({"p99": "ms"}) == "p99 latency, ms"
    assert axis_title({"p50": "µs", "p99": "µs"}) == "latency, µs"
    assert axis_title({"throughput": "/s"}) == "throughput, per second"
    assert axis_title({"error_rate": "%"}) == "error rate, %"
    assert metrics_title(["p50", "p95", "p99"]) == "p50, p95 and p99 latency"


def test_style_two_names_the_axes_and_the_lines(tmp_path: Path, results: Path) -> None:
    out = render(tmp_path, results, '{{ chart("callers", "throughput", run="demo", '
                                    'label="v1.0", block="callers", where={"call": "lookup"}) }}\n'
                                    '{{ chart("callers", ["p50", "p99"], block="callers", '
                                    'label="v1.0", x_title="callers at once") }}\n', run=SWEEP)
    first, second = svgs(out)
    assert "concurrent callers" in texts(first) and "throughput, per second" in texts(first)
    assert first.find(f"{SVG}title").text == "throughput against concurrent callers, v1.0"
    assert first.find(f"{SVG}desc").text.startswith(
        "x: concurrent callers; y: throughput, per second. v1.0: 1 → ")
    assert "callers at once" in texts(second) and "latency, ms" in texts(second)
    legend = [t for t in texts(second) if t in ("p50", "p99", "v1.0 p50", "v1.0 p99")]
    assert legend == ["p50", "p99"]  # the label is in the title, not repeated in the legend


def test_style_one_keeps_the_raw_names_unless_a_page_asks(tmp_path: Path, results: Path) -> None:
    out = render(tmp_path, results, '{{ chart("callers", "p99", label="v1.0") }}\n'
                                    '{{ chart("callers", "p99", label="v1.0", x_title="callers '
                                    'at once", log_y=True) }}\n', front="", run=SWEEP)
    plain, asked = svgs(out)
    assert "callers" in texts(plain) and "p99 (ms)" in texts(plain)
    assert plain.find(f"{SVG}desc") is None
    assert "callers at once" in texts(asked) and "p99 (ms)" in texts(asked)
    assert "logarithmic" in out.split("</figure>")[1]


def test_log_axis_has_decade_ticks_and_minor_ticks() -> None:
    axis = Log(0.8, 300.0, 40, 252)
    assert (axis.base, axis.top) == (0.5, 500.0)
    labelled = [t.label for t in axis.ticks if t.label]
    assert labelled == ["0.5", "1", "10", "100", "500"]
    minor = [t.value for t in axis.ticks if not t.label]
    assert 0.2 not in minor and {0.6, 2.0, 3.0, 20.0, 90.0, 400.0} <= set(minor)
    pixels = [axis.pixel(t.value) for t in axis.ticks]
    assert pixels == sorted(pixels, reverse=True)  # bottom to top
    assert (axis.pixel(0.5), axis.pixel(500.0)) == (292.0, 40.0)
    assert axis.pixel(10.0) - axis.pixel(100.0) == pytest.approx(axis.pixel(1.0) - axis.pixel(10.0))
    narrow = Log(1.3, 13.0, 40, 252)  # under 2.5 decades: 2 and 5 are labelled too
    assert [t.label for t in narrow.ticks if t.label] == ["1", "2", "5", "10", "20"]


def test_a_log_axis_draws_its_ticks_in_the_svg() -> None:
    point = charts.Point
    series = [charts.Series("p50", [point(1, 0.9, (0.8, 1.0)), point(8, 2.0, (2.1,))]),
              charts.Series("p99", [point(1, 9.0, (8.0,)), point(8, 240.0, (250.0,))])]
    svg = svgs(charts.svg(series, title="t", x_title="x", y_title="latency, ms", log_y=True))[0]
    assert {"1", "10", "100"} <= set(texts(svg))
    faint = [e for e in svg.iter(f"{SVG}line") if e.get("stroke-opacity") == "0.06"]
    assert len(faint) > 10  # the minor ticks


def test_a_log_axis_refuses_zero_naming_the_page_line(tmp_path: Path, results: Path) -> None:
    with pytest.raises(PerfpagesError) as error:
        render(tmp_path, results, "Text.\n\n"
               "{{ chart('callers', 'errors', block='callers', label='v1.0', "
            "where={'call': 'page'}, log_y=True) }}\n")
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith("docs/x/v1.md:8: macro: log_y=True cannot show 0 (")
    assert message.endswith("— leave log_y out for a linear axis, or select positive values")


def test_a_log_axis_refusal_stops_mkdocs_build_with_one_line(tmp_path: Path,
                                                             results: Path) -> None:
    """Through the real command line: `mkdocs build --strict` exits 1 naming page and line."""
    page = (f"---\nruns:\n  demo: {DEMO}\n---\n# Errors\n\n"
            "{{ chart('callers', 'errors', block='callers', label='v1.0', "
            "where={'call': 'page'}, log_y=True) }}\n")
    lines = failed_build_lines(tmp_path, page, results, "log_y")
    assert len(lines) == 1 and "docs/index.md:7: macro: log_y=True cannot show 0" in lines[0]


def test_a_bad_chart_style_is_one_line(tmp_path: Path, results: Path) -> None:
    with pytest.raises(PerfpagesError, match=r"^docs/x/v1\.md: charts: 3 is not a chart style — "):
        render(tmp_path, results, "# x\n", front="charts: 3\n")


def test_nines_space_the_percentiles_evenly() -> None:
    axis = Nines(99.99, 64, 560)
    x = [axis.pixel(p) for p in (90, 99, 99.9, 99.99)]
    assert x[1] - x[0] == pytest.approx(x[2] - x[1]) == pytest.approx(x[3] - x[2])
    assert [t.label for t in axis.ticks] == ["50", "90", "99", "99.9", "99.99"]
    grid = percentile_grid(99.99)
    assert grid[0] == 50.0 and grid[-1] == 99.99 and {90.0, 99.0, 99.9} <= set(grid)
    assert all(b - a == pytest.approx(0.05, abs=1e-4) for a, b in zip(map(nines, grid[1:]),
                                                            map(nines, grid[2:]), strict=False))


def _cell_histograms(results: Path, block: str, label: str) -> dict[int, Latency]:
    by_round: dict[int, list[Latency]] = defaultdict(list)
    for w in open_run(results / DEMO).measured:
        if (w.block, w.label, w.status) == (block, label, "ok") and w.latency is not None:
            by_round[w.round].append(w.latency)
    return {r: Latency.merged(parts) for r, parts in by_round.items()}


def test_the_spectrum_is_the_merged_histograms_percentiles(results: Path) -> None:
    pins = Pins({"demo": RunStore(results).get(DEMO)})
    curves, unit, shared = Plots(pins, 2).curves(block="one-caller", label="v1.0")
    assert (unit, shared) == ("ms", "v1.0") and len(curves) == 1
    rounds = _cell_histograms(results, "one-caller", "v1.0")
    merged = Latency.merged(rounds.values())
    grid = percentile_grid(99.99)
    assert curves[0].points == [(p, merged.percentile_ms(p)) for p in grid]  # hdrh's own walk
    values = [v for _, v in curves[0].points]
    assert values == sorted(values) and values[0] < values[-1]
    assert len(curves[0].rounds) == 5
    for r, line in zip(sorted(rounds), curves[0].rounds, strict=True):
        assert line == [(p, rounds[r].percentile_ms(p)) for p in grid]
    micro, _, _ = Plots(pins, 2).curves(block="one-caller", label="v1.0", unit="µs",
                                        rounds=False, top=99.9)
    assert micro[0].rounds == [] and micro[0].points[-1][0] == 99.9
    assert micro[0].points[0][1] == pytest.approx(1000 * curves[0].points[0][1])


def test_the_spectrum_svg_rises_and_names_each_line(tmp_path: Path, results: Path) -> None:
    out = render(tmp_path, results, "{{ spectrum(block='callers', label='v1.1', rounds=False) }}\n")
    svg = svgs(out)[0]
    assert svg.find(f"{SVG}title").text == "latency against percentile, v1.1"
    assert {"50", "90", "99", "99.9", "99.99", "percentile, %", "latency, ms"} <= set(texts(svg))
    groups = [g for g in svg.iter(f"{SVG}g") if g.find(f"{SVG}polyline") is not None]
    assert [g.find(f"{SVG}title").text for g in groups] == ["lookup", "page"]
    for g in groups:
        points = [tuple(map(float, xy.split(","))) for xy in
                  g.find(f"{SVG}polyline").get("points").split()]
        assert [x for x, _ in points] == sorted(x for x, _ in points)
        assert [y for _, y in points] == sorted((y for _, y in points), reverse=True)
        marks = [c.find(f"{SVG}title").text for c in g.iter(f"{SVG}circle")]
        assert [m.split(": ")[1].split()[0] for m in marks] == ["p50", "p90", "p99", "p99.9",
                                                                "p99.99"]
    assert svg.find(f"{SVG}desc").text.startswith("x: percentile; y: latency, ms. lookup: p50 ")


def test_a_spectrum_refuses_an_unknown_top(tmp_path: Path, results: Path) -> None:
    with pytest.raises(PerfpagesError, match=r"^docs/x/v1\.md:6: macro: top=99\.5 is not a "
                                             r"percentile a spectrum ends at — use one of: 99, "):
        render(tmp_path, results, "{{ spectrum(block='one-caller', top=99.5) }}\n")


def test_histograms_are_cached_and_a_bad_cache_is_rebuilt(tmp_path: Path, results: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    first = store.histograms(RunStore(results, cache).get(DEMO))
    files = list((cache / "histograms").glob(f"{DEMO}.*.json"))
    assert len(files) == 1

    def refuse(path: Path) -> None:
        raise AssertionError("the archive was read again")

    with monkeypatch.context() as patched:
        patched.setattr(store, "open_run", refuse)
        again = store.histograms(RunStore(results, cache).get(DEMO))
    assert again.keys() == first.keys()
    key = ("one-caller", "call=lookup, callers=1", "v1.0")
    assert again[key][3].encode() == first[key][3].encode()
    files[0].write_text("{not json", encoding="utf-8")
    rebuilt = store.histograms(RunStore(results, cache).get(DEMO))
    assert rebuilt[key][3].encode() == first[key][3].encode()
    assert json.loads(files[0].read_text(encoding="utf-8"))["data"]  # rewritten whole


def _history(missing: range = range(0)) -> tuple[list[str], list[charts.Series]]:
    releases = [f"0.{i}.0" for i in range(1, 51)]
    lookup = charts.Series("lookup", [charts.Point(r, 2.0 + i / 50, (1.9 + i / 50, 2.1 + i / 50))
                                      for i, r in enumerate(releases) if i not in missing])
    return releases, [lookup]


def test_history_draws_bands_and_stays_readable_at_fifty_releases() -> None:
    releases, series = _history(missing=range(20, 24))
    svg = svgs(charts.history(series, releases=releases, title="p99 by release",
                              y_title="p99 latency, ms", unit="ms"))[0]
    labels = [t for t in texts(svg) if t in releases]
    assert labels[-1] == "0.50.0" and len(labels) <= 12  # the newest is always labelled
    bands = list(svg.iter(f"{SVG}polygon"))
    assert len(bands) == 2  # the missing releases break the band and the line
    assert len(list(svg.iter(f"{SVG}polyline"))) == 2
    dots = [c.find(f"{SVG}title").text for c in svg.iter(f"{SVG}circle")]
    assert len(dots) == 46 and dots[0] == "lookup, 0.1.0: 2.00 ms (1.90–2.10)"
    assert svg.find(f"{SVG}desc").text.startswith("x: release; y: p99 latency, ms. lookup: ")
    with pytest.raises(AnalysisError, match=r"no release '0\.99\.0'"):
        charts.history([charts.Series("x", [charts.Point("0.99.0", 1.0, (1.0,))])],
                       releases=releases, title="t", y_title="y")


def test_categories_thin_their_labels_from_the_newest() -> None:
    axis = Categories([str(i) for i in range(30)], 64, 560, most=12)
    assert [t.label for t in axis.ticks if t.label] == [str(i) for i in range(2, 30, 3)]


def test_a_page_with_the_new_charts_matches_its_snapshot(tmp_path: Path, results: Path) -> None:
    """The charts of a small page, built by MkDocs: well-formed, and as reviewed in
    tests/golden/charts.html (PERFPAGES_UPDATE_GOLDEN=1 rewrites it after a deliberate change)."""
    site, warnings = build_site(tmp_path, {"index.md": PAGE}, results)
    assert warnings == []
    body = (site / "index.html").read_text(encoding="utf-8")
    figures = re.findall(r'<figure class="perfpages-chart".*?</figure>', body, re.S)
    assert len(figures) == 2 and all(svgs(f) for f in figures)
    assert all(" data-search-exclude" in f for f in figures)
    # both colour schemes: every colour is the text's or a palette variable the CSS switches
    assert set(re.findall(r'(?:fill|stroke)="([^"]+)"', body.split("<article", 1)[1])) <= {
        "currentColor", "none"}
    assert set(re.findall(r'style="color:([^"]+)"', "".join(figures))) == {
        "var(--perfpages-c1)", "var(--perfpages-c2)", "var(--perfpages-c3)"}
    got = "\n".join(figures) + "\n"
    if os.environ.get("PERFPAGES_UPDATE_GOLDEN"):
        GOLDEN.write_text(got, encoding="utf-8")
    assert got == GOLDEN.read_text(encoding="utf-8")


def test_labels_and_tooltips_never_print_scientific_notation() -> None:
    from perfpages.site.axes import label

    assert label(4850.3) == "4,850"  # a tooltip's "median 4,850", never "median 4.85e+03"
    assert label(12345.6) == "12,300"
    assert label(2.5) == "2.5" and label(0.25) == "0.25"
    assert "e" not in label(0.000043)

"""The round-trip chart under `round_trips(chart=True)`: latency against the measured added round
trip on linear axes from 0, a dot per round and delay, a line per series with the table's slope,
the slope in the legend; a selection without delays is one line naming page and line."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from itertools import pairwise
from pathlib import Path

import pytest

from perfpages.archive.manifest import Block, Label, Manifest, Method, Pin
from perfpages.archive.window import Window
from perfpages.archive.writer import ArchiveWriter
from perfpages.errors import PerfpagesError
from perfpages.site.page import render_file
from perfpages.site.store import RunStore
from perfpages.testing import MACHINE
from sites import DEMO, failed_build_lines, make_results

SVG = "{http://www.w3.org/2000/svg}"
RUN = "2026-12-01-synthetic-network"
DELAYS = (0.0, 0.5, 1.0, 2.0, 5.0)
TRIPS = {"old": 7, "new": 4}  # round trips per call of each label
ROUNDS = 3


def write_network(results: Path) -> None:
    """One caller across five delays, two labels: p50 = 2 ms + trips × the added round trip,
    the added round trip twice the delay plus an overshoot that differs per round."""
    labels = {name: Label(name, Pin("none", note="generated"), env={"BUILD": name})
              for name in TRIPS}
    manifest = Manifest(
        id=RUN, suite="synthetic", title="Synthetic network run (generated values)",
        scope="synthetic", status="running", started="2026-12-01T10:00:00Z",
        command="tests/test_trips_chart.py", harness={"version": "synthetic", "commit": None},
        labels=labels, method=Method(rounds=ROUNDS, order="fixed", seed=1, warmup_s=0,
                                     window_s=1, min_rounds=2),
        machine=MACHINE, blocks={"network": Block("network", title="network",
                                                  metrics=("p50", "throughput"))})
    with ArchiveWriter.create(results, manifest) as writer:
        for rnd in range(1, ROUNDS + 1):
            for name, trips in TRIPS.items():
                for delay in DELAYS:
                    added = 2 * delay + 0.05 * rnd
                    writer.append(Window(
                        block="network", label=name, round=rnd, window=0,
                        params={"callers": 1, "delay_ms": delay},
                        start="2026-12-01T10:00:00Z", duration_s=1.0, requests=100,
                        codes={"200": 100},
                        metrics={"p50": 2.0 + trips * added + 0.01 * rnd,
                                 "added_rtt_ms": added}))
        writer.finish("complete")


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_results(tmp_path_factory.mktemp("results"))
    write_network(root)
    return root


def render(tmp_path: Path, results: Path, body: str) -> str:
    page = tmp_path / "net.md"
    page.write_text(f"---\nruns:\n  net: {RUN}\n  demo: {DEMO}\n---\n# Net\n\n{body}",
                    encoding="utf-8")
    return render_file(page, path="docs/x/net.md", store=RunStore(results)).markdown


def the_svg(text: str) -> ET.Element:
    found = re.findall(r'<svg class="perfpages-wide" .*?</svg>', text, re.S)
    assert len(found) == 1
    return ET.fromstring(found[0])


def test_the_chart_draws_rounds_and_the_fitted_lines_on_linear_axes(tmp_path: Path,
                                                                    results: Path) -> None:
    out = render(tmp_path, results,
                 '{{ round_trips(run="net", block="network", chart=True) }}\n')
    assert out.index("| round trips (slope)") < out.index("<figure")  # under the table
    svg = the_svg(out)
    series = [g for g in svg.iter(f"{SVG}g") if g.find(f"{SVG}title") is not None]
    assert [g.find(f"{SVG}title").text for g in series] == [
        "old: 7.0 round trips per call", "new: 4.0 round trips per call"]
    for g in series:
        assert len(g.findall(f"{SVG}line")) == 1  # the least-squares line
        assert len(g.findall(f"{SVG}circle")) == ROUNDS * len(DELAYS)  # a dot per round, delay
    texts = [t.text or "" for t in svg.iter(f"{SVG}text")]
    assert "old: 7.0 round trips per call" in texts and "new: 4.0 round trips per call" in texts
    assert "added round-trip time, ms" in texts and "p50 latency, ms" in texts
    # x ticks: round values from 0, evenly spaced (linear), reaching the farthest added trip
    labels = [(float(t.get("x")), t.text or "") for t in svg.iter(f"{SVG}text")
              if t.get("y") == str(int(svg.get("viewBox").split()[3]) - 48 + 18)]
    values = [float(text) for _, text in labels]
    assert values[0] == 0 and values == sorted(values) and values[-1] <= 2 * 5 + 0.15
    steps = {round(b[0] - a[0]) for a, b in pairwise(labels)}
    assert len(labels) >= 4 and len(steps) == 1
    # the line has the table's slope through the medians
    g = series[0]
    line = g.find(f"{SVG}line")
    x1, y1, x2, y2 = (float(line.get(k)) for k in ("x1", "y1", "x2", "y2"))
    assert x1 < x2 and y1 > y2  # rises to the right
    on_line = [c for c in g.findall(f"{SVG}circle")
               if abs(y1 + (y2 - y1) * (float(c.get("cx")) - x1) / (x2 - x1)
                      - float(c.get("cy"))) < 0.2]
    assert len(on_line) == len(DELAYS)  # the median round of each delay lies on it
    desc = svg.find(f"{SVG}desc").text or ""
    assert desc.startswith("x: added round-trip time, ms; y: p50 latency, ms. old: 7.0 round "
                           "trips per call; 0.10 ms → 2.72 ms, 1.10 ms → 9.72 ms")
    assert 'data-search-exclude' in out and "var(--perfpages-c1)" in out


def test_without_chart_the_table_is_unchanged(tmp_path: Path, results: Path) -> None:
    plain = render(tmp_path, results, '{{ round_trips(run="net", block="network") }}\n')
    drawn = render(tmp_path, results,
                   '{{ round_trips(run="net", block="network", chart=True) }}\n')
    assert "<svg" not in plain and drawn.startswith(plain.rstrip("\n"))


def test_a_block_without_delays_is_one_line_naming_page_and_line(tmp_path: Path,
                                                                 results: Path) -> None:
    with pytest.raises(PerfpagesError) as error:
        render(tmp_path, results, "Text.\n\n"
                                  '{{ round_trips(run="demo", block="callers", chart=True) }}\n')
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith("docs/x/net.md:10: macro: no cells of 'p50' measured across delays")
    assert message.endswith("— select a block whose cases set delay_ms")


def test_chart_takes_true_or_false(tmp_path: Path, results: Path) -> None:
    with pytest.raises(PerfpagesError, match=r"^docs/x/net\.md:8: macro: chart='yes' is not "
                                             r"True or False — write chart=True"):
        render(tmp_path, results, '{{ round_trips(run="net", block="network", chart="yes") }}\n')


def test_a_block_without_delays_stops_mkdocs_build_with_one_line(tmp_path: Path,
                                                                 results: Path) -> None:
    """Through the real command line: `mkdocs build --strict` exits 1 naming page and line."""
    page = (f"---\nruns:\n  demo: {DEMO}\n---\n# Net\n\n"
            '{{ round_trips(block="callers", chart=True) }}\n')
    lines = failed_build_lines(tmp_path, page, results, "delays")
    assert len(lines) == 1
    assert "docs/index.md:7: macro: no cells of 'p50' measured across delays" in lines[0]

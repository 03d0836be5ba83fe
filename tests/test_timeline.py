"""`timeline`: latency over the seconds of a window, from the requests a run kept in samples/
(the cold path): a spike at a known second shows at that second, compressed or not."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from perfpages.archive import samples
from perfpages.archive.reader import open_run
from perfpages.archive.writer import ArchiveWriter
from perfpages.errors import ArchiveError, PerfpagesError
from perfpages.site import page
from perfpages.site.claims import Conditions
from perfpages.site.pins import Pins
from perfpages.site.plots import Plots
from perfpages.site.store import RunStore
from perfpages.testing import generate

RUN = "2026-11-09-synthetic-samples"
CELL = "samples/one-caller/v1.0/r{}-call-lookup-callers-1.csv"


def csv(rounds_spike_at: float, seconds: int = 70) -> str:
    """Ten requests a second at 2 ms; the first takes 300 ms, one at `rounds_spike_at` 90 ms."""
    rows = ["offset_s,latency_ms,service_ms,status,process"]
    for i in range(seconds * 10):
        at = i / 10
        ms = 300.0 if i == 0 else 90.0 if abs(at - rounds_spike_at) < 1e-9 else 2.0 + (i % 3)
        rows.append(f"{at:.6f},{ms:.3f},{ms:.3f},200,0")
    return "\n".join(rows) + "\n"


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("results")
    demo = generate(root)
    with ArchiveWriter.create(root, replace(demo.manifest, id=RUN, files={})) as writer:
        for window in demo.windows:
            writer.append(window)
        writer.write_file(CELL.format(1), csv(61.2))
        writer.write_file(CELL.format(2), csv(61.2, seconds=3000))  # > 256 KiB: stored .gz
        writer.finish("complete")
    return root


def plots(results: Path, style: int = 2) -> Plots:
    return Plots(Pins({"r": RunStore(results).get(RUN)}), style)


def polyline(svg: str, index: int) -> list[tuple[float, float]]:
    line = re.findall(r'<polyline points="([^"]+)"', svg)[index]
    return [(float(a), float(b)) for a, b in (p.split(",") for p in line.split())]


def test_the_files_of_a_cell_by_round_plain_or_compressed(results: Path) -> None:
    run_dir = results / RUN
    assert (run_dir / (CELL.format(2) + ".gz")).is_file()
    found = samples.names(run_dir, "one-caller", "v1.0", "call=lookup, callers=1")
    assert found == {1: CELL.format(1), 2: CELL.format(2)}
    first = samples.read(run_dir, CELL.format(1))
    assert len(first) == 700 and first[0] == samples.Sample(0.0, 300.0)


def test_a_spike_shows_at_its_second_and_the_first_call_is_the_highest(results: Path) -> None:
    svg = plots(results).timeline(block="one-caller", label="v1.0")
    assert "highest 300 ms at 0" in svg
    one = polyline(svg, 0)
    assert len(one) == 70  # a point per second of the first round's window
    heights = [y for _, y in one]
    # Pixels grow downwards: the spike second stands above every other but the first.
    assert heights[61] < min(heights[1:61] + heights[62:])
    assert "round 1" in svg and "round 2" in svg
    assert len(polyline(svg, 1)) == 3000


def test_a_percentile_per_bin_and_wider_bins(results: Path) -> None:
    svg = plots(results).timeline(block="one-caller", label="v1.0", stat="p50", bin_s=10,
                                  where={"call": "lookup"})
    assert len(polyline(svg, 0)) == 7
    assert "p50 latency per 10 s of the window" in svg
    assert "highest 3.00 ms" in svg  # the median of a bin is the 2–4 ms baseline, never the spike


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"stat": "p100"}, "is not max or a percentile"),
    ({"stat": "mean"}, "is not max or a percentile"),
    ({"bin_s": 0}, "is not a positive number of seconds"),
    ({"block": "callers"}, "no samples for callers"),
])
def test_bad_options_are_one_line(results: Path, kwargs: dict, error: str) -> None:
    with pytest.raises(PerfpagesError, match=error):
        plots(results).timeline(**{"block": "one-caller", "label": "v1.0", **kwargs})


def test_a_malformed_samples_file_names_its_line(tmp_path: Path) -> None:
    (tmp_path / "samples").mkdir()
    (tmp_path / "samples" / "x.csv").write_text("offset_s,latency_ms\n0.1,2.0\n0.2,oops\n")
    with pytest.raises(ArchiveError, match=r"samples/x\.csv:3: not a sample: '0\.2,oops'"):
        samples.read(tmp_path, "samples/x.csv")
    (tmp_path / "samples" / "y.csv").write_text("when,ms\n")
    with pytest.raises(ArchiveError, match=r"y\.csv:1: not a samples file"):
        samples.read(tmp_path, "samples/y.csv")


def test_a_page_draws_it(results: Path) -> None:
    body = '{{ timeline(block="one-caller", label="v1.0") }}\n'
    rendered = page.render(body, {"runs": {"r": RUN}, "charts": 2}, path="docs/perf/v1.md",
                           offset=0, store=RunStore(results))
    assert "<svg" in rendered.markdown and "slowest call, ms" in rendered.markdown
    assert open_run(results / RUN).manifest.status == "complete"


def conditions(results: Path) -> Conditions:
    return Conditions(Pins({"r": RunStore(results).get(RUN)}))


def test_spike_holds_where_the_stall_is_in_every_round(results: Path) -> None:
    held = conditions(results).spike(55, 70, block="one-caller", label="v1.0")
    assert held.holds
    assert held.data.count("90 ms at 61.2 s") == 2  # both rounds
    elsewhere = conditions(results).spike(10, 20, block="one-caller", label="v1.0")
    assert not elsewhere.holds and "between 10 and 20 s" in elsewhere.expected
    # from the very start, the slowest is the first call (300 ms at 0 s), not the stall
    first = conditions(results).spike(55, 70, after_s=0, block="one-caller", label="v1.0")
    assert not first.holds and "at 0.0 s" in first.data


@pytest.mark.parametrize(("args", "kwargs", "error"), [
    ((70, 55), {}, "is not a window of seconds"),
    ((55, 70), {"block": "callers"}, "no samples for callers"),
])
def test_spike_refuses_bad_windows_and_cells_without_samples(
        results: Path, args: tuple, kwargs: dict, error: str) -> None:
    with pytest.raises(PerfpagesError, match=error):
        conditions(results).spike(*args, **{"block": "one-caller", "label": "v1.0", **kwargs})


def test_a_page_claims_the_spike(results: Path) -> None:
    body = ('{{ claim("the stall comes once, at about a minute", spike(55, 70, '
            'block="one-caller", label="v1.0")) }}\n')
    rendered = page.render(body, {"runs": {"r": RUN}, "charts": 2}, path="docs/perf/v1.md",
                           offset=0, store=RunStore(results))
    assert [c.holds for c in rendered.claims] == [True]

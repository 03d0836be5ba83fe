"""History across releases: change points between neighbouring releases, decided by the method's
rule, on synthetic series with known steps and none; the history chart and the `steps` claim."""

from __future__ import annotations

import random
import re
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import pytest

from perfpages.analysis.changepoints import change_points, flatten, landing, steps
from perfpages.analysis.decision import Cell
from perfpages.analysis.edivisive import change_points as edivisive
from perfpages.archive.reader import open_run
from perfpages.archive.writer import ArchiveWriter
from perfpages.errors import AnalysisError, PerfpagesError
from perfpages.site import page
from perfpages.site.claims import Conditions
from perfpages.site.pins import Pins
from perfpages.site.plots import Plots
from perfpages.site.store import RunStore
from perfpages.testing import Spec, generate

RELEASES = [f"0.{n}.0" for n in range(35, 44)]  # 0.35.0 … 0.43.0
RUN = "2026-11-10-synthetic-history"


def series(levels: list[float], noise: float = 0.02, seed: int = 1) -> list[tuple[str, Cell]]:
    """Five rounds per release around each level (throughput), with Gaussian noise."""
    rng = random.Random(seed)
    return [(r, Cell(tuple(level * 800 * (1 + rng.gauss(0, noise)) for _ in range(5))))
            for r, level in zip(RELEASES, levels, strict=True)]


@pytest.mark.parametrize(("levels", "expected"), [
    ([1.0] * 9, []),                                         # no step
    ([1.0] * 8 + [1.3], ["0.43.0"]),                         # one step, at the last release
    ([1.0] * 3 + [1.25] * 3 + [0.9] * 3, ["0.38.0", "0.41.0"]),  # up, then down
    ([1.0, 1.01, 1.02, 1.03, 1.04, 1.05, 1.06, 1.07, 1.08], []),  # a drift, never a step
])
def test_change_points_on_series_with_known_steps(levels: list[float],
                                                  expected: list[str]) -> None:
    for seed in range(5):  # the verdicts hold whatever the noise drew
        assert change_points(series(levels, seed=seed), "throughput") == expected


def test_each_step_is_the_methods_change_between_neighbours() -> None:
    found = steps(series([1.0] * 8 + [1.3]), "throughput")
    assert [(s.before, s.after) for s in found] == list(pairwise(RELEASES))
    last = found[-1]
    assert last.clear and last.change.verdict == "clear gain" and 25 < last.change.percent < 35
    # Fewer rounds than the method needs: never clear, however far apart.
    few = [(r, Cell(c.values[:2])) for r, c in series([1.0] * 8 + [2.0])]
    assert change_points(few, "throughput") == []


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("results")
    levels = [1.0] * 8 + [1.3]
    generate(root, Spec(run_id=RUN, title="Synthetic history (generated values)",
                        labels=dict(zip(RELEASES, levels, strict=True)), noise=0.01,
                        blocks={"callers": [{"call": "lookup", "callers": 32},
                                            {"call": "page", "callers": 32}]}))
    return root


def pins(results: Path) -> Pins:
    return Pins({"h": RunStore(results).get(RUN)})


def test_the_steps_claim(results: Path) -> None:
    c = Conditions(pins(results))
    page_ = {"block": "callers", "where": {"call": "page"}}
    held = c.steps("0.43.0", **page_)
    assert held.holds, held.data
    assert held.expected == "clear steps at 0.43.0 only (throughput)"
    assert held.data.startswith("callers, call=page, callers=32: 0.42.0→0.43.0 +")
    assert not c.steps([], **page_).holds
    assert not c.steps(["0.40.0", "0.43.0"], **page_).holds
    assert c.steps("0.43.0", "p50", **page_).holds  # latency falls as throughput rises
    # The lookup's levels are equal up to 0.42.0, yet one neighbour pair's five rounds came out
    # apart: the rule's false-positive rate, 2/C(10,5) = 0.8 % a pair, adds up over a long
    # history. The claim says what the rule decided, and the page must say it is one rule.
    lookup = c.steps(["0.38.0", "0.43.0"], block="callers", where={"call": "lookup"})
    assert lookup.holds and "0.37.0→0.38.0 +1.0 %" in lookup.data
    assert not c.steps("0.43.0", block="callers").holds  # every series must agree
    with pytest.raises(AnalysisError, match=r"no release '0\.99\.0'"):
        c.steps("0.99.0")


def test_the_steps_claim_records_its_comparisons(results: Path) -> None:
    """Every step between neighbours is a verdict the claim states: it rests on each (the one
    asserted clear marked so) and each is in the page's ledger, where the agreement and
    contrary checks read them."""
    found = pins(results)
    held = Conditions(found).steps("0.43.0", block="callers", where={"call": "page"})
    labels = found.labels("h")
    assert len(held.judged) == len(labels) - 1
    assert [j.asserted for j in held.judged] == [b == "0.43.0" for b in labels[1:]]
    assert [j.change.clear for j in held.judged] == [b == "0.43.0" for b in labels[1:]]
    keys = [k for k in found.judged if len(k) == 8]
    assert [(k[3], k[6]) for k in keys] == list(pairwise(labels))
    assert all(found.judged.lines[k] == 1 for k in keys)  # outside a template: line 1


def test_the_history_chart_rings_the_clear_step(results: Path) -> None:
    drawn = Plots(pins(results), 2).history(block="callers", where={"call": "page"})
    svg = drawn.split('class="perfpages-narrow"')[0]  # the wide layout (both draw the rings)
    assert "throughput by release" in svg
    rings = re.findall(r'r="7" fill="none" stroke-width="2"><title>([^<]+)</title>', svg)
    assert len(rings) == 1 and rings[0].startswith("throughput: clear step at 0.43.0: +")
    assert "a ring marks a clear step" in drawn
    two = Plots(pins(results), 2).history(block="callers").split('class="perfpages-narrow"')[0]
    assert len(re.findall(r'r="7" fill="none"', two)) == 3  # page's step, lookup's two
    assert ">lookup<" in two and ">page<" in two


def test_a_page_states_the_history(results: Path) -> None:
    body = ('{{ history(block="callers", where={"call": "page"}) }}\n\n'
            '{{ claim("The only clear step is at 0.43.0.", steps("0.43.0", block="callers", '
            'where={"call": "page"})) }}\n')
    rendered = page.render(body, {"runs": {"h": RUN}, "charts": 2}, path="docs/perf/h.md",
                           offset=0, store=RunStore(results))
    assert [c.holds for c in rendered.claims] == [True] and rendered.warnings == []
    assert "<svg" in rendered.markdown


def test_a_latest_pin_reads_the_newest_complete_run_of_a_suite(tmp_path: Path) -> None:
    # A history page pins `latest:SUITE`: when a run with a new release is archived, the page
    # grows without being edited.
    root = tmp_path / "results"
    old = generate(root, Spec(run_id=RUN, labels=dict.fromkeys(RELEASES[:-1], 1.0),
                              blocks={"callers": [{"call": "page", "callers": 32}]}))
    newer = "2026-11-12-synthetic-history"
    with ArchiveWriter.create(root, replace(
            generate(tmp_path / "scratch", Spec(
                run_id=newer, labels={**dict.fromkeys(RELEASES[:-1], 1.0), "0.43.0": 1.3},
                blocks={"callers": [{"call": "page", "callers": 32}]})).manifest,
            started="2026-11-12T10:00:00Z", files={}, status="running")) as writer:
        for w in open_run(tmp_path / "scratch" / newer).windows:
            writer.append(w)
        writer.finish("complete")
    assert old.manifest.started < "2026-11-12T10:00:00Z"
    body = ('Read {{ fact("id") }}.\n\n'
            '{{ claim("The only clear step is at 0.43.0.", steps("0.43.0", block="callers")) }}\n')
    rendered = page.render(body, {"runs": {"h": "latest:synthetic"}}, path="docs/h.md",
                           offset=0, store=RunStore(root))
    assert f"Read {newer}." in rendered.markdown and rendered.claims[0].holds
    with pytest.raises(PerfpagesError, match=r"docs/h\.md: runs\.h: no complete run of suite "
                                             r"'nothing'"):
        page.render(body, {"runs": {"h": "latest:nothing"}}, path="docs/h.md", offset=0,
                    store=RunStore(root))


def test_flatten_and_landing_name_the_release_of_a_change_point() -> None:
    values, owners = flatten(series([1.0] * 2 + [1.3] * 7)[:3])
    assert len(values) == 15 and owners[:6] == ["0.35.0"] * 5 + ["0.36.0"]
    assert landing([10], owners) == ["0.37.0"]  # the first round of 0.37.0 starts a segment
    assert landing([12, 11, 0, 15], owners) == ["0.37.0"]  # inside it, once; ends ignored


# E-divisive (analysis/edivisive.py, which answers as apache-otava does): the same
# synthetic series, read whole. Where the neighbour rule and E-divisive differ, the page shows
# both — that is the point of having two.
EDIVISIVE_CASES = [
    ([1.0] * 9, [], []),
    ([1.0] * 8 + [1.3], ["0.43.0"], ["0.43.0"]),
    ([1.0] * 4 + [1.3] * 5, ["0.39.0"], ["0.39.0"]),
    # Up, then down: the rule sees both steps; E-divisive, with its p < 0.001, the larger one.
    ([1.0] * 3 + [1.25] * 3 + [0.9] * 3, ["0.38.0", "0.41.0"], ["0.41.0"]),
]


@pytest.mark.parametrize(("levels", "rule", "expected"), EDIVISIVE_CASES)
def test_edivisive_on_series_with_known_steps(levels: list[float], rule: list[str],
                                              expected: list[str]) -> None:
    for seed in range(3):
        s = series(levels, seed=seed)
        values, owners = flatten(s)
        found = edivisive(values)
        assert landing(found, owners) == expected
        assert change_points(s, "throughput") == rule


def test_edivisive_splits_a_drift_the_rule_never_calls_a_step() -> None:
    s = series([1.0 + 0.01 * i for i in range(9)], seed=1)
    values, owners = flatten(s)
    found = edivisive(values)
    assert landing(found, owners) and change_points(s, "throughput") == []


def test_a_page_shows_both_methods(results: Path) -> None:
    svg = Plots(pins(results), 2).history(block="callers", where={"call": "page"},
                                          edivisive=True)
    assert 'stroke-dasharray="3 2"' in svg and "E-divisive change point at 0.43.0" in svg
    assert "a dashed ring, a change point E-divisive finds" in svg
    c = Conditions(pins(results))
    held = c.steps("0.43.0", method="e-divisive", block="callers", where={"call": "page"})
    assert held.holds and held.expected == "E-divisive change points at 0.43.0 only (throughput)"
    with pytest.raises(AnalysisError, match="method='pelt' is not a way to find steps"):
        c.steps("0.43.0", method="pelt")

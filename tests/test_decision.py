"""One decision rule: the table, `bench report` and the claims agree on every pair of rounds,
because each only displays what perfpages.analysis.decision decided on the raw values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from perfpages.analysis import decision, report
from perfpages.analysis.decision import Cell, Change, Rule
from perfpages.archive.manifest import Block, Label, Manifest, Method, Pin
from perfpages.archive.reader import open_run
from perfpages.archive.window import Window
from perfpages.archive.writer import ArchiveWriter
from perfpages.site.claims import Conditions
from perfpages.site.macros import Macros
from perfpages.site.pins import Pins
from perfpages.site.store import RunStore
from perfpages.testing import MACHINE

SCALE = 100  # throughput = requests / duration: hundredths of a request per second


def write_run(results: Path, base: list[int], other: list[int], min_rounds: int = 5,
              rule: dict[str, Any] | None = None) -> str:
    """A run whose rounds of throughput are exactly base/100 and other/100, decided by `rule`
    (`method.rule`; None: ranges apart)."""
    # Two builds (b sets an environment): the same build twice would be an A/A pair, whose clear
    # "loss" is the machine's noise and never counts for --fail-on loss.
    labels = {name: Label(name, Pin("none", note="generated"),
                          env={"BUILD": name} if name == "b" else {}) for name in ("a", "b")}
    manifest = Manifest(
        id="2026-11-01-decision", suite="synthetic", title="Generated rounds (not a measurement)",
        scope="synthetic", status="running", started="2026-11-01T10:00:00Z",
        command="tests/test_decision.py", harness={"version": "synthetic", "commit": None},
        labels=labels, method=Method(rounds=len(base), order="shuffle" if rule else "fixed",
                                     seed=1, warmup_s=0, window_s=1, min_rounds=min_rounds,
                                     rule=rule),
        machine=MACHINE, blocks={"blk": Block("blk", title="blk", metrics=("throughput",))})
    with ArchiveWriter.create(results, manifest) as writer:
        for rnd, values in enumerate(zip(base, other, strict=True), start=1):
            for label, value in zip(("a", "b"), values, strict=True):
                writer.append(Window(block="blk", label=label, round=rnd, window=0,
                                     params={"call": "x"}, start="2026-11-01T10:00:00Z",
                                     duration_s=SCALE, requests=value,
                                     codes={"200": value}))
    return manifest.id


rounds = st.integers(min_value=2, max_value=6).flatmap(lambda n: st.tuples(
    st.lists(st.integers(10_000, 10_040), min_size=n, max_size=n),
    st.lists(st.integers(10_000, 10_040), min_size=n, max_size=n)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pair=rounds, min_rounds=st.integers(2, 5))
@example(pair=([10001, 10001], [10000, 10000]), min_rounds=2)  # a clear loss: once read as A/A
def test_table_report_and_claims_agree(tmp_path_factory: pytest.TempPathFactory,
                                       pair: tuple[list[int], list[int]],
                                       min_rounds: int) -> None:
    base, other = pair
    results = tmp_path_factory.mktemp("decision")
    run_id = write_run(results, base, other, min_rounds)
    expected = Change("throughput", Cell(tuple(v / SCALE for v in base)),
                      Cell(tuple(v / SCALE for v in other)), Rule(min_rounds=min_rounds)).verdict

    loaded = RunStore(results).get(run_id)
    pins = Pins({"r": loaded})
    table = Macros(pins).change("a", "b", block="blk")  # what a page's table and text print
    data = report.build(open_run(results / run_id))
    (row,) = data["changes"]["rows"]
    conditions = Conditions(pins)

    assert row[-1] == expected  # bench report
    short = {"ranges overlap": "overlap", "ranges apart": "apart"}.get(expected, expected)
    assert table.endswith(f"({'too few rounds' if expected.startswith('too few') else short})")
    assert conditions.faster("a", "b", block="blk").holds == (expected == "clear gain")
    assert conditions.slower("a", "b", block="blk").holds == (expected == "clear loss")
    assert conditions.overlap("a", "b", block="blk").holds == (
        not Change("throughput", Cell(tuple(base)), Cell(tuple(other))).separated)
    assert bool(data["losses"]) == (expected == "clear loss")  # --fail-on loss


def test_rounding_never_decides() -> None:
    """Rounds 100.01–100.04 vs 100.06–100.09 print alike, yet their ranges are apart."""
    base, other = Cell((100.01, 100.02, 100.03, 100.04, 100.02)), \
        Cell((100.06, 100.07, 100.08, 100.09, 100.07))
    assert Change("throughput", base, other).verdict == "clear gain"
    assert decision.drifted(Cell((100.0,)), Cell((110.4,)), 0.10)
    assert not decision.drifted(Cell((100.0,)), Cell((109.9,)), 0.10)
    assert decision.saturated(0.099, 0.51) and not decision.saturated(0.10, 0.51)
    assert decision.within(9.96, 9.96, 10.0) and not decision.within(9.96, 10.0, 20.0)


def test_a_floor_drifts_when_beyond_the_threshold_and_its_own_noise() -> None:
    """Floors are one-second windows: a move inside their second-to-second range is not drift."""
    quiet = Cell((14_600.0, 15_000.0, 16_300.0, 17_000.0))
    faster = Cell((16_600.0, 18_400.0, 19_500.0, 20_400.0))  # +21 %, ranges overlap
    assert not decision.drifted(quiet, faster, 0.10)
    apart = Cell((17_500.0, 17_600.0, 17_700.0, 17_800.0))  # +13 %, apart
    assert decision.drifted(quiet, apart, 0.10)
    near = Cell((17_100.0, 17_200.0, 17_300.0, 17_400.0))  # +10 %: apart, within 11 %
    assert not decision.drifted(quiet, near, 0.11)
    assert decision.drifted(quiet, Cell((0.0, 0.0)), 0.10)  # a floor that measured nothing
    assert decision.drifted(Cell((0.0,)), quiet, 0.10)


def test_a_cell_whose_rounds_differ_never_prints_one_value_three_times() -> None:
    from perfpages.analysis.changes import cell_text

    assert cell_text(Cell((1.00098, 1.00099, 1.00099))) == "1.00099 (1.00098–1.00099)"
    assert cell_text(Cell((1.0017, 1.0017, 1.0018))) == "1.0017 (1.0017–1.0018)"
    # the default precision where it already tells the rounds apart; equal rounds stay short
    assert cell_text(Cell((80.9, 90.0, 100.4))) == "90 (80.9–100)"
    assert cell_text(Cell((1.0, 1.0, 1.0))) == "1.00 (1.00–1.00)"
    assert cell_text(Cell((5.0,))) == "5.00"

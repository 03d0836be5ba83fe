"""Changes and claims between parameter values under one label, as ratios or absolute
differences, with the precision a page chooses — decided by the one rule (issue 11, item 4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfpages.analysis.decision import Cell, Change
from perfpages.analysis.format import format_differences, format_percent, format_range
from perfpages.errors import AnalysisError
from perfpages.site import page
from perfpages.site.claims import Conditions
from perfpages.site.macros import Macros
from perfpages.site.pins import Pins
from perfpages.site.store import RunStore
from sites import DEMO, SWEEP, make_results

# The sweep: callers 1, 2 … 32 per label. One caller is paced (a quarter of the rate, p50 about
# 1.3 ms); from two callers on the rate is the same and p50 grows with the callers.


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_results(tmp_path_factory.mktemp("results"))


@pytest.fixture(scope="module")
def sweep(results: Path) -> Pins:
    return Pins({"s": RunStore(results).get(SWEEP)})


def cell(pins: Pins, metric: str, callers: int, label: str = "v1.0") -> Cell:
    (f,) = pins.select(metric=metric, label=label, where={"callers": callers})
    return f.cell


def test_a_change_between_two_parameter_values_pairs_cells_alike_but_for_them(
        sweep: Pins) -> None:
    m = Macros(sweep)
    expected = Change("throughput", cell(sweep, "throughput", 1), cell(sweep, "throughput", 32))
    one = m.change({"callers": 1}, {"callers": 32}, label="v1.0")
    assert one == f"{format_percent(expected.percent)} (clear gain)"
    # Without a label, a pair per label: the range and how many are clear.
    assert m.change({"callers": 1}, {"callers": 32}).endswith("(3 of 3 clear)")
    pairs = sweep.pairs({"callers": 8}, {"callers": 16}, metric="p50")
    assert [(a.label, b.label) for a, b in pairs] == [("v1.0", "v1.0"), ("v1.1", "v1.1"),
                                                      ("v1.1 + cache", "v1.1 + cache")]
    assert all(a.params["callers"] == 8 and b.params["callers"] == 16 for a, b in pairs)


def test_an_absolute_difference_in_the_metrics_unit_or_another(sweep: Pins) -> None:
    m = Macros(sweep)
    c = Change("p50", cell(sweep, "p50", 8), cell(sweep, "p50", 16))
    assert c.difference == pytest.approx(c.other.median - c.base.median)
    text = m.change({"callers": 8}, {"callers": 16}, "p50", label="v1.0", absolute=True,
                    digits=2)
    assert text == f"+{c.difference:.2f} ms (clear loss)"
    micro = m.change({"callers": 8}, {"callers": 16}, "p50", label="v1.0", absolute=True,
                     unit="µs", digits=0, show_verdict=False)
    assert micro == f"+{c.difference * 1000:,.0f} µs"
    with pytest.raises(AnalysisError, match="unit= needs absolute=True"):
        m.change({"callers": 8}, {"callers": 16}, "p50", unit="µs")


def test_digits_set_the_precision_of_changes_and_ranges() -> None:
    assert format_percent(8.5432, 2) == "+8.54 %"
    assert format_percent(-12.345, 1) == "−12.3 %"
    assert format_percent(12.345) == "+12 %" and format_percent(2.345) == "+2.3 %"
    assert format_differences([0.041, 0.062], "ms", 2) == "+0.04 ms to +0.06 ms"
    assert format_differences([-0.011, 0.032], "ms", 2) == "−0.01 ms to +0.03 ms"
    assert format_differences([0.05], "ms") == "+0.050 ms"  # three significant figures
    assert format_differences([-12.0, -3.0], "/s", 0) == "−12/s to −3/s"


def test_the_verdict_of_a_difference_is_the_verdict_of_the_change(sweep: Pins) -> None:
    # Whether a ratio or a difference is printed, clear is decided once, on the ranges.
    m = Macros(sweep)
    for base, other in (({"callers": 2}, {"callers": 4}), ({"callers": 1}, {"callers": 2})):
        ratio = m.change(base, other, "p50", label="v1.0")
        absolute = m.change(base, other, "p50", label="v1.0", absolute=True)
        assert ratio.rsplit("(", 1)[1] == absolute.rsplit("(", 1)[1]


def test_claims_between_parameter_values(sweep: Pins) -> None:
    c = Conditions(sweep)
    assert c.faster({"callers": 1}, {"callers": 32}, label="v1.0").holds
    assert c.slower({"callers": 8}, {"callers": 32}, "p50", label="v1.0").holds
    d = Change("p50", cell(sweep, "p50", 8), cell(sweep, "p50", 16)).difference
    held = c.between(d - 0.01, d + 0.01, {"callers": 8}, {"callers": 16}, "p50",
                     absolute=True, label="v1.0")
    assert held.holds
    assert held.expected.startswith("a difference of callers=16 over callers=8 between +")
    assert " ms " in held.expected and "callers=16, v1.0: +" in held.data
    assert not c.between(d + 0.01, d + 1, {"callers": 8}, {"callers": 16}, "p50",
                         absolute=True, label="v1.0").holds
    in_us = c.between((d - 0.01) * 1000, (d + 0.01) * 1000, {"callers": 8}, {"callers": 16},
                      "p50", absolute=True, unit="µs", label="v1.0")
    assert in_us.holds and "µs" in in_us.expected


def test_best_along_a_parameter(sweep: Pins) -> None:
    c = Conditions(sweep)
    assert c.best("callers", 1, "p50").holds  # one paced caller waits least, in every label
    assert c.best("callers", 1, "p50", clear=True).holds
    worst = c.best("callers", 32, "p50")
    assert not worst.holds
    assert worst.expected == "callers=32 best along callers in every series (p50)"
    assert "callers=32" in worst.data and "best callers=1" in worst.data  # the winner, named
    assert not c.best("callers", 1).holds  # the paced caller has the least throughput
    with pytest.raises(AnalysisError, match="0 cells at callers=3"):
        c.best("callers", 3)
    with pytest.raises(AnalysisError, match="no better direction"):
        c.best("callers", 1, "requests")


@pytest.mark.parametrize(("base", "other", "filters", "error"), [
    ("v1.0", {"callers": 2}, {}, "two labels, or two sets of parameter values"),
    ({"callers": 2}, {"callers": 4}, {"where": {"callers": 2}}, "where= sets callers"),
    ({"callers": 2}, {"callers": 3}, {}, "no cells of 'throughput' match"),
    ({}, {}, {}, "two labels, or two sets of parameter values"),
])
def test_bad_sides_are_one_clear_error(sweep: Pins, base: object, other: object,
                                       filters: dict, error: str) -> None:
    with pytest.raises(AnalysisError, match=error):
        Macros(sweep).change(base, other, **filters)  # type: ignore[arg-type]


def test_a_page_compares_parameter_values_in_its_macros_and_claims(results: Path) -> None:
    body = ('{{ change({"callers": 8}, {"callers": 16}, "p50", label="v1.0", absolute=True, '
            'digits=1) }}\n\n'
            '{{ claim("One caller waits least.", best("callers", 1, "p50", '
            'despite="throughput")) }}\n\n'
            '{{ claim("32 callers wait longer than 8.", slower({"callers": 8}, {"callers": 32}, '
            '"p50")) }}\n')
    rendered = page.render(body, {"runs": {"s": SWEEP}}, path="docs/perf/v1.md", offset=0,
                           store=RunStore(results))
    assert rendered.markdown.startswith("+") and "ms (clear loss)" in rendered.markdown
    assert [c.holds for c in rendered.claims] == [True, True], rendered.warnings
    assert rendered.warnings == []
    # one caller's lower throughput is clear too: the claim names it (perfpages.site.contrary)
    assert "(despite a clearly lower throughput: " in rendered.markdown


def test_ratios_by_label_are_unchanged(results: Path) -> None:
    # The label form prints as it always did (the published pages' snapshots hold it too).
    pins = Pins({"d": RunStore(results).get(DEMO)})
    changes = [Change("throughput", a.cell, b.cell)
               for a, b in pins.pairs("v1.0", "v1.1", metric="throughput", block="callers")]
    assert Macros(pins).change("v1.0", "v1.1", block="callers", show_verdict=False) == \
        format_range(changes) + " across calls"  # the range over cells, named as such

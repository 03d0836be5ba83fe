"""The method's arithmetic: medians and ranges, verdicts, false-positive rates, comparability."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from perfpages import load
from perfpages.analysis.comparable import check_comparable, machine_name, machine_text
from perfpages.analysis.decision import Cell, Change, Rule, false_positive_rate
from perfpages.analysis.format import format_percent, format_range
from perfpages.analysis.rows import cell, change
from perfpages.archive.reader import open_run
from perfpages.errors import AnalysisError, ComparabilityError

FIXTURE = Path(__file__).parent / "fixtures" / "results" / "2026-11-01-synthetic-demo"


def test_false_positive_rate_matches_the_method() -> None:
    assert false_positive_rate(5) == pytest.approx(2 / 252)
    assert f"{false_positive_rate(5):.1%}" == "0.8%"
    assert false_positive_rate(3) == pytest.approx(0.10)
    assert false_positive_rate(4) == pytest.approx(2 / 70)
    assert false_positive_rate(3, 4) == pytest.approx(2 / 35)


def test_cell_is_median_with_range() -> None:
    c = Cell((3.0, 1.0, 2.0, 10.0))
    assert (c.median, c.min, c.max, c.n) == (2.5, 1.0, 10.0, 4)
    with pytest.raises(AnalysisError):
        Cell(())


@pytest.mark.parametrize(("metric", "base", "other", "verdict", "clear"), [
    ("throughput", (100, 101, 102, 103, 104), (108, 109, 110, 111, 112), "clear gain", True),
    ("throughput", (108, 109, 110, 111, 112), (100, 101, 102, 103, 104), "clear loss", True),
    ("throughput", (100, 101, 102, 103, 109), (108, 109, 110, 111, 112), "ranges overlap", False),
    ("p99", (10, 11, 12, 13, 14), (5, 6, 7, 8, 9), "clear gain", True),  # lower latency is better
    ("p99", (5, 6, 7, 8, 9), (10, 11, 12, 13, 14), "clear loss", True),
    ("throughput", (100, 101, 102), (108, 109, 110), "too few rounds (3 < 5)", False),
    ("requests", (1, 2, 3, 4, 5), (8, 9, 10, 11, 12), "ranges apart", False),  # no direction
])
def test_change_verdicts(metric: str, base: tuple[float, ...], other: tuple[float, ...],
                         verdict: str, clear: bool) -> None:
    c = Change(metric, Cell(base), Cell(other), Rule(min_rounds=5))
    assert c.verdict == verdict
    assert c.clear is clear


def test_change_is_ratio_of_medians() -> None:
    c = Change("throughput", Cell((100, 90, 110)), Cell((108, 100, 120)), Rule(min_rounds=3))
    assert c.ratio == pytest.approx(1.08)
    assert format_percent(c.percent) == "+8.0 %"


def test_range_across_cells() -> None:
    def ch(pct: float) -> Change:
        return Change("throughput", Cell((100,)), Cell((100 + pct,)), Rule(min_rounds=1))

    assert format_range([ch(6.2), ch(9.8), ch(8)]) == "+6 % to +10 %"
    assert format_range([ch(-6.8), ch(-8.2)]) == "−8 % to −7 %"  # never "−7–8 %"
    assert format_range([ch(-2.2), ch(-0.3)]) == "−2 % to 0 %"  # never "−0–2 %"
    assert format_range([ch(0.2), ch(2.4)]) == "0 % to +2 %"
    assert format_range([ch(-3), ch(5)]) == "−3.0 % to +5.0 %"
    assert format_range([ch(12)]) == "+12 %"
    with pytest.raises(AnalysisError):
        format_range([])


def test_cells_from_the_archive() -> None:
    frame = load(FIXTURE)
    c = cell(frame, block="callers", label="v1.1", metric="throughput",
             params={"call": "lookup"})
    assert c.n == 5
    assert c.min <= c.median <= c.max
    ch = change(frame, block="callers", base="v1.0", other="v1.1 + cache", metric="throughput",
                params={"call": "page"})
    assert ch.verdict == "clear gain" and 1.15 < ch.ratio < 1.35
    with pytest.raises(AnalysisError, match="several parameter sets match"):
        cell(frame, block="callers", label="v1.1", metric="throughput")
    with pytest.raises(AnalysisError, match="no data for block 'callers', label 'v9'"):
        cell(frame, block="callers", label="v9", metric="throughput", params={"call": "page"})


def test_comparability_names_what_differs() -> None:
    a = open_run(FIXTURE).manifest
    b = replace(a, id="2026-11-02-synthetic-b", machine={**a.machine, "cores": 20},
                format_version=2)
    assert check_comparable([a, replace(a, id="2026-11-03-x")]) == []
    with pytest.raises(ComparabilityError) as exc:
        check_comparable([a, b])
    message = str(exc.value)
    assert "machine.cores 2 ≠ 20" in message and "format_version 1 ≠ 2" in message
    assert "\n" not in message
    assert len(check_comparable([a, b], allow=True)) == 2


def test_two_vm_builds_under_one_cpu_name_are_told_apart() -> None:
    a = open_run(FIXTURE).manifest
    build = {"kernel": "6.18.44-fc-v1272", "kernel_version": "#1 SMP PREEMPT_DYNAMIC @0",
             "cpu_flags": "99 flags, sha256 ecfefe0ffbf1", "microcode": "0x1000065",
             "hypervisor": "kvm"}
    one = replace(a, machine={**a.machine, **build})
    other = replace(a, id="2026-11-02-other", machine={
        **one.machine, "cpu_flags": "97 flags, sha256 0123456789ab", "microcode": "0x1000070"})
    found = check_comparable([one, other], allow=True)
    assert [d.split(": ", 1)[1].split(" ")[0] for d in found] == ["machine.cpu_flags",
                                                                  "machine.microcode"]
    # A run from before these fields stays comparable with a newer one of its machine.
    assert check_comparable([replace(a, machine={**a.machine, "kernel": build["kernel"]}), one]) \
        == []
    assert machine_name(one.machine) == (f"{machine_text(a.machine)}, kernel 6.18.44-fc-v1272, "
                                         "CPU flags ecfefe")
    assert machine_name(one.machine) != machine_name(other.machine)
    assert machine_name({"cpu": "AMD EPYC", "cores": 2, "memory_gib": 23.5,
                         "kernel": "6.18.44-fc-v1272"}) \
        == "AMD EPYC, 2 cores, 23.5 GiB, kernel 6.18.44-fc-v1272"


def test_signed_ranges_read_one_way() -> None:
    """Each end of a range carries its sign and unit: nothing reads as "−7 % to +8 %"."""
    from perfpages.analysis.format import format_differences

    def ch(pct: float) -> Change:
        return Change("throughput", Cell((100,)), Cell((100 + pct,)), Rule(min_rounds=1))

    assert format_differences([-0.011, -0.032], "ms", 2) == "−0.03 ms to −0.01 ms"
    assert format_differences([0.0, 0.5], "ms", 1) == "±0.0 ms to +0.5 ms"
    assert format_range([ch(-3.2), ch(0.3)]) == "−3.2 % to +0.3 %"
    assert format_range([ch(-7.6), ch(-7.8)]) == "−7.7 %"  # one whole number: no range

"""The one decision rule: clear gain or loss, overlap, too few rounds, drift, saturation.

Every verdict is decided here, once, on raw values: the unrounded medians, ranges and ratios of
the rounds. Tables, `bench report`, claims, floors and run pages only display these decisions.
Display rounding (`metric.format_number`: three significant digits; `method.format_percent`:
whole percent from 10 %, one decimal below) never changes a verdict, so a page may print
"+10 %" for a change of +9.96 % that `between(10, 20)` rejects; the message then shows both.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb, isfinite
from statistics import median

from perfpages.analysis.metric import info
from perfpages.errors import AnalysisError

MIN_GAIN = 0.10  # saturation: less than +10 % throughput for at least twice the clients …
P95_RISE = 0.50  # … while p95 rises by more than 50 %
# A load generator process above this share of a core may be what sets the pace: its own
# queueing then adds to the latency it measures and caps the throughput it can offer.
GENERATOR_BUSY_PCT = 80.0


@dataclass(frozen=True)
class Cell:
    """The rounds of one (block, parameters, label, metric): median with its min–max range."""

    values: tuple[float, ...]

    def __post_init__(self) -> None:
        if not self.values:
            raise AnalysisError("a cell needs at least one round")

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def median(self) -> float:
        return float(median(self.values))

    @property
    def min(self) -> float:
        return min(self.values)

    @property
    def max(self) -> float:
        return max(self.values)

    def overlaps(self, other: Cell) -> bool:
        return self.min <= other.max and other.min <= self.max


def false_positive_rate(n: int, m: int | None = None) -> float:
    """Chance that two samples of one distribution have disjoint ranges (either direction):
    the Mann–Whitney U = 0 rule, 2 / C(n+m, n); 5 rounds each: 2/252 ≈ 0.8 %."""
    m = n if m is None else m
    return 2.0 / comb(n + m, n)


@dataclass(frozen=True)
class Change:
    """other ÷ base for one metric, judged by the ranges-do-not-overlap rule."""

    metric: str
    base: Cell
    other: Cell
    min_rounds: int = 5

    @property
    def ratio(self) -> float:
        return self.other.median / self.base.median if self.base.median else float("nan")

    @property
    def percent(self) -> float:
        return (self.ratio - 1.0) * 100.0

    @property
    def difference(self) -> float:
        """other − base, in the metric's unit: the same verdict, stated absolutely."""
        return self.other.median - self.base.median

    @property
    def enough_rounds(self) -> bool:
        return min(self.base.n, self.other.n) >= self.min_rounds

    @property
    def separated(self) -> bool:
        return not self.base.overlaps(self.other)

    @property
    def better(self) -> bool | None:
        return info(self.metric).better(self.ratio)

    @property
    def clear(self) -> bool:
        return self.enough_rounds and self.separated and self.better is not None

    @property
    def fpr(self) -> float:
        return false_positive_rate(self.base.n, self.other.n)

    @property
    def verdict(self) -> str:
        if not self.enough_rounds:
            return f"too few rounds ({min(self.base.n, self.other.n)} < {self.min_rounds})"
        if not self.separated:
            return "ranges overlap"
        if self.better is None:
            return "ranges apart"
        return "clear gain" if self.better else "clear loss"


def within(percent: float, low: float, high: float) -> bool:
    """A change (in percent) inside [low, high]."""
    return low <= percent <= high


def beyond(value: float, limit: float, *, below: bool) -> bool:
    """A value strictly below (or above) a limit."""
    return value < limit if below else value > limit


def drifted(before: Cell, after: Cell, threshold: float) -> bool:
    """The machine moved across a block: the floors' medians differ by more than `threshold`
    (a fraction) and their ranges are apart — a floor measured as several one-second windows
    carries its own second-to-second noise, and a change inside it is not drift (on a quiet
    2-core VM, one 4-second pgbench floor against the next differs by over 10 % half the time;
    see method.md). A floor of one value (runs archived before) is judged by the threshold."""
    if before.median <= 0 or not isfinite(after.median / before.median):
        return True  # a floor that measured nothing is as drifted as it gets
    return abs(after.median / before.median - 1) > threshold and not before.overlaps(after)


def saturated(throughput_gain: float, p95_rise: float, *, min_gain: float = MIN_GAIN,
              rise: float = P95_RISE) -> bool:
    """A knee: throughput grows by less than `min_gain` while p95 rises by more than `rise`
    (both fractions, e.g. 0.08 for +8 %)."""
    return throughput_gain < min_gain and p95_rise > rise


def reproduces(original: Cell, second: Cell) -> bool:
    """A cell reproduces on a second run of its suite when the two runs' ranges overlap: the
    data do not show the runs differ (the rule of a change, read the other way)."""
    return original.overlaps(second)


def same_verdict(original: Change, second: Change) -> bool:
    """A change keeps its verdict on a second run: the same verdict, whatever round counts a
    "too few rounds (n < m)" names."""
    return original.verdict.split(" (")[0] == second.verdict.split(" (")[0]


def share_holds(held: int, total: int, at_least: float) -> bool:
    """At least the fraction `at_least` of `total` held; with nothing to check, nothing holds."""
    return total > 0 and held / total >= at_least


# A/A pairs (the same build under two names): on a quiet machine no cell of theirs is clear, and
# every round of both lies within ±5 % of the pair's median — the method's resolution is then
# about the size of the changes pages claim (a few percent), not swamped by the machine.
AA_SPREAD = 0.05


def spread(base: Cell, other: Cell) -> float:
    """How far the farthest round of an A/A pair lies from the pair's median (a fraction)."""
    middle = median(base.values + other.values)
    if not middle:
        return 0.0 if not any(base.values + other.values) else float("inf")
    return max(abs(v / middle - 1) for v in base.values + other.values)


def steady(base: Cell, other: Cell, limit: float = AA_SPREAD) -> bool:
    """Both ranges of an A/A pair within ±`limit` (a fraction) of the pair's median."""
    return spread(base, other) <= limit


def quiet(change: Change, within_pct: float) -> bool:
    """An A/A cell as a quiet machine shows it: not clear, and a change under `within_pct`."""
    return not change.clear and abs(change.percent) < within_pct


def generator_busy(cpu_pct: float) -> bool:
    """Whether the load generator's busiest process was busy enough to set the pace."""
    return cpu_pct > GENERATOR_BUSY_PCT

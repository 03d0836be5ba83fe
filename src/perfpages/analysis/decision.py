"""The one decision rule: clear gain or loss, overlap, too few rounds, drift, saturation.

Two rules, chosen by the run (`method.rule` in run.json, see `Rule`): runs archived before
method v2 keep "ranges apart" over at least `min_rounds` rounds a side; method v2 runs decide by
an exact rank test at two-sided α (Wilcoxon signed-rank paired by round, or Mann–Whitney on the
windows), computed by scipy.stats, and show the change as the Hodges–Lehmann median shift with
its exact interval, found by inverting the same scipy test. Every comparison also states its
resolution: the smallest change it would detect with 80 % power at its α (method 2.0: Noether's
formula; 2.1: by simulation of the exact test, `ranktest.simulated_resolution`).

Every verdict is decided here, once, on raw values: the unrounded medians, ranges and ratios of
the rounds. Tables, `bench report`, claims, floors and run pages only display these decisions.
Display rounding (`metric.format_number`: three significant digits; `format.format_percent`:
whole percent from 10 %, one decimal below) never changes a verdict, so a page may print
"+10 %" for a change of +9.96 % that `between(10, 20)` rejects; the message then shows both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from math import comb, copysign, inf, isfinite, nan
from statistics import median

from perfpages.analysis import compatibility, ranktest
from perfpages.analysis.metric import info

# The rule is part of the decision's API: `decision.Rule` as everywhere before it had a module.
from perfpages.analysis.rule import RANGES as RANGES
from perfpages.analysis.rule import TESTS as TESTS
from perfpages.analysis.rule import V2 as V2
from perfpages.analysis.rule import V21 as V21
from perfpages.analysis.rule import VERSIONS as VERSIONS
from perfpages.analysis.rule import Rule as Rule
from perfpages.errors import AnalysisError

MIN_GAIN = 0.10  # saturation: less than +10 % throughput for at least twice the clients …
P95_RISE = 0.50  # … while p95 rises by more than 50 %
# A load generator process above this share of a core may be what sets the pace: its own
# queueing then adds to the latency it measures and caps the throughput it can offer.
GENERATOR_BUSY_PCT = 80.0


@dataclass(frozen=True)
class Cell:
    """The rounds of one (block, parameters, label, metric): median with its min–max range.
    `rounds` names each value's round (pairing by round); empty when unknown."""

    values: tuple[float, ...]
    rounds: tuple[int, ...] = field(default=(), compare=False)
    # A transcribed summary's (min, max, rounds) as its source gives them: the range of rounds
    # perfpages never saw; rounds 0 when the source states none (`perfpages import --rounds N
    # --rule ranges` states them, and the source's rule then judges the range).
    given: tuple[float, float, int] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not self.values:
            raise AnalysisError("a cell needs at least one round")
        if self.rounds and len(self.rounds) != len(self.values):
            raise AnalysisError("a cell's rounds must name each of its values")

    @property
    def n(self) -> int:
        return self.given[2] if self.given and self.given[2] else len(self.values)

    @property
    def median(self) -> float:
        return float(median(self.values))

    @property
    def min(self) -> float:
        return self.given[0] if self.given else min(self.values)

    @property
    def max(self) -> float:
        return self.given[1] if self.given else max(self.values)

    def overlaps(self, other: Cell) -> bool:
        return self.min <= other.max and other.min <= self.max


def percent_change(base: float, other: float) -> float:
    """other against base, in percent; from 0 nothing changed (errors 0 → 0: 0 %) or the rise
    has no size (0 → 3: +∞ %): never NaN, which no table, claim or page can print or compare."""
    if base:
        return (other / base - 1) * 100
    return 0.0 if not other else copysign(inf, other)


def false_positive_rate(n: int, m: int | None = None) -> float:
    """Chance that two samples of one distribution have disjoint ranges (either direction):
    the Mann–Whitney U = 0 rule, 2 / C(n+m, n); 5 rounds each: 2/252 ≈ 0.8 %."""
    m = n if m is None else m
    return 2.0 / comb(n + m, n)


def _pairs(base: Cell, other: Cell) -> tuple[list[float], list[float]]:
    """The values of rounds both cells measured, in round order (by position when a cell
    does not name its rounds)."""
    if base.rounds and other.rounds:
        a, b = (dict(zip(base.rounds, base.values, strict=True)),
                dict(zip(other.rounds, other.values, strict=True)))
        common = sorted(set(a) & set(b))
        return [a[r] for r in common], [b[r] for r in common]
    n = min(base.n, other.n)
    return list(base.values[:n]), list(other.values[:n])


def _samples(base: Cell, other: Cell, rule: Rule) -> tuple[list[float], list[float]]:
    return _pairs(base, other) if rule.test == "wilcoxon" else (list(base.values),
                                                                 list(other.values))


@dataclass(frozen=True)
class Change:
    """other ÷ base for one metric, judged by the run's rule (ranges apart, or an exact test)."""

    metric: str
    base: Cell
    other: Cell
    rule: Rule = RANGES

    @property
    def min_rounds(self) -> int:
        """Rounds a side a verdict needs: the rule's, or where the exact test can reach α."""
        if not self.rule.exact:
            return self.rule.min_rounds
        n = 1
        while ranktest.min_p(n, n, paired=self.rule.test == "wilcoxon") >= self.rule.alpha:
            n += 1
        return n

    @cached_property
    def test(self) -> ranktest.Test | None:
        """The exact test (method v2 runs only)."""
        if not self.rule.exact:
            return None
        return ranktest.shift_test(*_samples(self.base, self.other, self.rule),
                                   paired=self.rule.test == "wilcoxon", alpha=self.rule.alpha)

    @property
    def ratio(self) -> float:
        if self.test is not None:
            return 1 + self.test.shift_pct / 100
        return 1 + percent_change(self.base.median, self.other.median) / 100

    @property
    def percent(self) -> float:
        """The change in percent: the ratio of medians (ranges rule) or the Hodges–Lehmann
        median shift (exact rule)."""
        return (self.ratio - 1.0) * 100.0

    @property
    def interval(self) -> tuple[float, float] | None:
        """The exact interval of the shift, in percent (exact rule only)."""
        return (self.test.low_pct, self.test.high_pct) if self.test is not None else None

    @property
    def p(self) -> float | None:
        return self.test.p if self.test is not None else None

    @property
    def difference(self) -> float:
        """other − base, in the metric's unit: the same verdict, stated absolutely."""
        return self.other.median - self.base.median

    @property
    def enough_rounds(self) -> bool:
        if self.test is not None:
            return self.test.min_p < self.rule.alpha
        return min(self.base.n, self.other.n) >= self.rule.min_rounds

    @property
    def rounds(self) -> int:
        """The rounds the verdict rests on: the pairs (paired), else the smaller side."""
        return self.test.n if self.test is not None else min(self.base.n, self.other.n)

    @property
    def separated(self) -> bool:
        """The data show a difference: ranges apart, or the test's p below α."""
        if self.test is not None:
            return self.test.p < self.rule.alpha
        return not self.base.overlaps(self.other)

    @property
    def better(self) -> bool | None:
        return info(self.metric).better(self.ratio)

    @property
    def clear(self) -> bool:
        return self.enough_rounds and self.separated and self.better is not None

    @property
    def fpr(self) -> float:
        if self.rule.exact:
            return self.rule.alpha
        return false_positive_rate(self.base.n, self.other.n)

    @cached_property
    def resolution(self) -> float:
        """The smallest change this comparison resolves, in percent (see `resolution`); the
        ranges rule states none (nan)."""
        if not self.rule.exact:
            return nan
        # 2.0: Noether's large-sample formula, kept so those runs' pages never change
        how = ranktest.resolution if self.rule.version == "2.0" else \
            ranktest.simulated_resolution
        return how(*_samples(self.base, self.other, self.rule),
                   paired=self.rule.test == "wilcoxon", alpha=self.rule.alpha,
                   power=self.rule.power)

    @property
    def verdict(self) -> str:
        text = self._verdict
        if any(c.given and c.given[2] for c in (self.base, self.other)) and not self.rule.exact:
            rule = f"the source's rule: ranges of {self.rounds} rounds apart"
            return f"{text}, by {rule}" if self.clear else f"{text}: not clear by {rule}"
        return text

    @property
    def _verdict(self) -> str:
        if not self.enough_rounds:
            return f"too few rounds ({self.rounds} < {self.min_rounds})"
        if self.rule.exact:
            if not self.separated:
                return "no clear change"
            if self.better is None:
                return "clear difference"
        elif not self.separated:
            return "ranges overlap"
        elif self.better is None:
            return "ranges apart"
        return "clear gain" if self.better else "clear loss"


def expected_false(verdicts: int, alpha: float) -> float:
    """How many of `verdicts` clear verdicts a rule at `alpha` calls clear by chance when
    nothing changed (the expectation over the comparisons made)."""
    return verdicts * alpha


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


def reproduces(original: Cell, second: Cell, alpha: float | None = None) -> bool:
    """A cell reproduces on a second run of its suite when the data do not show the runs
    differ. Without `alpha` (runs before method v2.1): the two runs' ranges overlap (the rule
    of a change, read the other way). With it: the medians lie within z₁₋α/₂ standard errors
    of their difference, from each side's window noise (`compatibility.cell_distance`) — which
    leaves out the machine's level from one run to the next, so a v2.1 reproduction counts
    such cells but judges replays by their changes (`compatible`)."""
    if alpha is None:
        return original.overlaps(second)
    apart = compatibility.cell_distance(original.values, second.values)
    return apart is not None and abs(apart) < compatibility.z_of(alpha)


def compatible(original: Change, second: Change) -> bool | None:
    """A change reproduces under method v2.1 when the second run's Hodges–Lehmann shift is
    compatible with the original's given both exact intervals: their difference lies within
    z₁₋α/₂ of its standard error (`compatibility.shift_z`), at the second run's α — two runs of
    one distribution are called incompatible with chance about α, a little less (the exact
    intervals cover at least 1 − α; simulated: 0.57 % at α = 1 %). None (not judged) unless both
    changes are decided by an exact test with enough rounds to reach their α."""
    if original.test is None or second.test is None or not (
            original.enough_rounds and second.enough_rounds):
        return None
    z = compatibility.shift_z(
        (original.test.shift_pct, original.test.low_pct, original.test.high_pct),
        original.rule.alpha,
        (second.test.shift_pct, second.test.low_pct, second.test.high_pct), second.rule.alpha)
    return None if z is None else abs(z) < compatibility.z_of(second.rule.alpha)


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


# Method v2 on display (site and report): a comparison's resolution with its run's A/A pair,
# claim bounds finer than that resolution, certified blocks, Holm's correction over a page.

def resolves(own: float, aa: float | None) -> float:
    """A comparison's resolution: its own, or its run's A/A pair's at the same cell when that
    is larger (the pair measures noise the comparison's own rounds may not show). nan (the
    ranges rule) stays nan."""
    if own != own or aa is None or not aa > own:
        return own
    return aa


def finer(step: float, resolution: float) -> bool:
    """A claim's bound is finer than its comparison resolves: the step it names (a one-sided
    bound's distance from no change, or a two-sided band's width, in percent) is below the
    resolution. Never under the ranges rule (its resolution is nan)."""
    return step < resolution


def certified(aa_cells: int, aa_clear: int, resolution: float, claimed: float | None) -> bool:
    """A block is certified when it has an A/A pair with no clear cell, and it resolves the
    smallest change its pages claim (`claimed`, in percent; None: no page claims one)."""
    return aa_cells > 0 and aa_clear == 0 and (claimed is None or not finer(claimed, resolution))


def certified_at(aa_p: list[float], alpha: float, resolution: float,
                 target: float | None) -> bool:
    """Method 2.1: a block is certified when it has A/A cells and none stays clear under
    Holm's correction over all of them at `alpha` (so identical builds fail at most with chance
    `alpha`, however many cells and however they depend on each other), it resolves a finite
    change (`resolution`, in percent), and that is no coarser than `target` (None: none)."""
    return (bool(aa_p) and not any(holm(aa_p, alpha)) and isfinite(resolution)
            and (target is None or not finer(target, resolution)))


def holm(pvalues: list[float], alpha: float) -> list[bool]:
    """Which verdicts of a family stay clear under Holm's step-down correction at `alpha`."""
    return ranktest.holm(pvalues, alpha)

"""Method v2's exact tests against independent references: p-values against scipy called
directly, intervals against the textbook bounds computed from the exact null distribution
enumerated here, known shifts found and A/A pairs not, and the resolution's stated power."""

from __future__ import annotations

import random
from itertools import combinations, product
from math import exp, log
from statistics import median

import pytest
from scipy import stats

from perfpages.analysis import ranktest
from perfpages.analysis.decision import V2, Cell, Change, Rule

BASE = [101.2, 98.7, 103.9, 99.1, 100.4, 97.6, 102.8, 100.9]
OTHER = [108.3, 104.1, 111.0, 106.2, 109.9, 103.5, 110.4, 107.7, 105.2]


def logs(values: list[float]) -> list[float]:
    return [log(v) for v in values]


def test_p_values_are_scipys() -> None:
    unpaired = ranktest.shift_test(BASE, OTHER, paired=False, alpha=0.01)
    assert unpaired.p == pytest.approx(
        stats.mannwhitneyu(logs(OTHER), logs(BASE), method="exact").pvalue, rel=1e-12)
    paired = ranktest.shift_test(BASE, OTHER[:8], paired=True, alpha=0.01)
    d = [b - a for a, b in zip(logs(BASE), logs(OTHER[:8]), strict=True)]
    assert paired.p == pytest.approx(stats.wilcoxon(d, method="exact").pvalue, rel=1e-12)


def _textbook(cands: list[float], null: list[int], alpha: float) -> tuple[float, float]:
    """[C(k), C(N+1-k)]: k the largest with P(statistic <= k-1) <= alpha/2 (Hollander & Wolfe),
    from the enumerated null distribution of the statistic."""
    total = len(null)
    k = 0
    while sum(s <= k for s in null) / total <= alpha / 2:
        k += 1
    cands = sorted(cands)
    return cands[k - 1], cands[len(cands) - k]


@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.2])
def test_mann_whitney_interval_is_the_exact_one(alpha: float) -> None:
    x, y = logs(BASE[:6]), logs(OTHER[:7])
    pooled = range(len(x) + len(y))
    # U = pairs (x_i, y_j) with y_j above x_i: rank-sum of y minus its least value
    # U: pairs (x_i, y_j) with y_j above x_i, the rank sum of y (ranks from 1) less its least
    null = [sum(chosen) + len(y) - len(y) * (len(y) + 1) // 2
            for chosen in combinations(pooled, len(y))]
    lo, hi = _textbook([b - a for a in x for b in y], null, alpha)
    t = ranktest.shift_test(BASE[:6], OTHER[:7], paired=False, alpha=alpha)
    assert (t.low_pct, t.high_pct) == pytest.approx(((exp(lo) - 1) * 100, (exp(hi) - 1) * 100))


@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.2])
def test_wilcoxon_interval_is_the_exact_one(alpha: float) -> None:
    d = [b - a for a, b in zip(logs(BASE), logs(OTHER[:8]), strict=True)]
    n = len(d)
    null = [sum(r for r, s in zip(range(1, n + 1), signs, strict=True) if s)
            for signs in product((0, 1), repeat=n)]  # W+ over every sign assignment
    walsh = [(d[i] + d[j]) / 2 for i in range(n) for j in range(i, n)]
    lo, hi = _textbook(walsh, null, alpha)
    t = ranktest.shift_test(BASE, OTHER[:8], paired=True, alpha=alpha)
    assert (t.low_pct, t.high_pct) == pytest.approx(((exp(lo) - 1) * 100, (exp(hi) - 1) * 100))
    assert t.shift_pct == pytest.approx((exp(median(walsh)) - 1) * 100)  # Hodges–Lehmann


def test_min_counts_follow_the_smallest_p() -> None:
    assert ranktest.min_p(3, 3, paired=False) == pytest.approx(0.1)
    assert Change("throughput", Cell((1, 2, 3)), Cell((4, 5, 6)), Rule("mann-whitney")
                  ).verdict == "too few rounds (3 < 5)"
    seven = Change("throughput", Cell(tuple(range(1, 8))), Cell(tuple(range(11, 18))), V2)
    assert seven.verdict == "too few rounds (7 < 8)" and not seven.clear
    assert ranktest.resolution([1.0] * 7, [2.0] * 7, paired=True, alpha=0.01,
                               power=0.8) == float("inf")


def _series(rng: random.Random, n: int, shift: float, shared: float = 0.09,
            own: float = 0.06) -> tuple[Cell, Cell]:
    """Rounds of two labels: a per-round level both share and each window's own noise."""
    base, other = [], []
    for _ in range(n):
        level = rng.gauss(0, shared)
        base.append(1000 * exp(level + rng.gauss(0, own)))
        other.append(1000 * (1 + shift) * exp(level + rng.gauss(0, own)))
    rounds = tuple(range(1, n + 1))
    return Cell(tuple(base), rounds), Cell(tuple(other), rounds)


@pytest.mark.parametrize("test", ["wilcoxon", "mann-whitney"])
def test_known_shifts_are_found_and_aa_pairs_are_not(test: str) -> None:
    rng = random.Random(19)
    rule = Rule(test)  # type: ignore[arg-type]
    aa = [Change("throughput", *_series(rng, 20, 0.0), rule) for _ in range(200)]
    assert sum(c.clear for c in aa) <= 6  # α = 1 %: 2 expected of 200, 6 is p < 0.02
    gains = [Change("throughput", *_series(rng, 20, 0.30), rule) for _ in range(50)]
    assert all(c.verdict == "clear gain" for c in gains)
    losses = [Change("p50", *_series(rng, 20, 0.30), rule) for _ in range(50)]
    assert all(c.verdict == "clear loss" for c in losses)  # p50 higher is worse
    inside = sum(c.interval[0] <= 30.0 <= c.interval[1] for c in gains if c.interval)
    assert inside >= 47  # a 99 % interval holds the true +30 % almost always


def test_resolution_has_its_stated_power() -> None:
    """A shift of the stated resolution is found about 80 % of the time (normal windows)."""
    rng = random.Random(7)
    noise = 0.10
    base = [[exp(rng.gauss(0, noise)) for _ in range(20)] for _ in range(300)]
    res = ranktest.resolution(base[0], base[1], paired=False, alpha=0.01, power=0.8)
    assert 7 < res < 18  # about 3.4 σ · sqrt(2/20) / sqrt(3/π) = 11.7 % at σ = 10 %
    typical = sorted(ranktest.resolution(b, c, paired=False, alpha=0.01, power=0.8)
                     for b, c in zip(base[::2], base[1::2], strict=True))[75]
    found = 0
    for b in base[:200]:
        other = [exp(rng.gauss(log(1 + typical / 100), noise)) for _ in range(20)]
        found += ranktest.shift_test(b, other, paired=False, alpha=0.01).p < 0.01
    assert 0.65 <= found / 200 <= 0.92


def test_pairing_by_round_uses_the_rounds_both_measured() -> None:
    base = Cell((10.0, 11.0, 12.0), (1, 2, 3))
    other = Cell((22.0, 13.0), (3, 2))
    c = Change("throughput", base, other, V2)
    assert c.rounds == 2  # rounds 2 and 3 only


def test_holm_keeps_what_survives_the_family() -> None:
    assert ranktest.holm([0.001, 0.004, 0.03], 0.01) == [True, True, False]
    assert ranktest.holm([0.004, 0.004, 0.004], 0.01) == [False, False, False]
    assert ranktest.holm([0.002, 0.6], 0.01) == [True, False]


def test_values_of_zero_are_compared_as_they_are() -> None:
    c = Change("errors", Cell((0.0,) * 10, tuple(range(10))), Cell((0.0,) * 10, tuple(range(10))),
               V2)
    assert c.verdict == "no clear change" and c.percent == 0.0


def test_a_comparison_asked_again_is_tested_once() -> None:
    """A site asks for the same comparison from its tables, claims, family and replays: the
    exact test runs once per distinct comparison, and a caller's list changed later does not
    change what was tested."""
    ranktest._shift_test.cache_clear()
    base, other = [10.0, 11.0, 10.5, 10.2, 10.8, 10.4], [9.0, 9.5, 9.2, 9.1, 9.6, 9.3]
    first = ranktest.shift_test(base, other, paired=True, alpha=0.05)
    again = ranktest.shift_test(list(base), list(other), paired=True, alpha=0.05)
    assert again is first and ranktest._shift_test.cache_info().misses == 1
    other[0] = 20.0
    assert ranktest.shift_test(base, other, paired=True, alpha=0.05) != first
    assert ranktest.shift_test(base, other, paired=False, alpha=0.05).n == 6
    assert ranktest._shift_test.cache_info().misses == 3

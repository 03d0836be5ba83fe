"""Exact rank tests of a shift between two samples, as method v2 decides with them.

scipy.stats computes every p-value: Wilcoxon's signed-rank test on paired values, Mann–Whitney's
U test on unpaired ones, both exact and two-sided. The shift is the Hodges–Lehmann estimate (the
median of the Walsh averages of the paired differences, or of all pairwise differences), and its
exact interval is found by inverting the same scipy test: the shifts δ between consecutive
candidate estimates at which the test of (other − δ) against base does not reject at α. Values
that are all positive are compared as logarithms, so a shift is a ratio (shown in percent).
`perfpages.analysis.decision` decides with these numbers; nothing here says "clear".
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from math import comb, copysign, exp, inf, isfinite, log, nan, pi, sqrt
from statistics import median
from typing import Any


@dataclass(frozen=True)
class Test:
    """An exact test of other against base: its p-value, the Hodges–Lehmann shift and its
    exact interval (in percent of base), how many values it rests on, and the smallest p-value
    its sizes allow."""

    p: float
    shift_pct: float
    low_pct: float
    high_pct: float
    n: int  # pairs (paired) or the smaller side
    min_p: float


def min_p(n: int, m: int, *, paired: bool) -> float:
    """The smallest two-sided p-value an exact test can give: 2/2^n paired, 2/C(n+m, n)
    unpaired (Mann–Whitney at 3 vs 3 can never go below 0.10)."""
    if min(n, m) == 0:
        return 1.0
    return 2.0 / 2 ** n if paired else 2.0 / comb(n + m, n)


def _scaled(base: list[float], other: list[float]) -> tuple[Any, Any, bool]:
    import numpy as np

    logged = all(v > 0 for v in base + other)
    f = log if logged else float
    return (np.asarray([f(v) for v in base], dtype=float),
            np.asarray([f(v) for v in other], dtype=float), logged)


def shift_test(base: list[float], other: list[float], *, paired: bool, alpha: float) -> Test:
    """The exact test, shift and interval of `other` against `base` (paired: same length,
    element by element)."""
    return _shift_test(tuple(base), tuple(other), paired, alpha)


# A site asks for the same comparison many times (a table, its claims, the page's family, a
# replay's reproduction: 5,766 tests of 657 comparisons in this repository's build), and each
# inverts scipy's exact test over every candidate shift. A Test is immutable: shared.
@functools.lru_cache(maxsize=1 << 16)
def _shift_test(base: tuple[float, ...], other: tuple[float, ...], paired: bool,
                alpha: float) -> Test:
    import numpy as np  # scipy and numpy load only where a method v2 run is decided
    from scipy import stats

    x, y, logged = _scaled(list(base), list(other))
    n = len(x) if paired else min(len(x), len(y))
    if n == 0:
        return Test(1.0, nan, nan, nan, 0, 1.0)
    if paired:
        d = y - x
        cand = np.sort(((d[:, None] + d[None, :]) / 2)[np.triu_indices(len(d))])

        def pvalues(deltas: Any) -> Any:
            shifted = d[None, :] - deltas[:, None]
            out = np.ones(len(deltas))
            live = np.any(shifted != 0, axis=1)  # all zero: no difference at all, p = 1
            if live.any():
                out[live] = stats.wilcoxon(shifted[live], method="exact", axis=1).pvalue
            return out
    else:
        cand = np.sort((y[:, None] - x[None, :]).ravel())

        def pvalues(deltas: Any) -> Any:
            return stats.mannwhitneyu(y[None, :] - deltas[:, None], x[None, :],
                                      method="exact", axis=1).pvalue

    p0 = float(pvalues(np.zeros(1))[0])
    gaps = np.concatenate([[cand[0] - 1], (cand[1:] + cand[:-1]) / 2, [cand[-1] + 1]])
    keep = np.flatnonzero(pvalues(gaps) >= alpha)
    shift = float(np.median(cand))
    # Gap i lies between cand[i-1] and cand[i]: accepted gaps i..j span cand[i-1]..cand[j].
    lo = float(cand[max(keep[0] - 1, 0)]) if len(keep) else shift
    hi = float(cand[min(keep[-1], len(cand) - 1)]) if len(keep) else shift
    middle = float(np.median(x))

    def pct(v: float) -> float:
        if logged:
            return (exp(v) - 1) * 100
        # From a median of 0 (errors 0 → 3) a shift is no percentage of it: ±∞, never NaN.
        return v / middle * 100 if middle else (0.0 if v == 0 else copysign(inf, v))

    return Test(p0, pct(shift), pct(lo), pct(hi), n,
                min_p(len(x), len(y), paired=paired))


def robust_sd(values: list[float]) -> float:
    """1.4826 × the median absolute deviation: the standard deviation of normal data, not
    moved by a busy window or two."""
    if len(values) < 2:
        return 0.0
    mid = median(values)
    return 1.4826 * median(abs(v - mid) for v in values)


def noise(values: list[float]) -> float:
    """The relative window-to-window noise of one sample: the robust standard deviation of its
    logarithms (about the spread of one window as a fraction); relative to the median when a
    value is not positive."""
    if values and all(v > 0 for v in values):
        return robust_sd([log(v) for v in values])
    mid = median(values) if values else 0.0
    sd = robust_sd(values)
    return sd / abs(mid) if mid else (0.0 if sd == 0 else inf)


# Rank tests on normal data are as efficient as the t-test in the ratio 3/π (their asymptotic
# relative efficiency): the normal approximation of the t-test's resolution (Noether's) is
# widened by 1/sqrt of it.
EFFICIENCY = 3 / pi


def resolution(base: list[float], other: list[float], *, paired: bool, alpha: float,
               power: float) -> float:
    """The smallest shift, in percent, that the exact test would detect with `power` at
    two-sided `alpha`, from the comparison's own noise (paired: of its round-by-round
    differences; unpaired: of each side); inf where its sizes cannot reach α."""
    from scipy.stats import norm

    if min_p(len(base), len(other), paired=paired) >= alpha:
        return inf
    z = float(norm.ppf(1 - alpha / 2) + norm.ppf(power))
    logged = all(v > 0 for v in base + other)
    if paired:
        d = [(log(b) - log(a)) if logged else (b - a) for a, b in zip(base, other, strict=True)]
        sd = robust_sd(d)
        if not logged:
            mid = median(base)
            sd = sd / abs(mid) if mid else (0.0 if sd == 0 else inf)
        width = z * sd / sqrt(len(d) * EFFICIENCY)
    else:
        sd = sqrt((noise(base) ** 2 + noise(other) ** 2) / 2)
        width = z * sd * sqrt((1 / len(base) + 1 / len(other)) / EFFICIENCY)
    if not isfinite(width):
        return inf
    return (exp(width) - 1) * 100 if logged else width * 100


# Method 2.1: the resolution by simulation. Noether's formula above is a large-sample
# approximation; at 20 rounds the shift it states was detected with 80 % power only at 1.17
# times its size (1.31 at 10), measured on this project's archived comparisons. So the shift is
# found where the exact test itself reaches the power, on samples drawn from the comparison's
# own residuals: each draw rejects upward exactly when the shift exceeds one number of the draw
# (an order statistic of its Walsh averages or pairwise differences, see `rejects_above`), and
# the resolution is the `power` quantile of those numbers — no search over candidate shifts.
DRAWS = 1000
SEED = 20261204  # fixed: a comparison states the same resolution at every build
# A smoothed bootstrap: each resampled residual gets normal noise of BANDWIDTH × its robust sd
# (1.4826 × MAD) / sqrt(n). A plain bootstrap understates the spread of a fresh sample (its
# variance is (n-1)/n of the sample's, and a small sample rarely holds its distribution's
# tails): the shifts it stated had 65-77 % power at 8-40 rounds. The bandwidths were chosen by
# simulation (normal and Laplace samples of 8, 10, 20 and 40 rounds): the stated shift then has
# 83 % power (normal; 82-84 % by round count) and 78 % (Laplace; 78-79 %) paired, 81 % (79-83 %)
# and 79 % (76-82 %) unpaired, averaged over samples (tests/test_precision.py). Heavier tails
# at 8 rounds fall short (Student's t, 3 degrees of freedom: 73-77 %): a small sample rarely
# shows its extremes.
BANDWIDTH = {True: 2.2, False: 2.0}  # paired, unpaired


@functools.lru_cache(maxsize=256)
def _signed_rank_null(n: int) -> Any:
    """P(W+ = w), w = 0 … n(n+1)/2: the exact null distribution of Wilcoxon's signed-rank
    statistic (every sign assignment equally likely)."""
    import numpy as np

    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1
    for k in range(1, n + 1):  # rank k positive or not
        counts[k:] = counts[k:] + counts[:-k].copy()
    return counts / counts.sum()


@functools.lru_cache(maxsize=256)
def _rank_sum_null(n: int, m: int) -> Any:
    """P(U = u), u = 0 … n·m: the exact null distribution of the Mann–Whitney statistic (the
    pairs with the second sample's value above the first's), every choice of ranks equally
    likely."""
    import numpy as np

    size = n + m
    # ways[k, s]: choices of k of the positions seen so far whose positions (from 0) sum to s
    ways = np.zeros((m + 1, m * (size - 1) + 1))
    ways[0, 0] = 1
    for pos in range(size):
        ways[1:, pos:] = ways[1:, pos:] + ways[:-1, :ways.shape[1] - pos].copy()
    low = m * (m - 1) // 2  # the least sum of m positions: U = sum − that
    counts = ways[m, low:low + n * m + 1]
    return counts / counts.sum()


def critical(n: int, m: int, *, paired: bool, alpha: float) -> int | None:
    """The least statistic (W+ paired over n pairs; U of the second sample over the first,
    unpaired) whose exact two-sided p-value, as scipy computes it, is below α: the test rejects
    upward at or above it (and downward at or below its mirror); None where no value can."""
    import numpy as np

    null = _signed_rank_null(n) if paired else _rank_sum_null(n, m)
    above = np.cumsum(null[::-1])[::-1]  # P(S >= s)
    ok = np.flatnonzero(np.minimum(2 * above, 1.0) < alpha)
    return int(ok[0]) if len(ok) else None


def rejects_above(draws: Any, other: Any | None, c: int) -> Any:
    """Per draw, the number q such that the test rejects upward exactly when the shift added
    exceeds −q: W+ (or U) counts the Walsh averages (or pairwise differences) above −shift, so
    it reaches c exactly when the c-th largest of them does."""
    import numpy as np

    if other is None:
        i, j = np.triu_indices(draws.shape[1])
        stat = (draws[:, i] + draws[:, j]) / 2  # Walsh averages
    else:
        stat = (other[:, None, :] - draws[:, :, None]).reshape(len(draws), -1)
    k = stat.shape[1] - c
    return np.partition(stat, k, axis=1)[:, k]


def _resample(residuals: Any, size: int, rng: Any, bandwidth: float) -> Any:
    import numpy as np

    drawn = residuals[rng.integers(0, len(residuals), size=(DRAWS, size))]
    spread = 1.4826 * float(np.median(np.abs(residuals - np.median(residuals))))
    if not spread:  # over half the residuals tied: their standard deviation
        spread = float(np.std(residuals))
    return drawn + bandwidth * spread / sqrt(size) * rng.standard_normal((DRAWS, size))


def simulated_resolution(base: list[float], other: list[float], *, paired: bool, alpha: float,
                         power: float) -> float:
    """The smallest shift, in percent, that the exact test (Wilcoxon signed-rank paired, or
    Mann–Whitney) detects with `power` at two-sided `alpha`, at these sizes, on samples drawn
    from the comparison's own residuals (paired: the round-by-round log differences about
    their median, taken with either sign, as the signed-rank test's null reads them; unpaired:
    each side's log values about its median), smoothed (`BANDWIDTH`), with `DRAWS` draws from a
    fixed seed; inf where the sizes cannot reach α."""
    return _simulated(tuple(base), tuple(other), paired, alpha, power)


@functools.lru_cache(maxsize=1 << 14)
def _simulated(base: tuple[float, ...], other: tuple[float, ...], paired: bool, alpha: float,
               power: float) -> float:
    import numpy as np

    n, m = len(base), len(other)
    if min(n, m) == 0 or (paired and n != m):
        return inf
    c = critical(n, m, paired=paired, alpha=alpha)
    if c is None:
        return inf
    x, y, logged = _scaled(list(base), list(other))
    if not logged:  # relative to the base's median, as the shift is shown
        mid = float(np.median(x))
        if not mid:
            spread = np.ptp(y - x) if paired else np.ptp(x) + np.ptp(y)
            return 0.0 if spread == 0 else inf
        x, y = x / abs(mid), y / abs(mid)
    rng = np.random.default_rng(SEED)
    if paired:
        d = y - x
        e = d - np.median(d)
        q = rejects_above(_resample(np.concatenate([e, -e]), n, rng, BANDWIDTH[True]), None, c)
    else:
        q = rejects_above(_resample(x - np.median(x), n, rng, BANDWIDTH[False]),
                          _resample(y - np.median(y), m, rng, BANDWIDTH[False]), c)
    width = max(float(np.quantile(-q, power)), 0.0)
    return (exp(width) - 1) * 100 if logged else width * 100


def holm(pvalues: list[float], alpha: float) -> list[bool]:
    """Holm's step-down correction over a family: which p-values stay below α."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    keep = [False] * len(pvalues)
    for rank, i in enumerate(order):
        if pvalues[i] >= alpha / (len(pvalues) - rank):
            break
        keep[i] = True
    return keep

"""E-divisive means change points: Matteson & James (2014) as Hunter refined it (Fleming et al.
2023), written here from the papers so a site build needs nothing but perfpages' dependencies.

`change_points(values)` returns the indices at which a new segment starts. Two steps:

- split: windows of `window` points, half a window apart, each cut divisively — the cut that
  maximises the energy statistic q̂ over every segment so far, kept while Student's t-test between
  the two sides of the cut within its segment has p ≤ 10 × `max_pvalue` (a weak change point);
- merge: over the whole series, the weakest change point (largest p between its neighbouring
  segments) is removed until every p < `max_pvalue`.

It answers as apache-otava 0.8.0's `compute_change_points(values, window_len=50,
max_pvalue=0.001)` does, on purpose (tests/test_edivisive.py checks it): the t-test reads each
side's standard deviation with n in the denominator, and after a removal only the change point on
the right of the removed one is tested again — the one on the left keeps its p-value.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
from numpy.typing import NDArray
from scipy.stats import ttest_ind_from_stats

MAX_PVALUE = 0.001  # Hunter's (and otava's) significance
WINDOW = 50  # points per window of the split step (otava's default)


@dataclass
class _Point:
    index: int  # the first point of the new segment
    pvalue: float
    magnitude: float  # the larger relative change of the means, either way


def change_points(values: Sequence[float], window: int = WINDOW,
                  max_pvalue: float = MAX_PVALUE) -> list[int]:
    """The indices at which a new segment starts. A history chart, its claim and a
    reproduction's renderings ask for the same series: each is computed once per process."""
    return list(_computed(tuple(map(float, values)), window, max_pvalue))


@functools.cache
def _computed(values: tuple[float, ...], window: int, max_pvalue: float) -> tuple[int, ...]:
    series = np.asarray(values, dtype=np.float64)
    # the split step's looser threshold: its change points are only candidates for the merge
    weak = max_pvalue * (10 if max_pvalue < 0.05 else 2 if max_pvalue < 0.5 else 1)
    points = _merge(_split(series, window, weak), series, max_pvalue)
    return tuple(p.index for p in points)


def _split(series: NDArray[np.float64], window: int, pvalue: float) -> list[_Point]:
    """Weak change points: the union of every window's divisive cuts, tested again whole."""
    found: set[int] = set()
    start, step = 0, max(window // 2, 1)
    while start < len(series):
        cuts = [start + i for i in _divide(series[start:start + window], pvalue)]
        found.update(cuts)
        # the next window starts at the last cut if that is further than half a window on
        start = max(max(cuts, default=0), start + step)
    bounds = [0, *sorted(found), len(series)]
    return [_tested(series, *bounds[i - 1:i + 2]) for i in range(1, len(bounds) - 1)]


def _divide(z: NDArray[np.float64], pvalue: float) -> list[int]:
    """Matteson–James' divisive search on one window, Hunter's t-test as the stopping rule."""
    cuts: list[int] = []
    while True:
        bounds = [0, *cuts, len(z)]
        best: tuple[float, int, int, int] | None = None
        for lo, hi in pairwise(bounds):
            if hi - lo > 1:
                q, at = _best_cut(z[lo:hi])
                if best is None or q > best[0]:  # the first segment wins a tie
                    best = (q, lo + at, lo, hi)
        if best is None:
            return cuts
        _, at, lo, hi = best
        if not _tested(z, lo, at, hi).pvalue <= pvalue:  # a NaN p stops too
            return cuts
        cuts = sorted([*cuts, at])


def _best_cut(z: NDArray[np.float64]) -> tuple[float, int]:
    """max q̂ over τ < κ of X = z[:τ], Y = z[τ:κ], and its τ (the first in (τ, κ) order wins a
    tie). q̂ = 2/(n+m) Σ|X−Y| − 2m/((n+m)(n−1)) Σ_pairs|X−X| − 2n/((n+m)(m−1)) Σ_pairs|Y−Y|,
    n = |X|, m = |Y|; a side of one point has no pairs."""
    size = len(z)
    distance = np.abs(z[:, None] - z[None, :])
    total = np.zeros((size + 1, size + 1))  # total[a, b]: Σ distance[:a, :b]
    total[1:, 1:] = distance.cumsum(axis=0).cumsum(axis=1)
    # rows τ = 1 … size−1, columns κ = 2 … size
    t, k = np.meshgrid(np.arange(1, size), np.arange(2, size + 1), indexing="ij")
    n, m, nm = t, k - t, k
    valid = m >= 1
    diagonal = np.diagonal(total)
    within_x = diagonal[t] / 2
    within_y = (diagonal[k] - 2 * total[t, k] + diagonal[t]) / 2
    cross = total[t, k] - diagonal[t]
    x_weight = _ratio(2 * m, nm * (n - 1), valid)
    y_weight = _ratio(2 * n, nm * (m - 1), valid)
    q = np.where(valid, _ratio(2, nm, valid) * cross - x_weight * within_x - y_weight * within_y,
                 0.0)
    best = int(np.argmax(q))
    return float(q.flat[best]), best // q.shape[1] + 1


def _ratio(num: NDArray[np.int_] | int, den: NDArray[np.int_],
           where: NDArray[np.bool_]) -> NDArray[np.float64]:
    """num / den where `where` and den > 0, else 0 (a side of one point weighs nothing)."""
    return np.divide(num, den, out=np.zeros(den.shape), where=where & (den > 0))


def _tested(series: NDArray[np.float64], lo: int, at: int, hi: int) -> _Point:
    """The change point at `at` between segments series[lo:at] and series[at:hi]."""
    left, right = series[lo:at], series[at:hi]
    mean_l, mean_r = float(np.mean(left)), float(np.mean(right))
    std_l = np.std(left) if len(left) > 1 else 0.0
    std_r = np.std(right) if len(right) > 1 else 0.0
    pvalue = 1.0
    if len(left) + len(right) > 2:
        with np.errstate(divide="ignore", invalid="ignore"):
            pvalue = float(ttest_ind_from_stats(mean_l, std_l, len(left), mean_r, std_r,
                                                len(right)).pvalue)
    forward = mean_r / mean_l - 1.0 if mean_l != 0 else 0.0
    backward = mean_l / mean_r - 1.0 if mean_r != 0 else 0.0
    return _Point(at, pvalue, max(abs(forward), abs(backward)))


def _merge(points: list[_Point], series: NDArray[np.float64],
           max_pvalue: float) -> list[_Point]:
    """Hunter's merge: drop the weakest change point and test its right neighbour again, until
    every p < max_pvalue (a change point between equal means goes too)."""
    while points:
        weakest = max(points, key=lambda p: p.pvalue)
        if weakest.pvalue < max_pvalue:
            weakest = min(points, key=lambda p: p.magnitude)
            if weakest.magnitude > 0:
                return points
        at = points.index(weakest)
        del points[at]
        bounds = [0, *(p.index for p in points), len(series)]
        for i in (at, at + 1):
            if i < len(points):
                points[i] = _tested(series, bounds[i], bounds[i + 1], bounds[i + 2])
    return points

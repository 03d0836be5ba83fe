"""How far a replay lies from its original, in units of their noise (method v2.1).

Two figures, both on the log scale (a ratio), both from scipy's normal distribution:

- a **change's** shift on two runs: the difference of the two Hodges–Lehmann log-shifts over
  its standard error, each run's standard error read off its exact 1 − α interval as if that
  interval were a normal one, (high − low) / (2 z₁₋α/₂). The exact interval covers at least
  1 − α (its ends are Walsh averages), so the standard error is a little wide and the
  judgement a little lenient; with 20 pairs the interval's coverage is close to nominal.
- a **cell's** medians on two runs: the difference of the log medians over the combined
  standard error of the two medians, each √(π/2) · σ/√n — the standard error of a normal
  sample's median, σ the cell's window noise (`ranktest.noise`, a robust standard deviation of
  its logarithms).

`perfpages.analysis.decision` judges with them; nothing here says "compatible".
"""

from __future__ import annotations

from collections.abc import Sequence
from math import inf, isfinite, log, log1p, pi, sqrt

from perfpages.analysis import ranktest


def z_of(alpha: float) -> float:
    """The two-sided normal quantile of α: 2.58 at 1 %."""
    from scipy.stats import norm

    return float(norm.ppf(1 - alpha / 2))


def p_of(z: float) -> float:
    """The two-sided p-value of a standard normal figure."""
    from scipy.stats import norm

    return 1.0 if z == 0 else float(2 * norm.sf(abs(z)))


def _ratio(z_num: float, se: float) -> float:
    if se > 0:
        return z_num / se
    return 0.0 if z_num == 0 else (inf if z_num > 0 else -inf)


def shift_z(one: tuple[float, float, float], one_alpha: float,
            two: tuple[float, float, float], two_alpha: float) -> float | None:
    """(second − original) log-shift over its standard error; each side is (shift, low, high)
    in percent with its interval's α. None when a figure has no finite value."""
    values = [*one, *two]
    if not all(isfinite(v) for v in values):
        return None
    # Logged samples' shifts are ratios above −100 %; a shift of values that are not all
    # positive (ranktest reads them relative to the base's median) is read as it is.
    scale = (lambda v: log1p(v / 100)) if all(v > -100 for v in values) else (lambda v: v / 100)
    s1, lo1, hi1 = (scale(v) for v in one)
    s2, lo2, hi2 = (scale(v) for v in two)
    se = sqrt(((hi1 - lo1) / (2 * z_of(one_alpha))) ** 2
              + ((hi2 - lo2) / (2 * z_of(two_alpha))) ** 2)
    return _ratio(s2 - s1, se)


# The standard error of a normal sample's median is √(π/2) ≈ 1.25 times its mean's.
MEDIAN_SE = sqrt(pi / 2)


def cell_distance(original: Sequence[float], second: Sequence[float]) -> float | None:
    """How far apart two runs' medians of one cell are, in standard errors of their
    difference (signed: second above original is positive); None without values."""
    from statistics import median

    if not original or not second:
        return None
    a, b = median(original), median(second)
    noise1, noise2 = ranktest.noise(list(original)), ranktest.noise(list(second))
    if a > 0 and b > 0 and all(v > 0 for v in [*original, *second]):
        diff = log(b) - log(a)
    elif a:
        diff = (b - a) / abs(a)  # ranktest.noise is then relative to the median too
    else:
        return 0.0 if b == 0 else None
    se = MEDIAN_SE * sqrt(noise1 ** 2 / len(original) + noise2 ** 2 / len(second))
    if not isfinite(se):
        return None
    return _ratio(diff, se)

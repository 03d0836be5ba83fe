"""The axes of a chart: where a value sits, in pixels, and which ticks are drawn and labelled.

Horizontal axes (categories, numeric positions, percentiles in nines) run left to right from
`start`; value axes (linear, log) run bottom to top over `length` pixels below `start`. The
linear and numeric formulas are the ones the first charts used, operation for operation, so
published pages render to the same bytes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from perfpages.analysis.metric import format_number
from perfpages.errors import AnalysisError

PAD = 12  # numeric points keep clear of the plot's edges


@dataclass(frozen=True)
class Tick:
    value: float | str
    label: str  # "" for a minor tick: a faint line, no text


def label(value: float | str) -> str:
    if isinstance(value, str):
        return value
    if float(value).is_integer():
        return f"{int(value):,}"
    text = f"{value:,.3g}"  # three significant figures, never in scientific notation
    if "e" not in text:
        return text
    if abs(value) >= 1:  # 4850.3: "4,850", not "4.85e+03"
        return f"{round(float(f'{value:.3g}')):,}"
    return format_number(value, min(-math.floor(math.log10(abs(value))) + 2, 12))


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high]: steps of 1, 2, 2.5 or 5 × 10^k."""
    if high <= low:
        high = low + (abs(low) or 1.0)
    raw = (high - low) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    start = math.floor(low / step) * step
    ticks = []
    value = start
    while value < high + step * 0.5:
        ticks.append(round(value, 10))
        value += step
    return ticks


@dataclass
class Categories:
    """One slot per value, in order (labels, releases); at most `most` labels are written."""

    values: Sequence[float | str]
    start: float
    length: float
    most: int | None = None

    def pixel(self, value: float | str) -> float:
        return self.start + self.length * (list(self.values).index(value) + 0.5) / len(self.values)

    @property
    def ticks(self) -> list[Tick]:
        every = math.ceil(len(self.values) / self.most) if self.most else 1
        last = len(self.values) - 1  # counted from the last value (the newest release)
        return [Tick(v, label(v) if (last - i) % every == 0 else "")
                for i, v in enumerate(self.values)]


@dataclass
class Points:
    """Numeric values at their positions (a log scale when asked), each labelled."""

    values: Sequence[float]
    start: float
    length: float
    log: bool = False

    def pixel(self, value: float | str) -> float:
        lo, hi, x = float(self.values[0]), float(self.values[-1]), float(value)
        if self.log:
            lo, hi, x = math.log(lo), math.log(hi), math.log(x)
        span = (hi - lo) or 1.0
        return self.start + PAD + (self.length - 2 * PAD) * (x - lo) / span

    @property
    def ticks(self) -> list[Tick]:
        return [Tick(v, label(v)) for v in self.values]


@dataclass
class Span:
    """A continuous numeric axis from `low` to `high` (seconds into a window), round values
    labelled: unlike `Points`, it labels ticks, not every value."""

    low: float
    high: float
    start: float
    length: float

    def pixel(self, value: float | str) -> float:
        span = (self.high - self.low) or 1.0
        return self.start + PAD + (self.length - 2 * PAD) * (float(value) - self.low) / span

    @property
    def ticks(self) -> list[Tick]:
        return [Tick(v, label(v)) for v in nice_ticks(self.low, self.high, 8)
                if self.low <= v <= self.high]


def nines(percentile: float) -> float:
    """How many nines a percentile has: 90 → 1, 99 → 2, 99.9 → 3 (HdrHistogram's x axis)."""
    return -math.log10(1 - percentile / 100)


def percentile_grid(top: float, steps: int = 20) -> list[float]:
    """Percentiles from 50 to `top`, `steps` to a nine: what a spectrum's lines pass through."""
    last = round(nines(top) * steps)
    first = math.ceil(nines(50.0) * steps)
    return [50.0] + [round(100 - 100 * 10 ** (-k / steps), 6) for k in range(first, last + 1)]


@dataclass
class Nines:
    """Percentiles from 50 to `top`, equally spaced per nine: 90, 99, 99.9 … as in HdrHistogram
    plots, where the tail that a linear axis squeezes into its last pixel gets the room."""

    top: float
    start: float
    length: float
    low: float = 50.0

    def pixel(self, value: float | str) -> float:
        lo, hi = nines(self.low), nines(self.top)
        return self.start + PAD + (self.length - 2 * PAD) * (nines(float(value)) - lo) / (hi - lo)

    @property
    def ticks(self) -> list[Tick]:
        marks = [50.0, 90.0, 99.0, 99.9, 99.99, 99.999]
        return [Tick(p, f"{p:g}") for p in marks if self.low <= p <= self.top]


@dataclass
class Linear:
    """Values from zero up to a round tick above the highest."""

    high: float
    start: float
    length: float
    ticks: list[Tick] = field(init=False)
    top: float = field(init=False)
    base: float = field(init=False, default=0.0)

    def __post_init__(self) -> None:
        values = nice_ticks(0.0, self.high)
        self.top = values[-1] or 1.0
        self.ticks = [Tick(v, label(v)) for v in values]

    def pixel(self, value: float | str) -> float:
        return self.start + self.length * (1 - float(value) / self.top)


def _decimal(mantissa: int, exponent: int) -> float:
    return float(f"{mantissa}e{exponent}")  # 2e-1 is 0.2 exactly as printed, unlike 2 * 0.1


@dataclass
class Log:
    """A log scale between the 1-2-5 values around the data: decades labelled (and 2 and 5
    when it spans under 2.5 decades), every other integer multiple a minor tick."""

    low: float
    high: float
    start: float
    length: float
    ticks: list[Tick] = field(init=False)
    base: float = field(init=False)
    top: float = field(init=False)

    def __post_init__(self) -> None:
        k = math.floor(math.log10(self.low))
        self.base = next(v for v in (_decimal(m, k) for m in (5, 2, 1)) if v <= self.low * 1.000001)
        k = math.floor(math.log10(self.high))
        self.top = next(v for v in (_decimal(m, k) for m in (1, 2, 5, 10))
                        if v >= self.high / 1.000001 and v > self.base)
        values = [_decimal(m, k) for k in range(math.floor(math.log10(self.base)),
                                                   math.ceil(math.log10(self.top)) + 1)
                  for m in range(1, 10)]
        values = [v for v in values if self.base / 1.000001 <= v <= self.top * 1.000001]
        span = math.log10(self.top / self.base)  # in decades
        shown = ("1",) if span > 2.5 else ("1", "2", "5")
        ends = (self.base, self.top) if span <= 4 else ()
        self.ticks = [Tick(v, label(v) if f"{v:e}"[0] in shown or v in ends else "")
                      for v in values]

    def pixel(self, value: float | str) -> float:
        lo, hi = math.log(self.base), math.log(self.top)
        return self.start + self.length * (1 - (math.log(float(value)) - lo) / (hi - lo))


def log_axis(values: list[tuple[float, str]], start: float, length: float) -> Log:
    """A log value axis over (value, where) pairs; a value at or below zero cannot be shown,
    and saying so names it."""
    for value, where in values:
        if not value > 0:
            raise AnalysisError(f"log_y=True cannot show {label(value)} ({where}) on a log axis",
                                fix="leave log_y out for a linear axis, or select positive values")
    if not values:
        return Log(1.0, 10.0, start, length)
    return Log(min(v for v, _ in values), max(v for v, _ in values), start, length)

"""How numbers, changes and their intervals print: one wording for every report, page and
claim. Display only: what counts as clear is decided in `perfpages.analysis.decision`, on raw
values, and display rounding never changes a verdict."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from math import isfinite

from perfpages.analysis.decision import Change
from perfpages.analysis.metric import format_value
from perfpages.errors import AnalysisError


def _sign(value: float) -> str:
    return "+" if value > 0 else "−" if value < 0 else "±"


def format_percent(value: float, digits: int | None = None) -> str:
    """A change in percent: whole from 10 %, one decimal below, or `digits` decimals; a change
    from 0 ("+∞ %") and one without a value ("n/a") print as such, never as a traceback."""
    if value != value:
        return "n/a"
    if not isfinite(value):
        return f"{_sign(value)}∞ %"
    if digits is None:
        digits = 0 if abs(value) >= 10 else 1
    return f"{_sign(value)}{abs(value):.{digits}f} %"


MAX_PLACES = 6  # decimals a claim's message goes to before it stops telling values apart


def places(text: str) -> int:
    """The decimals a printed number shows: "+12 %" 0, "1.36 ms" 2."""
    digits = text.split()[0].lstrip("+−±")
    return len(digits.partition(".")[2])


def typed_places(value: float) -> int:
    """The decimals a bound was typed with: 19 → 0, 12.5 → 1, 0.05 → 2."""
    exponent = Decimal(repr(float(value))).normalize().as_tuple().exponent
    return min(-exponent, MAX_PLACES) if isinstance(exponent, int) and exponent < 0 else 0


def telling(value: float, bounds: Sequence[float], start: int) -> int:
    """The fewest decimals from `start` at which `value` compares with every bound as its raw
    value does: a claim's message never shows "+13.5 %" for a change of +13.52 % that fails
    a bound of 13.5, nor "+10 %" for +9.96 % under a bound of 10."""
    def side(x: float, b: float) -> int:
        return (x > b) - (x < b)

    for digits in range(start, MAX_PLACES + 1):
        if all(side(round(value, digits), b) == side(value, b) for b in bounds):
            return digits
    return max(start, MAX_PLACES)


def format_change(change: Change, digits: int | None = None, verdict: str | None = None) -> str:
    """A change as every report and page prints it. Under an exact rule the Hodges–Lehmann
    shift with its exact interval, "+8.1 % (+5.0…+11.2 %, clear gain)" (the interval's ends
    with the shift's decimals); under ranges apart the ratio of medians, "+8.5 % (clear gain)".
    `verdict` is the verdict as the caller words it; without one, none is printed."""
    head = format_percent(change.percent, digits)
    interval = change.interval
    shown = [] if verdict is None else [verdict]
    if interval is not None and all(isfinite(v) for v in interval):
        places = digits if digits is not None else 0 if abs(change.percent) >= 10 else 1
        low, high = (f"{_sign(v)}{abs(v):.{places}f}" for v in interval)
        shown.insert(0, f"{low}…{high} %")
    return f"{head} ({', '.join(shown)})" if shown else head


def format_drift(before: float, percent: float) -> str:
    """How a warning says a floor moved: "drifted −12 %"; a floor that measured nothing before
    its block has no drift to state."""
    if before > 0:
        return f"drifted {format_percent(percent)}"
    return "measured nothing before the block"


def format_resolution(value: float) -> str:
    """The smallest change a comparison resolves: "7.9 %", "15 %"; "—" where the rule states
    none (ranges apart), "none (too few rounds)" where its sizes cannot reach α."""
    if value != value:  # nan: the ranges rule
        return "—"
    if not isfinite(value):
        return "none (too few rounds)"
    return f"{value:.{0 if value >= 10 else 1}f} %"


def format_p(value: float | None) -> str:
    """A p-value: two significant digits, "< 0.0001" below; "—" without one."""
    if value is None:
        return "—"
    return "< 0.0001" if value < 1e-4 else f"{value:.2g}"


def format_range(changes: Sequence[Change], digits: int | None = None) -> str:
    """The range of several changes as a page prints it, each end signed: "+6 % to +10 %",
    "−2 % to 0 %", "−3.0 % to +5.0 %", "+8 %"."""
    if not changes:
        raise AnalysisError("no changes to summarise")
    return _span([c.percent for c in changes], "%", digits)


def format_difference(value: float, unit: str = "", digits: int | None = None) -> str:
    """An absolute difference with its sign: "+0.05 ms", "−12/s"."""
    return _sign(value) + format_value(abs(value), unit, digits)


def format_differences(values: Sequence[float], unit: str = "",
                       digits: int | None = None) -> str:
    """The range of several absolute differences: "+0.04 ms to +0.06 ms", "−0.01 ms to +0.03 ms"."""
    if not values:
        raise AnalysisError("no differences to summarise")
    return _span(list(values), unit, digits)


def _span(values: list[float], unit: str, digits: int | None) -> str:
    """One value or the range of several, signed, in percent (`unit` "%") or a unit."""
    def one(v: float) -> str:
        return format_percent(v, digits) if unit == "%" else format_difference(v, unit, digits)

    values = [v for v in values if v == v] or [float("nan")]  # NaN: "n/a", never a range end
    lo, hi = min(values), max(values)
    if not (isfinite(lo) and isfinite(hi)):  # a change from 0 (±∞) or none: no rounding
        return one(lo) if one(lo) == one(hi) else f"{one(lo)} to {one(hi)}"
    if unit == "%" and digits is None:  # the percent rule: whole numbers across a range
        if round(lo) == round(hi):
            return one(lo) if len(values) == 1 else one((lo + hi) / 2)
        if lo >= 0 or hi <= 0:  # each end signed: "−8 % to −7 %", never "−7–8 %"
            return f"{_whole(lo)} to {_whole(hi)}"
        return f"{one(lo)} to {one(hi)}"
    if one(lo) == one(hi):
        return one(lo)
    return f"{one(lo)} to {one(hi)}"


def _whole(value: float) -> str:
    """A range end in whole percent, signed; one that rounds to zero is "0 %", never "−0 %"."""
    whole = round(value)
    return "0 %" if whole == 0 else f"{_sign(whole)}{abs(whole)} %"

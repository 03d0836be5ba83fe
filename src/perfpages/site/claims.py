"""Claims: a sentence bound to a condition over the pinned data, checked at build and by pytest.

Every condition is decided by `perfpages.analysis.decision` on raw values, exactly as the tables
and `bench report` decide: a claim and the table beside it can never disagree. The messages
print the figures as the page does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from math import inf, nan
from typing import Any

from perfpages.analysis import decision
from perfpages.analysis.decision import Change
from perfpages.analysis.format import (
    format_change,
    format_difference,
    format_percent,
    places,
    telling,
    typed_places,
)
from perfpages.analysis.metric import format_number, format_value, info
from perfpages.errors import AnalysisError
from perfpages.site import contrary
from perfpages.site.condition import MAX_ITEMS as MAX_ITEMS
from perfpages.site.condition import Claim as Claim
from perfpages.site.condition import Condition as Condition
from perfpages.site.condition import all_of, bounded, listing, where_of
from perfpages.site.condition import printed_tolerance as printed_tolerance
from perfpages.site.facts import text
from perfpages.site.macros import scale, verdict
from perfpages.site.pins import Found, Pins, Side, same_value, side_text
from perfpages.site.runclaims import RunConditions
from perfpages.site.verdicts import Judged, judge, resolution


def in_band(f: Found, c: Change, res: float, band: tuple[float, float],
            factor: float | None) -> tuple[float, Judged]:
    """A change's value against a band (`factor`: an absolute band, in the page's unit; None: in
    percent), and the comparison as judged, with the band's width in percent of its base."""
    value = c.difference * factor if factor is not None else c.percent
    width = band[1] - band[0]
    if factor is not None and c.base.median:
        width = width / abs(c.base.median * factor) * 100
    return value, Judged(f.run, f.block, c, res, width if c.base.median else None)


class Conditions(RunConditions):
    """The conditions a page's claims can use, bound to its pins."""

    def __init__(self, pins: Pins) -> None:
        self.pins = pins

    def namespace(self) -> dict[str, Callable[..., Condition]]:
        return {"faster": self.faster, "slower": self.slower, "between": self.between,
                "below": self.below, "above": self.above, "overlap": self.overlap,
                "saturated": self.saturated, "drifted": self.drifted, "quiet": self.quiet,
                "best": self.best, "steps": self.steps, "trips": self.trips,
                "spike": self.spike, "statement": self.statement, "times": self.times,
                "all_of": all_of, "equals": self.equals}

    def _changes(self, base: Side, other: Side, metric: str,
                 filters: dict[str, Any]) -> list[tuple[Found, Change, float]]:
        """(other's cell, change, resolution with the A/A pair) of every pair of cells."""
        out = []
        for a, b in self.pins.pairs(base, other, metric=metric, **filters):
            c = judge(self.pins, a, b, metric)
            out.append((b, c, resolution(self.pins, a, b, c)))
        return out

    def faster(self, base: Side, other: Side, metric: str = "throughput", *, clear: bool = True,
               by_at_least: float | None = None, despite: str | Sequence[str] = (),
               **filters: Any) -> Condition:
        """`other` better than `base` in every cell: a clear gain (ranges apart, or the exact
        test), or with clear=False a better median; `by_at_least`: by at least that many
        percent, a bound the comparison must resolve (method v2); `despite`: metrics of the
        same cells clearly worse, printed beside the claim (`perfpages.site.contrary`)."""
        return self._acknowledged(
            self._direction(base, other, metric, clear, True, by_at_least, filters),
            self.pins.pairs(base, other, metric=metric, **filters), despite, True)

    def slower(self, base: Side, other: Side, metric: str = "throughput", *, clear: bool = True,
               by_at_least: float | None = None, despite: str | Sequence[str] = (),
               **filters: Any) -> Condition:
        """`other` worse than `base` in every cell (a clear loss, or a worse median);
        `despite`: metrics of the same cells clearly better, printed beside the claim."""
        return self._acknowledged(
            self._direction(base, other, metric, clear, False, by_at_least, filters),
            self.pins.pairs(base, other, metric=metric, **filters), despite, False)

    def _acknowledged(self, cond: Condition, pairs: list[tuple[Found, Found]],
                      despite: str | Sequence[str], gain: bool) -> Condition:
        """`despite=`: each metric's changes on the claim's pairs of cells judged (so the page
        shows them) and named beside the claim; one with no cell clearly the other way fails
        the claim (the words would say what the data do not)."""
        notes, wrong = [], []
        for m in [despite] if isinstance(despite, str) else list(despite):
            against, note = contrary.despite(self.pins, pairs, m, gain)
            notes.append(note)
            if not against:
                wrong.append(m)
        if not notes:
            return cond
        data = cond.data + "".join(f"; despite={m!r}: no cell clearly the other way"
                                   for m in wrong)
        return replace(cond, holds=cond.holds and not wrong, data=data, note="; ".join(notes))

    def _direction(self, base: Side, other: Side, metric: str, clear: bool, gain: bool,
                   by: float | None, filters: dict[str, Any]) -> Condition:
        if info(metric).higher_is_better is None:
            raise AnalysisError(f"{metric!r} has no better direction: use between() or overlap()")
        if by is not None and not by > 0:
            raise AnalysisError(f"by_at_least={by!r} is not above 0",
                                fix="give the smallest change claimed in percent, e.g. 5")
        items, ok, judged = [], True, []
        for f, c, res in self._changes(base, other, metric, filters):
            ok &= c.better is gain and (c.clear or not clear) and (
                by is None or decision.within(abs(c.percent), by, float("inf")))
            judged.append(Judged(f.run, f.block, c, res, by, clear))
            shown = None if by is None else telling(abs(c.percent), [by], places(
                format_percent(c.percent)))
            items.append(f"{where_of(f, base)}: {format_change(c, shown, verdict(c))}")
        word = "gain" if gain else "loss"
        base, other = side_text(base), side_text(other)
        expected = (f"a clear {word} of {other} over {base} in every cell" if clear else
                    f"{other} {'better' if gain else 'worse'} than {base} in every cell")
        if by is not None:
            expected += f", by at least {text(by)} %"
        return bounded(ok, f"{expected} ({metric})", items, judged,
                       f"bound {text(by)} %" if by is not None else "")

    def between(self, low: float, high: float, base: Side, other: Side,
                metric: str = "throughput", *, absolute: bool = False, unit: str | None = None,
                digits: int | None = None, as_printed: bool = False,
                **filters: Any) -> Condition:
        """Every cell's change of `other` over `base` within [low, high] percent, or with
        absolute=True their difference within [low, high] in `unit`. Exact bounds (low ==
        high) hold within half a unit of the last decimal they print with; as_printed=True:
        both bounds are figures as a page prints them ("+15–19 %"), each holding within half
        a unit of its last typed decimal (or `digits=`)."""
        if as_printed:
            return self._as_printed(low, high, base, other, metric, absolute, unit, digits,
                                    filters)
        factor, shown = scale(metric, unit)
        if unit is not None and not absolute:
            raise AnalysisError("unit= needs absolute=True: a change in percent has none")

        def shown_value(value: float, places: int | None = digits) -> str:
            return format_difference(value, shown, places) if absolute else \
                format_percent(value, places)

        def bound_places(bound: float) -> int:  # as typed, at least as the page prints it
            return digits if digits is not None else max(typed_places(bound),
                                                         places(shown_value(bound)))

        tolerance = 0.5 * 10.0 ** -bound_places(low) if low == high else 0.0
        band = (low - tolerance, high + tolerance)
        items, ok, judged = [], True, []
        for f, c, res in self._changes(base, other, metric, filters):
            value, judgement = in_band(f, c, res, band, factor if absolute else None)
            ok &= decision.within(value, *band)
            judged.append(judgement)
            start = digits if digits is not None else max(
                places(shown_value(value)), bound_places(low), bound_places(high))
            items.append(f"{where_of(f, base)}: {shown_value(value, telling(value, band, start))}")
        what = "difference" if absolute else "change"
        low_text, high_text = (shown_value(b, bound_places(b)) for b in (low, high))
        expected = f"between {low_text} and {high_text} ({metric})"
        if low == high:  # exact: as printed
            expected = (f"of {low_text} ({metric}; within "
                        f"±{format_number(tolerance, bound_places(low) + 1)}, as printed)")
        bounds = (f"bounds {low_text}–{high_text}" if absolute else
                  f"bounds {text(low)}–{text(high)} %")
        return bounded(ok, f"a {what} of {side_text(other)} over {side_text(base)} {expected}",
                       items, judged, bounds)

    def _as_printed(self, low: float, high: float, base: Side, other: Side, metric: str,
                    absolute: bool, unit: str | None, digits: int | None,
                    filters: dict[str, Any]) -> Condition:
        """between(…, as_printed=True): the bounds as printed, each ± half a unit of its last
        decimal — the tolerance rule of guide/pages.md#tolerance, in one place."""
        if low > high:
            raise AnalysisError(f"between({text(low)}, {text(high)}): low above high",
                                fix="give the smaller bound first")
        factor, shown = scale(metric, unit)
        if unit is not None and not absolute:
            raise AnalysisError("unit= needs absolute=True: a change in percent has none")
        band = (low - printed_tolerance(low, digits), high + printed_tolerance(high, digits))
        items, ok, judged = [], True, []
        for f, c, res in self._changes(base, other, metric, filters):
            value, judgement = in_band(f, c, res, band, factor if absolute else None)
            ok &= decision.within(value, *band)
            judged.append(judgement)
            start = digits if digits is not None else places(
                format_difference(value, shown) if absolute else format_percent(value))
            at = telling(value, band, start)
            items.append(f"{where_of(f, base)}: " + (format_difference(value, shown, at)
                                                   if absolute else format_percent(value, at)))
        what = "difference" if absolute else "change"

        def bound(b: float) -> str:
            d = digits if digits is not None else typed_places(b)
            return format_difference(b, shown, d) if absolute else format_percent(b, d)

        shown_band = bound(low) if low == high else f"{bound(low)}–{bound(high)}"
        expected = (f"a {what} of {side_text(other)} over {side_text(base)} of {shown_band} as "
                    f"printed ({metric}; from {band[0]:g} to {band[1]:g})")
        return bounded(ok, expected, items, judged, f"bounds {text(low)}–{text(high)}"
                       + ("" if absolute else " %"))

    def times(self, factor: float, base: Side, other: Side, metric: str = "throughput", *,
              digits: int | None = None, **filters: Any) -> Condition:
        """"`other` is 4 times as fast as `base`": in every cell, other's speed over base's
        (other ÷ base for throughput, base ÷ other for a latency) is `factor` as printed, ±
        half a unit of its last typed decimal (or `digits=`)."""
        higher = info(metric).higher_is_better
        if higher is None:
            raise AnalysisError(f"{metric!r} has no better direction: times() needs one")
        if not factor > 0:
            raise AnalysisError(f"times({factor!r}, …): not a factor above 0",
                                fix="give how many times as fast, e.g. times(4, …)")
        tol = printed_tolerance(factor, digits)
        band = (factor - tol, factor + tol)
        items, ok = [], True
        for f, c, _ in self._changes(base, other, metric, filters):
            speed = c.ratio if higher else (1 / c.ratio if c.ratio else inf)
            ok &= decision.within(speed, *band)
            start = digits if digits is not None else max(typed_places(factor), 1)
            items.append(f"{where_of(f, base)}: {format_number(speed, telling(speed, band, start))}"
                         f" times ({format_number(c.base.median)} → "
                         f"{format_number(c.other.median)})")
        return Condition(ok, f"{side_text(other)} {text(factor)} times as fast as "
                             f"{side_text(base)} in every cell ({metric}; from "
                             f"{band[0]:g} to {band[1]:g})",
                         listing(items))

    def equals(self, metric: str, value: float, *, unit: str | None = None,
               stat: str = "median", digits: int | None = None, **filters: Any) -> Condition:
        """Every selected cell's median (or stat="min"/"max": its min or max) is `value` as
        printed: within half a unit of its last typed decimal, or of `digits=` (the tolerance
        rule): "a p95 of 1.83 s at 8 clients" is equals("p95", 1.83, unit="s", …)."""
        if stat not in ("median", "min", "max"):
            raise AnalysisError(f"stat must be median, min or max, not {stat!r}")
        factor, shown_unit = scale(metric, unit)
        tol = printed_tolerance(value, digits)
        band = (value - tol, value + tol)
        places_ = digits if digits is not None else typed_places(value)
        items, ok = [], True
        for f in self.pins.select(metric=metric, **filters):
            got = getattr(f.cell, stat) * factor
            ok &= decision.within(got, *band)
            at = telling(got, band, max(places_, places(format_number(got))))
            items.append(f"{f.describe()}: {format_value(got, shown_unit, at)}")
        what = metric if stat == "median" else f"{metric} ({stat})"
        return Condition(ok, f"{what} of {format_value(value, shown_unit, places_)} as printed "
                             f"in every cell (from {band[0]:g} to {band[1]:g})", listing(items))

    def below(self, metric: str, limit: float, *, unit: str | None = None,
              stat: str = "median", digits: int | None = None, **filters: Any) -> Condition:
        """Every selected cell's median (or stat='max': every round) below `limit`."""
        return self._bound(metric, limit, unit, stat, digits, True, filters)

    def above(self, metric: str, limit: float, *, unit: str | None = None,
              stat: str = "median", digits: int | None = None, **filters: Any) -> Condition:
        """Every selected cell's median (or stat='min': every round) above `limit`."""
        return self._bound(metric, limit, unit, stat, digits, False, filters)

    def _bound(self, metric: str, limit: float, unit: str | None, stat: str,
               digits: int | None, below: bool, filters: dict[str, Any]) -> Condition:
        if stat not in ("median", "min", "max"):
            raise AnalysisError(f"stat must be median, min or max, not {stat!r}")
        factor, shown_unit = scale(metric, unit)
        shown = digits if digits is not None else max(
            typed_places(limit), places(format_value(limit, shown_unit)))
        items, ok = [], True
        for f in self.pins.select(metric=metric, **filters):
            value = getattr(f.cell, stat) * factor
            ok &= decision.beyond(value, limit, below=below)
            start = digits if digits is not None else places(format_value(value, shown_unit))
            items.append(f"{f.describe()}: "
                         f"{format_value(value, shown_unit, telling(value, [limit], start))}")
        word = "below" if below else "above"
        what = metric if stat == "median" else f"{metric} ({stat} of the rounds)"
        return Condition(ok, f"{what} {word} {format_value(limit, shown_unit, shown)} in every "
                             "cell", listing(items))

    def overlap(self, base: Side, other: Side, metric: str = "throughput",
                **filters: Any) -> Condition:
        """No clear change between `base` and `other` in any cell: under the exact test, every
        cell's p at or above α; under the ranges rule, every cell's ranges overlap."""
        items, ok, exact = [], True, False
        for f, c, _ in self._changes(base, other, metric, filters):
            ok &= not c.separated
            if c.test is not None:  # the exact rule: the test decides, not the ranges
                exact = True
                items.append(f"{where_of(f, base)}: {format_change(c, None, verdict(c))}, "
                             f"p {format_number(c.test.p)}")
            else:
                items.append(f"{where_of(f, base)}: {format_number(c.base.min)}–"
                             f"{format_number(c.base.max)} vs {format_number(c.other.min)}–"
                             f"{format_number(c.other.max)}")
        a, b = side_text(base), side_text(other)
        expected = (f"no clear change between {a} and {b} in any cell ({metric})" if exact else
                    f"the ranges of {a} and {b} overlap in every cell ({metric})")
        return Condition(ok, expected, listing(items))

    def best(self, x: str, value: Any, metric: str = "throughput", *, clear: bool = False,
             largest: bool | None = None, despite: str | Sequence[str] = (),
             **filters: Any) -> Condition:
        """In every series along `x` (the selected cells alike but for `x`), the cell at
        `x=value` has the best median — with clear=True, a clear gain over every other;
        largest=True (or False): the largest (smallest) median, for a metric without a better
        direction too ("logging is the largest share"); `despite`: as faster()'s."""
        directed = info(metric).higher_is_better
        higher = directed if largest is None else largest
        if higher is None:
            raise AnalysisError(f"{metric!r} has no better direction: best() needs one",
                                fix="say which: best(…, largest=True) for the largest median")
        if clear and directed is None:
            raise AnalysisError(f"{metric!r} has no better direction: no gain is clear",
                                fix="drop clear=True: largest= compares the medians")
        series: dict[tuple[Any, ...], list[Found]] = {}
        judged: list[Judged] = []
        for f in self.pins.select(metric=metric, **filters):
            rest = tuple(sorted((k, str(v)) for k, v in f.params.items() if k != x))
            series.setdefault((f.run, f.block, f.label, rest), []).append(f)
        items, ok, pairs = [], True, []
        for cells in series.values():
            at = [f for f in cells if same_value(f.params.get(x), value)]
            if len(at) != 1 or len(cells) < 2:
                raise AnalysisError(f"{len(at)} cells at {x}={text(value)} among "
                                    f"{len(cells)} along {x} ({cells[0].describe('parameters')})",
                                    fix=f"select series that vary {x} and hold {x}={text(value)}")
            top = at[0]
            rivals = [judge(self.pins, f, top, metric) for f in cells if f is not top]
            pairs += [(f, top) for f in cells if f is not top]
            judged += [Judged(top.run, top.block, c, nan, None, clear) for c in rivals]
            good = all(c.better is True and (c.clear or not clear) for c in rivals) \
                if largest is None else all(c.ratio != 1 and (c.ratio > 1) == higher
                                            for c in rivals)
            ok &= good
            runner = min(rivals, key=lambda c: abs(c.ratio - 1))
            shown = (f"{top.describe()}: {x}={text(value)} {format_number(top.cell.median)}"
                     f", next {format_number(runner.base.median)} "
                     f"({format_percent(runner.percent)}, {verdict(runner)})")
            if not good:  # name the winner, not only the nearest rival
                ranked = sorted(cells, key=lambda f: f.cell.median, reverse=higher)
                win = ranked[0] if ranked[0] is not top else ranked[1]
                beaten = next(c for f, c in zip((f for f in cells if f is not top), rivals,
                                                strict=True) if f is win)
                shown = (f"{top.describe()}: {x}={text(value)} {format_number(top.cell.median)}"
                         f", best {x}={text(win.params.get(x))} "
                         f"{format_number(win.cell.median)} ({format_percent(beaten.percent)}"
                         f", {verdict(beaten)})")
            items.append(shown)
        word = ("clearly best" if clear else "best") if largest is None else (
            "largest" if largest else "smallest")
        return self._acknowledged(Condition(
            ok, f"{x}={text(value)} {word} along {x} in every series ({metric})",
            listing(items), tuple(judged)), pairs, despite, True)

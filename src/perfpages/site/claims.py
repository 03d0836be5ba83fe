"""Claims: a sentence bound to a condition over the pinned data, checked at build and by pytest.

Every condition is decided by `perfpages.analysis.decision` on raw values, exactly as the tables
and `bench report` decide: a claim and the table beside it can never disagree. The messages
print the figures as the page does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from math import inf, nan
from typing import Any

from perfpages.analysis import changepoints, decision, statements
from perfpages.analysis.decision import MIN_GAIN, P95_RISE, Change
from perfpages.analysis.method import (
    format_change,
    format_difference,
    format_percent,
    format_range,
    format_resolution,
    places,
    telling,
    typed_places,
)
from perfpages.analysis.metric import format_number, format_value, info
from perfpages.errors import AnalysisError
from perfpages.site.facts import floor_drift, text
from perfpages.site.macros import cell_text, scale, series_round_trips, verdict
from perfpages.site.pins import Found, Pins, Side, same_value, side_text
from perfpages.site.plots import edivisive_points, kept_samples
from perfpages.site.verdicts import Judged, judge, noise_rows, resolution

MAX_ITEMS = 6  # cells listed in a failure message before "… and N more"


@dataclass(frozen=True)
class Condition:
    holds: bool
    expected: str
    data: str
    # The comparisons it rests on (for the page's certification and Holm's correction)
    judged: tuple[Judged, ...] = ()
    # A condition over the whole page (certified): settled once every claim is in
    settle: Callable[[list[Claim]], Condition] | None = field(default=None, compare=False)

    def __bool__(self) -> bool:
        return self.holds


@dataclass(frozen=True)
class Claim:
    path: str  # as shown to the user: docs/PATH.md
    line: int
    sentence: str
    condition: Condition

    @property
    def holds(self) -> bool:
        return self.condition.holds

    @property
    def message(self) -> str:
        return (f"{self.path}:{self.line}: claim \"{self.sentence}\" — expected "
                f"{self.condition.expected}, data {self.condition.data}")


def bounded(ok: bool, expected: str, items: list[str], judged: list[Judged],
            bounds: str) -> Condition:
    """A condition with bounds on changes: under an exact rule it fails when the bounds are
    finer than the comparisons resolve (`verdicts.Judged.finer`), saying so."""
    coarse = [j for j in judged if j.finer]
    data = _listing(items)
    if coarse:
        worst = max(j.resolution for j in coarse)
        many = len(judged) > 1
        data += (f"; {bounds} {'is' if bounds.startswith('bound ') else 'are'} finer than "
                 f"{'these comparisons resolve' if many else 'this comparison resolves'} "
                 f"({format_resolution(worst)}{', worst cell' if many else ''})")
    return Condition(ok and not coarse, expected, data, tuple(judged))


def printed_tolerance(bound: float, digits: int | None = None) -> float:
    """The tolerance rule of a figure as printed (guide/pages.md#tolerance): half a unit of its
    last decimal — as typed (19 → ±0.5, 4.1 → ±0.05), or `digits=` decimals."""
    return 0.5 * 10.0 ** -(digits if digits is not None else typed_places(bound))


def all_of(*conditions: Condition) -> Condition:
    """One claim joining conditions: it holds when every one does ("printed +8 %, and ranges
    overlap"); its message lists each one's expectation and data."""
    if not conditions or not all(isinstance(c, Condition) for c in conditions):
        raise AnalysisError("all_of() joins conditions: all_of(between(…), overlap(…))")
    if any(c.settle is not None for c in conditions):
        raise AnalysisError("certified() is settled over the whole page: claim it on its own")
    return Condition(all(c.holds for c in conditions),
                     "; and ".join(c.expected for c in conditions),
                     " | ".join(c.data for c in conditions),
                     tuple(j for c in conditions for j in c.judged))


def _listing(items: list[str]) -> str:
    head = "; ".join(items[:MAX_ITEMS])
    more = len(items) - MAX_ITEMS
    return head + (f"; … and {more} more" if more > 0 else "")


def _where(f: Found, base: Side | str = "") -> str:
    """Where a pair's cell is: its block and parameters for two labels; with its label for
    two parameter values (a `where` of the other side's values names them)."""
    return (f.describe("label") if isinstance(base, str) else f.describe()) or f.block


class Conditions:
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
               by_at_least: float | None = None, **filters: Any) -> Condition:
        """`other` better than `base` in every cell: a clear gain (ranges apart, or the exact
        test), or with clear=False a better median; `by_at_least`: by at least that many
        percent, a bound the comparison must resolve (method v2)."""
        return self._direction(base, other, metric, clear, True, by_at_least, filters)

    def slower(self, base: Side, other: Side, metric: str = "throughput", *, clear: bool = True,
               by_at_least: float | None = None, **filters: Any) -> Condition:
        """`other` worse than `base` in every cell (a clear loss, or a worse median)."""
        return self._direction(base, other, metric, clear, False, by_at_least, filters)

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
            items.append(f"{_where(f, base)}: {format_change(c, shown, verdict(c))}")
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
            value = c.difference * factor if absolute else c.percent
            ok &= decision.within(value, *band)
            # The band's width, in percent of this cell's base (an absolute band too).
            width = band[1] - band[0]
            if absolute and c.base.median:
                width = width / abs(c.base.median * factor) * 100
            judged.append(Judged(f.run, f.block, c, res, width if c.base.median else None))
            start = digits if digits is not None else max(
                places(shown_value(value)), bound_places(low), bound_places(high))
            items.append(f"{_where(f, base)}: {shown_value(value, telling(value, band, start))}")
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
            value = c.difference * factor if absolute else c.percent
            ok &= decision.within(value, *band)
            width = band[1] - band[0]
            if absolute and c.base.median:
                width = width / abs(c.base.median * factor) * 100
            judged.append(Judged(f.run, f.block, c, res, width if c.base.median else None))
            start = digits if digits is not None else places(
                format_difference(value, shown) if absolute else format_percent(value))
            at = telling(value, band, start)
            items.append(f"{_where(f, base)}: " + (format_difference(value, shown, at)
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
            items.append(f"{_where(f, base)}: {format_number(speed, telling(speed, band, start))}"
                         f" times ({format_number(c.base.median)} → "
                         f"{format_number(c.other.median)})")
        return Condition(ok, f"{side_text(other)} {text(factor)} times as fast as "
                             f"{side_text(base)} in every cell ({metric}; from "
                             f"{band[0]:g} to {band[1]:g})",
                         _listing(items))

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
                             f"in every cell (from {band[0]:g} to {band[1]:g})", _listing(items))

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
                             "cell", _listing(items))

    def overlap(self, base: Side, other: Side, metric: str = "throughput",
                **filters: Any) -> Condition:
        """The ranges of `base` and `other` overlap in every cell."""
        items, ok = [], True
        for f, c, _ in self._changes(base, other, metric, filters):
            ok &= not c.separated
            items.append(f"{_where(f, base)}: {format_number(c.base.min)}–"
                         f"{format_number(c.base.max)} vs {format_number(c.other.min)}–"
                         f"{format_number(c.other.max)}")
        return Condition(ok, f"the ranges of {side_text(base)} and {side_text(other)} overlap "
                             f"in every cell ({metric})", _listing(items))

    def best(self, x: str, value: Any, metric: str = "throughput", *, clear: bool = False,
             largest: bool | None = None, **filters: Any) -> Condition:
        """In every series along `x` (the selected cells alike but for `x`), the cell at
        `x=value` has the best median — with clear=True, a clear gain over every other;
        largest=True (or False): the largest (smallest) median, for a metric without a better
        direction too ("logging is the largest share")."""
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
        items, ok = [], True
        for cells in series.values():
            at = [f for f in cells if same_value(f.params.get(x), value)]
            if len(at) != 1 or len(cells) < 2:
                raise AnalysisError(f"{len(at)} cells at {x}={text(value)} among "
                                    f"{len(cells)} along {x} ({cells[0].describe('parameters')})",
                                    fix=f"select series that vary {x} and hold {x}={text(value)}")
            top = at[0]
            rivals = [judge(self.pins, f, top, metric) for f in cells if f is not top]
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
        return Condition(ok, f"{x}={text(value)} {word} along {x} in every series ({metric})",
                         _listing(items), tuple(judged))

    def saturated(self, low: float, high: float, *, x: str = "clients",
                  **filters: Any) -> Condition:
        """From x=low to x=high, every selected series gains less throughput than the report's
        knee rule allows (+10 %) while its p95 rises more than the rule's +50 %."""
        items, ok = [], True
        where = dict(filters.pop("where", None) or {})
        for f in self.pins.select(metric="throughput", where={**where, x: low}, **filters):
            same = {k: v for k, v in f.params.items() if k != x}

            def at(metric: str, value: float, f: Found = f, same: dict[str, Any] = same) -> Any:
                found = self.pins.select(metric=metric, run=f.run, block=f.block,
                                         label=f.label, where={**same, x: value})
                if len(found) != 1:
                    raise AnalysisError(f"{len(found)} cells of {metric!r} at {x}={value} for "
                                        f"{f.describe('parameters')}",
                                        fix="narrow the selection with block=, label= or where=")
                return found[0].cell

            gain = Change("throughput", at("throughput", low), at("throughput", high))
            rise = Change("p95", at("p95", low), at("p95", high))
            ok &= decision.saturated(gain.ratio - 1, rise.ratio - 1)
            items.append(f"{f.describe('parameters')}: throughput {format_percent(gain.percent)}"
                         f", p95 {format_percent(rise.percent)}")
        return Condition(ok, f"from {x}={text(low)} to {x}={text(high)}, "
                             f"throughput growing less than {format_percent(MIN_GAIN * 100)} "
                             f"while p95 rises more than {format_percent(P95_RISE * 100)}",
                         _listing(items))

    def drifted(self, *, block: str | None = None, run: str | None = None,
                kind: str = "pgbench") -> Condition:
        """The floors after a block differ from those before by more than the run's threshold."""
        d = floor_drift(self.pins.runs[self.pins.aliases(run)[0]], block, kind)
        return Condition(d.flagged, f"floors drifting beyond "
                                    f"{format_number(d.threshold * 100)} %", d.describe())

    def statement(self, fragment: str, *, label: str, block: str, at_most: float | None = None,
                  at_least: float | None = None, run: str | None = None) -> Condition:
        """Statements whose text contains `fragment` ran between `at_least` and `at_most` times
        per call `label` served in `block` (pg_stat_statements): "0.43.0 no longer reads the
        key table on every call" is `statement("api_keys", label="0.43.0", block="calls",
        at_most=0.1)`. A summary that kept only its top lists cannot prove an absence."""
        if not fragment.strip() or (at_most is None and at_least is None):
            raise AnalysisError("statement() needs a fragment of the statement's text and "
                                "at_most= or at_least=",
                                fix='e.g. statement("FROM api_keys", label=…, block=…, '
                                    'at_most=0.1)')
        loaded = self.pins.runs[self.pins.aliases(run)[0]]
        found = statements.matching(loaded, block, label, fragment)
        low = -inf if at_least is None else at_least
        high = inf if at_most is None else at_most
        bounds = " and ".join(x for x in (
            f"at least {text(at_least)}" if at_least is not None else "",
            f"at most {text(at_most)}" if at_most is not None else "") if x)
        expected = f"statements containing {fragment!r} run {bounds} times per call ({label})"
        if found is None:
            return Condition(False, expected, f"run archived no statements for {block}/{label}")
        data = f"{format_number(found.per_call)} per call ({len(found.queries)} statements)"
        if not found.queries and not found.complete:
            return Condition(False, expected, data + "; its summary kept only the top "
                             "statements, so an absence proves nothing")
        return Condition(low <= found.per_call <= high, expected, data)

    def quiet(self, within: float = 5, *, run: str | list[str] | None = None,
              block: str | None = None, metric: str | None = None) -> Condition:
        """The A/A pairs' noise floor: identical builds differ by less than `within` percent in
        every cell, and never clearly."""
        items, ok = [], True
        for alias in self.pins.aliases(run):
            for row in noise_rows(self.pins, alias, block, metric):
                ok &= row.quiet(within)
                items.append(f"{row.block}, {row.metric}, {row.pair}: "
                             f"{format_range(row.changes)} ({row.clear} of "
                             f"{len(row.changes)} clear)")
        return Condition(ok, f"identical builds differing by less than "
                             f"{text(within)} % in every cell, never clearly",
                         _listing(items))

    def steps(self, at: str | list[str] | None = None, metric: str = "throughput", *,
              method: str = "rule", **filters: Any) -> Condition:
        """A history's clear steps between neighbouring releases (one run's labels, in order)
        land exactly at the releases `at`, in every selected series; `at=[]` or None: no
        clear step anywhere."""
        wanted = [at] if isinstance(at, str) else list(at or [])
        alias, groups = self.pins.releases(metric=metric, **filters)
        unknown = [r for r in wanted if r not in self.pins.labels(alias)]
        if unknown:
            raise AnalysisError(f"no release {unknown[0]!r} in run {alias!r}",
                                fix=f"use one of: {', '.join(self.pins.labels(alias))}")
        if method not in ("rule", "e-divisive"):
            raise AnalysisError(f"method={method!r} is not a way to find steps",
                                fix="use method=\"rule\" or method=\"e-divisive\"")
        by_edivisive = edivisive_points(groups) if method == "e-divisive" else None
        items, ok = [], True
        for index, cells in enumerate(groups):
            if by_edivisive is None:
                found = changepoints.clear_steps([(f.label, f.cell) for f in cells], metric,
                                                 self.pins.rule(alias))
                releases = [s.after for s in found]
                text = ", ".join(f"{s.before}→{s.after} {format_percent(s.change.percent)}"
                                 for s in found)
            else:
                releases = by_edivisive[index]
                text = ", ".join(releases)
            ok &= releases == [r for r in self.pins.labels(alias) if r in wanted]
            where = cells[0].describe("label") or cells[0].block
            items.append(f"{where}: {text or 'no clear step'}")
        if wanted:
            what = "clear steps" if by_edivisive is None else "E-divisive change points"
            expected = f"{what} at {', '.join(wanted)} only"
        else:
            expected = ("no clear step between neighbouring releases" if by_edivisive is None
                        else "no E-divisive change point")
        return Condition(ok, f"{expected} ({metric})", _listing(items))

    def trips(self, count: float, metric: str = "p50", *, tolerance: float = 0.5,
                    **filters: Any) -> Condition:
        """Every selected series makes `count` round trips per call: every round's slope of
        `metric` against the measured added round trip is within `tolerance` of it."""
        if tolerance <= 0:
            raise AnalysisError(f"tolerance={tolerance!r} is not above 0",
                                fix="give tolerance as round trips, e.g. 0.5")
        rows = series_round_trips(self.pins, metric, filters)
        items = [f"{row.where}: {cell_text(row.trips.slope, '', 2)}" for row in rows]
        return Condition(all(row.trips.within(count, tolerance) for row in rows),
                         f"{count:g} round trips per call (every round within "
                         f"±{tolerance:g}, slope of {metric} against the added "
                         "round trip)", _listing(items))

    def spike(self, low: float, high: float, *, after_s: float = 1.0,
              **filters: Any) -> Condition:
        """In every selected cell's kept requests (each round of a block with samples, the
        cold path), the slowest one that started after `after_s` seconds started between `low`
        and `high` seconds into the window: a once-a-minute stall is where it should be."""
        if not 0 <= low <= high:
            raise AnalysisError(f"spike({low!r}, {high!r}) is not a window of seconds",
                                fix="give low <= high, both >= 0, e.g. spike(55, 70)")
        items, ok = [], True
        for f in self.pins.select(metric="p50", **filters):
            for rnd, kept in kept_samples(self.pins, f).items():
                later = [one for one in kept if one.offset_s >= after_s]
                if not later:
                    ok = False
                    items.append(f"{f.describe()}, round {rnd}: no request after {after_s:g} s")
                    continue
                worst = max(later, key=lambda one: one.latency_ms)
                ok &= low <= worst.offset_s <= high
                items.append(f"{f.describe()}, round {rnd}: {format_value(worst.latency_ms, 'ms')}"
                             f" at {worst.offset_s:.1f} s")
        return Condition(ok, f"the slowest request after {after_s:g} s starting between "
                             f"{low:g} and {high:g} s in every cell", _listing(items))

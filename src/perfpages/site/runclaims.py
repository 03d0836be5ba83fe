"""The conditions a page's claims state about a run as a whole — a knee, drift, a statement's
count, a quiet A/A pair, steps across releases, round trips, a spike in a cold path — mixed into
`perfpages.site.claims.Conditions`."""

from __future__ import annotations

from itertools import pairwise
from math import inf
from typing import Any

from perfpages.analysis import decision, statements
from perfpages.analysis.decision import MIN_GAIN, P95_RISE, Change
from perfpages.analysis.format import format_percent, format_range
from perfpages.analysis.metric import format_number, format_value
from perfpages.errors import AnalysisError
from perfpages.site.condition import Condition, listing
from perfpages.site.facts import floor_drift, text
from perfpages.site.macros import cell_text, series_round_trips
from perfpages.site.pins import Found, Pins
from perfpages.site.plots import edivisive_points, kept_samples
from perfpages.site.verdicts import Judged, judge, noise_rows, resolution


class RunConditions:
    """Claims about a run as a whole; `Conditions` binds them to a page's pins."""

    pins: Pins

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
                         listing(items))

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
                         listing(items))

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
        items, ok, judged = [], True, []
        for index, cells in enumerate(groups):
            if by_edivisive is None:
                # Each step between neighbours is a verdict the claim states (clear at `at`,
                # not clear elsewhere): judged into the page's ledger, so the agreement and
                # contrary checks see it, as `changepoints.steps` pairs them.
                found = []
                for a, b in pairwise(cells):
                    c = judge(self.pins, a, b, metric)
                    judged.append(Judged(a.run, a.block, c, resolution(self.pins, a, b, c),
                                         asserted=b.label in wanted))
                    if c.clear:
                        found.append((a.label, b.label, c))
                releases = [after for _, after, _ in found]
                text = ", ".join(f"{before}→{after} {format_percent(c.percent)}"
                                 for before, after, c in found)
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
        return Condition(ok, f"{expected} ({metric})", listing(items), tuple(judged))

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
                         "round trip)", listing(items))

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
                             f"{low:g} and {high:g} s in every cell", listing(items))

"""The macros a performance page calls: table, figure, change, given (charts: plots.py).

Every figure they print is computed from the page's pinned runs and escaped; `given` marks a
figure that is not a measurement (a setting, a size) so the lint lets it stand.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from perfpages.analysis.decision import Cell, Change
from perfpages.analysis.format import (
    format_change,
    format_differences,
    format_percent,
    format_range,
    format_resolution,
)
from perfpages.analysis.metric import (
    axis_title,
    format_number,
    format_value,
    info,
    metrics_title,
    parameter,
    titled,
)
from perfpages.analysis.roundtrips import RoundTrips, round_trips
from perfpages.analysis.tablefile import note_key
from perfpages.archive import files
from perfpages.archive.manifest import Source
from perfpages.archive.reader import path_part
from perfpages.errors import AnalysisError
from perfpages.site import escape, tables
from perfpages.site.pins import Found, Pins, Side
from perfpages.site.tripchart import TripSeries, trips_chart
from perfpages.site.verdicts import across, judge, noise_rows, resolution
from perfpages.site.why import why

# Unit conversions from a metric's archived unit: (archived, shown) -> factor.
CONVERSIONS = {("ms", "ms"): 1.0, ("ms", "µs"): 1000.0, ("ms", "us"): 1000.0,
               ("ms", "s"): 0.001, ("ms", "ns"): 1e6, ("/s", "/s"): 1.0, ("/s", "/min"): 60.0,
               ("/s", "k/s"): 0.001, ("%", "%"): 1.0, ("", ""): 1.0}
SHORT_VERDICT = {"clear gain": "clear gain", "clear loss": "clear loss",
                 "ranges overlap": "overlap", "ranges apart": "apart"}


def scale(metric: str, unit: str | None) -> tuple[float, str]:
    """The factor and unit to show a metric in; `unit=None` keeps the archived unit."""
    archived = info(metric).unit
    if unit is None or unit == archived:
        return 1.0, archived
    factor = CONVERSIONS.get((archived, unit))
    if factor is None:
        choices = sorted({u for a, u in CONVERSIONS if a == archived})
        raise AnalysisError(f"cannot show {metric!r} ({archived or 'no unit'}) in {unit!r}",
                            fix=f"use one of: {', '.join(choices) or 'no unit'}")
    return factor, unit


def scaled(cell: Cell, factor: float) -> Cell:
    given = cell.given and (cell.given[0] * factor, cell.given[1] * factor, cell.given[2])
    return Cell(tuple(v * factor for v in cell.values), given=given or None)


def cell_text(cell: Cell, unit: str = "", digits: int | None = None, spread: bool = True) -> str:
    """"1.27 ms (1.23–1.30)": the median with its unit, then the range of the rounds."""
    head = format_value(cell.median, unit, digits)
    if not spread or (cell.n == 1 and not cell.given):
        return head
    return f"{head} ({format_number(cell.min, digits)}–{format_number(cell.max, digits)})"


def verdict(change: Change) -> str:
    text = change.verdict
    return SHORT_VERDICT.get(text, "too few rounds" if text.startswith("too few") else text)


def _words(name: str, value: Any = None) -> str:
    """A parameter in words (`share_pct` → "offered load, % of capacity"), or one of its
    values with them ("offered load 50 % of capacity")."""
    title, unit = parameter(name)
    if value is None:
        return f"{title}, {unit}" if unit else title
    return f"{title} {value} {unit}".rstrip()


def _order(values: Iterable[Any], preferred: list[str]) -> list[Any]:
    unique = list(dict.fromkeys(values))
    if all(v in preferred for v in unique):
        return [v for v in dict.fromkeys(preferred) if v in unique]
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in unique):
        return sorted(unique)
    return unique


# Dimensions whose values name themselves in a table's header ("call=page, callers=32", a
# label, a block's title); any other is a parameter, whose bare values need its name.
SELF_NAMED = ("parameters", "label", "block", "run")


class Macros:
    """Bound to one page's pins; `namespace()` is what its Jinja template sees."""

    def __init__(self, pins: Pins) -> None:
        self.pins = pins
        self.shift_said = False  # what a table's change is, said under the page's first one

    def namespace(self) -> dict[str, Callable[..., Any]]:
        return {"table": self.table, "figure": self.figure, "change": self.change,
                "cpu_shares": self.cpu_shares, "given": given,
                "noise_floor": self.noise_floor, "round_trips": self.round_trips,
                "resolution": self.resolution,
                "why": lambda base, head, **kw: why(self.pins, base, head, **kw)}

    def _header(self, dimension: str, value: Any, unit: str) -> str:
        if dimension == "metric":  # in words with its unit: "p50 latency, ms"
            return escape.md(titled(info(value).title, unit))
        if dimension == "block":
            for loaded in self.pins.runs.values():
                if value in loaded.manifest.blocks:
                    return escape.md(loaded.manifest.block(value).title or value)
        return escape.md(value)

    def table(self, metric: str | list[str] = "throughput", rows: str = "parameters",
              columns: str = "label", *, unit: str | None = None, digits: int | None = None,
              change: str | None = None, spread: bool = True, **filters: Any) -> str:
        """A Markdown table: a cell per (row, column), "median (min–max)" of the rounds."""
        metrics = [metric] if isinstance(metric, str) else list(metric)
        if len(metrics) > 1 and "metric" not in (rows, columns):
            raise AnalysisError("several metrics need rows='metric' or columns='metric'")
        found = [f for m in metrics for f in self.pins.select(metric=m, **filters)]
        labels = list(dict.fromkeys(lab for alias in self.pins.runs
                                    for lab in self.pins.labels(alias)))
        row_keys = _order((f.value(rows) for f in found), labels + metrics)
        col_keys = _order((f.value(columns) for f in found), labels + metrics)
        grid: dict[tuple[Any, Any], Found] = {}
        for f in found:
            key = (f.value(rows), f.value(columns))
            if key in grid:
                raise AnalysisError(
                    f"several cells at row {key[0]!r}, column {key[1]!r} "
                    f"({grid[key].describe()} and {f.describe()})",
                    fix="narrow the selection with block=, where={…} or label=, "
                        "or lay out the dimension that differs")
            grid[key] = f
        units = {m: scale(m, unit) for m in metrics}
        # Headers in words with units, never field names: "throughput, per second, by call".
        corner = escape.md(rows if rows in SELF_NAMED or rows == "metric" else _words(rows))
        if "metric" not in (rows, columns):
            corner = titled(info(metrics[0]).title, units[metrics[0]][1])
            # Rows of a parameter's bare values ("32") say which parameter they are.
            corner = escape.md(corner if rows in SELF_NAMED else f"{corner}, by {_words(rows)}")
        header = [corner] + [self._header(columns, c, units[c][1] if columns == "metric" else "")
                             if columns in SELF_NAMED or columns == "metric"
                             else escape.md(_words(columns, c)) for c in col_keys]
        extra = self._change_columns(change, rows, columns, row_keys, col_keys)
        # Method v2 runs: each change column is followed by what its comparisons resolve.
        exact = change is not None and any(self.pins.rule(f.run).exact for f in found)
        header += [escape.md(f"{other} vs {change}") for other in extra]
        # Method v2: each change's interval and what it resolves, folded under the table.
        detail_header = [header[0]] + [escape.md(f"{other} vs {change}: {what}")
                                       for other in extra for what in ("interval", "resolves")]
        body, detail = [], []
        for r in row_keys:
            line = [self._header(rows, r, units[r][1] if rows == "metric" else "")]
            for c in col_keys:
                hit = grid.get((r, c))
                if hit is None:
                    line.append("—")
                    continue
                factor, _ = units[hit.metric]  # the unit is in the header, not in every cell
                line.append(escape.md(cell_text(scaled(hit.cell, factor), "", digits, spread)
                                      + self._note(hit)))
            folded = [line[0]]
            for other in extra:  # none without `change`
                assert change is not None
                shown, *more = self._change_cell(grid, change, other, r, rows, columns, exact)
                line.append(shown)
                folded += more
            body.append(line)
            detail.append(folded)
        said, self.shift_said = self.shift_said, self.shift_said or exact  # once a page
        shift = ("*A change is the shift of the paired rounds (Hodges–Lehmann), not the ratio "
                 "of the medians beside it.*\n\n") if exact and not said else ""
        fold = tables.folded(detail_header, detail, "Intervals, and what each comparison "
                             "resolves") + "\n\n" if exact else ""
        return ("\n\n" + escape.table(header, body) + "\n\n" + fold + shift
                + self._sources(found))

    def _note(self, f: Found) -> str:
        """A transcribed cell's note as its source prints it: " (v3: 73.7)"; "" for none."""
        source = self.pins.runs[f.run].manifest.source
        note = source.notes.get(note_key(f.block, f.label, f.parameters, f.metric)) \
            if source is not None else None
        return f" ({note})" if note else ""

    def _sources(self, found: list[Found]) -> str:
        """Beside a table of transcribed cells: where they were published, not measured."""
        sources = dict.fromkeys(s for f in found
                                if (s := self.pins.runs[f.run].manifest.source) is not None)
        return "".join(f"*Transcribed, not measured here: {source_link(s)}.*\n\n"
                       for s in sources)

    def _change_columns(self, base: str | None, rows: str, columns: str, row_keys: list[Any],
                        col_keys: list[Any]) -> list[Any]:
        if base is None:
            return []
        if "label" not in (rows, columns):
            raise AnalysisError("change= needs labels as rows or columns",
                                fix="add rows='label' or columns='label'")
        keys = col_keys if columns == "label" else row_keys
        if base not in keys:
            raise AnalysisError(f"no label {base!r} in the table",
                                fix=f"use one of: {', '.join(map(str, keys))}")
        return [k for k in keys if k != base] if columns == "label" else list(col_keys)

    def _change_cell(self, grid: dict[tuple[Any, Any], Found], base: str, other: Any, r: Any,
                     rows: str, columns: str, exact: bool) -> list[str]:
        """The change cell (and, with `exact`, its interval and resolution for the fold)."""
        if columns == "label":
            a, b = grid.get((r, base)), grid.get((r, other))
        else:  # labels are rows: compare this row's label with the base row, in column `other`
            a, b = grid.get((base, other)), grid.get((r, other))
        if a is None or b is None or (columns != "label" and r == base):
            return ["—"] * (1 + 2 * exact)
        c = judge(self.pins, a, b, a.metric)
        if not exact:
            return [escape.md(format_change(c, verdict=verdict(c)))]
        interval = format_change(c).partition(" (")[2].removesuffix(")") or "—"
        return [escape.md(f"{format_percent(c.percent)} ({verdict(c)})"), escape.md(interval),
                escape.md(format_resolution(resolution(self.pins, a, b, c)))]

    def figure(self, metric: str, *, unit: str | None = None, digits: int | None = None,
               spread: bool = True, **filters: Any) -> str:
        """One cell as text: "1.27 ms (1.23–1.30)"."""
        found = self.pins.select(metric=metric, **filters)
        if len(found) > 1:
            where = "; ".join(f.describe() for f in found[:4])
            raise AnalysisError(f"figure() matches {len(found)} cells ({where})",
                                fix="narrow it with label=, block= or where={…}")
        factor, shown = scale(metric, unit)
        return escape.md(cell_text(scaled(found[0].cell, factor), shown, digits, spread))

    def change(self, base: Side, other: Side, metric: str = "throughput", *,
               show_verdict: bool = True, absolute: bool = False, unit: str | None = None,
               digits: int | None = None, **filters: Any) -> str:
        """The change of the medians (or with absolute=True their difference, in `unit`), or
        the range across cells, with its verdict. `base` and `other` are labels or parameter
        values (`{"threads": 2}`)."""
        pairs = self.pins.pairs(base, other, metric=metric, **filters)
        changes = [judge(self.pins, a, b, metric) for a, b in pairs]
        if absolute:
            factor, shown = scale(metric, unit)
            text = format_differences([c.difference * factor for c in changes], shown, digits)
        else:
            if unit is not None:
                raise AnalysisError("unit= needs absolute=True: a change in percent has none")
            text = format_range(changes, digits)
        if len(changes) == 1 and not absolute:  # one cell: its interval too, under an exact rule
            return escape.md(format_change(changes[0], digits,
                                           verdict(changes[0]) if show_verdict else None))
        if len(changes) > 1:  # a range over cells, said as such: not one cell's rounds
            text = f"{text} {across(pairs)}"
        note = verdict(changes[0]) if len(changes) == 1 else \
            f"{sum(c.clear for c in changes)} of {len(changes)} clear"
        return escape.md(f"{text} ({note})" if show_verdict else text)

    def resolution(self, base: Side, other: Side, metric: str = "throughput",
                   **filters: Any) -> str:
        """The smallest change the comparisons of `other` with `base` resolve (80 % power at
        the run's α, with its A/A pair): "7.9 %", or the range across cells "7.9–15 %"."""
        pairs = self.pins.pairs(base, other, metric=metric, **filters)
        found = [resolution(self.pins, a, b, judge(self.pins, a, b, metric)) for a, b in pairs]
        if not all(self.pins.rule(a.run).exact for a, _ in pairs):
            raise AnalysisError("resolution() needs a method v2 run (one that records "
                                "method.rule): the ranges rule states no resolution")
        low, high = min(found), max(found)
        if format_resolution(low) == format_resolution(high):
            return escape.md(format_resolution(high))
        return escape.md(f"{format_resolution(low).removesuffix(' %')}–"
                         f"{format_resolution(high)}")

    def round_trips(self, metric: str = "p50", *, digits: int | None = None,
                    chart: bool = False, **filters: Any) -> str:
        """Round trips per call from latency against the delay to PostgreSQL: per series, the
        metric at each delay, the slope against the measured added round trip, and the round
        trips and statements counted per call (the proxy's and pg_stat_statements'); with
        chart=True, under the table the metric against the added round trip (tripchart.py)."""
        if not isinstance(chart, bool):
            raise AnalysisError(f"chart={chart!r} is not True or False",
                                fix="write chart=True for the chart under the table")
        rows = series_round_trips(self.pins, metric, filters)
        delays = sorted({d for row in rows for d in row.trips.delays})
        shown = info(metric).unit  # the slope is read in the archived unit: nothing to scale
        corner = f"{metric} ({shown}), delay each way" if shown else f"{metric}, delay each way"
        header = [escape.md(corner), *(escape.md(f"+{d:g} ms") for d in delays),
                  "round trips (slope)", "counted by the proxy", "statements"]
        body = []
        for row in rows:
            at = dict(zip(row.trips.delays, row.trips.latency, strict=True))
            body.append([escape.md(row.name),
                         *(escape.md(cell_text(at[d], "", digits))
                           if d in at else "—" for d in delays),
                         escape.md(cell_text(row.trips.slope, "", 2 if digits is None
                                             else digits)),
                         *(escape.md(cell_text(c, "", 2, spread=False)) if c else "—"
                           for c in (row.counted, row.statements))])
        drawn = ""
        if chart:
            drawn = trips_chart([TripSeries(row.name, row.trips) for row in rows],
                                title=f"{metrics_title([metric])} against the added round-trip "
                                      "time", y_title=axis_title({metric: shown}),
                                unit=shown) + "\n\n"
        return "\n\n" + escape.table(header, body) + "\n\n" + drawn

    def cpu_shares(self, block: str = "profile", label: str | list[str] | None = None, *,
                   run: str | None = None, digits: int = 1) -> str:
        """Where the subject's CPU went (py-spy), by category: a column per label."""
        alias = self.pins.aliases(run)[0]
        loaded = self.pins.runs[alias]
        wanted = [label] if isinstance(label, str) else list(label or loaded.manifest.labels)
        found: dict[str, dict[str, Any]] = {}
        for name in wanted:
            rel = f"diagnostics/{block}/{path_part(name)}/cpu-shares.json"
            if files.locate(loaded.path, rel) is not None:
                found[name] = json.loads(files.read_text(loaded.path, rel))
        if not found:
            raise AnalysisError(f"no CPU shares for block {block!r} in run {alias!r}",
                                fix="profile the block (HttpBlockSpec(flamegraph=True))")
        categories = list(dict.fromkeys(c for d in found.values() for c in d["shares_pct"]))
        lines = ["| CPU samples by category | " + " | ".join(escape.md(n) for n in found) + " |",
                 "|---|" + "---|" * len(found)]
        for category in categories:
            cells = [f"{d['shares_pct'].get(category, 0.0):.{digits}f} %" for d in found.values()]
            lines.append(f"| {escape.md(category)} | " + " | ".join(cells) + " |")
        lines.append("| samples | " + " | ".join(f"{d['samples']:,}" for d in found.values())
                     + " |")
        return "\n".join(lines)


    def noise_floor(self, *, run: str | list[str] | None = None, block: str | None = None,
                    metric: str | None = None, digits: int = 1) -> str:
        """The A/A pairs' noise floor: per block, metric and pair the range of their changes,
        how many are clear, and the farthest round from the pair's median."""
        aliases = self.pins.aliases(run)
        header = ["run"] * (len(aliases) > 1) + ["block", "metric", "A/A pair", "changes",
                                                  "clear", "largest spread"]
        body = []
        for alias in aliases:
            for row in noise_rows(self.pins, alias, block, metric):
                body.append([escape.md(alias)] * (len(aliases) > 1) + [
                    self._header("block", row.block, ""), escape.md(row.metric),
                    escape.md(row.pair), escape.md(format_range(row.changes)),
                    ("⚠ " if row.clear else "") + f"{row.clear} of {len(row.changes)}",
                    escape.md(f"±{format_number(row.spread * 100, digits)} %")])
        return "\n\n" + escape.table(header, body) + "\n\n"


def source_link(source: Source) -> str:
    """"[title](url), date": the schema holds the URL to http(s) without ( ) [ ] < > or spaces;
    an unpublished source says who gave it. Its rule follows, when given (its method note is
    the run's method notes, on its page)."""
    head = (f"{escape.md(source.title)} ({escape.md(source.where())})" if not source.url else
            f"[{escape.md(source.title)}]({source.url})")
    extra = f"; {escape.md(source.rule_text())}" if source.rule_text() else ""
    return f"{head}, {escape.md(source.date)}{extra}"


def given(text: object) -> str:
    """A figure that is not a measurement (a setting, a size): shown as typed, never linted."""
    return escape.md(text)


@dataclass(frozen=True)
class TripsRow:
    """One series across delays, for the `round_trips` table and the `trips` claim."""

    name: str  # what differs from the other series
    where: str  # the whole series: label and parameters, for a claim's data
    trips: RoundTrips
    counted: Cell | None  # round trips per call the proxy counted (at the smallest delay)
    statements: Cell | None  # statements per call pg_stat_statements counted (same)


def series_round_trips(pins: Pins, metric: str, filters: dict[str, Any]) -> list[TripsRow]:
    """Per series across delays: the round trips from the slope, and the counts at the
    smallest delay, where most calls ran."""
    groups = pins.delays(metric=metric, **filters)
    firsts = [points[0][1] for points in groups]
    varies = [d for d in ("run", "block", "label") if len({getattr(f, d) for f in firsts}) > 1]
    params = [k for k in dict.fromkeys(k for f in firsts for k in f.params)
              if k != "delay_ms" and len({str(f.params.get(k)) for f in firsts}) > 1]
    out = []
    for points, first in zip(groups, firsts, strict=True):
        name = ", ".join([str(getattr(first, d)) for d in varies]
                         + [f"{k}={first.params.get(k)}" for k in params]) or first.label
        where = ", ".join([first.label] + [f"{k}={v}" for k, v in first.params.items()
                                           if k != "delay_ms"])
        out.append(TripsRow(name, where,
                            round_trips([(d, f.cell, added.cell) for d, f, added in points]),
                            _counted(pins, first, "round_trips"),
                            _counted(pins, first, "statements")))
    return out


def _counted(pins: Pins, first: Found, metric: str) -> Cell | None:
    """The cell of `metric` beside `first` (same run, block, label, parameters), if measured."""
    try:
        found = pins.select(metric=metric, run=first.run, block=first.block, label=first.label,
                            where=dict(first.params))
    except AnalysisError:  # a run made before the proxy counted, or without pg_stat_statements
        return None
    return next((f.cell for f in found if f.parameters == first.parameters), None)

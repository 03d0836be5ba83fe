"""The chart macros: `chart` (metrics against a parameter), `spectrum` (latency against
percentile, from the archived histograms), `timeline` (latency over the seconds of a window,
from its archived samples) and `history` (a metric against releases, its clear steps ringed),
bound to a page's pins and its chart style.

A page's front matter picks the style: without `charts:`, style 1 draws what the first pages
published (axes titled by the raw names, linear values), so their snapshots hold; `charts: 2`
titles the axes from the metric and parameter ("p99 latency, ms", "offered load, % of
capacity"), draws latency on a log axis when it spans a factor of 8, names each line by what
differs, and describes the data to screen readers. Keywords override either per chart.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from perfpages.analysis.changepoints import clear_steps, flatten, landing
from perfpages.analysis.format import format_percent
from perfpages.analysis.metric import axis_title, info, metrics_title, parameter, titled
from perfpages.archive import samples
from perfpages.archive.histogram import Latency
from perfpages.errors import AnalysisError, PerfpagesError
from perfpages.site import charts as svgchart
from perfpages.site.axes import label as number
from perfpages.site.axes import percentile_grid
from perfpages.site.macros import scale, scaled
from perfpages.site.pins import Found, Pins
from perfpages.site.store import histograms

STYLES = (1, 2)
TOPS = (99.0, 99.9, 99.99, 99.999)
LOG_SPAN = 8  # a value axis spanning this factor is drawn on a log scale (as x is)


def chart_style(meta: Mapping[str, Any], where: str) -> int:
    """The page's chart style (front matter `charts:`, 1 when absent)."""
    value = meta.get("charts", 1)
    if isinstance(value, bool) or value not in STYLES:
        raise PerfpagesError(f"{value!r} is not a chart style", where=where, key="charts",
                             fix="write `charts: 2` (named axes, log latency axes) or leave it "
                                 "out for the first style")
    return int(value)


def _auto_log(metrics: list[str], values: list[float]) -> bool:
    """Latency spanning a factor of 8 or more: a linear axis would flatten the low lines."""
    return (all(info(m).unit == "ms" for m in metrics) and bool(values) and min(values) > 0
            and max(values) / min(values) >= LOG_SPAN)


def _names(found: list[Found], metrics: list[str], x: str = "") -> tuple[list[str], str]:
    """A name per line from what differs between its cells and the others' (run, block, label,
    parameters but `x`, metric), and the label they share, for the title."""
    varies = {d: len({getattr(f, d) for f in found}) > 1 and d != x
              for d in ("run", "block", "label")}
    params = [k for k in dict.fromkeys(k for f in found for k in f.params)
              if k != x and len({str(f.params.get(k)) for f in found}) > 1]
    names = []
    for f in found:
        parts = [f"{f.run}:" if varies["run"] else "", f.block if varies["block"] else "",
                 f.label if varies["label"] else ""]
        for k in params:  # 25 → "25 % of capacity", 32 → "32 concurrent callers", "lookup"
            value = f.params.get(k)
            if isinstance(value, int | float) and not isinstance(value, bool):
                title, unit = parameter(k)
                parts.append(f"{number(value)} {unit or title}")
            elif value is not None:
                parts.append(str(value))
        parts.append(f.metric if len(metrics) > 1 else "")
        names.append(" ".join(p for p in parts if p) or f.label)
    labels = {f.label for f in found}
    return names, labels.pop() if len(labels) == 1 else ""


class Plots:
    """Bound to one page's pins and chart style; `namespace()` is what its template sees."""

    def __init__(self, pins: Pins, style: int = 1) -> None:
        self.pins = pins
        self.style = style

    def namespace(self) -> dict[str, Any]:
        return {"chart": self.chart, "spectrum": self.spectrum, "timeline": self.timeline,
                "history": self.history}

    def chart(self, x: str = "callers", y: str | list[str] = "throughput", *,
              unit: str | None = None, title: str | None = None, log_x: bool | None = None,
              log_y: bool | None = None, x_title: str | None = None, y_title: str | None = None,
              **filters: Any) -> str:
        """Inline SVG: a line per label (and metric) through the medians, a dot per round."""
        metrics = [y] if isinstance(y, str) else list(y)
        units = {m: scale(m, unit) for m in metrics}
        found = [f for m in metrics for f in self.pins.select(metric=m, **filters)]
        if self.style > 1:
            names, shared = _names(found, metrics, x)
        else:  # the first style's names, kept for its published pages
            several = len(self.pins.runs) > 1 and "run" not in filters
            names = [(f"{f.run}: " if several else "")
                     + (f.label if len(metrics) == 1 else f"{f.label} {f.metric}") for f in found]
        series: dict[str, svgchart.Series] = {}
        for name, f in zip(names, found, strict=True):
            s = series.setdefault(name, svgchart.Series(name))
            xv = f.value(x)
            if any(p.x == xv for p in s.points):
                raise AnalysisError(f"several cells of {name!r} at {x}={xv}",
                                    fix="narrow the chart with block=, label= or where={…}")
            c = scaled(f.cell, units[f.metric][0])
            s.points.append(svgchart.Point(xv, c.median, c.values))
        if self.style > 1:
            default = f"{metrics_title(metrics)} against {parameter(x)[0]}"
            title = title or (f"{default}, {shared}" if shared else default)
            x_title = x_title or titled(*parameter(x))
            y_title = y_title or axis_title({m: u for m, (_, u) in units.items()})
            if log_y is None:
                log_y = _auto_log(metrics, [v for s in series.values() for p in s.points
                                            for v in (p.median, *p.rounds)])
        else:
            shown = units[metrics[-1]][1]
            legacy = ", ".join(metrics) + (f" ({shown})" if shown else "")
            title, x_title, y_title = title or f"{legacy} by {x}", x_title or x, y_title or legacy
        return "\n\n" + svgchart.svg(list(series.values()), title=title, x_title=x_title,
                                     y_title=y_title, log_x=log_x, log_y=bool(log_y),
                                     style=self.style) + "\n\n"

    def spectrum(self, *, unit: str | None = None, title: str | None = None,
                 top: float = 99.99, rounds: bool = True, log_y: bool | None = None,
                 y_title: str | None = None, **filters: Any) -> str:
        """Latency against percentile (50 → `top`, spaced by nines) from the merged histograms
        of the selected cells: a thick line per cell over all its measured rounds, a thin one
        per round."""
        curves, shown, shared = self.curves(unit=unit, top=top, rounds=rounds, **filters)
        if log_y is None:
            log_y = _auto_log(["p50"], [v for c in curves for _, v in c.points])
        default = "latency against percentile" + (f", {shared}" if shared else "")
        return "\n\n" + svgchart.spectrum(curves, title=title or default,
                                          y_title=y_title or titled("latency", shown),
                                          unit=shown, top=top, log_y=log_y) + "\n\n"

    def curves(self, *, unit: str | None = None, top: float = 99.99, rounds: bool = True,
               **filters: Any) -> tuple[list[svgchart.Curve], str, str]:
        """The spectrum's lines, the unit they are in, and the label they share (if one)."""
        if top not in TOPS:
            raise AnalysisError(f"top={top!r} is not a percentile a spectrum ends at",
                                fix=f"use one of: {', '.join(f'{t:g}' for t in TOPS)}")
        factor, shown = scale("p50", unit)
        found = self.pins.select(metric="p50", **filters)
        names, shared = _names(found, ["p50"])
        grid = percentile_grid(top)

        def line(latency: Latency) -> list[tuple[float, float]]:
            return list(zip(grid, (v * factor for v in latency.percentiles_ms(grid)), strict=True))

        curves = []
        for name, f in zip(names, found, strict=True):
            per_round = histograms(self.pins.runs[f.run]).get((f.block, f.parameters, f.label))
            if not per_round:
                raise AnalysisError(f"no latency histogram for {f.describe()}",
                                    fix="select cells whose windows recorded latency")
            merged = Latency.merged(per_round[r] for r in sorted(per_round))
            curves.append(svgchart.Curve(name, line(merged), [
                line(per_round[r]) for r in sorted(per_round) if rounds]))
        return curves, shown, shared

    def timeline(self, *, stat: str = "max", bin_s: float = 1.0, unit: str | None = None,
                 title: str | None = None, log_y: bool | None = None,
                 y_title: str | None = None, **filters: Any) -> str:
        """Latency over the time of a window that kept its samples (every request, by its
        intended start): a point per `bin_s` seconds — the slowest request (stat="max") or a
        percentile ("p99") — a line per cell and round."""
        percent = _stat(stat)
        if not bin_s > 0:
            raise AnalysisError(f"bin_s={bin_s!r} is not a positive number of seconds")
        factor, shown = scale("p50", unit)
        found = self.pins.select(metric="p50", **filters)
        names, shared = _names(found, ["p50"])
        lines = []
        for name, f in zip(names, found, strict=True):
            by_round = kept_samples(self.pins, f)
            for rnd, kept in by_round.items():
                bins: dict[int, list[float]] = {}
                for one in kept:
                    bins.setdefault(int(one.offset_s // bin_s), []).append(one.latency_ms)
                series = svgchart.Series(name + (f", round {rnd}" if len(by_round) > 1 else ""))
                for index in sorted(bins):
                    value = _at(sorted(bins[index]), percent) * factor
                    series.points.append(svgchart.Point(index * bin_s, value, ()))
                lines.append(series)
        values = [p.median for s in lines for p in s.points]
        if log_y is None:
            log_y = self.style > 1 and _auto_log(["p50"], values)
        what = "slowest call" if percent is None else f"{stat} latency"
        default = f"{what} per {number(bin_s)} s of the window" + (f", {shared}" if shared
                                                                   else "")
        return "\n\n" + svgchart.timeline(lines, title=title or default,
                                          x_title="seconds from the start of the window",
                                          y_title=y_title or titled(what, shown), unit=shown,
                                          log_y=bool(log_y)) + "\n\n"

    def history(self, metric: str = "throughput", *, unit: str | None = None,
                title: str | None = None, log_y: bool | None = None,
                y_title: str | None = None, edivisive: bool = False, **filters: Any) -> str:
        """A metric against the releases of one run (its labels, in order): a line through the
        medians, a band over each release's rounds, a ring at each clear step between
        neighbours (`analysis.changepoints`) and, with edivisive=True, a dashed ring at each
        change point E-divisive finds (`analysis.edivisive`)."""
        alias, groups = self.pins.releases(metric=metric, **filters)
        found_by_edivisive = edivisive_points(groups) if edivisive else [[] for _ in groups]
        factor, shown = scale(metric, unit)
        found = [f for cells in groups for f in cells]
        names, _ = _names(found, [metric], "label")
        name_of = {id(f): n for f, n in zip(found, names, strict=True)}
        series, marks = [], {}
        for cells, by_edivisive in zip(groups, found_by_edivisive, strict=True):
            # one series is named by its metric, not by its first release
            name = name_of[id(cells[0])] if len(groups) > 1 else metrics_title([metric])
            s = svgchart.Series(name)
            for f in cells:
                c = scaled(f.cell, factor)
                s.points.append(svgchart.Point(f.label, c.median, c.values))
            series.append(s)
            marks[name] = [(step.after, f"clear step at {step.after}: "
                                        f"{format_percent(step.change.percent)}", "rule")
                           for step in clear_steps([(f.label, f.cell) for f in cells], metric,
                                                   self.pins.rule(alias))]
            marks[name] += [(release, f"E-divisive change point at {release}", "edivisive")
                            for release in by_edivisive]
        values = [v for s in series for p in s.points for v in (p.median, *p.rounds)]
        if log_y is None:
            log_y = self.style > 1 and _auto_log([metric], values)
        return "\n\n" + svgchart.history(
            series, releases=self.pins.labels(alias), marks=marks,
            title=title or f"{metrics_title([metric])} by release",
            y_title=y_title or axis_title({metric: shown}), unit=shown,
            log_y=bool(log_y)) + "\n\n"


def kept_samples(pins: Pins, f: Found) -> dict[int, list[samples.Sample]]:
    """Every request a cell's windows kept (`samples/`), per round: read once per loaded run,
    for the timeline and the `spike` claim alike."""
    loaded = pins.runs[f.run]
    by_round = samples.names(loaded.path, f.block, f.label, f.parameters)
    if not by_round:
        raise AnalysisError(f"no samples for {f.describe()}",
                            fix="select a block whose cases keep samples (the cold path)")
    out = {}
    for rnd, file in by_round.items():
        if ("samples", file) not in loaded.memo:
            loaded.memo["samples", file] = samples.read(loaded.path, file)
        out[rnd] = loaded.memo["samples", file]
    return out


def edivisive_points(groups: list[list[Found]]) -> list[list[str]]:
    """Per series of a history, the releases E-divisive's change points land on."""
    from perfpages.analysis import edivisive  # numpy and scipy: only for a page that asks

    flat = [flatten([(f.label, f.cell) for f in cells]) for cells in groups]
    return [landing(edivisive.change_points(values), owners) for values, owners in flat]


def _stat(stat: str) -> float | None:
    """"max" (None) or a percentile "p99" → 99.0."""
    if stat == "max":
        return None
    try:
        value = float(stat[1:]) if stat.startswith("p") else math.nan
    except ValueError:
        value = math.nan
    if not 0 < value < 100:
        raise AnalysisError(f"stat={stat!r} is not max or a percentile", fix="write stat=\"max\" "
                            "or stat=\"p99\"")
    return value


def _at(ordered: list[float], percent: float | None) -> float:
    """The largest value, or the nearest-rank percentile of sorted values."""
    if percent is None:
        return ordered[-1]
    return ordered[max(0, math.ceil(percent / 100 * len(ordered)) - 1)]

"""Charts as inline SVG: no JavaScript, no CDN; colours from CSS variables (light and dark).

Four kinds, one frame (axes.py places the values): `svg` draws a line per series through the
medians with every round a dot beside its median, so the reader sees the spread the table's
"(min–max)" summarises; `spectrum` draws latency against percentile from merged histograms;
`history` draws a metric against releases, each release's range of rounds a band; `timeline`
draws a value over the seconds of one window (the cold path), its highest point marked. Text uses
currentColor, and the figure carries data-search-exclude, so tick labels never enter the search
index. Style 1 is the first charts' output, byte for byte (published pages keep it); style 2
adds a <desc> for screen readers and wraps a long legend.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from html import escape

from perfpages.analysis.metric import format_number, format_value
from perfpages.errors import AnalysisError
from perfpages.site.axes import (  # noqa: F401 (nice_ticks: re-exported for callers)
    Categories,
    Linear,
    Log,
    Nines,
    Points,
    Span,
    label,
    log_axis,
    nice_ticks,
)
from perfpages.site.geometry import FONT, LAYOUTS, Geometry

ROW = 18  # a legend row
SERIES_COLOURS = 6

# Shipped as assets/perfpages.css by the plugin: an Okabe–Ito palette, lighter on dark pages.
STYLE = """\
.md-typeset figure.perfpages-chart { width: 100%; }
.perfpages-chart svg {
  width: 100%; height: auto; max-width: 48rem;
  color: var(--md-typeset-color, currentColor);
}
.perfpages-chart figcaption { font-size: .8em; }
:root {
  --perfpages-c1: #0072b2; --perfpages-c2: #d55e00; --perfpages-c3: #009e73;
  --perfpages-c4: #cc79a7; --perfpages-c5: #b8860b; --perfpages-c6: #56b4e9;
}
[data-md-color-scheme="slate"] {
  --perfpages-c1: #56b4e9; --perfpages-c2: #ff9e5e; --perfpages-c3: #3fd0a0;
  --perfpages-c4: #f0a6d2; --perfpages-c5: #f0c85a; --perfpages-c6: #a8d8f8;
}
/* Material sets the scheme on <body>: only a theme without schemes follows the OS alone. */
@media (prefers-color-scheme: dark) {
  body:not([data-md-color-scheme]) {
    --perfpages-c1: #56b4e9; --perfpages-c2: #ff9e5e; --perfpages-c3: #3fd0a0;
    --perfpages-c4: #f0a6d2; --perfpages-c5: #f0c85a; --perfpages-c6: #a8d8f8;
  }
}
/* Chart layouts (geometry.py): every chart is drawn wide and narrow, and the figure's own width
   picks one, so no chart text is shown below 11 px: the wide one's 13 units at 640 are 11.4 px
   at 560 px. A flame graph's 12 units at 720 need 660 px; below that its note points to the
   table of the functions that moved most. Without container queries the wide one shows. */
.md-typeset figure.perfpages-chart { container-type: inline-size; }
.perfpages-chart svg.perfpages-narrow,
.perfpages-flamediff .perfpages-flame-note { display: none; }
@container (width < 560px) {
  .perfpages-chart svg.perfpages-wide { display: none; }
  .perfpages-chart svg.perfpages-narrow { display: block; }
}
@container (width < 660px) {
  .perfpages-flamediff svg.perfpages-flame { display: none; }
  .perfpages-flamediff .perfpages-flame-note { display: block; }
}
.perfpages-claim { text-decoration: underline dotted; text-underline-offset: .2em; }
.perfpages-claim-failed { text-decoration: underline wavy var(--md-code-hl-special-color, red); }
/* A claim's number links to its condition in the section's list (sentences.py). */
.perfpages-claim-ref a { padding: 0 .15em; }
.md-typeset .perfpages-conditions { font-size: .85em; color: var(--md-default-fg-color--light); }
.md-typeset .perfpages-conditions summary { cursor: pointer; }
.md-typeset .perfpages-conditions li { overflow-wrap: anywhere; }
"""


@dataclass
class Point:
    x: float | str
    median: float
    rounds: tuple[float, ...]


@dataclass
class Series:
    name: str
    points: list[Point] = field(default_factory=list)


@dataclass
class Curve:
    """A spectrum: (percentile, value) through the merged histogram, and through each round's."""

    name: str
    points: list[tuple[float, float]]
    rounds: list[list[tuple[float, float]]] = field(default_factory=list)


Axis = Categories | Points | Nines | Span
Values = Linear | Log


def _colour(index: int) -> str:
    return f"var(--perfpages-c{index % SERIES_COLOURS + 1})"


def _legend(names: list[str], wrap: bool, g: Geometry) -> tuple[list[tuple[int, int]], int]:
    """Where each legend entry goes (x, row) and how far the plot moves down for the rows."""
    places, x, row = [], g.legend_x, 0
    for name in names:
        width = 28 + int(g.char * len(name)) if g.thin else 28 + 7 * len(name)
        if (wrap or g.thin) and x > g.legend_x and x + width - 12 > g.width - g.right:
            x, row = g.legend_x, row + 1
        places.append((x, row))
        x += width
    return places, g.top + ROW * row


def _series_open(index: int, name: str) -> str:
    """A series' group: its colour for every mark inside, its name as the group's tooltip."""
    return (f'<g style="color:{_colour(index)}" fill="currentColor" '
            f'stroke="currentColor"><title>{escape(name)}</title>')


def _series_close(index: int, name: str, place: tuple[int, int], g: Geometry) -> list[str]:
    """The end of a series' group, then its legend entry."""
    return ["</g>", _legend_entry(index, name, place, g)]


def _legend_entry(index: int, name: str, place: tuple[int, int], g: Geometry) -> str:
    x, row = place
    y = 12 + ROW * row
    shown = g.fit(name, g.width - x - 16)
    return (f'<g style="color:{_colour(index)}"><rect x="{x}" y="{y}" width="12" '
            f'height="12" fill="currentColor"/></g>'
            f'<text x="{x + 16}" y="{y + 10}">{escape(shown)}</text>')


def _frame(g: Geometry, x: Axis, y: Values, *, title: str, x_title: str, y_title: str,
           top: int, desc: str | None) -> list[str]:
    """The SVG's opening, its grid and tick labels, the baseline and both axis titles."""
    height = top + g.plot_h + g.bottom
    left, right = g.left, g.width - g.right
    out = [f'<svg class="perfpages-{g.name}" xmlns="http://www.w3.org/2000/svg" '
           f'viewBox="0 0 {g.width} {height}" role="img" aria-label="{escape(title)}" '
           f'font-size="{FONT}" fill="currentColor">',
           f"<title>{escape(title)}</title>"]
    if desc:
        out.append(f"<desc>{escape(desc)}</desc>")
    for t in y.ticks:
        at = y.pixel(t.value)
        opacity = "0.15" if t.label else "0.06"
        out.append(f'<line x1="{left}" x2="{right}" y1="{at:.1f}" y2="{at:.1f}" '
                   f'stroke="currentColor" stroke-opacity="{opacity}"/>')
        if t.label:
            out.append(f'<text x="{left - 6}" y="{at + 4:.1f}" text-anchor="end">'
                       f"{escape(t.label)}</text>")
    base = y.pixel(y.base)
    ticks = x.ticks  # a property: built once, so the kept labels are these very ticks
    labelled = [i for i, t in enumerate(ticks) if t.label]
    shown = g.shown([(x.pixel(ticks[i].value), ticks[i].label) for i in labelled])
    kept = {i for n, i in enumerate(labelled) if n in shown}
    for i, t in enumerate(ticks):
        if i in kept:
            out.append(f'<text x="{g.place(x.pixel(t.value), t.label):.1f}" '
                       f'y="{height - g.bottom + 18}" '
                       f'text-anchor="middle">{escape(t.label)}</text>')
        else:
            out.append(f'<line x1="{x.pixel(t.value):.1f}" x2="{x.pixel(t.value):.1f}" '
                       f'y1="{base:.1f}" y2="{base + 4:.1f}" stroke="currentColor"/>')
    out.append(f'<line x1="{left}" x2="{right}" y1="{base:.1f}" y2="{base:.1f}" '
               'stroke="currentColor" stroke-opacity="0.6"/>')
    out.append(f'<text x="{left + g.plot_w / 2:.1f}" y="{height - 8}" text-anchor="middle">'
               f"{escape(g.fit(x_title, g.width - 8))}</text>")
    out.append(f'<text transform="translate(14 {top + g.plot_h / 2:.1f}) rotate(-90)" '
               f'text-anchor="middle">{escape(g.fit(y_title, g.plot_h + 24))}</text>')
    return out


def _values(values: list[tuple[float, str]], log: bool, top: int, g: Geometry) -> Values:
    if log:
        return log_axis(values, top, g.plot_h)
    return Linear(max(v for v, _ in values) if values else 1.0, top, g.plot_h)


def _figure(layouts: list[list[str]], caption: str) -> str:
    """The figure: each layout's SVG (the stylesheet shows one, by the figure's width), then
    the caption they share."""
    return ('<figure class="perfpages-chart" data-search-exclude>'
            + "".join("".join(out) + "</svg>" for out in layouts)
            + f"<figcaption>{caption}</figcaption></figure>")


def _describe(series: Iterable[Series], x: Axis) -> str:
    """The medians in words, for screen readers: "v1.0: 1 → 786, 2 → 1,012; …"."""
    return "; ".join(f"{s.name}: " + ", ".join(
        f"{label(p.x)} → {label(p.median)}" for p in sorted(s.points, key=lambda p: x.pixel(p.x)))
        for s in series)


def svg(series: list[Series], *, title: str, x_title: str, y_title: str,
        log_x: bool | None = None, log_y: bool = False, style: int = 1) -> str:
    """One chart as an HTML <figure> holding an SVG per layout; every text from data is
    escaped."""
    xs = [p.x for s in series for p in s.points]
    numeric = all(isinstance(x, int | float) for x in xs)
    positions = list(dict.fromkeys(xs))
    if numeric:
        positions = sorted(positions)
        if log_x is None:
            log_x = min(positions) > 0 and max(positions) / min(positions) >= 8  # type: ignore

    def draw(g: Geometry) -> list[str]:
        places, top = _legend([s.name for s in series], style > 1, g)
        x: Axis = (Points(positions, g.left, g.plot_w, bool(log_x))  # type: ignore[arg-type]
                   if numeric else Categories(positions, g.left, g.plot_w))
        y = _values([(v, f"{s.name} at {x_title} {label(p.x)}") for s in series
                     for p in s.points for v in (p.median, *p.rounds)], log_y, top, g)
        desc = f"x: {x_title}; y: {y_title}. {_describe(series, x)}" if style > 1 else None
        out = _frame(g, x, y, title=title, x_title=x_title, y_title=y_title, top=top,
                     desc=desc)
        for index, s in enumerate(series):
            offset = 5 + 4 * index  # each series' round dots sit just right of its median
            ordered = sorted(s.points, key=lambda p: x.pixel(p.x))
            line = " ".join(f"{x.pixel(p.x):.1f},{y.pixel(p.median):.1f}" for p in ordered)
            out.append(_series_open(index, s.name))
            if len(ordered) > 1:
                out.append(f'<polyline points="{line}" fill="none" stroke-width="2"/>')
            for p in ordered:
                px, py = x.pixel(p.x), y.pixel(p.median)
                out.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="4">'
                           f"<title>{escape(s.name)}: {escape(label(p.x))}, median "
                           f"{escape(label(p.median))}</title></circle>")
                for v in p.rounds:
                    out.append(f'<circle cx="{px + offset:.1f}" cy="{y.pixel(v):.1f}" r="2" '
                               'fill-opacity="0.55" stroke="none"/>')
            out += _series_close(index, s.name, places[index], g)
        return out

    scale = "; the value axis is logarithmic" if log_y else ""
    return _figure([draw(g) for g in LAYOUTS],
                   f"{escape(title)}: lines join the medians; each dot beside a median is one "
                   f"round{scale}.")


def spectrum(curves: list[Curve], *, title: str, y_title: str, unit: str, top: float = 99.99,
             log_y: bool = False) -> str:
    """Latency against percentile, the percentiles spaced by nines (50, 90, 99, 99.9 …): a
    thick line through the merged histogram, a thin one through each round's, and a dot at
    each labelled percentile whose tooltip gives its value."""
    values = [(c, dict(c.points)) for c in curves]

    def draw(g: Geometry) -> list[str]:
        x = Nines(top, g.left, g.plot_w)
        places, top_px = _legend([c.name for c in curves], True, g)
        y = _values([(v, f"{c.name} at p{p:g}") for c in curves
                     for line in (c.points, *c.rounds) for p, v in line], log_y, top_px, g)
        marks = [float(t.value) for t in x.ticks]
        desc = f"x: percentile; y: {y_title}. " + "; ".join(
            f"{c.name}: " + ", ".join(f"p{p:g} {format_value(at[p], unit)}" for p in marks
                                      if p in at) for c, at in values)
        out = _frame(g, x, y, title=title, x_title="percentile, %", y_title=y_title,
                     top=top_px, desc=desc)

        def line(points: Sequence[tuple[float, float]]) -> str:
            return " ".join(f"{x.pixel(p):.1f},{y.pixel(v):.1f}" for p, v in points)

        for index, (c, at) in enumerate(values):
            out.append(_series_open(index, c.name))
            for points in c.rounds:
                out.append(f'<polyline points="{line(points)}" fill="none" stroke-width="1" '
                           'stroke-opacity="0.45"/>')
            out.append(f'<polyline points="{line(c.points)}" fill="none" stroke-width="2"/>')
            for p in (p for p in marks if p in at):
                out.append(f'<circle cx="{x.pixel(p):.1f}" cy="{y.pixel(at[p]):.1f}" r="3">'
                           f"<title>{escape(c.name)}: p{p:g} "
                           f"{escape(format_value(at[p], unit))}</title></circle>")
            out += _series_close(index, c.name, places[index], g)
        return out

    scale = "; the value axis is logarithmic" if log_y else ""
    return _figure([draw(g) for g in LAYOUTS],
                   f"{escape(title)}: each thick line merges the histograms of every measured "
                   f"round, each thin line is one round; the percentiles are spaced by "
                   f"nines{scale}.")


def history(series: list[Series], *, releases: list[str], title: str, y_title: str,
            unit: str = "", log_y: bool = False,
            marks: dict[str, list[tuple[str, str, str]]] | None = None) -> str:
    """A metric against releases, in order: a line through each release's median and a band
    over its rounds' range; a release a series lacks breaks its line and band. `marks` rings
    releases of a series, each with its tooltip: (release, text, "rule") a clear step, solid;
    (release, text, "edivisive") an E-divisive change point, dashed and wider."""
    strays = sorted({str(p.x) for s in series for p in s.points} - set(releases))
    if strays:
        raise AnalysisError(f"no release {strays[0]!r} on the history's axis",
                            fix=f"list it in releases ({', '.join(releases)})")

    def draw(g: Geometry) -> list[str]:
        x = Categories(releases, g.left, g.plot_w, most=12)
        places, top = _legend([s.name for s in series], True, g)
        y = _values([(v, f"{s.name} at {p.x}") for s in series for p in s.points
                     for v in (p.median, *p.rounds)], log_y, top, g)
        desc = f"x: release; y: {y_title}. {_describe(series, x)}"
        out = _frame(g, x, y, title=title, x_title="release", y_title=y_title, top=top,
                     desc=desc)
        for index, s in enumerate(series):
            out += _release_marks(x, y, s, index, releases, unit,
                                  (marks or {}).get(s.name, []))
            out += _series_close(index, s.name, places[index], g)
        return out

    kinds = {kind for found in (marks or {}).values() for _, _, kind in found}
    ringed = ("; a ring marks a clear step from the release before" if "rule" in kinds
              else "") + ("; a dashed ring, a change point E-divisive finds" if "edivisive" in
                          kinds else "")
    return _figure([draw(g) for g in LAYOUTS],
                   f"{escape(title)}: lines join each release's median; each band spans the "
                   f"release's rounds, lowest to highest{ringed}.")


def _release_marks(x: Categories, y: Values, s: Series, index: int, releases: list[str],
                   unit: str, rings: list[tuple[str, str, str]]) -> list[str]:
    """One series of a history up to its group's end: its bands, line, dots and rings."""
    at = {p.x: p for p in s.points}
    out = [_series_open(index, s.name)]
    for run in _runs(releases, at):
        px = [x.pixel(r) for r in run]
        low = [y.pixel(min(at[r].rounds or (at[r].median,))) for r in run]
        high = [y.pixel(max(at[r].rounds or (at[r].median,))) for r in run]
        band = [*zip(px, high, strict=True), *reversed(list(zip(px, low, strict=True)))]
        out.append('<polygon points="' + " ".join(f"{a:.1f},{b:.1f}" for a, b in band)
                   + '" fill-opacity="0.2" stroke="none"/>')
        if len(run) > 1:
            out.append('<polyline points="' + " ".join(
                f"{a:.1f},{y.pixel(at[r].median):.1f}" for a, r in zip(px, run, strict=True))
                + '" fill="none" stroke-width="2"/>')
    for r in (r for r in releases if r in at):
        p = at[r]
        spread = (f" ({format_number(min(p.rounds))}–{format_number(max(p.rounds))})"
                  if len(p.rounds) > 1 else "")
        out.append(f'<circle cx="{x.pixel(r):.1f}" cy="{y.pixel(p.median):.1f}" r="2.5">'
                   f"<title>{escape(s.name)}, {escape(r)}: "
                   f"{escape(format_value(p.median, unit))}{escape(spread)}</title></circle>")
    for release, text, kind in rings:
        if release in at:
            ring = 'r="7"' if kind == "rule" else 'r="11" stroke-dasharray="3 2"'
            out.append(f'<circle cx="{x.pixel(release):.1f}" '
                       f'cy="{y.pixel(at[release].median):.1f}" {ring} fill="none" '
                       f'stroke-width="2"><title>{escape(s.name)}: {escape(text)}</title>'
                       "</circle>")
    return out


def timeline(series: list[Series], *, title: str, x_title: str, y_title: str, unit: str = "",
             log_y: bool = False) -> str:
    """A value over the time of a window, a point per bin: a line per series and a dot at its
    highest point, whose tooltip gives the time and value (a spike is what a reader looks for)."""
    xs = [float(p.x) for s in series for p in s.points]
    peaks = {s.name: max(s.points, key=lambda p: p.median) for s in series if s.points}
    desc = f"x: {x_title}; y: {y_title}. " + "; ".join(
        f"{name}: highest {format_value(p.median, unit)} at {label(p.x)}"
        for name, p in peaks.items())

    def draw(g: Geometry) -> list[str]:
        x = Span(min(xs, default=0.0), max(xs, default=1.0), g.left, g.plot_w)
        places, top = _legend([s.name for s in series], True, g)
        y = _values([(p.median, f"{s.name} at {label(p.x)}") for s in series
                     for p in s.points], log_y, top, g)
        out = _frame(g, x, y, title=title, x_title=x_title, y_title=y_title, top=top,
                     desc=desc)
        for index, s in enumerate(series):
            ordered = sorted(s.points, key=lambda p: float(p.x))
            out.append(_series_open(index, s.name))
            if len(ordered) > 1:
                out.append('<polyline points="' + " ".join(
                    f"{x.pixel(p.x):.1f},{y.pixel(p.median):.1f}" for p in ordered)
                    + '" fill="none" stroke-width="1.5"/>')
            if s.name in peaks:
                p = peaks[s.name]
                out.append(f'<circle cx="{x.pixel(p.x):.1f}" cy="{y.pixel(p.median):.1f}" '
                           f'r="4"><title>{escape(s.name)}: highest '
                           f"{escape(format_value(p.median, unit))} at {escape(label(p.x))}"
                           "</title></circle>")
            out += _series_close(index, s.name, places[index], g)
        return out

    scale = "; the value axis is logarithmic" if log_y else ""
    return _figure([draw(g) for g in LAYOUTS],
                   f"{escape(title)}: a point per bin of the window; the dot marks each "
                   f"line's highest{scale}.")


def _runs(releases: list[str], present: dict[float | str, Point]) -> list[list[str]]:
    """Consecutive releases a series has: each is drawn as one line and band."""
    runs: list[list[str]] = [[]]
    for r in releases:
        if r in present:
            runs[-1].append(r)
        elif runs[-1]:
            runs.append([])
    return [run for run in runs if run]

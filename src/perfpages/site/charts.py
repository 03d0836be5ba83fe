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

WIDTH, HEIGHT = 640, 340
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 40, 48
PLOT_W, PLOT_H = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
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


def _legend(names: list[str], wrap: bool) -> tuple[list[tuple[int, int]], int]:
    """Where each legend entry goes (x, row) and how far the plot moves down for the rows."""
    places, x, row = [], LEFT, 0
    for name in names:
        width = 28 + 7 * len(name)
        if wrap and x > LEFT and x + width - 12 > WIDTH - RIGHT:
            x, row = LEFT, row + 1
        places.append((x, row))
        x += width
    return places, TOP + ROW * row


def _series_open(index: int, name: str) -> str:
    """A series' group: its colour for every mark inside, its name as the group's tooltip."""
    return (f'<g style="color:{_colour(index)}" fill="currentColor" '
            f'stroke="currentColor"><title>{escape(name)}</title>')


def _series_close(index: int, name: str, place: tuple[int, int]) -> list[str]:
    """The end of a series' group, then its legend entry."""
    return ["</g>", _legend_entry(index, name, place)]


def _legend_entry(index: int, name: str, place: tuple[int, int]) -> str:
    x, row = place
    y = 12 + ROW * row
    return (f'<g style="color:{_colour(index)}"><rect x="{x}" y="{y}" width="12" '
            f'height="12" fill="currentColor"/></g>'
            f'<text x="{x + 16}" y="{y + 10}">{escape(name)}</text>')


def _frame(x: Axis, y: Values, *, title: str, x_title: str, y_title: str, top: int,
           desc: str | None) -> list[str]:
    """The SVG's opening, its grid and tick labels, the baseline and both axis titles."""
    height = top + PLOT_H + BOTTOM
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
           f'role="img" aria-label="{escape(title)}" font-size="13" fill="currentColor">',
           f"<title>{escape(title)}</title>"]
    if desc:
        out.append(f"<desc>{escape(desc)}</desc>")
    for t in y.ticks:
        at = y.pixel(t.value)
        opacity = "0.15" if t.label else "0.06"
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{at:.1f}" y2="{at:.1f}" '
                   f'stroke="currentColor" stroke-opacity="{opacity}"/>')
        if t.label:
            out.append(f'<text x="{LEFT - 6}" y="{at + 4:.1f}" text-anchor="end">'
                       f"{escape(t.label)}</text>")
    base = y.pixel(y.base)
    for t in x.ticks:
        if t.label:
            out.append(f'<text x="{x.pixel(t.value):.1f}" y="{height - BOTTOM + 18}" '
                       f'text-anchor="middle">{escape(t.label)}</text>')
        else:
            out.append(f'<line x1="{x.pixel(t.value):.1f}" x2="{x.pixel(t.value):.1f}" '
                       f'y1="{base:.1f}" y2="{base + 4:.1f}" stroke="currentColor"/>')
    out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{base:.1f}" y2="{base:.1f}" '
               'stroke="currentColor" stroke-opacity="0.6"/>')
    out.append(f'<text x="{LEFT + PLOT_W / 2:.1f}" y="{height - 8}" text-anchor="middle">'
               f"{escape(x_title)}</text>")
    out.append(f'<text transform="translate(14 {top + PLOT_H / 2:.1f}) rotate(-90)" '
               f'text-anchor="middle">{escape(y_title)}</text>')
    return out


def _values(values: list[tuple[float, str]], log: bool, top: int) -> Values:
    if log:
        return log_axis(values, top, PLOT_H)
    return Linear(max(v for v, _ in values) if values else 1.0, top, PLOT_H)


def _figure(out: list[str], caption: str) -> str:
    out.append("</svg>")
    return ('<figure class="perfpages-chart" data-search-exclude>' + "".join(out)
            + f"<figcaption>{caption}</figcaption></figure>")


def _describe(series: Iterable[Series], x: Axis) -> str:
    """The medians in words, for screen readers: "v1.0: 1 → 786, 2 → 1,012; …"."""
    return "; ".join(f"{s.name}: " + ", ".join(
        f"{label(p.x)} → {label(p.median)}" for p in sorted(s.points, key=lambda p: x.pixel(p.x)))
        for s in series)


def svg(series: list[Series], *, title: str, x_title: str, y_title: str,
        log_x: bool | None = None, log_y: bool = False, style: int = 1) -> str:
    """One chart as an HTML <figure> holding an SVG; every text from data is escaped."""
    xs = [p.x for s in series for p in s.points]
    numeric = all(isinstance(x, int | float) for x in xs)
    positions = list(dict.fromkeys(xs))
    if numeric:
        positions = sorted(positions)
        if log_x is None:
            log_x = min(positions) > 0 and max(positions) / min(positions) >= 8  # type: ignore
    places, top = _legend([s.name for s in series], wrap=style > 1)
    x: Axis = (Points(positions, LEFT, PLOT_W, bool(log_x)) if numeric  # type: ignore[arg-type]
               else Categories(positions, LEFT, PLOT_W))
    y = _values([(v, f"{s.name} at {x_title} {label(p.x)}") for s in series for p in s.points
                 for v in (p.median, *p.rounds)], log_y, top)
    desc = f"x: {x_title}; y: {y_title}. {_describe(series, x)}" if style > 1 else None
    out = _frame(x, y, title=title, x_title=x_title, y_title=y_title, top=top, desc=desc)
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
        out += _series_close(index, s.name, places[index])
    scale = "; the value axis is logarithmic" if log_y else ""
    return _figure(out, f"{escape(title)}: lines join the medians; each dot beside a median is "
                        f"one round{scale}.")


def spectrum(curves: list[Curve], *, title: str, y_title: str, unit: str, top: float = 99.99,
             log_y: bool = False) -> str:
    """Latency against percentile, the percentiles spaced by nines (50, 90, 99, 99.9 …): a
    thick line through the merged histogram, a thin one through each round's, and a dot at
    each labelled percentile whose tooltip gives its value."""
    x = Nines(top, LEFT, PLOT_W)
    places, top_px = _legend([c.name for c in curves], wrap=True)
    y = _values([(v, f"{c.name} at p{p:g}") for c in curves
                 for line in (c.points, *c.rounds) for p, v in line], log_y, top_px)
    marks = [float(t.value) for t in x.ticks]
    values = [(c, dict(c.points)) for c in curves]
    desc = f"x: percentile; y: {y_title}. " + "; ".join(
        f"{c.name}: " + ", ".join(f"p{p:g} {format_value(at[p], unit)}" for p in marks
                                  if p in at) for c, at in values)
    out = _frame(x, y, title=title, x_title="percentile, %", y_title=y_title, top=top_px,
                 desc=desc)

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
        out += _series_close(index, c.name, places[index])
    scale = "; the value axis is logarithmic" if log_y else ""
    return _figure(out, f"{escape(title)}: each thick line merges the histograms of every "
                        f"measured round, each thin line is one round; the percentiles are "
                        f"spaced by nines{scale}.")


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
    x = Categories(releases, LEFT, PLOT_W, most=12)
    places, top = _legend([s.name for s in series], wrap=True)
    y = _values([(v, f"{s.name} at {p.x}") for s in series for p in s.points
                 for v in (p.median, *p.rounds)], log_y, top)
    desc = f"x: release; y: {y_title}. {_describe(series, x)}"
    out = _frame(x, y, title=title, x_title="release", y_title=y_title, top=top, desc=desc)
    for index, s in enumerate(series):
        at = {p.x: p for p in s.points}
        out.append(_series_open(index, s.name))
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
        for release, text, kind in (marks or {}).get(s.name, []):
            if release in at:
                ring = 'r="7"' if kind == "rule" else 'r="11" stroke-dasharray="3 2"'
                out.append(f'<circle cx="{x.pixel(release):.1f}" '
                           f'cy="{y.pixel(at[release].median):.1f}" {ring} fill="none" '
                           f'stroke-width="2"><title>{escape(s.name)}: {escape(text)}</title>'
                           "</circle>")
        out += _series_close(index, s.name, places[index])
    kinds = {kind for found in (marks or {}).values() for _, _, kind in found}
    ringed = ("; a ring marks a clear step from the release before" if "rule" in kinds
              else "") + ("; a dashed ring, a change point E-divisive finds" if "edivisive" in
                          kinds else "")
    return _figure(out, f"{escape(title)}: lines join each release's median; each band spans "
                        f"the release's rounds, lowest to highest{ringed}.")


def timeline(series: list[Series], *, title: str, x_title: str, y_title: str, unit: str = "",
             log_y: bool = False) -> str:
    """A value over the time of a window, a point per bin: a line per series and a dot at its
    highest point, whose tooltip gives the time and value (a spike is what a reader looks for)."""
    xs = [float(p.x) for s in series for p in s.points]
    x = Span(min(xs, default=0.0), max(xs, default=1.0), LEFT, PLOT_W)
    places, top = _legend([s.name for s in series], wrap=True)
    y = _values([(p.median, f"{s.name} at {label(p.x)}") for s in series for p in s.points],
                log_y, top)
    peaks = {s.name: max(s.points, key=lambda p: p.median) for s in series if s.points}
    desc = f"x: {x_title}; y: {y_title}. " + "; ".join(
        f"{name}: highest {format_value(p.median, unit)} at {label(p.x)}"
        for name, p in peaks.items())
    out = _frame(x, y, title=title, x_title=x_title, y_title=y_title, top=top, desc=desc)
    for index, s in enumerate(series):
        ordered = sorted(s.points, key=lambda p: float(p.x))
        out.append(_series_open(index, s.name))
        if len(ordered) > 1:
            out.append('<polyline points="' + " ".join(
                f"{x.pixel(p.x):.1f},{y.pixel(p.median):.1f}" for p in ordered)
                + '" fill="none" stroke-width="1.5"/>')
        if s.name in peaks:
            p = peaks[s.name]
            out.append(f'<circle cx="{x.pixel(p.x):.1f}" cy="{y.pixel(p.median):.1f}" r="4">'
                       f"<title>{escape(s.name)}: highest {escape(format_value(p.median, unit))}"
                       f" at {escape(label(p.x))}</title></circle>")
        out += _series_close(index, s.name, places[index])
    scale = "; the value axis is logarithmic" if log_y else ""
    return _figure(out, f"{escape(title)}: a point per bin of the window; the dot marks each "
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

"""Charts as inline SVG: no JavaScript, no CDN; colours from CSS variables (light and dark).

Each series is a line through the medians; every round is a dot beside its median, so the reader
sees the spread the table's "(min–max)" summarises. Text uses currentColor and the figure carries
data-search-exclude, so tick labels never enter the search index.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape

WIDTH, HEIGHT = 640, 340
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 40, 48
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


def _label(value: float | str) -> str:
    if isinstance(value, str):
        return value
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.3g}"


def svg(series: list[Series], *, title: str, x_title: str, y_title: str,
        log_x: bool | None = None) -> str:
    """One chart as an HTML <figure> holding an SVG; every text from data is escaped."""
    xs = [p.x for s in series for p in s.points]
    numeric = all(isinstance(x, int | float) for x in xs)
    positions = list(dict.fromkeys(xs))
    if numeric:
        positions = sorted(positions)  # type: ignore[type-var]
        if log_x is None:
            log_x = min(positions) > 0 and max(positions) / min(positions) >= 8  # type: ignore
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x: float | str) -> float:
        if not numeric:
            return LEFT + plot_w * (positions.index(x) + 0.5) / len(positions)
        lo, hi = float(positions[0]), float(positions[-1])  # type: ignore[arg-type]
        if log_x:
            lo, hi, x = math.log(lo), math.log(hi), math.log(float(x))
        span = (hi - lo) or 1.0
        return LEFT + 12 + (plot_w - 24) * (float(x) - lo) / span

    values = [v for s in series for p in s.points for v in (p.median, *p.rounds)]
    ticks = nice_ticks(0.0, max(values) if values else 1.0)
    y_max = ticks[-1] or 1.0

    def py(y: float) -> float:
        return TOP + plot_h * (1 - y / y_max)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
           f'role="img" aria-label="{escape(title)}" font-size="13" fill="currentColor">',
           f"<title>{escape(title)}</title>"]
    for t in ticks:
        y = py(t)
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" '
                   'stroke="currentColor" stroke-opacity="0.15"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
                   f"{escape(_label(t))}</text>")
    for x in positions:
        out.append(f'<text x="{px(x):.1f}" y="{HEIGHT - BOTTOM + 18}" text-anchor="middle">'
                   f"{escape(_label(x))}</text>")
    out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{py(0):.1f}" y2="{py(0):.1f}" '
               'stroke="currentColor" stroke-opacity="0.6"/>')
    out.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 8}" text-anchor="middle">'
               f"{escape(x_title)}</text>")
    out.append(f'<text transform="translate(14 {TOP + plot_h / 2:.1f}) rotate(-90)" '
               f'text-anchor="middle">{escape(y_title)}</text>')
    legend_x = LEFT
    for index, s in enumerate(series):
        colour = f"var(--perfpages-c{index % SERIES_COLOURS + 1})"
        offset = 5 + 4 * index  # each series' round dots sit just right of its median
        ordered = sorted(s.points, key=lambda p: px(p.x))
        line = " ".join(f"{px(p.x):.1f},{py(p.median):.1f}" for p in ordered)
        out.append(f'<g style="color:{colour}" fill="currentColor" stroke="currentColor">'
                   f"<title>{escape(s.name)}</title>")
        if len(ordered) > 1:
            out.append(f'<polyline points="{line}" fill="none" stroke-width="2"/>')
        for p in ordered:
            x, y = px(p.x), py(p.median)
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4">'
                       f"<title>{escape(s.name)}: {escape(_label(p.x))}, median "
                       f"{escape(_label(p.median))}</title></circle>")
            for v in p.rounds:
                out.append(f'<circle cx="{x + offset:.1f}" cy="{py(v):.1f}" r="2" '
                           'fill-opacity="0.55" stroke="none"/>')
        out.append("</g>")
        name = escape(s.name)
        out.append(f'<g style="color:{colour}"><rect x="{legend_x}" y="12" width="12" '
                   f'height="12" fill="currentColor"/></g>'
                   f'<text x="{legend_x + 16}" y="22">{name}</text>')
        legend_x += 28 + 7 * len(s.name)
    out.append("</svg>")
    caption = (f"{escape(title)}: lines join the medians; each dot beside a median is one round.")
    return ('<figure class="perfpages-chart" data-search-exclude>' + "".join(out)
            + f"<figcaption>{caption}</figcaption></figure>")

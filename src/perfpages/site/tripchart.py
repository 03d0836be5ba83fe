"""The round-trip chart: a call's latency against the round-trip time the delay proxy measured
it added, both axes linear from 0, so the line whose slope is the number of round trips per
call stays straight (a log axis, or the nominal delays, would bend or stretch it).

A dot per round and delay, at the delay's median added round trip; per series the line with the
slope the `round_trips` table reports (`RoundTrips.line`), and that slope in the legend. The
frame, legend and colours are the other charts' (charts.py): currentColor, CSS variables, a
<title> and a <desc> with the values, out of the search index.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from perfpages.analysis.metric import format_number, format_value
from perfpages.analysis.roundtrips import RoundTrips
from perfpages.site.axes import Span
from perfpages.site.charts import (
    _figure,
    _frame,
    _legend,
    _series_close,
    _series_open,
    _values,
)
from perfpages.site.geometry import LAYOUTS, Geometry

X_TITLE = "added round-trip time, ms"


@dataclass(frozen=True)
class TripSeries:
    """One series of the chart: its name and its round trips across the delays."""

    name: str
    trips: RoundTrips

    @property
    def legend(self) -> str:
        return f"{self.name}: {format_number(self.trips.slope.median, 1)} round trips per call"


def trips_chart(series: list[TripSeries], *, title: str, y_title: str, unit: str) -> str:
    """The chart as an HTML <figure> holding an SVG; every text from data is escaped."""
    xs = {id(s): [c.median for c in s.trips.added] for s in series}
    lines = {id(s): s.trips.line() for s in series}
    high = max((x for found in xs.values() for x in found), default=1.0)
    desc = f"x: {X_TITLE}; y: {y_title}. " + "; ".join(
        f"{s.legend}; " + ", ".join(f"{format_value(a, 'ms')} → {format_value(c.median, unit)}"
                                    for a, c in zip(xs[id(s)], s.trips.latency, strict=True))
        for s in series)
    ends = [slope * a + b for s in series for slope, b in [lines[id(s)]]
            for a in (min(xs[id(s)]), max(xs[id(s)]))]

    def draw(g: Geometry) -> list[str]:
        x = Span(0.0, high, g.left, g.plot_w)  # round ticks from 0 to the farthest added trip
        places, top = _legend([s.legend for s in series], True, g)
        y = _values([(v, s.name) for s in series for c in s.trips.latency for v in c.values]
                    + [(v, "a fitted line") for v in ends], False, top, g)
        out = _frame(g, x, y, title=title, x_title=X_TITLE, y_title=y_title, top=top,
                     desc=desc)
        for index, s in enumerate(series):
            slope, intercept = lines[id(s)]
            low, far = min(xs[id(s)]), max(xs[id(s)])
            out.append(_series_open(index, s.legend))
            out.append(f'<line class="perfpages-fit" x1="{x.pixel(low):.1f}" '
                       f'y1="{y.pixel(slope * low + intercept):.1f}" x2="{x.pixel(far):.1f}" '
                       f'y2="{y.pixel(slope * far + intercept):.1f}" stroke-width="2"/>')
            for delay, added, cell in zip(s.trips.delays, xs[id(s)], s.trips.latency,
                                          strict=True):
                tip = escape(f"{s.name}, +{delay:g} ms each way (added "
                             f"{format_number(added)} ms)")
                for rnd, v in enumerate(cell.values, start=1):
                    out.append(f'<circle cx="{x.pixel(added):.1f}" cy="{y.pixel(v):.1f}" r="3" '
                               f'fill-opacity="0.6" stroke="none"><title>{tip}: round {rnd}, '
                               f"{escape(format_value(v, unit))}</title></circle>")
            out += _series_close(index, s.legend, places[index], g)
        return out

    return _figure([draw(g) for g in LAYOUTS],
                   f"{escape(title)}: each dot is one round, at the round-trip time the proxy "
                   "measured it added (the median of the rounds); each line has the slope the "
                   "table reports, the round trips per call; both axes are linear from 0.")

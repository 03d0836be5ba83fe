"""Round trips per call, read from latency against a delay to the database.

A case measured at several `delay_ms` (the delay proxy between the subject and PostgreSQL,
`perfpages.run.delay`) with one caller: every round trip the call makes to the database costs
the added round-trip time once more, and nothing else depends on the delay, so the least-squares
slope of the call's p50 against the added round-trip time is its number of round trips. The x
values are the round-trip times the proxy measured it added (`added_rtt_ms`), not the nominal
delays, so its timer's overshoot does not inflate the slope. With many callers the slope also
holds queueing (callers waiting for a worker's thread), so it reads round trips only at one.

One slope per round, from that round's cells; the result is a cell like any other (median of the
rounds, min–max range), so comparing two builds' round trips is the method's one decision. The
line a chart draws has that median slope, placed by least squares through the medians.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean

from perfpages.analysis.decision import Cell
from perfpages.errors import AnalysisError


def least_squares(xs: Sequence[float], ys: Sequence[float]) -> float:
    """The slope of the least-squares line through (x, y)."""
    mx, my = fmean(xs), fmean(ys)
    spread = sum((x - mx) ** 2 for x in xs)
    if spread == 0:
        raise AnalysisError("the delays added the same round-trip time",
                            fix="measure at two delays or more")
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / spread


@dataclass(frozen=True)
class RoundTrips:
    """One series across the delays: its latency and added round trip per delay, the slope."""

    delays: tuple[float, ...]  # the nominal delays each way, ascending
    latency: tuple[Cell, ...]  # per delay
    added: tuple[Cell, ...]  # measured added round-trip time per delay, ms
    slope: Cell  # round trips per call, one value per round

    def line(self) -> tuple[float, float]:
        """(slope, intercept) of the line to draw: the median of the rounds' slopes (the figure
        the table reports), and the intercept that puts it nearest the medians (least squares
        with the slope fixed: through their mean)."""
        slope = self.slope.median
        xs = [c.median for c in self.added]
        ys = [c.median for c in self.latency]
        return slope, fmean(ys) - slope * fmean(xs)

    def within(self, count: float, tolerance: float = 0.5) -> bool:
        """Every round's slope is within `tolerance` of `count` round trips."""
        return all(abs(v - count) <= tolerance for v in self.slope.values)


def round_trips(points: Sequence[tuple[float, Cell, Cell]]) -> RoundTrips:
    """From (delay, latency cell, added round-trip cell) per delay: the slope per round."""
    ordered = sorted(points, key=lambda p: p[0])
    if len({p[0] for p in ordered}) < 2:
        raise AnalysisError("round trips need the same case at two delays or more",
                            fix="give the block cases with several delay_ms")
    rounds = {c.n for _, latency, added in ordered for c in (latency, added)}
    if len(rounds) != 1:
        raise AnalysisError("the delays of one series have different numbers of rounds",
                            fix="complete the run (`invoke bench.run --resume RUN`)")
    slopes = tuple(least_squares([added.values[r] for _, _, added in ordered],
                                 [latency.values[r] for _, latency, _ in ordered])
                   for r in range(rounds.pop()))
    return RoundTrips(tuple(d for d, _, _ in ordered), tuple(p[1] for p in ordered),
                      tuple(p[2] for p in ordered), Cell(slopes))

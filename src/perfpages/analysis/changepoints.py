"""Change points of a history: where, in a series of releases run as one run's labels in release
order, a step between neighbouring releases is beyond the noise.

The rule is the method's own (`decision.Change`): a step is clear when the two neighbours' ranges
of rounds are apart, with enough rounds, in a direction that is better or worse. Each step is
decided once, here; the history chart marks it and the `steps` claim reads it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from perfpages.analysis.decision import Cell, Change


@dataclass(frozen=True)
class Step:
    """The change from one release to the next (`after` over `before`)."""

    before: str
    after: str
    change: Change

    @property
    def clear(self) -> bool:
        return self.change.clear


def steps(series: Sequence[tuple[str, Cell]], metric: str, min_rounds: int = 5) -> list[Step]:
    """Every step between neighbours of `series` (release, cell), in order. A release the series
    lacks is skipped: its neighbours on either side are compared."""
    return [Step(a, b, Change(metric, ca, cb, min_rounds))
            for (a, ca), (b, cb) in pairwise(series)]


def change_points(series: Sequence[tuple[str, Cell]], metric: str,
                  min_rounds: int = 5) -> list[str]:
    """The releases at which a clear step lands (the release after it)."""
    return [s.after for s in steps(series, metric, min_rounds) if s.clear]

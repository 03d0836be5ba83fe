"""Change points of a history: where, in a series of releases run as one run's labels in release
order, a step between neighbouring releases is beyond the noise.

Two answers, shown side by side. The method's own rule (`decision.Change`): a step is clear when
the two neighbours' ranges of rounds are apart, with enough rounds, in a direction that is
better or worse — each pair on its own. And E-divisive means (`analysis.edivisive`), which reads
the whole series of rounds at once and splits it where its distribution changes: `flatten` gives
it the rounds in release order and `landing` names the release each change point falls on. Each
is decided once, here or there; the history chart marks both and the `steps` claim reads
either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from perfpages.analysis.decision import RANGES, Cell, Change, Rule


@dataclass(frozen=True)
class Step:
    """The change from one release to the next (`after` over `before`)."""

    before: str
    after: str
    change: Change

    @property
    def clear(self) -> bool:
        return self.change.clear


def steps(series: Sequence[tuple[str, Cell]], metric: str, rule: Rule = RANGES) -> list[Step]:
    """Every step between neighbours of `series` (release, cell), in order. A release the series
    lacks is skipped: its neighbours on either side are compared."""
    return [Step(a, b, Change(metric, ca, cb, rule))
            for (a, ca), (b, cb) in pairwise(series)]


def clear_steps(series: Sequence[tuple[str, Cell]], metric: str,
                rule: Rule = RANGES) -> list[Step]:
    """The steps between neighbours that the rule calls clear."""
    return [s for s in steps(series, metric, rule) if s.clear]


def change_points(series: Sequence[tuple[str, Cell]], metric: str,
                  rule: Rule = RANGES) -> list[str]:
    """The releases at which a clear step lands (the release after it)."""
    return [s.after for s in clear_steps(series, metric, rule)]


def flatten(series: Sequence[tuple[str, Cell]]) -> tuple[list[float], list[str]]:
    """Every round in release order, and the release each one belongs to: what E-divisive
    reads (five rounds of nine releases are 45 points, where nine medians would be too few)."""
    values = [v for _, cell in series for v in cell.values]
    owners = [release for release, cell in series for _ in cell.values]
    return values, owners


def landing(indices: Sequence[int], owners: Sequence[str]) -> list[str]:
    """The releases at which change points (indices where a new segment starts) land, in order
    and once each; an index inside a release's rounds names that release."""
    out: list[str] = []
    for i in sorted(indices):
        if 0 < i < len(owners) and owners[i] not in out:
            out.append(owners[i])
    return out

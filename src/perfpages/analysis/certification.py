"""Certification of a method v2 run's blocks, and each comparison's resolution with the run's
A/A pair.

A comparison resolves the larger of its own resolution and that of the run's A/A pair (the same
build under two labels) at the same block, parameters and metric: the pair measures noise the
comparison's own rounds may not show. A block is **certified** when its A/A pair has no clear
cell and it resolves the smallest change its pages claim; the rule is
`perfpages.analysis.decision`'s (`resolves`, `certified`), this module only gathers the cells.
Without pandas: the site uses it too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from math import isfinite, nan

from perfpages.analysis import decision
from perfpages.analysis.decision import Change
from perfpages.analysis.method import format_resolution

# (block, parameters, metric) -> the largest resolution of the run's A/A pairs at that cell
AAIndex = dict[tuple[str, str, str], float]
# (block, parameters, pair, change): a comparison as `bench report` lists it
Found = tuple[str, str, str, Change]


def aa_index(aa: Iterable[Found]) -> AAIndex:
    """The A/A pairs' resolution per cell (the largest where a run has several pairs)."""
    out: AAIndex = {}
    for block, pkey, _, c in aa:
        key = (block, pkey, c.metric)
        out[key] = max(out.get(key, c.resolution), c.resolution)
    return out


def resolution(index: AAIndex, block: str, pkey: str, change: Change) -> float:
    """The smallest change a comparison resolves, with its run's A/A pair (percent)."""
    return decision.resolves(change.resolution, index.get((block, pkey, change.metric)))


@dataclass(frozen=True)
class Certificate:
    """One block of a run: its A/A cells, how many are clear, what it resolves at worst, and
    the smallest change its pages claim on it (None: no page claims one, or no pages)."""

    block: str
    aa_cells: int
    aa_clear: int
    resolution: float  # the worst comparison's, in percent (nan: none)
    metric: str  # the worst comparison's metric
    claimed: float | None = None

    @property
    def certified(self) -> bool:
        return decision.certified(self.aa_cells, self.aa_clear, self.resolution, self.claimed)

    @property
    def aa_text(self) -> str:
        return (f"A/A pair {self.aa_clear} of {self.aa_cells} cells clear" if self.aa_cells
                else "no A/A pair")

    @property
    def resolution_text(self) -> str:
        if self.resolution != self.resolution:
            return "resolves —"
        return f"resolves {format_resolution(self.resolution)} ({self.metric}, worst cell)"

    @property
    def why(self) -> str:
        """Why the block is (not) certified, in a few words."""
        if not self.aa_cells:
            return "no A/A pair"
        if self.aa_clear:
            return f"{self.aa_clear} of {self.aa_cells} A/A cells clear"
        if self.claimed is not None and decision.finer(self.claimed, self.resolution):
            return (f"resolves {format_resolution(self.resolution)}, coarser than the "
                    f"{format_resolution(self.claimed)} claimed")
        if self.claimed is None:
            return "no A/A cell clear"
        return "no A/A cell clear, and it resolves the changes claimed"

    def line(self) -> str:
        """"callers: certified — A/A pair 0 of 6 cells clear; resolves 7.9 % (throughput,
        worst cell)"; "callers: not certified: no A/A pair; resolves …"."""
        if not self.aa_cells:
            return f"{self.block}: not certified: no A/A pair; {self.resolution_text}"
        verdict = "certified" if self.certified else "not certified"
        return f"{self.block}: {verdict} — {self.aa_text}; {self.resolution_text}"

    def to_json(self) -> dict[str, object]:
        return {"block": self.block, "certified": self.certified, "aa_cells": self.aa_cells,
                "aa_clear": self.aa_clear, "metric": self.metric,
                "resolution_percent": finite(self.resolution),
                "claimed_percent": self.claimed, "line": self.line()}


def finite(value: float | None) -> float | None:
    """A number for JSON: None where it is not finite (no resolution, or none reachable)."""
    return value if value is not None and isfinite(value) else None


def worst(index: AAIndex, found: Iterable[Found]) -> tuple[float, str]:
    """The largest resolution (with the A/A pair) among comparisons, and its metric."""
    out, metric = nan, ""
    for block, pkey, _, c in found:
        r = resolution(index, block, pkey, c)
        if r == r and not out >= r:
            out, metric = r, c.metric
    return out, metric


def certificates(found: list[Found], aa: list[Found],
                 claimed: dict[str, float] | None = None) -> list[Certificate]:
    """Per block (in order of appearance): its certificate from the run's comparisons and its
    A/A pairs' cells; `claimed` maps a block to the smallest change pages claim on it."""
    index = aa_index(aa)
    blocks = list(dict.fromkeys([f[0] for f in found] + [f[0] for f in aa]))
    out = []
    for block in blocks:
        pairs = [f for f in aa if f[0] == block]
        res, metric = worst(index, [f for f in found + aa if f[0] == block])
        out.append(Certificate(block, len(pairs), sum(f[3].clear for f in pairs), res, metric,
                               (claimed or {}).get(block)))
    return out

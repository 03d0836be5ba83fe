"""Certification of a method v2 run's blocks, and each comparison's resolution with the run's
A/A pair.

A comparison resolves the larger of its own resolution and that of the run's A/A pair (the same
build under two labels) at the same block, parameters and metric: the pair measures noise the
comparison's own rounds may not show. A block is **certified** (method 2.0) when its A/A pair
has no clear cell and it resolves the smallest change its pages claim; method 2.1 certifies it
at a stated level, by Holm's correction over its A/A cells, and only where it resolves a finite
change no coarser than the suite's target and its pages' claims. The rule is
`perfpages.analysis.decision`'s (`resolves`, `certified`, `certified_at`), this module only
gathers the cells. Without pandas: the site uses it too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from math import isfinite, nan
from typing import Any

from perfpages.analysis import decision, ranktest
from perfpages.analysis.decision import Change, Rule
from perfpages.analysis.format import format_p, format_resolution

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
    the smallest change its pages claim on it (None: no page claims one, or no pages).

    Under method 2.1 (`rule.holm`) it also holds each A/A cell's p-value (`aa_p`), the
    resolution that counts for the suite's target and for "resolves none" (`headline`: the
    worst cell of the block's first metric, with the A/A pair) and the rounds it rests on; a
    certificate without a 2.1 rule decides and reads exactly as method 2.0's."""

    block: str
    aa_cells: int
    aa_clear: int
    resolution: float  # the worst comparison's, in percent (nan: none)
    metric: str  # the worst comparison's metric
    claimed: float | None = None
    rule: Rule | None = None
    aa_p: tuple[tuple[str, float], ...] = ()  # 2.1: (cell, p) per A/A cell
    headline: float = nan  # 2.1: the block's first metric, worst cell
    headline_metric: str = ""
    rounds: int = 0  # the rounds the headline comparisons rest on

    @property
    def holm(self) -> bool:
        """Certified by method 2.1's rule (Holm over the A/A cells, a resolution it states)."""
        return self.rule is not None and self.rule.holm

    @property
    def level(self) -> str:
        """"1 %": the family-wise level of 2.1's A/A test."""
        return f"{self.rule.certify_alpha * 100:g} %" if self.rule is not None else ""

    @property
    def holm_clear(self) -> list[tuple[str, float]]:
        """The A/A cells still clear after Holm's correction at `certify_alpha` (2.1)."""
        if self.rule is None:
            return []
        keep = decision.holm([p for _, p in self.aa_p], self.rule.certify_alpha)
        return [cell for cell, kept in zip(self.aa_p, keep, strict=True) if kept]

    @property
    def holm_p(self) -> float | None:
        """The family's smallest Holm-adjusted p-value (k × the smallest p, at most 1): the
        block is certified at a level below it (2.1; None without A/A cells)."""
        if not self.aa_p:
            return None
        return min(1.0, len(self.aa_p) * min(p for _, p in self.aa_p))

    @property
    def vacuous(self) -> bool:
        """Certified by a test that could not fail (2.1): at these rounds no p-value reaches
        Holm's first threshold, α ÷ cells, so no A/A cell could have been found clear."""
        if not self.holm or not self.aa_cells or not self.rounds:
            return False
        assert self.rule is not None
        floor = ranktest.min_p(self.rounds, self.rounds, paired=self.rule.test == "wilcoxon")
        return floor >= self.rule.certify_alpha / len(self.aa_p)

    @property
    def target(self) -> float | None:
        return self.rule.target_pct if self.rule is not None else None

    @property
    def certified(self) -> bool:
        if not self.holm:
            return decision.certified(self.aa_cells, self.aa_clear, self.resolution,
                                      self.claimed)
        assert self.rule is not None
        return (decision.certified_at([p for _, p in self.aa_p], self.rule.certify_alpha,
                                      self.headline, self.target)
                and (self.claimed is None or not decision.finer(self.claimed, self.resolution)))

    @property
    def aa_text(self) -> str:
        if not self.aa_cells:
            return "no A/A pair"
        if not self.holm:
            return f"A/A pair {self.aa_clear} of {self.aa_cells} cells clear"
        text = (f"A/A pair {len(self.holm_clear)} of {self.aa_cells} cells clear after Holm at "
                f"{self.level}")
        return text + (f" ({self.aa_clear} at α)" if self.aa_clear else "")

    @property
    def resolution_text(self) -> str:
        if self.holm:
            if self.headline != self.headline:
                return "resolves —"
            text = (f"resolves none at {self.rounds} rounds" if not isfinite(self.headline)
                    else f"resolves {format_resolution(self.headline)} "
                         f"({self.headline_metric}, worst cell)")
            return text + (f", target {format_resolution(self.target)}"
                           if self.target is not None else "")
        if self.resolution != self.resolution:
            return "resolves —"
        return f"resolves {format_resolution(self.resolution)} ({self.metric}, worst cell)"

    @property
    def why(self) -> str:
        """Why the block is (not) certified, in a few words."""
        if self.holm:
            return self._why_holm()
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

    def _why_holm(self) -> str:
        if not self.aa_cells:
            return "no A/A pair"
        clear = self.holm_clear
        if clear:
            (cell, p), more = clear[0], len(clear) - 1
            return (f"A/A cell {cell} clear after Holm (p = {format_p(p)})"
                    + (f", and {more} more" if more else ""))
        if self.headline != self.headline or not isfinite(self.headline):
            return f"resolves none at {self.rounds} rounds"
        if self.target is not None and decision.finer(self.target, self.headline):
            return (f"resolves {format_resolution(self.headline)}, coarser than the "
                    f"{format_resolution(self.target)} target")
        if self.claimed is not None and decision.finer(self.claimed, self.resolution):
            return (f"resolves {format_resolution(self.resolution)}, coarser than the "
                    f"{format_resolution(self.claimed)} claimed")
        if self.vacuous:
            return (f"certified at {self.level} (Holm over {self.aa_cells} A/A cells, none of "
                    f"which could fail at {self.rounds} rounds)")
        return f"certified at {self.level} (Holm over {self.aa_cells} A/A cells)"

    def line(self) -> str:
        """"callers: certified — A/A pair 0 of 6 cells clear; resolves 7.9 % (throughput,
        worst cell)"; "callers: not certified: no A/A pair; resolves …". Method 2.1:
        "callers: certified at 1 % (Holm over 6 A/A cells) — resolves 7.9 % (throughput,
        worst cell)"; "callers: not certified: A/A cell callers=8 p99 clear after Holm
        (p = 0.0004); resolves …"."""
        if self.holm:
            if self.certified:
                return f"{self.block}: {self._why_holm()} — {self.resolution_text}"
            why = self._why_holm()
            if why.startswith("resolves"):  # the resolution is the reason: said once
                return f"{self.block}: not certified: {why}"
            return f"{self.block}: not certified: {why}; {self.resolution_text}"
        if not self.aa_cells:
            return f"{self.block}: not certified: no A/A pair; {self.resolution_text}"
        verdict = "certified" if self.certified else "not certified"
        return f"{self.block}: {verdict} — {self.aa_text}; {self.resolution_text}"

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "block": self.block, "certified": self.certified, "aa_cells": self.aa_cells,
            "aa_clear": self.aa_clear, "metric": self.metric,
            "resolution_percent": finite(self.resolution),
            "claimed_percent": self.claimed, "line": self.line()}
        if self.holm:
            assert self.rule is not None
            out.update({"version": self.rule.version, "certify_alpha": self.rule.certify_alpha,
                        "holm_p": self.holm_p,
                        "aa_clear_after_holm": [c for c, _ in self.holm_clear],
                        "headline_metric": self.headline_metric,
                        "headline_percent": finite(self.headline),
                        "target_percent": self.target, "rounds": self.rounds,
                        "vacuous": self.vacuous})
        return out


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


def aa_cells(aa: Iterable[Found]) -> tuple[tuple[str, float], ...]:
    """(cell, p) for each A/A comparison: "callers=8 p99 (a-again vs a)"-like names."""
    return tuple((" ".join(x for x in (pkey, c.metric) if x)
                  + (f" ({pair})" if pair else ""), c.p if c.p is not None else 1.0)
                 for _, pkey, pair, c in aa)


def headline(index: AAIndex, found: list[Found]) -> tuple[float, str, int]:
    """Method 2.1's resolution that counts for a block: the worst cell (with the A/A pair) of
    its first metric — the one its tables and summary lead with, and the one its design was
    chosen for. Not the worst of every metric: a p99 resolves several times coarser than
    throughput on the same rounds, and would sink every block. With the rounds it rests on."""
    if not found:
        return nan, "", 0
    first = found[0][3].metric
    mine = [f for f in found if f[3].metric == first]
    res, _ = worst(index, mine)
    return res, first, min(f[3].rounds for f in mine)


def certificates(found: list[Found], aa: list[Found],
                 claimed: dict[str, float] | None = None,
                 rule: Rule | None = None) -> list[Certificate]:
    """Per block (in order of appearance): its certificate from the run's comparisons and its
    A/A pairs' cells; `claimed` maps a block to the smallest change pages claim on it. The
    comparisons' rule (or `rule`) says how: method 2.1 by Holm over the A/A cells, else as
    method 2.0 did."""
    index = aa_index(aa)
    blocks = list(dict.fromkeys([f[0] for f in found] + [f[0] for f in aa]))
    if rule is None:  # the comparisons were judged by the run's rule
        rule = next((f[3].rule for f in aa + found), None)
    out = []
    for block in blocks:
        pairs = [f for f in aa if f[0] == block]
        res, metric = worst(index, [f for f in found + aa if f[0] == block])
        extra: dict[str, Any] = {}
        if rule is not None and rule.holm:
            top, first, rounds = headline(index, [f for f in pairs + found if f[0] == block])
            extra = {"rule": rule, "aa_p": aa_cells(pairs), "headline": top,
                     "headline_metric": first, "rounds": rounds}
        out.append(Certificate(block, len(pairs), sum(f[3].clear for f in pairs), res, metric,
                               (claimed or {}).get(block), **extra))
    return out

"""Pairing facts of a block: what pairing by round can remove, and what it cannot.

A comparison pairs the two labels' windows of one round (the same block, parameters and
round, the counted attempt). Pairing pays only while those windows sit close in time (on this
project's VM their correlation fell from 0.39 under 15 s to 0.22 at 30–45 s), so per block:

- the **gap**: how far apart the two windows a comparison pairs sit, middle to middle (a
  round's windows of one label span from the first's start to the last's end), the median
  over every compared pair of labels (`reproduction.label_pairs`: each label against the
  first, and the A/A pairs), parameter set and round;
- the **pairing correlation**: per cell (parameters, metric, pair of labels) the Pearson
  correlation of the two labels' per-round log values across their common rounds; per metric
  the median over the block's cells. For two sides of equal spread, pairing cuts the variance
  of a round's difference by that fraction;
- **idle dependence**: per metric, Spearman's ρ between `idle_s` (how long the subject sat
  idle before the window's settle, recorded from method v2.1) and the metric's per-window
  values, each as the log of its ratio to its cell's median so that cells of different levels
  pool; stated where p < 0.01.

Pure functions of a run's windows and cells; scipy computes the correlations.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from math import log
from statistics import median
from typing import Any

from perfpages.analysis.decision import Cell
from perfpages.analysis.metric import block_metrics, info
from perfpages.analysis.rows import counted, round_metrics
from perfpages.archive.manifest import Manifest
from perfpages.archive.window import Window, params_key

IDLE_P = 0.01  # idle dependence is stated below this p-value
MIN_ROUNDS = 3  # a correlation needs at least this many common rounds
MIN_WINDOWS = 10  # Spearman's ρ over fewer windows is not stated
SHOWN = 3  # metrics a block's line names


def signed(value: float, *, plus: bool = False) -> str:
    """A correlation as the reports print numbers: "0.31", "−0.03" (a minus sign)."""
    text = f"{value:+.2f}" if plus else f"{value:.2f}"
    return text.replace("-", "−")


@dataclass(frozen=True)
class Idle:
    metric: str
    rho: float
    p: float
    windows: int

    def text(self) -> str:
        way = "rises" if self.rho > 0 else "falls"
        p = "p < 0.001" if self.p < 0.001 else f"p = {self.p:.3f}"
        return (f"{self.metric} {way} with the subject's idle time before the window "
                f"(Spearman ρ = {signed(self.rho, plus=True)}, {p}, {self.windows} windows)")


@dataclass(frozen=True)
class Facts:
    """A block's pairing facts (None where it has nothing to pair)."""

    block: str
    gap_s: float | None
    pairs: int  # paired rounds the gap is the median of
    correlation: dict[str, float] = field(default_factory=dict)  # metric → median over cells
    cells: dict[str, int] = field(default_factory=dict)  # metric → cells with a correlation
    idle: list[Idle] = field(default_factory=list)  # p < IDLE_P only
    idle_windows: int = 0  # windows that recorded idle_s

    def line(self) -> str:
        """"calls: paired windows 21 s apart (median), pairing correlation 0.31 (throughput)"."""
        gap = ("no paired windows" if self.gap_s is None
               else f"paired windows {self.gap_s:.0f} s apart (median)")
        corr = ", ".join(f"{signed(r)} ({metric})" for metric, r in
                         list(self.correlation.items())[:SHOWN])
        return f"{self.block}: {gap}" + (f", pairing correlation {corr}" if corr else "")

    def lines(self) -> list[str]:
        """The block's line, then a line per metric that depends on idle time."""
        return [self.line(), *[f"{self.block}: {i.text()}" for i in self.idle]]

    def to_json(self) -> dict[str, Any]:
        return {"block": self.block, "gap_s": self.gap_s, "pairs": self.pairs,
                "correlation": dict(self.correlation), "cells": dict(self.cells),
                "idle": [{"metric": i.metric, "rho": i.rho, "p": i.p, "windows": i.windows}
                         for i in self.idle],
                "idle_windows": self.idle_windows, "lines": self.lines()}


def seconds(stamp: str) -> float:
    """An archived start ("2026-12-03T09:14:35.036Z") as seconds since the epoch."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


RoundKey = tuple[str, str, str, int]  # block, parameters, label, round


def middles(windows: Iterable[Window]) -> dict[RoundKey, float]:
    """The middle of each label's round of each cell, in seconds: from its first window's start
    to its last window's end (the counted attempt's, measured windows only)."""
    spans: dict[RoundKey, tuple[float, float]] = {}
    for w in counted(w for w in windows if w.kind == "measure"):
        key = (w.block, params_key(w.params), w.label, w.round)
        start = seconds(w.start)
        low, high = spans.get(key, (start, start + w.duration_s))
        spans[key] = (min(low, start), max(high, start + w.duration_s))
    return {key: (low + high) / 2 for key, (low, high) in spans.items()}


def gaps(times: Mapping[RoundKey, float],
         pairs: list[tuple[str, str]]) -> dict[str, list[float]]:
    """Per block, the gap of every paired round of every compared pair of labels."""
    out: dict[str, list[float]] = {}
    for block, pkey, label, rnd in times:
        for a, b in pairs:
            if label == a and (block, pkey, b, rnd) in times:
                out.setdefault(block, []).append(
                    abs(times[block, pkey, b, rnd] - times[block, pkey, a, rnd]))
    return out


def correlation(one: Cell, two: Cell) -> float | None:
    """Pearson's r of two cells' values over their common rounds (logs when all positive);
    None with fewer than MIN_ROUNDS, or a side that does not vary."""
    from scipy.stats import pearsonr

    a, b = dict(zip(one.rounds, one.values, strict=True)), dict(zip(two.rounds, two.values,
                                                                    strict=True))
    common = sorted(set(a) & set(b))
    x, y = [a[r] for r in common], [b[r] for r in common]
    if len(common) < MIN_ROUNDS or len(set(x)) < 2 or len(set(y)) < 2:
        return None
    if all(v > 0 for v in x + y):
        x, y = [log(v) for v in x], [log(v) for v in y]
    return float(pearsonr(x, y).statistic)


def judged(manifest: Manifest, block: str, present: set[str]) -> list[str]:
    """The metrics a block's changes judge, in its tables' order."""
    return [m for m in block_metrics(manifest, block, present)
            if info(m).higher_is_better is not None]


def correlations(manifest: Manifest, cells: Mapping[tuple[str, str, str, str], Cell],
                 pairs: list[tuple[str, str]]) -> dict[str, dict[str, list[float]]]:
    """Per block and judged metric, the pairing correlation of every cell that has one."""
    present: dict[str, set[str]] = {}
    for block, _, _, metric in cells:
        present.setdefault(block, set()).add(metric)
    metrics = {block: judged(manifest, block, found) for block, found in present.items()}
    out: dict[str, dict[str, list[float]]] = {}
    for (block, pkey, label, metric), cell in cells.items():
        if metric not in metrics[block]:
            continue
        for a, b in pairs:
            other = cells.get((block, pkey, b, metric))
            if label == a and other is not None:
                r = correlation(cell, other)
                if r is not None:
                    out.setdefault(block, {m: [] for m in metrics[block]})[metric].append(r)
    return out


def idle_of(window: Window) -> float | None:
    """A window's `idle_s` (method v2.1), read defensively: absent from older runs, and from
    windows read before the archive knew the field."""
    value = getattr(window, "idle_s", None)
    return float(value) if isinstance(value, int | float) else None


def idle_dependence(manifest: Manifest, windows: Iterable[Window]) -> dict[str, tuple[int,
                                                                               list[Idle]]]:
    """Per block: how many windows recorded idle_s, and each judged metric whose per-window
    values depend on it (Spearman's ρ at p < IDLE_P), each value the log of its ratio to its
    cell's median (logs of positive values; the value itself otherwise)."""
    from scipy.stats import spearmanr

    points: dict[tuple[str, str], dict[tuple[str, str], list[tuple[float, float]]]] = {}
    recorded: dict[str, int] = {}
    for w in counted(w for w in windows if w.kind == "measure" and w.status == "ok"):
        idle = idle_of(w)
        if idle is None:
            continue
        recorded[w.block] = recorded.get(w.block, 0) + 1
        for metric, value in round_metrics([w]).items():
            cell = (params_key(w.params), w.label)
            points.setdefault((w.block, metric), {}).setdefault(cell, []).append((idle, value))
    out: dict[str, tuple[int, list[Idle]]] = {b: (n, []) for b, n in recorded.items()}
    present: dict[str, set[str]] = {}
    for block, metric in points:
        present.setdefault(block, set()).add(metric)
    for block, found in present.items():
        for metric in judged(manifest, block, found):
            xs: list[float] = []
            ys: list[float] = []
            for group in points[block, metric].values():
                logged = all(v > 0 for _, v in group)
                values = [log(v) if logged else v for _, v in group]
                mid = median(values)
                xs += [i for i, _ in group]
                ys += [v - mid for v in values]
            if len(xs) < MIN_WINDOWS or len(set(xs)) < 2 or len(set(ys)) < 2:
                continue
            result = spearmanr(xs, ys)
            rho, p = float(result.statistic), float(result.pvalue)
            if p < IDLE_P:
                out[block][1].append(Idle(metric, rho, p, len(xs)))
    return out


def facts(manifest: Manifest, windows: list[Window],
          cells: Mapping[tuple[str, str, str, str], Cell],
          pairs: list[tuple[str, str]]) -> list[Facts]:
    """Every measured block's pairing facts, in the order the cells name the blocks."""
    spread = gaps(middles(windows), pairs)
    corr = correlations(manifest, cells, pairs)
    idle = idle_dependence(manifest, windows)
    out = []
    for block in dict.fromkeys(k[0] for k in cells):
        found = spread.get(block, [])
        per_metric = {m: rs for m, rs in corr.get(block, {}).items() if rs}
        recorded, depends = idle.get(block, (0, []))
        out.append(Facts(block, median(found) if found else None, len(found),
                         {m: float(median(rs)) for m, rs in per_metric.items()},
                         {m: len(rs) for m, rs in per_metric.items()}, depends, recorded))
    return out

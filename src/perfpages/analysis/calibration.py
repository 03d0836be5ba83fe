"""A calibration run read back: this machine's noise, and what each design would resolve.

A calibration run (`bench.calibrate`, perfpages.run.calibrate) measured one block with an A/A
pair — a label and its twin, the same build — in rounds of a fresh random order, each turn an
8 s window archived as eight 1 s windows. A turn measured while the machine was busy is
measured again at the end of the block (`Window.attempt` 2): only the attempt the analysis
counts (`analysis.rows.counted`) is read. From those seconds:

- the noise per second (within a turn), per window (8 s windows across rounds, and the part of
  it the seconds do not explain: the window's own level), and per round (how the two labels'
  windows of one round move together: what pairing by round removes);
- for each design R × W (R rounds of W s windows, 40 s a label): W-second windows are W
  consecutive seconds of a turn, at every offset of the turn; R rounds are disjoint chunks of
  the rounds measured. The resolution (80 % power at α = 1 %, `ranktest.resolution`, paired
  and unpaired) is the median over the chunks; each chunk is also an A/A comparison, decided by
  `decision.Change` under the exact rule. Chunks at different offsets share their rounds: they
  are not independent comparisons, but each one alone has α as its false-positive rate. With
  fewer rounds measured than R, the resolution is computed at R from the noise of all of them
  (marked extrapolated) and no A/A comparison is counted;
- the design's wall time for a block of the pair, from the turns' measured overhead, and how
  long a calibration must run on this machine to measure its rounds (this run's time per
  round, its re-measures included).

Pure: no MkDocs, no console. perfpages.cli.calibrate prints it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from statistics import correlation, median
from typing import Any, Literal

from perfpages.analysis import ranktest
from perfpages.analysis.decision import Cell, Change, Rule
from perfpages.analysis.rows import counted, round_metrics
from perfpages.archive.calibration import TURN_S, check
from perfpages.archive.preflight import busy
from perfpages.archive.reader import Run
from perfpages.archive.vocabulary import ALPHA, POWER
from perfpages.archive.window import Window, params_key
from perfpages.errors import AnalysisError

DESIGNS = ((5, 8), (10, 4), (20, 2), (40, 1))  # rounds × window seconds: 40 s a label each
METRICS = ("throughput", "p50")
BUDGET = 2.0  # a design fits when its block takes at most this × the 5 × 8 s design's time
EXTRAPOLATE_FROM = 5  # rounds measured, at least, to compute a design's resolution at more
TESTS: dict[str, Literal["wilcoxon", "mann-whitney"]] = {"paired": "wilcoxon",
                                                         "unpaired": "mann-whitney"}


@dataclass(frozen=True)
class Noise:
    """One cell's noise, as fractions (0.1: 10 %); nan where too little was measured."""

    cell: str
    metric: str
    second: float  # robust sd of log 1 s values within a turn (median over turns)
    window: float  # robust sd of log 8 s window values across rounds (rms of both labels)
    level: float  # the window's own level: what the seconds do not explain
    round_corr: float  # correlation of the pair's 8 s windows of one round (log)


@dataclass(frozen=True)
class Design:
    rounds: int
    window_s: int
    paired: float  # resolution in %, the worst cell; inf: the test cannot reach α; nan: unknown
    unpaired: float
    extrapolated: bool  # fewer rounds measured than the design's
    clear: dict[str, tuple[int, int]]  # test -> (clear A/A comparisons, comparisons)
    seconds: float  # wall time of one block of the pair
    cells: dict[str, dict[str, float]] = field(default_factory=dict)  # cell/metric -> by test
    # how long a calibration must run here to measure the design's rounds (its A/A comparisons
    # counted, not extrapolated): this run's time per round, busy re-measures included
    calibrate_s: float = math.nan

    @property
    def name(self) -> str:
        return f"{self.rounds} × {self.window_s} s"

    @property
    def best(self) -> tuple[float, str]:
        """The finer of the two resolutions, and its test ("paired" on a tie); nan unknown."""
        known = [(v, k) for v, k in ((self.paired, "paired"), (self.unpaired, "unpaired"))
                 if not math.isnan(v)]
        return min(known) if known else (math.nan, "paired")


@dataclass(frozen=True)
class Calibration:
    run: str
    block: str
    label: str
    twin: str
    rounds: int  # rounds where both labels measured every second of a cell
    overhead_s: float  # a turn's wall time beyond its measured seconds (median)
    fixed_s: float  # the block's time outside its turns (preflight, floors, plans)
    turn_seconds: int  # measured seconds a turn: TURN_S × cells
    noise: list[Noise]
    designs: list[Design]
    windows: int = 0  # the block's measured windows, every attempt
    busy: int = 0  # of them, measured while the machine was busy
    remeasured: int = 0  # turns measured again at the end of the block (the re-measure counts)

    @property
    def budget_s(self) -> float:
        return BUDGET * self.designs[0].seconds

    @property
    def recommended(self) -> Design | None:
        """The finest design within the budget; the shorter one on a tie."""
        fits = [d for d in self.designs if d.seconds <= self.budget_s and
                math.isfinite(d.best[0])]
        return min(fits, key=lambda d: (d.best[0], d.seconds)) if fits else None

    def to_json(self) -> dict[str, Any]:
        def num(v: float) -> float | None:
            return round(v, 6) if math.isfinite(v) else None

        best = self.recommended
        return {
            "run": self.run, "block": self.block, "label": self.label, "twin": self.twin,
            "rounds": self.rounds, "overhead_s": num(self.overhead_s),
            "windows": self.windows, "busy_windows": self.busy,
            "remeasured_turns": self.remeasured,
            "fixed_s": num(self.fixed_s), "alpha": ALPHA, "power": POWER,
            "noise": [{"cell": n.cell, "metric": n.metric, "second": num(n.second),
                       "window": num(n.window), "level": num(n.level),
                       "round_correlation": num(n.round_corr)} for n in self.noise],
            "designs": [{"rounds": d.rounds, "window_s": d.window_s,
                         "resolution_pct": {"paired": num(d.paired),
                                            "unpaired": num(d.unpaired)},
                         "extrapolated": d.extrapolated,
                         "aa": {t: {"clear": k, "comparisons": n}
                                for t, (k, n) in d.clear.items()},
                         "seconds": num(d.seconds),
                         "calibrate_minutes": num(d.calibrate_s / 60),
                         "cells": {c: {t: num(v) for t, v in by.items()}
                                   for c, by in d.cells.items()}} for d in self.designs],
            "budget_s": num(self.budget_s),
            "recommended": None if best is None else {
                "rounds": best.rounds, "window_s": best.window_s, "test": best.best[1],
                "resolution_pct": num(best.best[0])},
        }


# ---- reading the seconds ----------------------------------------------------------------

Seconds = dict[str, dict[str, dict[int, list[Window]]]]  # cell -> label -> round -> 1 s windows


def _seconds(run: Run, block: str, labels: tuple[str, str]) -> Seconds:
    """Every turn's 1 s windows in order, of its counted attempt (a turn measured again because
    the machine was busy is its re-measure, never both interleaved); a turn with a failed or
    missing second is left out."""
    turns: dict[tuple[str, str, int], list[Window]] = defaultdict(list)
    for w in counted(w for w in run.measured if w.block == block and w.label in labels):
        turns[(params_key(w.params), w.label, w.round)].append(w)
    out: Seconds = defaultdict(lambda: defaultdict(dict))
    for (cell, label, rnd), ws in turns.items():
        ws.sort(key=lambda w: w.window)
        if (len(ws) >= TURN_S and all(w.status == "ok" and abs(w.duration_s - 1) < 0.05
                                      for w in ws)):
            out[cell][label][rnd] = ws[:TURN_S]
    return out


class Values:
    """The metrics of W consecutive seconds of a turn, computed once (histograms merged)."""

    def __init__(self, sec: Seconds) -> None:
        self.sec = sec
        self.cache: dict[tuple[str, str, int, int, int], dict[str, float]] = {}

    def __call__(self, cell: str, label: str, rnd: int, offset: int, length: int,
                 metric: str) -> float | None:
        key = (cell, label, rnd, offset, length)
        if key not in self.cache:
            self.cache[key] = round_metrics(self.sec[cell][label][rnd][offset:offset + length])
        v = self.cache[key].get(metric)
        return v if v is not None and math.isfinite(v) and v > 0 else None


def _time(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _timing(run: Run, block: str, turn_seconds: int) -> tuple[float, float, float]:
    """(the median turn's overhead, the block's time outside its turns, its turns' time per
    round), in seconds: a turn (a re-measure is one too) lasts from the end of what came before
    it to the end of its last measured second."""
    ends: dict[tuple[str, int, int], float] = {}
    for w in run.measured:
        if w.block == block:
            key = (w.label, w.round, w.attempt)
            ends[key] = max(ends.get(key, 0.0), _time(w.start) + w.duration_s)
    mine = [w for w in run.windows if w.block == block]
    if not ends or not mine:
        return math.nan, math.nan, math.nan
    first = min(_time(w.start) for w in mine)
    last = max(_time(w.start) + w.duration_s for w in mine)
    before = [_time(w.start) + w.duration_s for w in run.floors
              if w.block == block and w.params.get("position") == "before"]
    previous = max([first, *before])
    walls = []
    for end in sorted(ends.values()):
        walls.append(end - previous)
        previous = end
    rounds = len({rnd for _, rnd, _ in ends})
    return (max(0.0, median(walls) - turn_seconds),
            max(0.0, (last - first) - sum(walls)), sum(walls) / rounds)


# ---- the designs ------------------------------------------------------------------------

def _at_rounds(base: list[float], other: list[float], paired: bool, rounds: int) -> float:
    """`ranktest.resolution` at `rounds` a side from fewer measured: the values repeated (their
    robust spread unchanged) to at least `rounds`, then scaled back as 1/√n."""
    if ranktest.min_p(rounds, rounds, paired=paired) >= ALPHA:
        return math.inf
    k = math.ceil(rounds / len(base))
    r = ranktest.resolution(base * k, other * k, paired=paired, alpha=ALPHA, power=POWER)
    if not math.isfinite(r):
        return r
    return math.expm1(math.log1p(r / 100) * math.sqrt(k * len(base) / rounds)) * 100


def _design(value: Values, pair: tuple[str, str], cells: list[str], rounds: int, window: int,
            measured: list[int]) -> tuple[dict[str, dict[str, float]],
                                          dict[str, tuple[int, int]]]:
    a, b = pair
    resolutions: dict[str, dict[str, float]] = {}
    clear = {t: [0, 0] for t in TESTS}
    for cell in cells:
        for metric in METRICS:
            found: dict[str, list[float]] = {t: [] for t in TESTS}
            for offset in range(0, TURN_S - window + 1, window):
                values = {}
                for rnd in measured:
                    va = value(cell, a, rnd, offset, window, metric)
                    vb = value(cell, b, rnd, offset, window, metric)
                    if va is not None and vb is not None:
                        values[rnd] = (va, vb)
                got = sorted(values)
                if len(got) < min(rounds, EXTRAPOLATE_FROM):
                    continue
                chunks = [got[i:i + rounds] for i in range(0, len(got) - rounds + 1, rounds)]
                for kind, test in TESTS.items():
                    paired = kind == "paired"
                    if not chunks:
                        xs, ys = [values[r][0] for r in got], [values[r][1] for r in got]
                        found[kind].append(_at_rounds(xs, ys, paired, rounds))
                    for chunk in chunks:
                        xs = [values[r][0] for r in chunk]
                        ys = [values[r][1] for r in chunk]
                        change = Change(metric, Cell(tuple(xs), tuple(chunk)),
                                        Cell(tuple(ys), tuple(chunk)),
                                        Rule(test, alpha=ALPHA, power=POWER))
                        found[kind].append(change.resolution)
                        if change.enough_rounds:
                            clear[kind][0] += change.clear
                            clear[kind][1] += 1
            if all(found.values()):
                resolutions[f"{cell} / {metric}"] = {k: float(median(v))
                                                     for k, v in found.items()}
    return resolutions, {t: (k, n) for t, (k, n) in clear.items()}


def _noise(value: Values, pair: tuple[str, str], cell: str, metric: str) -> Noise | None:
    per_second: list[float] = []
    windows: dict[str, dict[int, float]] = {}
    for label in pair:
        windows[label] = {}
        for rnd in value.sec[cell][label]:
            values = [value(cell, label, rnd, i, 1, metric) for i in range(TURN_S)]
            if all(v is not None for v in values):
                per_second.append(ranktest.noise([v for v in values if v is not None]))
            whole = value(cell, label, rnd, 0, TURN_S, metric)
            if whole is not None:
                windows[label][rnd] = whole
    if not per_second:
        return None
    second = float(median(per_second))
    spreads = [ranktest.noise(list(v.values())) for v in windows.values() if len(v) >= 3]
    window = math.sqrt(sum(s * s for s in spreads) / len(spreads)) if spreads else math.nan
    level = math.sqrt(max(0.0, window ** 2 - second ** 2 / TURN_S))
    common = sorted(set(windows[pair[0]]) & set(windows[pair[1]]))
    try:  # two rounds always correlate at ±1: three at least
        corr = correlation([math.log(windows[pair[0]][r]) for r in common],
                           [math.log(windows[pair[1]][r]) for r in common]) \
            if len(common) >= 3 else math.nan
    except Exception:  # fewer than two rounds, or no spread at all
        corr = math.nan
    return Noise(cell, metric, second, window, level, corr)


def calibrate(run: Run) -> Calibration:
    """The noise and the designs of a calibration run (see the module's docstring)."""
    block, label, twin = check(run.manifest)
    pair = (label, twin)
    sec = _seconds(run, block, pair)
    cells = sorted(c for c in sec if set(sec[c][label]) & set(sec[c][twin]))
    if not cells:
        raise AnalysisError(f"run {run.id} has no round where {label} and {twin} both measured "
                            f"{TURN_S} one-second windows", key="--run",
                            fix="calibrate again, for longer (--minutes)")
    measured = sorted(set.intersection(*(set(sec[c][label]) & set(sec[c][twin])
                                         for c in cells)))
    turn_seconds = TURN_S * len(cells)
    overhead, fixed, per_round = _timing(run, block, turn_seconds)
    mine = [w for w in run.measured if w.block == block]
    again = {(w.label, w.round, params_key(w.params)) for w in mine if w.attempt > 1}
    value = Values(sec)
    noise = [n for c in cells for m in METRICS if (n := _noise(value, pair, c, m)) is not None]
    designs = []
    for rounds, window in DESIGNS:
        res, clear = _design(value, pair, cells, rounds, window, measured)
        # The worst cell; unknown (nan) when too few rounds were measured to say.
        worst = {k: max((by[k] for by in res.values()), default=math.nan) for k in TESTS}
        seconds = fixed + rounds * len(pair) * (overhead + window * len(cells))
        designs.append(Design(rounds, window, worst["paired"], worst["unpaired"],
                              len(measured) < rounds, clear, seconds, res,
                              fixed + rounds * per_round))
    return Calibration(run.id, block, label, twin, len(measured), overhead, fixed,
                       turn_seconds, noise, designs, windows=len(mine),
                       busy=sum(busy(w.machine) for w in mine), remeasured=len(again))

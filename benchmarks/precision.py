"""Benchmark: does the precision method v2 states hold on this project's archived runs?

Read-only over results/. For every method v2 run (run.json records `method.rule`), every
comparison `bench report` makes (each label against the first, and the A/A pairs), at its 20
rounds and cut to its first 10:

- the stated resolution, method 2.0 (Noether's formula) and 2.1 (simulation of the exact test,
  `ranktest.simulated_resolution`), against one found independently: resample the comparison's
  own residuals (paired: the round-by-round log differences about their median; unpaired: each
  side's log values about its median) with a plain bootstrap, decide each draw with
  scipy.stats.wilcoxon / mannwhitneyu called directly, and bisect for the shift detected with
  80 % power (common random numbers across shifts);
- the exact 99 % interval's width over the resolution (2.0 and 2.1);
- per block with an A/A pair: certified under 2.0 and 2.1, with the Holm-adjusted p;
- what the independent figure itself is worth: on synthetic paired comparisons with normal
  noise, where the true 80 %-power shift is known (found with scipy on fresh draws of the
  distribution), the 2.0, 2.1 and independent figures over it;
- the false non-certification rate of identical builds, by simulation on each archived A/A
  block: every round's A/A difference takes a random sign, the same for all of the block's cells
  (label swaps, exchangeable when the builds are identical; the cells' correlation is kept), and
  the block fails 2.0 when any cell is clear at α, 2.1 when any stays clear under Holm.

    python benchmarks/precision.py                 # about 20 minutes on a 2-core VM
    DRAWS=40 SIGNS=40 SYNTH=20 python benchmarks/precision.py   # a quick look
"""

from __future__ import annotations

import os
import sys
from collections import defaultdict
from dataclasses import replace
from math import exp
from pathlib import Path
from statistics import median

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from perfpages.analysis import certification, decision, ranktest  # noqa: E402
from perfpages.analysis.changes import changes  # noqa: E402
from perfpages.analysis.decision import Cell, Change, Rule  # noqa: E402
from perfpages.analysis.reading import aa_changes  # noqa: E402
from perfpages.analysis.tidy import Tidy  # noqa: E402
from perfpages.archive.reader import open_run  # noqa: E402

RESULTS = Path(os.environ.get("RESULTS", ROOT / "results"))
DRAWS = int(os.environ.get("DRAWS", "300"))  # bootstrap draws per comparison
SIGNS = int(os.environ.get("SIGNS", "400"))  # sign assignments per A/A block
SYNTH = int(os.environ.get("SYNTH", "100"))  # synthetic comparisons per round count
ALPHA, POWER = 0.01, 0.80


def independent(x: list[float], y: list[float], paired: bool, seed: int) -> float:
    """The shift (percent) scipy's exact test detects with 80 % power on plain-bootstrap draws
    of the comparison's own residuals; inf where α is out of reach."""
    if ranktest.min_p(len(x), len(y), paired=paired) >= ALPHA:
        return float("inf")
    lx, ly = np.log(x), np.log(y)
    rng = np.random.default_rng(seed)
    if paired:
        d = ly - lx
        e = d - np.median(d)
        draws = e[rng.integers(0, len(e), (DRAWS, len(e)))]

        def power(shift: float) -> float:
            s = draws + shift
            live = np.any(s != 0, axis=1)
            p = np.ones(DRAWS)
            p[live] = stats.wilcoxon(s[live], method="exact", axis=1).pvalue
            return float(np.mean(p < ALPHA))
    else:
        ex, ey = lx - np.median(lx), ly - np.median(ly)
        dx = ex[rng.integers(0, len(ex), (DRAWS, len(ex)))]
        dy = ey[rng.integers(0, len(ey), (DRAWS, len(ey)))]

        def power(shift: float) -> float:
            p = stats.mannwhitneyu(dy + shift, dx, method="exact", axis=1).pvalue
            return float(np.mean(p < ALPHA))
    spread = float(np.ptp(draws if paired else np.concatenate([dx, dy], axis=1))) or 1e-6
    low, high = 0.0, spread
    while power(high) < POWER:
        high *= 2
    for _ in range(14):
        mid = (low + high) / 2
        low, high = (mid, high) if power(mid) < POWER else (low, mid)
    return (exp(high) - 1) * 100


def true_shift(n: int, sd: float, seed: int) -> float:
    """The shift (percent) scipy's exact signed-rank test detects with 80 % power when the
    round-by-round log differences are normal with `sd`: bisection on fresh draws."""
    draws = np.random.default_rng(seed).normal(0, sd, (4000, n))

    def power(shift: float) -> float:
        return float(np.mean(stats.wilcoxon(draws + shift, method="exact", axis=1).pvalue
                             < ALPHA))
    low, high = 0.0, 4 * sd
    for _ in range(16):
        mid = (low + high) / 2
        low, high = (mid, high) if power(mid) < POWER else (low, mid)
    return (exp(high) - 1) * 100


def synthetic() -> dict[int, dict[str, list[float]]]:
    """Per round count, each figure ÷ the true 80 %-power shift, on synthetic comparisons."""
    sd = 0.05
    out: dict[int, dict[str, list[float]]] = {}
    rng = np.random.default_rng(7)
    for n in (10, 20):
        truth = true_shift(n, sd, 100 + n)
        ratios: dict[str, list[float]] = defaultdict(list)
        for i in range(SYNTH):
            base = 100 * np.exp(rng.normal(0, 0.03, n))
            other = base * np.exp(rng.normal(0, sd, n))
            x, y = list(base), list(other)
            ratios["2.0"].append(ranktest.resolution(x, y, paired=True, alpha=ALPHA,
                                                     power=POWER) / truth)
            ratios["2.1"].append(ranktest.simulated_resolution(x, y, paired=True, alpha=ALPHA,
                                                               power=POWER) / truth)
            ratios["independent"].append(independent(x, y, True, 10_000 + i) / truth)
        out[n] = ratios
    return out


def cut(c: Change, rounds: int) -> Change:
    """The comparison on its first `rounds` rounds only."""
    def first(cell: Cell) -> Cell:
        if not cell.rounds:
            return Cell(cell.values[:rounds])
        keep = sorted(cell.rounds)[:rounds]
        pairs = dict(zip(cell.rounds, cell.values, strict=True))
        return Cell(tuple(pairs[r] for r in keep), tuple(keep))
    return replace(c, base=first(c.base), other=first(c.other))


def summary(values: list[float]) -> str:
    v = [x for x in values if np.isfinite(x)]
    if not v:
        return "—"
    q = np.percentile(v, [10, 50, 90])
    return f"median {q[1]:.2f} (10–90 %: {q[0]:.2f}–{q[2]:.2f}, n = {len(v)})"


def false_rates(aa: list[certification.Found], rng: np.random.Generator) -> tuple[float, float]:
    """A block of identical builds, by label swaps: (2.0's, 2.1's) false non-certification."""
    diffs = []
    for *_, c in aa:
        x, y = decision._samples(c.base, c.other, c.rule)
        if c.rule.test != "wilcoxon" or min(x + y) <= 0:
            continue  # label swaps by round need pairs; zero counts have no ratio
        diffs.append(np.log(y) - np.log(x))
    if not diffs or len({len(d) for d in diffs}) != 1:
        return float("nan"), float("nan")
    n = len(diffs[0])
    signs = rng.choice([-1.0, 1.0], size=(SIGNS, n))  # one sign per round, every cell
    pvalues = np.ones((SIGNS, len(diffs)))
    for j, d in enumerate(diffs):
        s = signs * d[None, :]
        live = np.any(s != 0, axis=1)
        pvalues[live, j] = stats.wilcoxon(s[live], method="exact", axis=1).pvalue
    old = float(np.mean((pvalues < ALPHA).any(axis=1)))
    new = float(np.mean([any(decision.holm(list(row), 0.01)) for row in pvalues]))
    return old, new


def main() -> None:
    ratios: dict[tuple[str, int], list[float]] = defaultdict(list)
    widths: dict[tuple[str, int], list[float]] = defaultdict(list)
    blocks_out, rates = [], []
    rng = np.random.default_rng(20261204)
    seed = 0
    runs = sorted(p for p in RESULTS.iterdir() if (p / "run.json").is_file())
    for path in runs:
        run = open_run(path)
        m = run.manifest
        if not m.method.rule:
            continue
        # Each run decided under both versions, whichever it recorded (a 2.1 run records 2.1).
        rule20 = replace(Rule.of(m.method), version="2.0")
        rule21 = replace(rule20, version="2.1")
        tidy = Tidy.of(run)
        labels = list(m.labels)
        pairs = [(labels[0], other) for other in labels[1:]]
        found21 = changes(run, tidy, pairs, rule21)
        aa21 = aa_changes(run, tidy, rule21)
        paired = rule21.test == "wilcoxon"
        for rounds in (20, 10):
            for *_, c21 in found21 + aa21:
                c21 = cut(c21, rounds) if rounds < c21.rounds else c21
                if c21.rounds != rounds:
                    continue
                c20 = replace(c21, rule=rule20)
                x, y = decision._samples(c21.base, c21.other, rule21)
                if min(x + y) <= 0:
                    continue  # counts of zero: no ratio to resample
                seed += 1
                truth = independent(x, y, paired, seed)
                for name, c in (("2.0", c20), ("2.1", c21)):
                    res = c.resolution
                    if np.isfinite(truth) and truth > 0 and np.isfinite(res):
                        ratios[(name, rounds)].append(res / truth)
                    lo, hi = c.interval or (float("nan"), float("nan"))
                    if res > 0 and np.isfinite(res) and np.isfinite(hi - lo):
                        widths[(name, rounds)].append((hi - lo) / res)
        aa20 = aa_changes(run, tidy, rule20)
        for old, new in zip(certification.certificates(changes(run, tidy, pairs, rule20), aa20),
                            certification.certificates(found21, aa21), strict=True):
            if not old.aa_cells:
                continue
            blocks_out.append((m.id, old, new))
            block_aa = [f for f in aa20 if f[0] == old.block]
            rates.append((m.id, old.block, old.aa_cells, *false_rates(block_aa, rng)))
        print(f"… {m.id}", file=sys.stderr, flush=True)

    print("## Stated resolution ÷ the one simulated independently (scipy, plain bootstrap)\n")
    print("| rule | rounds | stated ÷ independent |\n|---|---|---|")
    for key in sorted(ratios):
        print(f"| {key[0]} | {key[1]} | {summary(ratios[key])} |")
    print("\n## What the independent figure is worth: synthetic paired comparisons, normal "
          "noise\n")
    print("Each figure ÷ the true 80 %-power shift (known from the distribution), "
          f"{SYNTH} comparisons per round count:\n")
    print("| rounds | 2.0 ÷ true | 2.1 ÷ true | independent ÷ true |\n|---|---|---|---|")
    for n, r in synthetic().items():
        print(f"| {n} | {summary(r['2.0'])} | {summary(r['2.1'])} | "
              f"{summary(r['independent'])} |")
    print("\n## Exact 99 % interval width ÷ stated resolution\n")
    print("| rule | rounds | width ÷ resolution |\n|---|---|---|")
    for key in sorted(widths):
        print(f"| {key[0]} | {key[1]} | {summary(widths[key])} |")
    print("\n## Archived A/A blocks: certified under 2.0 and 2.1\n")
    print("| run | block | A/A cells | clear at α | 2.0 | Holm p | 2.1 (why) |\n"
          "|---|---|---|---|---|---|---|")
    for run_id, old, new in blocks_out:
        holm_p = f"{new.holm_p:.3g}" if new.holm_p is not None else "—"
        print(f"| {run_id} | {old.block} | {old.aa_cells} | {old.aa_clear} | "
              f"{'yes' if old.certified else 'no'} | {holm_p} | "
              f"{'yes' if new.certified else 'no'} ({new.why}) |")
    print("\n## Identical builds by label swaps: false non-certification per block\n")
    print("| run | block | A/A cells | 2.0 (any cell clear) | 2.1 (Holm at 1 %) |\n"
          "|---|---|---|---|---|")
    for run_id, block, cells, old_rate, new_rate in rates:
        print(f"| {run_id} | {block} | {cells} | {old_rate:.1%} | {new_rate:.1%} |")
    finite = [r for r in rates if r[3] == r[3]]
    if finite:
        print(f"\nOver {len(finite)} blocks ({SIGNS} sign assignments each): 2.0 fails "
              f"{median(r[3] for r in finite):.1%} of identical blocks (median; up to "
              f"{max(r[3] for r in finite):.1%}), 2.1 {median(r[4] for r in finite):.1%} "
              f"(up to {max(r[4] for r in finite):.1%}).")


if __name__ == "__main__":
    main()

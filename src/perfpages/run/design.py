"""The `pairs` order of method v2.1: which cell, and which label, a run measures next.

A round goes cell by cell (a pgbench block's cell, an HTTP block's case) and measures every
label's window of that cell back to back, so the windows a comparison pairs by round sit seconds
apart (paired windows correlate only that close: 0.39 under 15 s, 0.22 at 30–45 s, measured on
the archived v2 runs). The labels' order inside a cell follows a balanced design over the rounds:
the rows of a Williams square and their reverses (every label in every position equally often,
every ordered adjacency equally often, and each label before each other in half the rows), the
labels assigned to its symbols at random, the rows to the rounds at random; for two labels, AB in
half the rounds and BA in the other half. The cells' order is random per round. Everything is
drawn from one seed (`method.seed`): a run's order is reproducible from run.json alone.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

Order = tuple[str, ...]  # the labels of one cell, in the order they are measured
Visit = tuple[int, Order]  # (the cell's index, its labels' order)


def williams(k: int) -> list[tuple[int, ...]]:
    """The rows of a Williams square on `k` symbols followed by those of their reverses that
    are not rows already (for k = 2 and 4 the reverses are rows): every symbol in every
    position equally often, every ordered adjacency equally often, each symbol before each
    other in half the rows. Each row's reverse follows it, so a run of rows cut after an even
    number keeps each pair's order balanced."""
    if k < 1:
        raise ValueError("a design needs at least one label")
    first = [0]
    for step in range(1, k):  # 0, 1, k-1, 2, k-2, …
        first.append((step + 1) // 2 if step % 2 else k - step // 2)
    square = [tuple((x + i) % k for x in first) for i in range(k)]
    rows: list[tuple[int, ...]] = []
    for row in square:
        for candidate in (row, row[::-1]):
            if candidate not in rows:
                rows.append(candidate)
    return rows


def label_orders(labels: Sequence[str], rounds: int, rng: random.Random) -> list[Order]:
    """One order of `labels` per round: the design's rows, as many whole copies as fit, then
    rows in (row, reverse) pairs drawn at random; the labels given to the symbols at random and
    the rows to the rounds at random."""
    names = list(labels)
    rng.shuffle(names)
    rows = williams(len(names))
    chosen = rows * (rounds // len(rows))
    left = rounds % len(rows)
    if left:
        pairs = [rows[i:i + 2] for i in range(0, len(rows), 2)]
        rng.shuffle(pairs)
        chosen += [row for pair in pairs for row in pair][:left]
    rng.shuffle(chosen)
    return [tuple(names[i] for i in row) for row in chosen]


def plan(labels: Sequence[str], cells: int, rounds: int, seed: str,
         leading: Sequence[int] = (), keep_cells: bool = False) -> list[list[Visit]]:
    """Round by round, the cells in the order they are measured, each with its labels' order.

    `leading`: cells measured first in every round, in their own order (a capacity the later
    cells take shares of); `keep_cells`: the cells in their given order (a one-round block whose
    first case measures from the subject's start). Each cell has its own balanced design."""
    rng = random.Random(f"pairs-{seed}")
    orders = [label_orders(labels, rounds, rng) for _ in range(cells)]
    out = []
    for rnd in range(rounds):
        rest = [c for c in range(cells) if c not in leading]
        if not keep_cells:
            rng.shuffle(rest)
        out.append([(c, orders[c][rnd]) for c in [*leading, *rest]])
    return out


def again(labels: Sequence[str], cells: Sequence[tuple[int, str]],
          seed: str) -> list[tuple[int, str, Order]]:
    """The (round, cell) pairs measured again (busy the first time), in the order given, each
    with a fresh order of all the labels, balanced over them as a round's are over rounds."""
    orders = label_orders(labels, len(cells), random.Random(f"again-{seed}"))
    return [(rnd, cell, order) for (rnd, cell), order in zip(cells, orders, strict=True)]

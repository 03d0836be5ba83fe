"""Which turn a block runs next: its rounds in the run's order, then what a busy machine spoiled.

A turn is one label measuring some of a block's cells in one round (`BlockDriver.turn`). Under
the `pairs` order (a block it pairs: `plan` not empty) a turn is one cell, and a round's turns
follow `run/design.py`'s plan; otherwise a turn is all of a label's cells, the labels rotated,
shuffled, fixed or (`pairs` in a block it cannot pair) in the design's balanced order. Every
order comes from the recorded `method.seed`, so `run.json` alone gives it back.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from perfpages.archive import preflight
from perfpages.archive.manifest import Method
from perfpages.archive.window import Window, params_key
from perfpages.run import design

Plan = list[list[tuple[str, design.Order]]]  # round by round: (cell, its labels' order)
Turn = tuple[int, str, frozenset[str] | None]  # (round, label, its cells; None: all)


def order(labels: list[str], method: Method, block_index: int, rnd: int,
          rounds: int | None = None) -> list[str]:
    """The labels' turns in round `rnd` of a block of `rounds` (a block that cannot run
    `pairs` cell by cell takes the design's balanced orders, label by label)."""
    if method.order == "pairs":
        rng = random.Random(f"pairs-{method.seed}-{block_index}-labels")
        return list(design.label_orders(labels, rounds or method.rounds, rng)[rnd - 1])
    if method.order == "shuffle":
        shuffled = list(labels)
        random.Random(f"{method.seed}-{block_index}-{rnd}").shuffle(shuffled)
        return shuffled
    if method.order == "fixed":
        return list(labels)
    shift = (rnd - 1 + block_index) % len(labels)
    return labels[shift:] + labels[:shift]


def plan(cells: list[tuple[str, bool]], method: Method, block_index: int, rounds: int,
         labels: list[str]) -> Plan:
    """The `pairs` order of a block whose cells are `cells` (`BlockDriver.cells`): round by
    round, its cells each with its labels' order. A capacity case leads its round; a one-round
    block keeps its cells' order (its first case measures from the subject's start)."""
    visits = design.plan(labels, len(cells), rounds, f"{method.seed}-{block_index}",
                         leading=[i for i, (_, lead) in enumerate(cells) if lead],
                         keep_cells=rounds == 1)
    return [[(cells[c][0], labels_order) for c, labels_order in rnd] for rnd in visits]


def turns(paired: Plan, labels: list[str], method: Method, block_index: int,
          rounds: int) -> Iterator[Turn]:
    """The block's first attempts, in the run's order."""
    for rnd in range(1, rounds + 1):
        if paired:  # cell by cell, every label's window of the cell back to back
            for cell, labels_order in paired[rnd - 1]:
                for name in labels_order:
                    yield rnd, name, frozenset({cell})
        else:
            for name in order(labels, method, block_index, rnd, rounds):
                yield rnd, name, None


def again(windows: list[Window], block: str, paired: Plan, labels: list[str], method: Method,
          block_index: int, rounds: int) -> Iterator[Turn]:
    """What the block measures again after its last round (found when first asked for)."""
    if paired:
        for rnd, cell, labels_order in busy_cells(windows, block, labels, method, block_index,
                                                  paired):
            for name in labels_order:
                yield rnd, name, frozenset({cell})
    else:
        yield from busy(windows, block, labels, method, block_index, rounds)


def _busy(windows: list[Window], block: str) -> list[Window]:
    """The block's first-attempt measured windows the machine made busy
    (`archive.preflight.busy`: others' CPU or steal above `archive.vocabulary`'s thresholds)."""
    return [w for w in windows if w.kind == "measure" and w.block == block and w.attempt == 1
            and w.status == "ok" and preflight.busy(w.machine)]


def busy_cells(windows: list[Window], block: str, labels: list[str], method: Method,
               block_index: int, paired: Plan) -> list[tuple[int, str, design.Order]]:
    """Under `pairs`: each (round, cell) any of whose measured windows were busy, in the order
    they ran, with a fresh balanced order of all the block's labels: every label's window of
    the cell is measured again, back to back, so the pairs stay adjacent and the analysis
    counts the second attempt of all of them."""
    found = {(w.round, params_key(w.params)) for w in _busy(windows, block)}
    ran = [(rnd, cell) for rnd, visits in enumerate(paired, 1) for cell, _ in visits
           if (rnd, cell) in found]
    return design.again(labels, ran, f"{method.seed}-{block_index}")


def busy(windows: list[Window], block: str, labels: list[str], method: Method,
         block_index: int, rounds: int | None = None) -> list[tuple[int, str, frozenset[str]]]:
    """Under the other orders: (round, label, parameter sets) whose measured windows were
    busy, in the order they ran: each is measured once more, busy or not the second time."""
    found: dict[tuple[int, str], set[str]] = {}
    for w in _busy(windows, block):
        found.setdefault((w.round, w.label), set()).add(params_key(w.params))
    out = []
    for rnd in sorted({r for r, _ in found}):
        for name in order(labels, method, block_index, rnd, rounds):
            if (rnd, name) in found:
                out.append((rnd, name, frozenset(found[(rnd, name)])))
    return out

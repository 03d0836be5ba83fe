"""Consistency across the blocks of one run: where two blocks measured the same configuration,
what each measured, and how far apart they are — a fact about the machine over the run, shown
on the run's page, never a verdict.

Two blocks measured the same configuration when the same label ran the same case (identical
parameters) and did the same work per call: the counters noise cannot move (statements and
bytes per call, `WORK`) agree within `SAME_WORK`. Parameters alone do not tell a case apart
(sizing's `mix` and `aggregate` both run at `clients=8`, two different workloads), so cells
without those counters are never grouped: a table that cannot be sure says nothing.
"""

from __future__ import annotations

from typing import Any

from perfpages.analysis.changes import cell_text
from perfpages.analysis.decision import Cell, percent_change
from perfpages.analysis.metric import block_metrics
from perfpages.archive.manifest import Manifest

WORK = ("statements", "received_bytes", "sent_bytes")  # per call: the case, not the machine
SAME_WORK = 0.05  # the largest difference of a work counter's medians between blocks
TEXT = ("Blocks of this run that measured the same configuration (the same label and "
        f"parameters, and within {SAME_WORK:.0%} the same statements and bytes per call): each "
        "block's median with its range, and the spread, the lowest block's median against the "
        "highest's. Their windows ran at different times of the run: the spread is what the "
        "machine moved between them")

Cells = dict[tuple[str, str, str, str], Cell]  # (block, parameters, label, metric)


def _same_work(cells: Cells, a: tuple[str, str, str], b: tuple[str, str, str]) -> bool:
    """Blocks `a` and `b` (block, parameters, label) did the same work per call: every work
    counter both measured agrees, and they measured at least one."""
    known = 0
    for metric in WORK:
        x, y = cells.get((*a, metric)), cells.get((*b, metric))
        if x is None or y is None:
            continue
        known += 1
        top = max(abs(x.median), abs(y.median))
        if top and abs(x.median - y.median) > SAME_WORK * top:
            return False
    return known > 0


def rows(manifest: Manifest, cells: Cells,
         blocks: dict[str, tuple[list[str], set[str]]]) -> list[dict[str, Any]]:
    """One row per configuration (parameters, label, metric) measured by two blocks or more,
    on the metrics each block's tables show, in archive order: each block's median and cell,
    and the spread in percent (lowest median against highest)."""
    shown = {block: set(block_metrics(manifest, block, present))
             for block, (_, present) in blocks.items()}
    groups: dict[tuple[str, str, str], list[str]] = {}
    for (block, pkey, label, metric) in cells:
        if pkey and metric in shown.get(block, ()):
            groups.setdefault((pkey, label, metric), []).append(block)
    out = []
    for (pkey, label, metric), found in groups.items():
        first = (found[0], pkey, label)
        same = [b for b in found if _same_work(cells, first, (b, pkey, label))]
        if len(same) < 2:
            continue
        medians = {b: cells[b, pkey, label, metric].median for b in same}
        high, low = max(medians.values()), min(medians.values())
        out.append({"parameters": pkey, "label": label, "metric": metric,
                    "blocks": [{"block": b, "median": medians[b],
                                "cell": cell_text(cells[b, pkey, label, metric])}
                               for b in same],
                    "spread_percent": percent_change(high, low) if high else None})
    return out

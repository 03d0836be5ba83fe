"""The changes `bench report` lists: every label against the base in every cell, with verdicts.

Under the ranges rule (runs archived before method v2) a row is the ratio of medians and its
verdict, as always. Under an exact rule the row also carries the exact interval of the shift,
the p-value and the resolution (with the run's A/A pair, `certification.resolution`), and the
report's JSON carries the raw numbers beside the printed text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from perfpages.analysis import certification
from perfpages.analysis.decision import Cell, Change, Rule
from perfpages.analysis.format import (
    format_change,
    format_p,
    format_percent,
    format_range,
    format_resolution,
)
from perfpages.analysis.metric import block_metrics, default_digits, format_number, info
from perfpages.analysis.tidy import Tidy
from perfpages.archive.manifest import Manifest
from perfpages.archive.reader import Run

Found = certification.Found
COLUMNS = ["block", "parameters", "metric", "labels", "base", "other", "change", "verdict"]
EXACT_COLUMNS = ["block", "parameters", "metric", "labels", "base", "other", "change (interval)",
                 "p", "resolves", "verdict"]


def cell_text(cell: Cell, digits: int | None = None) -> str:
    if cell.n == 1 and not cell.given:  # a summary's given range prints, as its source's
        return format_number(cell.median, digits)
    if digits is None and cell.min != cell.max and format_number(cell.min) == format_number(
            cell.max):
        # Rounds that differ never print as "1.00 (1.00–1.00)": up to three more decimals.
        start = digits = default_digits(cell.median)
        while digits < start + 3 and format_number(cell.min, digits) == format_number(
                cell.max, digits):
            digits += 1
    return (f"{format_number(cell.median, digits)} "
            f"({format_number(cell.min, digits)}–{format_number(cell.max, digits)})")


def metric_header(metric: str) -> str:
    unit = info(metric).unit
    return f"{metric} ({unit})" if unit else metric


Chooser = Callable[[Manifest, str, set[str]], list[str]]  # a block's metrics, in order


def changes(run: Run, tidy: Tidy, pairs: list[tuple[str, str]], rule: Rule,
            chosen: Chooser = block_metrics) -> list[Found]:
    """(block, parameters, "other vs base", change) for every pair in every cell the block's
    metrics (those its tables show, or `chosen`'s) with a better direction hold."""
    cells = tidy.cells
    out = []
    for block, (params, present) in tidy.blocks.items():
        metrics = [m for m in chosen(run.manifest, block, present)
                   if info(m).higher_is_better is not None]
        for pkey in params:
            for metric in metrics:
                for base, other in pairs:
                    a = cells.get((block, pkey, base, metric))
                    b = cells.get((block, pkey, other, metric))
                    if a and b:
                        out.append((block, pkey, f"{other} vs {base}",
                                    Change(metric, a, b, rule)))
    return out


def table(found: list[Found], rule: Rule, aa: list[Found]) -> dict[str, Any]:
    """The changes table as `bench report` prints it (columns, rows, summary); under an exact
    rule also `items`, each row's raw numbers."""
    if not rule.exact:
        rows = [[block, pkey, metric_header(c.metric), pair, cell_text(c.base),
                 cell_text(c.other), format_percent(c.percent), c.verdict]
                for block, pkey, pair, c in found]
        return {"columns": COLUMNS, "rows": rows, "summary": summary(found)}
    index = certification.aa_index(aa)
    rows, items = [], []
    for block, pkey, pair, c in found:
        res = certification.resolution(index, block, pkey, c)
        rows.append([block, pkey, metric_header(c.metric), pair, cell_text(c.base),
                     cell_text(c.other), format_change(c), format_p(c.p),
                     format_resolution(res), c.verdict])
        low, high = c.interval or (None, None)
        items.append({"block": block, "parameters": pkey, "metric": c.metric, "pair": pair,
                      "percent": certification.finite(c.percent),
                      "low_percent": certification.finite(low),
                      "high_percent": certification.finite(high), "p": c.p,
                      "resolution_percent": certification.finite(res),
                      "own_resolution_percent": certification.finite(c.resolution),
                      "rounds": c.rounds, "clear": c.clear, "verdict": c.verdict})
    return {"columns": EXACT_COLUMNS, "rows": rows, "summary": summary(found, index),
            "items": items}


def summary(found: list[Found], index: certification.AAIndex | None = None) -> list[str]:
    """Per block, label pair and metric: the range of the changes with how many are clear;
    under an exact rule (`index`, the A/A pairs' resolutions) also what they resolve at worst."""
    return [line for line, _ in summary_lines(found, index)]


def summary_lines(found: list[Found],
                  index: certification.AAIndex | None = None) -> list[tuple[str, int]]:
    """`summary`'s lines with their clear counts."""
    groups: dict[tuple[str, str, str], list[Found]] = {}
    for f in found:
        groups.setdefault((f[0], f[2], f[3].metric), []).append(f)
    out = []
    for (block, pair, metric), group in groups.items():
        clear = sum(f[3].clear for f in group)
        tail = ""
        if index is not None:
            res, _ = certification.worst(index, group)
            tail = f"; resolves {format_resolution(res)}"
        out.append((f"{block}: {pair}, {metric}: {format_range([f[3] for f in group])} "
                    f"({clear} of {len(group)} clear{tail})", clear))
    return out

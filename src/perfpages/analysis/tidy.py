"""A run's tidy rows as the report reads them: cells, blocks and floors indexed in one pass over
the plain rows (`analysis.rows.rows`). Filtering a DataFrame for every table, knee and floor
cost a run page more than the rest of its report."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from functools import cached_property
from typing import Any

from perfpages.analysis.decision import Cell
from perfpages.analysis.rows import rows
from perfpages.analysis.transcribed import given_cells
from perfpages.archive.manifest import Source
from perfpages.archive.reader import Run

Row = dict[str, Any]
CellKey = tuple[str, str, str, str]  # (block, parameters, label, metric)


class Tidy:
    """Rows of one run, or of labels of several (`crossrun`), in the order `rows` gives them:
    one per (run, kind, block, label, round, parameters, metric), each parameter a key too."""

    def __init__(self, rows: list[Row], source: Source | None = None) -> None:
        self.rows = rows
        self.source = source  # a transcribed run's: its given ranges make its cells

    @classmethod
    def of(cls, run: Run, kinds: Iterable[str] = ("measure", "floor")) -> Tidy:
        return cls(rows(run, kinds), run.manifest.source)

    @cached_property
    def measured(self) -> list[Row]:
        return [r for r in self.rows if r["kind"] == "measure"]

    @cached_property
    def floors(self) -> list[Row]:
        return [r for r in self.rows if r["kind"] == "floor"]

    @cached_property
    def cells(self) -> dict[CellKey, Cell]:
        """Every measured cell, its values in round order (the windows of one round in their
        order), in the order the rows first name them."""
        groups: dict[CellKey, list[tuple[int, float]]] = {}
        for r in self.measured:
            key = (r["block"], r["parameters"], r["label"], r["metric"])
            groups.setdefault(key, []).append((int(r["round"]), float(r["value"])))
        out = {}
        for key, pairs in groups.items():
            pairs.sort(key=lambda p: p[0])  # stable
            out[key] = Cell(tuple(v for _, v in pairs), tuple(r for r, _ in pairs))
        return given_cells(self.source, out)

    def cells_of(self, *metrics: str) -> dict[CellKey, Cell]:
        """The measured cells of these metrics, in the same order."""
        return {key: c for key, c in self.cells.items() if key[3] in metrics}

    @cached_property
    def blocks(self) -> dict[str, tuple[list[str], set[str]]]:
        """Each measured block, in order: its parameter sets in order, and its metrics."""
        found: dict[str, tuple[dict[str, None], set[str]]] = {}
        for r in self.measured:
            params, metrics = found.setdefault(r["block"], ({}, set()))
            params[r["parameters"]] = None
            metrics.add(r["metric"])
        return {block: (list(params), metrics) for block, (params, metrics) in found.items()}


def median(values: Iterable[float]) -> float | None:
    """The median of the values that are numbers (None when none is), as pandas skips NaN."""
    kept = [v for v in values if not math.isnan(v)]
    return statistics.median(kept) if kept else None

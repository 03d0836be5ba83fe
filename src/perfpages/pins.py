"""The runs one page pins (front matter `runs: {alias: run-id}`) and the cells macros select."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from perfpages.analysis import Cell, check_comparable
from perfpages.errors import AnalysisError, PerfpagesError
from perfpages.store import Loaded, RunStore

# Dimensions a table can lay out besides the run's own parameters.
FIXED_DIMENSIONS = ("run", "block", "label", "metric", "parameters")
_FRAME_COLUMNS = ("run", "kind", "block", "label", "round", "parameters", "metric", "value")


@dataclass(frozen=True)
class Found:
    """One cell: the rounds of (run, block, parameters, label, metric)."""

    run: str  # the page's alias
    block: str
    parameters: str
    label: str
    metric: str
    params: Mapping[str, Any]
    cell: Cell

    def value(self, dimension: str) -> Any:
        if dimension in FIXED_DIMENSIONS:
            return getattr(self, dimension)
        if dimension not in self.params:
            raise AnalysisError(f"no dimension {dimension!r} in block {self.block!r}",
                                fix="use run, block, label, metric, parameters or a parameter "
                                    f"of the block ({', '.join(self.params) or 'none'})")
        return self.params[dimension]

    def describe(self, *skip: str) -> str:
        """Where the cell is, for a claim's data: 'callers: call=lookup, callers=32, v1.1'."""
        parts = [getattr(self, d) for d in ("block", "parameters", "label") if d not in skip]
        return ", ".join(p for p in parts if p)


def parse_front_matter(meta: Mapping[str, Any], where: str) -> dict[str, str]:
    """`runs:` as {alias: id} or [id, …] (the id is then its own alias); {} when absent."""
    raw = meta.get("runs")
    if raw is None:
        return {}
    if isinstance(raw, list) and all(isinstance(r, str) for r in raw):
        return {r: r for r in raw}
    if isinstance(raw, dict) and all(isinstance(k, str) for k in raw):
        return {k: str(v) for k, v in raw.items()}
    raise PerfpagesError("runs must map aliases to run ids", where=where, key="runs",
                         fix="write it as `runs: {new: 2026-11-01-suite}` or a list of ids")


def _number(value: Any) -> Any:
    """Parameter values as archived: 32.0 in a float column was the integer 32."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _matches(column: pd.Series, value: Any) -> pd.Series:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return pd.to_numeric(column, errors="coerce") == float(value)
    return column.astype(str) == str(value)


class Pins:
    """A page's pinned runs, by alias, with the selection every macro and claim uses."""

    def __init__(self, runs: dict[str, Loaded]) -> None:
        self.runs = runs

    @classmethod
    def load(cls, store: RunStore, aliases: dict[str, str], where: str,
             lines: Mapping[str, int]) -> Pins:
        return cls({alias: store.pin(run_id, where=where, line=lines.get(alias), alias=alias)
                    for alias, run_id in aliases.items()})

    def aliases(self, run: str | Iterable[str] | None) -> list[str]:
        if run is None:
            if len(self.runs) == 1:
                return list(self.runs)
            raise AnalysisError(f"the page pins {len(self.runs)} runs",
                                fix=f"name one with run=… ({', '.join(self.runs)})")
        names = [run] if isinstance(run, str) else list(run)
        for name in names:
            if name not in self.runs:
                raise AnalysisError(f"no pinned run {name!r}",
                                    fix=f"pin it in the front matter, or use one of: "
                                        f"{', '.join(self.runs) or 'none'}")
        if len(names) > 1:
            check_comparable([self.runs[n].run.manifest for n in names])
        return names

    def labels(self, alias: str) -> list[str]:
        return list(self.runs[alias].run.manifest.labels)

    def select(self, *, metric: str, run: str | Iterable[str] | None = None,
               block: str | None = None, label: str | Iterable[str] | None = None,
               where: Mapping[str, Any] | None = None,
               up_to: Mapping[str, float] | None = None,
               from_: Mapping[str, float] | None = None) -> list[Found]:
        """Every measured cell of `metric` matching the filters, in archive order."""
        found: list[Found] = []
        for alias in self.aliases(run):
            frame = self.runs[alias].frame
            rows = frame[(frame["kind"] == "measure") & (frame["metric"] == metric)]
            if block is not None:
                rows = rows[rows["block"] == block]
            if label is not None:
                wanted = [label] if isinstance(label, str) else list(label)
                unknown = [w for w in wanted if w not in self.labels(alias)]
                if unknown:
                    raise AnalysisError(f"no label {unknown[0]!r} in run {alias!r}",
                                        fix=f"use one of: {', '.join(self.labels(alias))}")
                rows = rows[rows["label"].isin(wanted)]
            for name, value in (where or {}).items():
                self._has(frame, name)
                rows = rows[_matches(rows[name], value)]
            for bound, sign in ((up_to, 1), (from_, -1)):
                for name, limit in (bound or {}).items():
                    self._has(frame, name)
                    numbers = pd.to_numeric(rows[name], errors="coerce")
                    rows = rows[sign * numbers <= sign * float(limit)]
            param_names = [c for c in frame.columns if c not in _FRAME_COLUMNS]
            for (blk, pkey, lab), group in rows.groupby(["block", "parameters", "label"],
                                                        sort=False):
                first = group.iloc[0]
                params = {p: _number(first[p]) for p in param_names if pd.notna(first[p])}
                values = tuple(group.sort_values("round")["value"].tolist())
                found.append(Found(alias, blk, pkey, lab, metric, params, Cell(values)))
        if not found:
            self._explain(metric, run, block, label, where)
        return found

    @staticmethod
    def _has(frame: pd.DataFrame, name: str) -> None:
        if name not in frame.columns:
            params = [c for c in frame.columns if c not in _FRAME_COLUMNS]
            raise AnalysisError(f"no parameter {name!r} in the run",
                                fix=f"use one of: {', '.join(params) or 'none'}")

    def _explain(self, metric: str, run: Any, block: str | None, label: Any,
                 where: Mapping[str, Any] | None) -> None:
        metrics = sorted({m for a in self.aliases(run) for m in
                          self.runs[a].frame.query("kind == 'measure'")["metric"].unique()})
        if metric not in metrics:
            raise AnalysisError(f"no metric {metric!r} in the data",
                                fix=f"use one of: {', '.join(metrics)}")
        blocks = sorted({b for a in self.aliases(run) for b in
                         self.runs[a].frame.query("kind == 'measure'")["block"].unique()})
        if block is not None and block not in blocks:
            raise AnalysisError(f"no block {block!r} in the data",
                                fix=f"use one of: {', '.join(blocks)}")
        filters = ", ".join(f"{k}={v}" for k, v in (where or {}).items())
        raise AnalysisError(f"no cells of {metric!r} match" + (f" {filters}" if filters else "")
                            + (f" for label {label!r}" if label else ""),
                            fix="check the names against `invoke bench.report`")

    def pairs(self, base: str, other: str, *, metric: str, **filters: Any) -> list[
            tuple[Found, Found]]:
        """(base, other) cells that differ only in their label, in archive order."""
        found = self.select(metric=metric, label=[base, other], **filters)
        by_key: dict[tuple[str, str, str], dict[str, Found]] = {}
        for f in found:
            by_key.setdefault((f.run, f.block, f.parameters), {})[f.label] = f
        out = [(pair[base], pair[other]) for pair in by_key.values()
               if base in pair and other in pair]
        if not out:
            raise AnalysisError(f"no cells of {metric!r} hold both {base!r} and {other!r}",
                                fix="check the labels and filters against `invoke bench.report`")
        return out

    def min_rounds(self, alias: str) -> int:
        return self.runs[alias].run.manifest.method.min_rounds

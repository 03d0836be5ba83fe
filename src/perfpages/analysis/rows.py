"""The plain rows of a run: one per (run, block, label, round, parameters, metric), by the rule
every reader counts a run by (`counted`: which windows count; `round_metrics`: a round's value
of every metric); the tidy DataFrame of `perfpages.load`, and cells and changes selected from
it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from statistics import fmean
from typing import TYPE_CHECKING, Any

from perfpages.analysis.decision import RANGES, Cell, Change, Rule
from perfpages.archive.histogram import Latency
from perfpages.archive.reader import Run, open_run
from perfpages.archive.window import Window, params_key
from perfpages.errors import AnalysisError

if TYPE_CHECKING:  # pandas loads with the first DataFrame: a run page's report needs none
    import pandas as pd

COLUMNS = ["run", "kind", "block", "label", "round", "parameters", "metric", "value"]


def round_metrics(windows: list[Window]) -> dict[str, float]:
    """One round's value of every metric: counts summed, throughput over the summed duration,
    percentiles from the merged histogram (never an average of percentiles), others averaged."""
    ok = [w for w in windows if w.status == "ok"]
    out: dict[str, float] = {"failed_windows": float(len(windows) - len(ok))}
    counted = [w for w in ok if w.requests is not None]
    if counted:
        requests = sum(w.requests or 0 for w in counted)
        duration = sum(w.duration_s for w in counted)
        errors = sum(w.errors for w in counted)
        non_2xx = sum(n for w in counted for code, n in w.codes.items() if not code.startswith("2"))
        out.update(requests=float(requests), errors=float(errors), non_2xx=float(non_2xx))
        if duration > 0:
            out["throughput"] = requests / duration
        if requests:
            out["error_rate"] = 100.0 * errors / requests
    elif any(w.throughput is not None for w in ok):
        out["throughput"] = fmean(w.throughput for w in ok if w.throughput is not None)
    failed_errors = sum(w.errors for w in windows if w.status == "failed")
    if failed_errors:
        out["errors"] = out.get("errors", 0.0) + failed_errors
    latencies = [w.latency for w in ok if w.latency is not None]
    if latencies:
        # read only here: a round of one window needs no copy of its histogram
        merged = latencies[0] if len(latencies) == 1 else Latency.merged(latencies)
        out.update(merged.summary_ms())
        low = merged.min_ms()
        if low is not None:  # the histogram's minimum: never archived beside the percentiles
            out["min"] = low
    custom: dict[str, list[float]] = defaultdict(list)
    for w in ok:
        for name, value in w.metrics.items():
            if value is not None:
                custom[name].append(float(value))
    out.update({name: fmean(values) for name, values in custom.items()})
    return out


def counted(windows: Iterable[Window]) -> list[Window]:
    """The windows the analysis counts: of each cell (kind, block, label, round, parameters),
    only its last attempt. Method v2 measures a cell again at the end of its block when the
    machine was busy during it (`Window.attempt` 2); the re-measure replaces the original even
    when it was busy too, and the original stays archived. Under the `pairs` order (method
    v2.1) a busy (round, cell) is measured again for every label, so every label of the cell
    is counted from its attempt 2 and the pairs stay paired; runs archived before re-measured
    a label alone and are counted as they always were. Every table, report, page, chart and
    claim reads cells through here, so they all count the same windows."""
    windows = list(windows)
    last: dict[tuple[Any, ...], int] = {}
    for w in windows:
        cell = (w.kind, w.block, w.label, w.round, params_key(w.params))
        last[cell] = max(last.get(cell, 1), w.attempt)
    return [w for w in windows
            if w.attempt == last[(w.kind, w.block, w.label, w.round, params_key(w.params))]]


def rows(run: Run, kinds: Iterable[str] = ("measure", "floor")) -> list[dict[str, Any]]:
    """One row per (kind, block, label, round, parameters, metric), computed once per opened
    run and kinds: merging histograms is the costly part of reading a run, and a run page's
    tables, warnings and cells all read the same rows."""
    wanted = frozenset(kinds)
    # A row's group includes its kind, so the rows of fewer kinds are those of more kinds
    # filtered, in the same order: measured and floor rows are computed once for all readers.
    both = frozenset(("measure", "floor"))
    key = ("rows", both if wanted <= both else wanted)
    if key not in run.derived:
        run.derived[key] = _rows(run, key[1])
    return [dict(row) for row in run.derived[key]  # type: ignore[attr-defined]
            if row["kind"] in wanted]


def _rows(run: Run, wanted: frozenset[str]) -> list[dict[str, Any]]:
    groups: dict[tuple[Any, ...], list[Window]] = defaultdict(list)
    params: dict[tuple[Any, ...], dict[str, Any]] = {}
    for w in counted(run.windows):
        if w.kind in wanted:
            # A round's windows are one value of the round; a floor has no rounds, and each of
            # its one-second windows is a value (its row's `round` is the window's index): the
            # floor's median and range, never one mean, decide drift (method.md).
            rnd = w.window if w.kind == "floor" else w.round
            key = (w.kind, w.block, w.label, rnd, params_key(w.params))
            groups[key].append(w)
            params[key] = w.params
    out = []
    given = run.manifest.scope == "transcribed"  # its source's figures only: none made up
    for key, windows in groups.items():
        kind, block, label, rnd, pkey = key
        for metric, value in round_metrics(windows).items():
            if given and metric == "failed_windows":
                continue
            out.append({"run": run.id, "kind": kind, "block": block, "label": label,
                        "round": rnd, "parameters": pkey, "metric": metric, "value": value,
                        **params[key]})
    return out


def load(runs: Run | Path | str | Iterable[Run | Path | str],
         kinds: Iterable[str] = ("measure", "floor")) -> pd.DataFrame:
    """A tidy DataFrame of one or several runs; each parameter also gets its own column."""
    import pandas as pd

    if isinstance(runs, Run | Path | str):
        runs = [runs]
    records: list[dict[str, Any]] = []
    for item in runs:
        run = item if isinstance(item, Run) else open_run(item)
        records.extend(rows(run, kinds))
    frame = pd.DataFrame.from_records(records)
    if frame.empty:
        return pd.DataFrame(columns=COLUMNS)
    extra = [c for c in frame.columns if c not in COLUMNS]
    return frame[COLUMNS + extra]


def cells(frame: pd.DataFrame) -> pd.DataFrame:
    """median, min, max and n per (block, parameters, label, metric) of measured rounds."""
    data = frame[frame["kind"] == "measure"] if "kind" in frame else frame
    keys = ["block", "parameters", "label", "metric"]
    grouped = data.groupby(keys, sort=False)["value"]
    out = grouped.agg(["median", "min", "max", "count"]).rename(columns={"count": "n"})
    return out.reset_index()


def select(frame: pd.DataFrame, *, block: str | None = None, label: str | None = None,
           metric: str | None = None, kind: str = "measure",
           params: dict[str, Any] | None = None, run: str | None = None) -> pd.DataFrame:
    """Rows matching every given dimension; parameters match by their own columns."""
    import pandas as pd

    mask = pd.Series(True, index=frame.index)
    for column, value in (("kind", kind), ("block", block), ("label", label),
                          ("metric", metric), ("run", run)):
        if value is not None:
            mask &= frame[column] == value
    for name, value in (params or {}).items():
        if name not in frame:
            raise AnalysisError(f"no parameter {name!r} in the data", key=name)
        mask &= frame[name].astype(str) == str(value)
    return frame[mask]


def cell(frame: pd.DataFrame, *, block: str, label: str, metric: str,
         params: dict[str, Any] | None = None, run: str | None = None) -> Cell:
    rows = select(frame, block=block, label=label, metric=metric, params=params, run=run)
    if rows.empty:
        where = ", ".join(f"{k}={v}" for k, v in (params or {}).items())
        raise AnalysisError(
            f"no data for block {block!r}, label {label!r}, metric {metric!r}"
            + (f" at {where}" if where else ""),
            fix="check the names against `invoke bench.report`")
    if rows["parameters"].nunique() > 1:
        choices = "; ".join(sorted(rows["parameters"].unique())[:4])
        raise AnalysisError(f"several parameter sets match ({choices})",
                            fix="name the parameters that pick one")
    ordered = rows.sort_values("round")
    return Cell(tuple(ordered["value"].tolist()), tuple(int(r) for r in ordered["round"]))


def change(frame: pd.DataFrame, *, block: str, base: str, other: str, metric: str,
           params: dict[str, Any] | None = None, rule: Rule = RANGES) -> Change:
    return Change(metric, cell(frame, block=block, label=base, metric=metric, params=params),
                  cell(frame, block=block, label=other, metric=metric, params=params), rule)

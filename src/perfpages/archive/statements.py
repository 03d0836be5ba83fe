"""One label's pg_stat_statements figures of a block read back (diagnostics/BLOCK/LABEL/
summary.json) with the number of calls it served while the counters ran: the material of
`perfpages.analysis.statements`. No psycopg here.

Runs from before the summaries kept every statement (`statements.all`) kept only the top 10 by
total and by mean time: their union is read, and `complete` says whether it holds every
statement (it does when fewer than ten were ranked by total time). The calls served are
recorded in the summary since then (`served`); for older runs they are counted from
results.jsonl the way the counters were read: an HTTP turn's snapshots span its warm-up and
its measured windows, a pgbench turn's only the measured ones (taken after the warm-up).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from perfpages.archive import files
from perfpages.archive.manifest import Manifest
from perfpages.archive.reader import RESULTS_FILE, path_part
from perfpages.archive.window import Window
from perfpages.errors import ArchiveError

OLD_TOP = 10  # statements per ranked list in summaries without `all`
FIELDS = ("calls", "total_ms", "rows", "shared_blks_hit", "shared_blks_read")
_FIX = "it is not a summary bench.run wrote: restore the run from git"


class Archived(Protocol):
    """A run as `open_run` gives it (`reader.Run`) or as the site keeps it (`store.Loaded`)."""

    @property
    def path(self) -> Path: ...

    @property
    def manifest(self) -> Manifest: ...


@dataclass(frozen=True)
class Statement:
    """A statement's deltas over a block for one label (sums over its turns)."""
    queryid: str
    query: str
    calls: float
    total_ms: float
    rows: float
    shared_blks_hit: float
    shared_blks_read: float


@dataclass(frozen=True)
class LabelStatements:
    """What one label's summary says of its statements."""
    block: str
    label: str
    where: str  # the summary's path inside the run, for messages
    statements: tuple[Statement, ...]
    served: int  # calls (requests, transactions) served while the counters ran
    complete: bool  # every statement it ran (False: only those ranked in the top lists)
    plans: dict[str, str] = field(default_factory=dict)  # queryid -> file beside the summary
    unplanned: dict[str, str] = field(default_factory=dict)  # queryid -> why no plan


def spanned(window: Window, http: bool) -> bool:
    """Whether the pg_stat_statements counters of a turn span this window (see the module)."""
    return window.kind == "measure" or (http and window.kind == "warmup")


def served(windows: Iterable[Window], block: str, label: str, http: bool) -> int:
    """Calls a label served in a block while its counters ran: requests (HTTP) or
    transactions (pgbench) of the windows they span, re-measured ones included."""
    return sum(w.requests or 0 for w in windows
               if w.block == block and w.label == label and spanned(w, http))


def windows_of(run: Archived) -> Sequence[Window]:
    """The run's windows: a `reader.Run`'s own, else results.jsonl read again for what counting
    calls needs (a run the site holds was validated when it was loaded; a line that does not
    parse is left out, never fatal here)."""
    own = getattr(run, "windows", None)
    if own is not None:
        return list(own)
    out = []
    for line in files.read_text(run.path, RESULTS_FILE).splitlines():
        try:
            d = json.loads(line)
            out.append(Window(d["block"], d["label"], int(d["round"]), {}, "", 0.0,
                              kind=d["kind"], requests=d.get("requests"),
                              codes=d.get("codes") or {}))
        except (ValueError, KeyError, TypeError):
            continue
    return out


def _is_http(windows: Sequence[Window], block: str) -> bool:
    """An HTTP block's windows count status codes; pgbench's never do."""
    return any(w.codes for w in windows if w.block == block)


def _bad(where: str, key: str, what: str) -> ArchiveError:
    return ArchiveError(what, where=where, key=key, fix=_FIX)


def _statement(row: Any, where: str, key: str) -> Statement:
    if not isinstance(row, dict) or not isinstance(row.get("query"), str):
        raise _bad(where, key, "a statement without its query text")
    values: dict[str, float] = {}
    for name in FIELDS:
        value = row.get(name, 0)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise _bad(where, f"{key}.{name}", f"{name} is not a count: {value!r}"[:120])
        values[name] = float(value)
    return Statement(queryid=str(row.get("queryid", "")), query=row["query"], **values)


def _rows(data: dict[str, Any], where: str) -> tuple[list[Statement], bool]:
    ranked = data.get("statements")
    if not isinstance(ranked, dict):
        raise _bad(where, "statements", "no statements object")
    if "all" in ranked:
        lists, complete = {"all": ranked["all"]}, not ranked.get("all_omitted")
    else:
        lists = {k: ranked.get(k, []) for k in ("by_total_time", "by_mean_time")}
        total = lists["by_total_time"]
        complete = isinstance(total, list) and len(total) < OLD_TOP
    seen: dict[str, Statement] = {}
    for name, rows in lists.items():
        if not isinstance(rows, list):
            raise _bad(where, f"statements.{name}", "not a list")
        for i, row in enumerate(rows):
            s = _statement(row, where, f"statements.{name}.{i}")
            seen.setdefault(s.queryid or s.query, s)
    return list(seen.values()), complete


def _mapping(data: dict[str, Any], key: str, where: str) -> dict[str, str]:
    value = data.get(key, {})
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise _bad(where, key, "not a map of queryid to text")
    return {str(k): v for k, v in value.items()}


def summary_path(block: str, label: str) -> str:
    """Where a label's diagnostics of a block are summarised, in its run."""
    return f"diagnostics/{block}/{path_part(label)}/summary.json"


def read_label(run: Archived, block: str, label: str) -> LabelStatements | None:
    """A label's statements in a block; None when the run archived none (an older harness,
    a duet block, a server without pg_stat_statements). ArchiveError (one line) when the
    summary is unreadable or the block or label is not the run's."""
    if block not in run.manifest.blocks:
        raise ArchiveError(f"no block {block!r} in run {run.manifest.id}", where=run.path,
                           fix=f"name one of: {', '.join(run.manifest.blocks)}")
    if label not in run.manifest.labels:
        raise ArchiveError(f"no label {label!r} in run {run.manifest.id}", where=run.path,
                           fix=f"name one of: {', '.join(run.manifest.labels)}")
    rel = summary_path(block, label)
    if files.locate(run.path, rel) is None:
        return None
    where = f"{run.manifest.id}/{rel}"
    try:
        data = json.loads(files.read_text(run.path, rel))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ArchiveError(f"not JSON ({exc})"[:160], where=where, fix=_FIX) from None
    if not isinstance(data, dict):
        raise _bad(where, "", "not a JSON object")
    rows, complete = _rows(data, where)
    count = data.get("served")
    if count is None:
        windows = windows_of(run)
        count = served(windows, block, label, _is_http(windows, block))
    elif isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise _bad(where, "served", f"not a count of calls: {count!r}"[:120])
    return LabelStatements(block=block, label=label, where=where, statements=tuple(rows),
                           served=count, complete=complete,
                           plans=_mapping(data, "statement_plans", where),
                           unplanned=_mapping(data, "statement_plan_errors", where))


def read_plan(run_dir: Path, found: LabelStatements, queryid: str) -> Any | None:
    """The generic plan archived for a statement of the label (EXPLAIN FORMAT JSON), or None."""
    name = found.plans.get(queryid)
    if name is None or "/" in name:
        return None
    rel = f"diagnostics/{found.block}/{path_part(found.label)}/{name}"
    if files.locate(run_dir, rel) is None:
        return None
    try:
        return json.loads(files.read_text(run_dir, rel))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ArchiveError(f"not JSON ({exc})"[:160], where=f"{run_dir.name}/{rel}",
                           fix=_FIX) from None

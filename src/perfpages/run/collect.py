"""Collecting diagnostics per block and label: where the time went on the server.

Counters are read before and after the measured windows (from a connection to the `postgres`
database, so the harness's own queries never pollute the benchmark database's statistics) and
their deltas summed over the rounds: pg_stat_statements (ranked by total and by mean time),
pg_stat_database (buffer hit ratio, temp blocks, I/O timing) and pg_stat_io. Wait events are
sampled from pg_stat_activity while the windows run. EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) of
the suite's named queries is taken outside the timed windows, and so is EXPLAIN (GENERIC_PLAN)
of each label's costliest statements (`generic_plans`). Reading them back is
`perfpages.archive.diagnostics` and `perfpages.archive.statements` (no psycopg there).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg.rows import dict_row

STATEMENT_FIELDS = ("calls", "total_exec_time", "rows", "shared_blks_hit", "shared_blks_read",
                    "temp_blks_read", "temp_blks_written", "shared_blk_read_time")
DATABASE_FIELDS = ("xact_commit", "blks_hit", "blks_read", "temp_files", "temp_bytes",
                   "blk_read_time", "blk_write_time")
IO_FIELDS = ("reads", "read_time", "writes", "write_time", "extends", "hits", "evictions")
TOP = 10
# Every statement a label ran, for differences between labels (`perfpages.analysis.statements`):
# a subject runs tens; the cap only bounds a pathological one (literal-laden ad hoc SQL).
ALL = 200
PLANNED = 5  # statements per label given a generic plan: the costliest plannable ones
# What EXPLAIN can plan without running it: a plain statement, not BEGIN, SET, COPY, a utility.
_PLANNABLE = re.compile(r"\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b", re.IGNORECASE)
# What the harness reads while windows run (the wait sampler, this count): pg_stat_statements
# tracks those statements too, and statements per call count the subject's alone. (A marking
# comment would not do: pg_stat_statements drops a query's leading comment.)
HARNESS_READS = ("pg_stat_activity", "pg_stat_statements")

Snapshot = dict[str, Any]


def snapshot(conn: psycopg.Connection, database: str) -> Snapshot:
    """Counters of one database at one moment."""
    cur = conn.cursor(row_factory=dict_row)
    fields = ", ".join(f"sum(s.{f})::float8 AS {f}" for f in STATEMENT_FIELDS)
    statements = {
        str(r["queryid"]): r for r in cur.execute(
            f"SELECT s.queryid, min(s.query) AS query, {fields} FROM pg_stat_statements s "
            "JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = %s GROUP BY s.queryid",
            (database,)).fetchall()}
    db = cur.execute(f"SELECT {', '.join(DATABASE_FIELDS)} FROM pg_stat_database "
                     "WHERE datname = %s", (database,)).fetchone() or {}
    io_sum = ", ".join(f"coalesce(sum({f}), 0)::float8 AS {f}" for f in IO_FIELDS)
    io = {f"{r['backend_type']}/{r['object']}/{r['context']}": r for r in cur.execute(
        f"SELECT backend_type, object, context, {io_sum} FROM pg_stat_io "
        "GROUP BY backend_type, object, context").fetchall()}
    return {"statements": statements, "database": {k: float(v or 0) for k, v in db.items()},
            "io": io}


def _sub(a: dict[str, Any], b: dict[str, Any], fields: tuple[str, ...]) -> dict[str, float]:
    return {f: float(a.get(f) or 0) - float(b.get(f) or 0) for f in fields}


class Totals:
    """Deltas of one (block, label), summed over the rounds."""

    def __init__(self) -> None:
        self.statements: dict[str, dict[str, Any]] = {}
        self.database: Counter[str] = Counter()
        self.io: dict[str, Counter[str]] = {}
        self.waits: Counter[str] = Counter()
        self.samples = 0

    def add(self, before: Snapshot, after: Snapshot) -> None:
        for qid, row in after["statements"].items():
            delta = _sub(row, before["statements"].get(qid, {}), STATEMENT_FIELDS)
            if delta["calls"] <= 0:
                continue
            total = self.statements.setdefault(qid, {"query": row["query"]})
            for f, v in delta.items():
                total[f] = total.get(f, 0.0) + v
        self.database.update(_sub(after["database"], before["database"], DATABASE_FIELDS))
        for key, row in after["io"].items():
            delta = _sub(row, before["io"].get(key, {}), IO_FIELDS)
            if any(delta.values()):
                self.io.setdefault(key, Counter()).update(delta)

    def to_json(self) -> dict[str, Any]:
        rows = []
        for qid, s in self.statements.items():
            calls = s.get("calls", 0.0)
            rows.append({"queryid": qid, "query": " ".join(s["query"].split()),
                         "calls": int(calls), "total_ms": round(s.get("total_exec_time", 0), 3),
                         "mean_ms": round(s.get("total_exec_time", 0) / calls, 4) if calls else 0,
                         "rows": int(s.get("rows", 0)),
                         "shared_blks_hit": int(s.get("shared_blks_hit", 0)),
                         "shared_blks_read": int(s.get("shared_blks_read", 0)),
                         "temp_blks_written": int(s.get("temp_blks_written", 0))})
        ranked = sorted(rows, key=lambda r: -r["total_ms"])
        by_mean = sorted(rows, key=lambda r: -r["mean_ms"])[:TOP]
        keep = ("queryid", "query", "calls", "total_ms", "rows", "shared_blks_hit",
                "shared_blks_read")
        d = self.database
        reads = d["blks_hit"] + d["blks_read"]
        return {
            # by_total_time/by_mean_time as ever (old readers); `all` every statement up to ALL
            # by total time, `all_omitted` how many fell past it.
            "statements": {"by_total_time": ranked[:TOP], "by_mean_time": by_mean,
                           "all": [{k: r[k] for k in keep} for r in ranked[:ALL]],
                           "all_omitted": max(0, len(ranked) - ALL)},
            "database": {**{k: d[k] for k in DATABASE_FIELDS},
                         "buffer_hit_ratio": (d["blks_hit"] / reads) if reads else None},
            "io": {k: dict(v) for k, v in sorted(self.io.items())},
            "waits": {"samples": self.samples, "events": dict(self.waits.most_common())},
        }


class WaitSampler:
    """Samples wait events of the benchmark database's active backends in a thread."""

    def __init__(self, connect: Callable[[], psycopg.Connection], database: str,
                 interval_s: float = 0.1) -> None:
        self.connect = connect
        self.database = database
        self.interval_s = interval_s
        self.events: Counter[str] = Counter()
        self.samples = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> WaitSampler:
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        try:
            with self.connect() as conn:
                while not self._stop.wait(self.interval_s):
                    rows = conn.execute(
                        "SELECT coalesce(wait_event_type, 'CPU'), coalesce(wait_event, 'running')"
                        " FROM pg_stat_activity WHERE datname = %s AND state = 'active' "
                        "AND pid <> pg_backend_pid()", (self.database,)).fetchall()
                    self.samples += 1
                    self.events.update(f"{t}:{e}" for t, e in rows)
        except psycopg.Error:
            return  # the server went away: the window itself records the failure


def wait_idle(conn: psycopg.Connection, database: str, timeout_s: float = 3.0) -> None:
    """Wait until the benchmark's client backends have exited (and so flushed their stats)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s "
                           "AND backend_type = 'client backend' AND pid <> pg_backend_pid()",
                           (database,)).fetchone()
        if not row or row[0] == 0:
            return
        time.sleep(0.02)


def explain(conn: psycopg.Connection, sql: str) -> Any:
    row = conn.execute(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {sql}").fetchone()
    value = row[0] if row else None
    return json.loads(value) if isinstance(value, str) else value


def plannable(query: str) -> bool:
    """Whether EXPLAIN can plan a pg_stat_statements text without running anything."""
    return bool(_PLANNABLE.match(query))


def plan_candidates(totals: Totals, top: int = PLANNED) -> dict[str, str]:
    """queryid -> text of the `top` plannable statements of a label by total time."""
    ranked = sorted(totals.statements.items(), key=lambda kv: -kv[1].get("total_exec_time", 0))
    return dict([(qid, s["query"]) for qid, s in ranked if plannable(s["query"])][:top])


def _reason(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]


def generic_plans(connect: Callable[[], psycopg.Connection], statements: dict[str, str],
                  timeout_ms: int = 10_000) -> tuple[dict[str, Any], dict[str, str]]:
    """EXPLAIN (GENERIC_PLAN, FORMAT JSON) of each statement (queryid -> normalised text, its
    $n left as parameters), on the benchmark database: (plans, one-line reasons of those that
    could not be planned). Nothing runs (no ANALYZE); no failure escapes: a plan is a hint."""
    plans: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    if not statements:
        return plans, skipped
    try:
        with connect() as conn:
            if conn.info.server_version < 160000:
                return plans, dict.fromkeys(statements, "EXPLAIN (GENERIC_PLAN) needs "
                                            "PostgreSQL 16 or later")
            conn.execute(f"SET statement_timeout = {int(timeout_ms)}")
            for qid, sql in statements.items():
                try:
                    row = conn.execute(f"EXPLAIN (GENERIC_PLAN, FORMAT JSON) {sql}").fetchone()
                except psycopg.Error as exc:
                    skipped[qid] = _reason(exc)
                    if not conn.autocommit:
                        conn.rollback()
                    continue
                value = row[0] if row else None
                plans[qid] = json.loads(value) if isinstance(value, str) else value
    except psycopg.Error as exc:  # the server went away: every one left unplanned says why
        skipped.update({q: _reason(exc) for q in statements if q not in plans})
    return plans, skipped


def statement_calls(conn: psycopg.Connection) -> float:
    """Statements executed so far on the whole server (every database), those reading the
    harness's views left out: their difference over a case, per request, is statements per
    call."""
    row = conn.execute("SELECT coalesce(sum(calls), 0)::float8 FROM pg_stat_statements "
                       "WHERE query NOT LIKE %s AND query NOT LIKE %s",
                       tuple(f"%{view}%" for view in HARNESS_READS)).fetchone()
    return float(row[0]) if row else 0.0

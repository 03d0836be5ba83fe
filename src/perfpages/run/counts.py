"""Exact counts per call: an idle-bounded batch of calls after a case's measured windows.

Counters read at window boundaries while the load runs (`perfpages.run.cost`) split the calls in
flight there: under connection churn a call that runs three statements read 3.02–3.11. So the
counts per call — statements, shared buffers hit and read (pg_stat_statements) and connections
(`pg_stat_database.sessions`, PostgreSQL 14+) — come from a batch instead: wait until the
benchmark database has no statement running, read the counters, send up to `CALLS` calls of the
case's requests from one caller (closed loop, each sent when the last is answered), wait until
every backend the batch started has gone or sits idle, read again. No call straddles either
reading, so the growth divided by the calls is exact. The harness's own connections are to the
admin database, which neither counter counts.
"""

from __future__ import annotations

import asyncio
import random
import time

import psycopg

from perfpages.archive.vocabulary import EXACT_COUNTS
from perfpages.loadgen.client import Connection, HttpError, Origin, fetch
from perfpages.loadgen.spec import Load
from perfpages.loadgen.template import Template
from perfpages.run.cost import Meter

CALLS = 50  # calls per batch (fewer if the subject is slow: see BUDGET_S)
BUDGET_S = 2.0  # a batch stops sending after this long; its calls so far still count exactly
SETTLE_S = 3.0  # at most this long waiting for the database to go quiet, before and after
POLL_S = 0.05


def _quiet(conn: psycopg.Connection, database: str,
           backends: int | None) -> tuple[int, float] | None:
    """Wait until no backend of `database` runs a statement and (given `backends`) at most that
    many are connected, then until the session counter holds still (a backend leaves
    pg_stat_activity just before it reports its statistics). (backends connected, sessions);
    None: not quiet within SETTLE_S (a backend left running or idle in a transaction)."""
    until = time.monotonic() + SETTLE_S
    query = ("SELECT count(*), count(*) FILTER (WHERE state IS DISTINCT FROM 'idle'), "
             "(SELECT sessions FROM pg_stat_database WHERE datname = %(db)s)::float8 "
             "FROM pg_stat_activity WHERE datname = %(db)s AND pid <> pg_backend_pid() "
             "AND backend_type = 'client backend'")
    last: float | None = None
    while True:
        row = conn.execute(query, {"db": database}).fetchone()
        connected, busy, sessions = (int(row[0]), int(row[1]), float(row[2] or 0.0)) if row \
            else (0, 0, 0.0)
        settled = busy == 0 and (backends is None or connected <= backends)
        if settled and sessions == last:
            return connected, sessions
        if time.monotonic() > until:
            return None
        last = sessions if settled else None
        time.sleep(POLL_S)


async def _send(load: Load, calls: int, budget_s: float, seed: int) -> tuple[int, int]:
    """Send up to `calls` of the load's requests (by weight) one after another: (sent, failed).
    A failed call may still have run statements: the caller discards the batch."""
    templates = [Template(r) for r in load.requests]
    weights = [r.weight for r in load.requests]
    rng = random.Random(seed)
    conns: dict[Origin, Connection] = {}
    sent = failed = 0
    stop = time.monotonic() + budget_s
    try:
        while sent < calls and (sent == 0 or time.monotonic() < stop):
            origin, data, no_body, idempotent = rng.choices(templates, weights)[0].make(rng)
            sent += 1
            try:
                conn = await asyncio.wait_for(fetch(conns, origin, data, no_body, idempotent),
                                              load.timeout_s)
                failed += not 200 <= conn.status < 400
            except (HttpError, TimeoutError, OSError):
                failed += 1
    finally:
        for conn in conns.values():
            conn.close()
    return sent, failed


def batch(meter: Meter, load: Load, seed: int = 0, calls: int = CALLS,
          budget_s: float = BUDGET_S) -> dict[str, float]:
    """Counts per call of `load`'s requests, exact (empty: no PostgreSQL counters, a duet, a
    call that failed, or a database that would not go quiet: the windows then keep the counts
    read at their boundaries). Reads through the meter's statistics connection."""
    conn = meter.stats_connection()
    if conn is None or load.targets:
        return {}
    try:
        idle = _quiet(conn, meter.database, None)
        if idle is None:  # calls of ours still running: no count would be exact
            return {}
        before = meter.read()
        sent, failed = asyncio.run(_send(load, calls, budget_s, seed))
        done = _quiet(conn, meter.database, idle[0])
        after = meter.read()
    except psycopg.Error:
        return {}
    if failed or sent == 0 or done is None:
        return {}
    grown = {"statements": (before.statements, after.statements),
             "buffers_hit": (before.buffers_hit, after.buffers_hit),
             "buffers_read": (before.buffers_read, after.buffers_read),
             "connections": (idle[1], done[1])}
    out: dict[str, float] = {}
    for name in EXACT_COUNTS:
        a, b = grown[name]
        if a is not None and b is not None and b >= a:
            out[name] = round((b - a) / sent, 6)
    return out

"""Cost per call: what the subject and PostgreSQL spent on each call, window by window.

A rate carries the machine's speed; the work a call costs barely does. So every measured window
also records, per call: the subject's CPU (its whole process tree, from /proc), PostgreSQL's CPU
(the server's processes, the harness's own connections left out), and from pg_stat_statements the
statements run and the shared buffers hit and read in the benchmark database. Counters are read
at the window boundaries by a thread of the harness (the load generator's processes are left
alone) and differenced; CPU from /proc/PID/stat counts a process tree's live members and, through
their `cutime`/`cstime`, every member that has exited and been reaped, so a worker that recycles
still counts. Reading the counters is `perfpages.archive`-free and psycopg-only at the edge.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg

from perfpages.run.collect import HARNESS_READS

TICK_S = 1.0 / (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)
PROC = Path("/proc")


@dataclass(frozen=True)
class Reading:
    """Cumulative counters and when they were read (None: not measurable here)."""

    subject_cpu_s: float | None
    server_cpu_s: float | None
    statements: float | None
    buffers_hit: float | None
    buffers_read: float | None
    cpu_at: float = 0.0  # Unix time of the /proc pass
    stats_at: float = 0.0  # … and of the pg_stat_statements row


def per_call(before: Reading, after: Reading, calls: int,
             length_s: float | None = None) -> dict[str, float]:
    """Per-window metrics: the counters' growth over the window's calls (none for an empty
    window, or a counter that went backwards: a process restarted, a reset). With `length_s`,
    a window timed by another clock (the load generator's): a reading taken late (the thread
    waits for a core like everything else) spans a shifted interval, so the growth is taken as
    a rate over the readings' own times, times the window's length. Without, the readings
    bound the calls (read before and after a pgbench run)."""
    out: dict[str, float] = {}
    if calls <= 0 or (length_s is not None and length_s <= 0):
        return out
    for name, field, scale in (("cpu_ms", "subject_cpu_s", 1000.0),
                               ("pg_cpu_ms", "server_cpu_s", 1000.0),
                               ("statements", "statements", 1.0),
                               ("buffers_hit", "buffers_hit", 1.0),
                               ("buffers_read", "buffers_read", 1.0)):
        a, b = getattr(before, field), getattr(after, field)
        when = "cpu_at" if field.endswith("cpu_s") else "stats_at"
        span = getattr(after, when) - getattr(before, when)
        if a is not None and b is not None and b >= a and span > 0:
            stretch = length_s / span if length_s is not None else 1.0
            out[name] = round((b - a) * stretch * scale / calls, 6)
    return out


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds of the process and its reaped children)."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: fields follow the last ')'.
    fields = text[text.rfind(")") + 2:].split()
    ticks = sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    return int(fields[1]), ticks * TICK_S


def _database(pid: int) -> str | None:
    """The database a PostgreSQL backend serves, from its process title."""
    try:
        title = (PROC / str(pid) / "cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
    except OSError:
        return None
    words = title.split()
    return words[2] if len(words) > 3 and words[0] == "postgres:" else None


def tree_cpu(roots: list[int | None], skip_database: str | None = None) -> list[float | None]:
    """CPU seconds of each root's process tree (None: the root is gone); one pass over /proc.
    Backends serving `skip_database` (the harness's admin connections) are left out."""
    table: dict[int, tuple[int, float]] = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None:
                table[int(entry.name)] = stat
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    out: list[float | None] = []
    for root in roots:
        if root is None or root not in table:
            out.append(None)
            continue
        total, todo = 0.0, [root]
        while todo:
            pid = todo.pop()
            if pid != root and skip_database and _database(pid) == skip_database:
                continue
            total += table[pid][1]
            todo.extend(children.get(pid, ()))
        out.append(total)
    return out


class Meter:
    """Reads a `Reading` now (`read`), or at given instants from a thread (`schedule` … `stop`).

    `stats` opens a connection to the admin database of the server (None: no PostgreSQL
    counters); `database` is the benchmark database whose statements count."""

    def __init__(self, subject_pid: int | None, server_pid: int | None,
                 stats: Callable[[], psycopg.Connection] | None, database: str,
                 admin_database: str | None) -> None:
        self.subject_pid = subject_pid
        self.server_pid = server_pid
        self.database = database
        self.skip = admin_database if admin_database != database else None
        self._conn: psycopg.Connection | None = None
        if stats is not None:
            try:
                self._conn = stats()
                self._conn.autocommit = True
            except psycopg.Error:
                self._conn = None
        self.readings: list[Reading | None] = []
        self.own_cpu_s = 0.0  # what reading cost the harness (the cost of measuring)
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def read(self) -> Reading:
        """The counters now; the harness's own CPU for it is added to `own_cpu_s`."""
        spent = time.thread_time()
        try:
            return self._read()
        finally:
            self.own_cpu_s += time.thread_time() - spent

    def _read(self) -> Reading:
        cpu_at = time.time()
        subject, server = tree_cpu([self.subject_pid, self.server_pid], self.skip)
        cpu_at = (cpu_at + time.time()) / 2
        counts: tuple[float | None, ...] = (None, None, None)
        stats_at = time.time()
        if self._conn is not None:
            try:
                row = self._conn.execute(
                    "SELECT coalesce(sum(s.calls), 0)::float8, "
                    "coalesce(sum(s.shared_blks_hit), 0)::float8, "
                    "coalesce(sum(s.shared_blks_read), 0)::float8 "
                    "FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid "
                    "WHERE d.datname = %s AND s.query NOT LIKE %s AND s.query NOT LIKE %s",
                    (self.database, *(f"%{view}%" for view in HARNESS_READS))).fetchone()
                counts = tuple(float(v) for v in row) if row else counts
            except psycopg.Error:  # no pg_stat_statements, or the server went away
                self.close_stats()
        return Reading(subject, server, counts[0], counts[1], counts[2], cpu_at=cpu_at,
                       stats_at=(stats_at + time.time()) / 2)

    def schedule(self, instants: list[float]) -> None:
        """Read at each wall-clock instant (Unix time) from a thread; late instants read at once."""
        self.readings = []

        def loop() -> None:
            for at in instants:  # stopped early, an instant already past is still read
                delay = at - time.time()
                if delay > 0 and self._stop.wait(delay):
                    return
                try:
                    self.readings.append(self.read())
                except Exception:  # never take the run down: the window goes without cost
                    self.readings.append(None)

        self._stop.clear()
        self._thread = threading.Thread(target=loop, name="perfpages-cost", daemon=True)
        self._thread.start()

    def at_windows(self, lengths: list[float]) -> Callable[[float], None]:
        """For `loadgen.run(on_start=…)`: read at the start and at the end of every window."""
        def begin(start: float) -> None:
            ends = [start]
            for length in lengths:
                ends.append(ends[-1] + length)
            self.schedule(ends)

        return begin

    def stop(self) -> list[Reading | None]:
        """The readings taken (the thread ended first)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        return self.readings

    def stats_connection(self) -> psycopg.Connection | None:
        """The open connection to the admin database (None: no PostgreSQL counters)."""
        return self._conn

    def close_stats(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error):
                self._conn.close()
            self._conn = None

    def __enter__(self) -> Meter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self.close_stats()


def window_costs(readings: list[Reading | None],
                 windows: list[tuple[int, float]]) -> list[dict[str, float]]:
    """Per-call metrics of consecutive windows, each (requests, length in s), from the readings
    at their boundaries (one more reading than windows; a missing one leaves its neighbours
    without cost)."""
    out: list[dict[str, float]] = []
    for i, (calls, length_s) in enumerate(windows):
        a = readings[i] if i < len(readings) else None
        b = readings[i + 1] if i + 1 < len(readings) else None
        out.append(per_call(a, b, calls, length_s) if a is not None and b is not None else {})
    return out

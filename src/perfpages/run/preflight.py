"""A quiet machine, checked: the preflight before each block, and the machine's load per window.

Before each block the preflight samples the machine for ~2 s from /proc (Linux): the 1-minute
load average, the whole machine's CPU and steal from /proc/stat, and every process's CPU from
/proc/PID/stat. Processes of this run's own tree (the runner, its PostgreSQL servers, subjects,
load workers, pgbench) are told apart by walking parent pids; the others that compete (another
PostgreSQL, pgbench, perfpages, pytest or invoke process, or anything above a tenth of a core)
make the machine busy (`reasons`; the thresholds: `perfpages.archive.vocabulary`). A busy machine
is sampled again every few seconds up to the wait limit, then the block goes on and the record
says busy. Every preflight is archived in diagnostics/preflight.jsonl, with process names
(comm) only, never command lines (they may hold secrets).

Meanwhile a sampler thread reads /proc/stat and this run's process tree every 0.5 s, so each
archived window carries what the rest of the machine did during it (`Window.machine`).
"""

from __future__ import annotations

import bisect
import contextlib
import json
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from perfpages.archive import preflight as archived
from perfpages.archive import vocabulary
from perfpages.archive.writer import ArchiveWriter, utc_now

SAMPLE_S = 2.0  # one preflight sample: long enough to see a process that wakes every second
TEST_SAMPLE_S = 0.5  # a `test`-scope run never waits, so its sample only has to be recorded
RECHECK_S = 5.0  # while busy: sleep this long, then sample again
DEFAULT_WAIT_S = 60.0  # the longest a block waits for a quiet machine (--preflight-wait)
TICK_S = 0.5  # the window sampler's period
KEEP = 7200  # samples kept (an hour): a window is archived long before its samples go
MAX_LISTED = 20  # processes listed in a preflight record
PROC = Path("/proc")
# Names (comm, or the script of a Python command) of processes that compete, by category.
NAMES = {"postgres": "PostgreSQL", "postmaster": "PostgreSQL", "pgbench": "pgbench",
         "perfpages": "perfpages", "pytest": "pytest", "py.test": "pytest", "invoke": "invoke",
         "inv": "invoke"}



def reasons(figures: dict[str, Any], processes: list[dict[str, Any]] | None = None) -> list[str]:
    """Why the machine was busy (nothing: it was quiet), from a preflight's or a window's
    figures (`archive.preflight.over` decides) and the competing processes a preflight found."""
    out = []
    for key, value, limit in archived.over(figures):
        out.append(f"other processes used {value:.0f} % of a core, above {limit:g} %"
                   if key == "others_pct" else f"CPU steal {value:.1f} %, above {limit:g} %")
    rivals = [p for p in processes or [] if p.get("why") in vocabulary.COMPETING]
    if rivals:
        names = ", ".join(f"{p['name']} {p['pid']}" for p in rivals[:6])
        more = f" and {len(rivals) - 6} more" if len(rivals) > 6 else ""
        word = "process" if len(rivals) == 1 else "processes"
        out.append(f"{len(rivals)} competing {word} ({names}{more})")
    return out


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    name: str  # comm: the executable's name, at most 15 characters
    ticks: int  # user + system CPU, in clock ticks
    reaped: int  # CPU of its waited-for children that exited
    start: int  # when it started, in ticks since boot: a reused pid is another process


def parse_stat(text: str) -> Proc:
    """One /proc/PID/stat line; the name sits in parentheses and may hold spaces or ')'."""
    left, right = text.index("("), text.rindex(")")
    pid, name, rest = int(text[:left]), text[left + 1:right], text[right + 2:].split()
    # rest[0] is field 3 (state): ppid 4, utime 14, stime 15, cutime 16, cstime 17, start 22
    return Proc(pid, int(rest[1]), name, int(rest[11]) + int(rest[12]),
                int(rest[13]) + int(rest[14]), int(rest[19]))


def processes() -> dict[int, Proc]:
    """Every process now (those that exit while being read are skipped)."""
    out = {}
    for entry in os.listdir(PROC):
        if entry.isdigit():
            try:
                out[int(entry)] = parse_stat((PROC / entry / "stat").read_text())
            except (OSError, ValueError, IndexError):
                continue
    return out


@dataclass(frozen=True)
class Cpu:
    """/proc/stat's first line: the whole machine's CPU time, in clock ticks."""

    total: int
    idle: int  # idle and iowait
    steal: int
    cores: int

    @classmethod
    def read(cls) -> Cpu:
        lines = (PROC / "stat").read_text().splitlines()
        # user nice system idle iowait irq softirq steal (guest time is inside user already)
        values = [int(v) for v in lines[0].split()[1:9]]
        cores = sum(1 for ln in lines[1:] if ln.startswith("cpu"))
        return cls(sum(values), values[3] + values[4], values[7], max(cores, 1))


def tree(procs: dict[int, Proc], root: int) -> set[int]:
    """`root` and every process descending from it."""
    children: dict[int, list[int]] = {}
    for p in procs.values():
        children.setdefault(p.ppid, []).append(p.pid)
    out, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in out:
            out.add(pid)
            todo += children.get(pid, [])
    return out


def ancestors(procs: dict[int, Proc], pid: int) -> set[int]:
    out: set[int] = set()
    while pid in procs and pid not in out and pid > 1:
        out.add(pid)
        pid = procs[pid].ppid
    return out


def _category(p: Proc) -> str:
    """What kind of competitor a process is by its name: `python -m pytest` and `python
    …/bin/invoke` run as `python`, so a Python process's script name decides (read, never
    stored: a command line may hold secrets)."""
    if p.name in NAMES:
        return NAMES[p.name]
    if p.name.startswith("python"):
        try:
            argv = (PROC / str(p.pid) / "cmdline").read_bytes().split(b"\0")[1:4]
        except OSError:
            return ""
        for arg in argv:
            word = Path(arg.decode(errors="replace")).name
            if word in NAMES and word not in ("postgres", "postmaster"):
                return NAMES[word]
            if not arg.startswith(b"-"):
                break  # the script: its own arguments are not its name
    return ""


@dataclass(frozen=True)
class Snapshot:
    time: float
    cpu: Cpu
    own: int  # CPU ticks of this run's tree, reaped children included

    @classmethod
    def take(cls, procs: dict[int, Proc] | None = None) -> Snapshot:
        procs = processes() if procs is None else procs
        mine = tree(procs, os.getpid())
        return cls(time.time(), Cpu.read(), sum(procs[p].ticks + procs[p].reaped for p in mine))


def figures(a: Snapshot, b: Snapshot) -> dict[str, float] | None:
    """What the machine did between two snapshots, or None when no time passed."""
    total = b.cpu.total - a.cpu.total
    if total <= 0:
        return None
    per_core = total / b.cpu.cores  # elapsed ticks, measured by the kernel's own clock
    busy = 100 * (total - (b.cpu.idle - a.cpu.idle)) / per_core
    own = min(100 * max(b.own - a.own, 0) / per_core, busy)
    return {"busy_pct": round(busy, 1), "own_pct": round(own, 1),
            "others_pct": round(busy - own, 1),
            "steal_pct": round(100 * (b.cpu.steal - a.cpu.steal) / total, 1),
            "load1": round(os.getloadavg()[0], 2)}


def sample(seconds: float = SAMPLE_S, external_server: bool = False) -> dict[str, Any]:
    """The machine over `seconds`: its figures, and the processes outside this run's tree
    that compete, or used more than a tenth of a core meanwhile."""
    before = processes()
    first = Snapshot.take(before)
    time.sleep(seconds)
    after = processes()
    last = Snapshot.take(after)
    out: dict[str, Any] = {"seconds": round(last.time - first.time, 2), "cores": last.cpu.cores,
                           **(figures(first, last) or dict.fromkeys(
                               ("busy_pct", "own_pct", "others_pct", "steal_pct"), 0.0)),
                           "load1": round(os.getloadavg()[0], 2)}
    mine = tree(after, os.getpid())
    # The runner's own parents (the shell, `invoke`, a test session that started it) wait for
    # it: their names do not make them rivals, though their CPU still counts.
    parents = ancestors(after, os.getppid())
    elapsed = max((last.cpu.total - first.cpu.total) / last.cpu.cores, 1)
    cpu: dict[int, float] = {}
    why: dict[int, str] = {}
    for p in after.values():
        if p.pid not in mine:
            old = before.get(p.pid)
            used = p.ticks - (old.ticks if old and old.start == p.start else 0)
            cpu[p.pid] = 100 * max(used, 0) / elapsed
            why[p.pid] = "" if p.pid in parents else _category(p)
            if why[p.pid] == "PostgreSQL" and external_server:
                why[p.pid] = ""  # with --dsn, a local PostgreSQL may be the run's own server
    listed: dict[int, dict[str, Any]] = {}
    for pid in cpu:
        head = pid  # a server's backends (a parent of the same kind) are listed as the server
        while why[head] and why.get(after[head].ppid) == why[head]:
            head = after[head].ppid
        if why[head] or cpu[pid] > vocabulary.BUSY_OTHERS_PCT:
            entry = listed.setdefault(head, {"pid": head, "name": after[head].name,
                                             "cpu_pct": 0.0, **({"why": why[head]}
                                                                if why[head] else {})})
            entry["cpu_pct"] += cpu[pid]
    found = sorted(({**p, "cpu_pct": round(p["cpu_pct"], 1)} for p in listed.values()),
                   key=lambda p: (-p["cpu_pct"], p["pid"]))
    out["processes"] = found[:MAX_LISTED]
    out["reasons"] = reasons(out, found)
    return out


class Watch:
    """One per run: the window sampler (a thread) and the preflights written so far."""

    def __init__(self, external_server: bool = False) -> None:
        self.external_server = external_server
        self.records: list[str] | None = None  # preflight.jsonl's lines (read on first use)
        self.samples: deque[Snapshot] = deque(maxlen=KEEP)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None and (PROC / "stat").is_file():
            self.samples.append(Snapshot.take())  # the first before start() returns
            self._thread = threading.Thread(target=self._sample, name="perfpages-machine",
                                            daemon=True)
            self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(TICK_S):
            with contextlib.suppress(OSError, ValueError, IndexError):  # a /proc race
                self.samples.append(Snapshot.take())

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def window(self, start: str, duration_s: float) -> dict[str, float] | None:
        """The machine's figures over a window (None when the sampler did not cover it)."""
        try:
            begin = datetime.fromisoformat(start.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
        samples = list(self.samples)
        if self._thread is not None and (not samples or samples[-1].time < begin + duration_s):
            with contextlib.suppress(OSError, ValueError, IndexError):  # the window just ended
                samples.append(Snapshot.take())
        times = [s.time for s in samples]
        i = bisect.bisect_right(times, begin) - 1  # the last sample at or before the start
        j = bisect.bisect_left(times, begin + duration_s)  # the first at or after the end
        if i < 0 or j >= len(samples) or times[j] - times[i] > duration_s + 4 * TICK_S:
            return None
        found = figures(samples[i], samples[j])
        if found is not None:
            found.pop("own_pct")
        return found

    def check(self, block: str, writer: ArchiveWriter, wait_s: float,
              note: Callable[[str], None] = lambda text: None,
              sample_s: float = SAMPLE_S) -> dict[str, Any]:
        """The preflight before `block`: sample for `sample_s`, and while busy wait up to
        `wait_s` seconds (`note` says why); archived either way."""
        self.start()
        note(f"{block}: preflight")
        found, checks = sample(sample_s, external_server=self.external_server), 1
        began, waited = time.monotonic(), 0.0
        while found["reasons"] and waited < wait_s:  # then one last look
            note(f"{block}: waiting for a quiet machine ({found['reasons'][0]})")
            time.sleep(min(RECHECK_S, wait_s - waited))
            found, checks = sample(sample_s, external_server=self.external_server), checks + 1
            waited = time.monotonic() - began
        record = {"time": utc_now(), "block": block, **found, "waited_s": round(waited, 1),
                  "checks": checks, "busy": bool(found["reasons"])}
        if self.records is None:  # a resumed run keeps the preflights of its first part
            path = writer.run_dir / archived.PREFLIGHT_FILE
            lines = path.read_text(errors="replace").splitlines() if path.is_file() else []
            self.records = [ln for ln in lines if _whole(ln)]  # not a line a crash cut short
        self.records.append(archived.dumps(record))
        writer.write_file(archived.PREFLIGHT_FILE, "\n".join(self.records) + "\n")
        return record


def _whole(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def wait_limit(given: float | None, scope: str) -> float:
    """How long a block waits for a quiet machine: `--preflight-wait`, else a minute; a test
    run (a tiny suite made by the tests themselves) records the preflight and never waits."""
    if given is not None:
        return given
    return 0.0 if scope == "test" else DEFAULT_WAIT_S


def sample_seconds(scope: str) -> float:
    """How long a preflight samples: two seconds, but half of one in a test run (a tiny suite
    made by the tests, which never waits): each of the test suite's blocks spent its two
    seconds asleep here."""
    return TEST_SAMPLE_S if scope == "test" else SAMPLE_S

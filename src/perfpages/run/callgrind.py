"""Instructions per call: the subject under valgrind's callgrind, counted over fixed-count windows.

The subject's command runs under `valgrind --tool=callgrind --trace-children=yes` (gunicorn's
master and its forked workers are all traced) with instrumentation off from the start
(`--instr-atstart=no`: start-up runs some 4× slower instead of 20–50×). A window switches it on
in every process of the subject's group (`callgrind_control --instr=on`), sends its warm-up
calls, zeroes the counters (`-z`), sends its calls, dumps (`--dump`) and switches it off again;
the instructions every process's dump counts, divided by the calls, is the window's
`instructions` per call. `--collect-atstart=no` would not do: `callgrind_control` cannot switch
collection on (measured: every dump counted 0). Calls are sent closed loop, each caller sending
its next when its last is answered, so a window is a number of calls, never seconds.

With `Instructions(postgres=True)` the label's PostgreSQL server runs under callgrind as well
(`server_command`) and every window switches, zeroes and dumps its processes too: the postmaster
and its forks (backends, background workers), found as its children since each sets up its own
session. `--trace-children=yes` even so: without it a forked child disables its gdbserver and
callgrind_control cannot reach it (measured). callgrind_control runs as the server's user:
vgdb run as root waits forever on another user's valgrind it invokes through ptrace (measured).
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from perfpages.errors import PerfpagesError
from perfpages.loadgen.client import Connection, HttpError, Origin, fetch
from perfpages.loadgen.spec import Load
from perfpages.loadgen.template import Template
from perfpages.run.httpspec import Instructions
from perfpages.run.service import Service

START_S = 120.0  # a subject under valgrind may take this long to answer its health check
CONTROL_S = 60.0  # one callgrind_control command (it waits for every process to answer)
DUMP_S = 30.0  # the dump files appear within this after the command returns
# One call's answer under callgrind, at most (the load's own timeout if longer): a QueryAPIGate
# lookup once took 110 s on a machine at load 20, where it takes 0.2–0.7 s.
CALL_S = 300.0
# The progress bar's estimate: calls under callgrind with instrumentation on, one caller
# (measured on tinyhttp's /item: 0.07–0.09 s on a loaded 2-core machine), and a start.
SECONDS_PER_CALL = 0.1
START_ESTIMATE_S = 15.0
OUT = "callgrind.out"
INSTALL = "install valgrind (apt-get install valgrind), or drop instructions= from the block"


def check() -> bool:
    """Refuse an instructions block, before its subject starts, when valgrind is missing."""
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        raise PerfpagesError("an instructions block needs valgrind and callgrind_control, "
                             "which are not on PATH", key="instructions", fix=INSTALL)
    return True


def traced(service: Service, out_dir: Path) -> Service:
    """The subject (not started) under callgrind, its profiles written to `out_dir` (one file
    per process and dump: callgrind.out.PID.N), its readiness wait raised to START_S."""
    out_dir.mkdir(parents=True, exist_ok=True)
    spec = service.spec
    command = ("valgrind", "--tool=callgrind", "--trace-children=yes", "--instr-atstart=no",
               f"--callgrind-out-file={out_dir}/{OUT}.%p", *spec.command)
    return Service(replace(spec, command=command,
                           startup_timeout_s=max(spec.startup_timeout_s, START_S)),
                   service.log_path, service.cpus)


def server_command(out_dir: Path) -> tuple[str, ...]:
    """What the PostgreSQL server's command runs under to be counted (`out_dir`: the server's
    user can write it). Valgrind's own temporary files go there too: the run's TMPDIR may be
    closed to that user."""
    return ("env", f"TMPDIR={out_dir}", "valgrind", "--tool=callgrind", "--trace-children=yes",
            "--instr-atstart=no", f"--vgdb-prefix={out_dir}/vgdb",
            f"--callgrind-out-file={out_dir}/{OUT}.%p")


def estimate_s(spec: Instructions, cases: int) -> float:
    """Seconds one label's turn of `cases` cases takes, counted from its calls."""
    calls = cases * (spec.calls + spec.warmup)
    return START_ESTIMATE_S + calls * SECONDS_PER_CALL / spec.callers + cases * spec.idle_s


def _live() -> list[tuple[int, list[str]]]:
    """Every live process's pid and its /proc stat fields after the name (state, ppid, pgrp,
    …); zombies and processes gone meanwhile left out."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 2 and fields[0] != "Z":
            found.append((int(entry.name), fields))
    return found


def group(pgid: int) -> list[int]:
    """The processes of the subject's group (valgrind runs each in its own pid)."""
    return sorted(pid for pid, fields in _live() if int(fields[2]) == pgid)


def tree(pid: int) -> list[int]:
    """A process and its children (PostgreSQL's postmaster and its forks)."""
    return sorted([pid, *(child for child, fields in _live() if int(fields[1]) == pid)])


@dataclass(frozen=True)
class Traced:
    """Processes under callgrind counted together: how to find them, where they write, and
    how callgrind_control reaches them (as `user`, with valgrind's `--vgdb-prefix`)."""

    pids: Callable[[], list[int]]
    out_dir: Path
    user: str | None = None
    prefix: str | None = None
    name: str = "the subject"

    def control(self, *args: str, pids: list[int] | None = None) -> list[int]:
        """The processes reached: a server's connection that ended meanwhile is not."""
        found = self.pids() if pids is None else pids
        if not found:
            raise PerfpagesError(f"{self.name} has no process left to count",
                                 key="instructions", fix=f"read {self.name}'s log")
        if not self.prefix:
            control(found, *args, user=self.user)
            return found
        # vgdb itself, one per pid, all at once (each wakes its process through ptrace: some
        # 0.3 s): callgrind_control skips a process whose command line is no longer valgrind's
        # (a backend's, retitled), and asks one process after the other
        command = {"--instr=on": ["instrumentation", "on"], "--zero": ["zero"],
                   "--instr=off": ["instrumentation", "off"]}.get(args[0])
        command = command or ["dump", args[0].partition("=")[2]]
        running = {pid: subprocess.Popen(
            ["vgdb", f"--vgdb-prefix={self.prefix}", f"--pid={pid}", *command], user=self.user,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True) for pid in found}
        reached, failed = [], ""
        for pid, proc in running.items():
            try:
                out = proc.communicate(timeout=CONTROL_S)[0]
            except subprocess.TimeoutExpired:
                proc.kill()
                out = proc.communicate()[0] + f"vgdb error: no answer in {CONTROL_S:g} s"
            errors = [ln for ln in out.splitlines() if "error" in ln.lower()]
            if proc.returncode == 0 and not errors:
                reached.append(pid)
            elif Path(f"/proc/{pid}").exists():  # one that ended meanwhile is not an error
                failed = failed or f"{pid}: {(errors or [out.strip()])[-1][:200]}"
        if failed:
            raise PerfpagesError(f"vgdb {' '.join(command)} failed for {self.name}'s process "
                                 f"{failed}", key="instructions", fix="read the server log")
        return reached


def server(pid: int, out_dir: Path, user: str | None) -> Traced:
    """The PostgreSQL server whose postmaster is `pid`, run under `server_command(out_dir)`:
    its processes callgrind_control can reach (a connection's backend that has just ended, or
    just started, is not yet or no more among them)."""
    prefix = f"{out_dir}/vgdb"

    def pids() -> list[int]:
        try:
            listed = subprocess.run(["vgdb", f"--vgdb-prefix={prefix}", "-l"], user=user,
                                    capture_output=True, text=True, timeout=CONTROL_S,
                                    stdin=subprocess.DEVNULL).stdout
        except subprocess.TimeoutExpired:
            listed = ""
        reachable = {int(m) for m in re.findall(r"--pid=(\d+)", listed)}
        return [p for p in tree(pid) if p in reachable]

    return Traced(pids, out_dir, user, prefix, "PostgreSQL")


def control(pids: list[int], *args: str, user: str | None = None) -> None:
    """One callgrind_control command to these processes (never to every callgrind run on the
    machine, which is what no pid would mean)."""
    if not pids:
        raise PerfpagesError("the subject has no process left to count", key="instructions",
                             fix="read the subject's log")
    program = "callgrind_control"
    try:
        done = subprocess.run([program, *args, *map(str, pids)],
                              capture_output=True, text=True, timeout=CONTROL_S,
                              stdin=subprocess.DEVNULL, user=user)
    except subprocess.TimeoutExpired:
        raise PerfpagesError(f"{program} {' '.join(args)} did not answer in "
                             f"{CONTROL_S:g} s", key="instructions",
                             fix="read the subject's log") from None
    # It answers 0 even when vgdb could not reach a process: its output says so.
    failed = [ln for ln in (done.stdout + done.stderr).splitlines() if "error" in ln.lower()]
    if done.returncode != 0 or failed:
        raise PerfpagesError(f"{program} {' '.join(args)} failed: "
                             f"{(failed[0] if failed else done.stderr or done.stdout)[:200]}",
                             key="instructions", fix="read the subject's log")


def totals(path: Path) -> int:
    """The instructions a dump counts (its `totals:` line, else its `summary:` line)."""
    found: dict[str, int] = {}
    with path.open(errors="replace") as f:
        for line in f:
            if line.startswith(("totals:", "summary:")):
                key, _, value = line.partition(":")
                found[key] = int(value.split()[0])
    if not found:
        raise PerfpagesError(f"{path.name} counts no instructions", where=path,
                             fix="check the valgrind version (3.x writes totals:)")
    return found.get("totals", found.get("summary", 0))


def dumps(out_dir: Path) -> set[Path]:
    return {p for p in out_dir.glob(f"{OUT}.*.*") if p.name.rsplit(".", 1)[1].isdigit()}


async def send(load: Load, calls: int, callers: int, seed: int) -> tuple[int, int]:
    """Send `calls` of the load's requests (by weight) from `callers` closed-loop callers:
    (sent, failed)."""
    templates = [Template(r) for r in load.requests]
    weights = [r.weight for r in load.requests]
    left = calls
    failed = 0

    async def caller(index: int) -> None:
        nonlocal left, failed
        rng = random.Random(seed * 1000 + index)
        conns: dict[Origin, Connection] = {}
        try:
            while left > 0:
                left -= 1
                origin, data, no_body, idempotent = rng.choices(templates, weights)[0].make(rng)
                try:
                    conn = await asyncio.wait_for(
                        fetch(conns, origin, data, no_body, idempotent),
                        max(load.timeout_s, CALL_S))
                    failed += not 200 <= conn.status < 400
                except (HttpError, TimeoutError, OSError):
                    failed += 1
        finally:
            for conn in conns.values():
                conn.close()

    await asyncio.gather(*(caller(i) for i in range(callers)))
    return calls, failed


@dataclass(frozen=True)
class Count:
    """One window's count: its calls, those that failed, every process's instructions, its
    wall time, its dump files (one per process) and the subject's instructions per second
    without calls (`idle_per_s`, 0 if not measured)."""

    calls: int
    failed: int
    instructions: int
    duration_s: float
    files: tuple[Path, ...]
    idle_per_s: float = 0.0
    pg: Count | None = None  # the PostgreSQL server's count over the same window

    @property
    def per_call(self) -> float:
        """Net of the idle rate over the window's duration (never below zero)."""
        return max(self.instructions - self.idle_per_s * self.duration_s, 0.0) / self.calls


def window(pgid: int, out_dir: Path, load: Load, spec: Instructions, seed: int,
           pg: Traced | None = None) -> Count:
    """One counted window of the subject whose process group is `pgid` (and of the server
    `pg` over the same calls, when given)."""
    parties = [Traced(lambda: group(pgid), out_dir), *([pg] if pg else [])]
    for party in parties:
        party.control("--instr=on")
    try:
        if spec.warmup:
            asyncio.run(send(load, spec.warmup, spec.callers, seed + 1))
        pids = [p.pids() for p in parties]  # a worker forked meanwhile is counted too
        for party, found in zip(parties, pids, strict=True):
            party.control("--zero", pids=found)
        before = [dumps(p.out_dir) for p in parties]
        start = time.monotonic()
        sent, failed = asyncio.run(send(load, spec.calls, spec.callers, seed))
        duration = time.monotonic() - start
        pids = [p.control("--dump=perfpages", pids=f) for p, f in zip(parties, pids,
                                                                       strict=True)]
        new = [_wait_dumps(p.out_dir, b, f) for p, b, f in zip(parties, before, pids,
                                                                strict=True)]
        idle = _idle(parties, pids, spec.idle_s) if spec.idle_s else [0.0] * len(parties)
    finally:
        for party in parties:
            if party.pids():
                party.control("--instr=off")
    counts = [Count(sent, failed, sum(totals(p) for p in files), duration, tuple(sorted(files)),
                    rate) for files, rate in zip(new, idle, strict=True)]
    return replace(counts[0], pg=counts[1] if pg else None)


def _idle(parties: list[Traced], pids: list[list[int]], seconds: float) -> list[float]:
    """Each party's instructions per second with no call in flight (its dumps deleted)."""
    for party, found in zip(parties, pids, strict=True):
        party.control("--zero", pids=found)
    before = [dumps(p.out_dir) for p in parties]
    start = time.monotonic()
    time.sleep(seconds)
    elapsed = time.monotonic() - start
    rates = []
    for party, found, seen in zip(parties, pids, before, strict=True):
        reached = party.control("--dump=perfpages-idle", pids=found)
        new = _wait_dumps(party.out_dir, seen, reached)
        rates.append(sum(totals(p) for p in new) / elapsed)
        for path in new:
            path.unlink(missing_ok=True)
    return rates


def _wait_dumps(out_dir: Path, before: set[Path], pids: list[int]) -> set[Path]:
    """The dumps of this window, one per process, once written (a dump is renamed into place
    only when complete, but the command may return first)."""
    until = time.monotonic() + DUMP_S
    while True:
        new = dumps(out_dir) - before
        if {int(p.name.split(".")[2]) for p in new} >= set(pids):
            return new
        if time.monotonic() > until:
            raise PerfpagesError(f"callgrind wrote {len(new)} of {len(pids)} dumps in "
                                 f"{DUMP_S:g} s", where=out_dir, fix="read the subject's log")
        time.sleep(0.05)


def pgid_of(pid: int) -> int:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        raise PerfpagesError("the subject exited", key="instructions",
                             fix="read the subject's log") from None

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
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import subprocess
import time
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


def estimate_s(spec: Instructions, cases: int) -> float:
    """Seconds one label's turn of `cases` cases takes, counted from its calls."""
    calls = cases * (spec.calls + spec.warmup)
    return START_ESTIMATE_S + calls * SECONDS_PER_CALL / spec.callers + cases * spec.idle_s


def group(pgid: int) -> list[int]:
    """The processes of the subject's group (valgrind runs each in its own pid)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(entry.name))
    return sorted(found)


def control(pids: list[int], *args: str) -> None:
    """One callgrind_control command to these processes (never to every callgrind run on the
    machine, which is what no pid would mean)."""
    if not pids:
        raise PerfpagesError("the subject has no process left to count", key="instructions",
                             fix="read the subject's log")
    try:
        done = subprocess.run(["callgrind_control", *args, *map(str, pids)],
                              capture_output=True, text=True, timeout=CONTROL_S,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise PerfpagesError(f"callgrind_control {' '.join(args)} did not answer in "
                             f"{CONTROL_S:g} s", key="instructions",
                             fix="read the subject's log") from None
    if done.returncode != 0:
        raise PerfpagesError(f"callgrind_control {' '.join(args)} failed: "
                             f"{(done.stderr or done.stdout).strip()[:200]}",
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

    @property
    def per_call(self) -> float:
        """Net of the idle rate over the window's duration (never below zero)."""
        return max(self.instructions - self.idle_per_s * self.duration_s, 0.0) / self.calls


def window(pgid: int, out_dir: Path, load: Load, spec: Instructions, seed: int) -> Count:
    """One counted window of the subject whose process group is `pgid`."""
    pids = group(pgid)
    control(pids, "--instr=on")
    try:
        if spec.warmup:
            asyncio.run(send(load, spec.warmup, spec.callers, seed + 1))
        pids = group(pgid)  # a worker forked meanwhile is counted too
        control(pids, "--zero")
        before = dumps(out_dir)
        start = time.monotonic()
        sent, failed = asyncio.run(send(load, spec.calls, spec.callers, seed))
        duration = time.monotonic() - start
        control(pids, "--dump=perfpages")
        new = _wait_dumps(out_dir, before, pids)
        idle = _idle(pids, out_dir, spec.idle_s) if spec.idle_s else 0.0
    finally:
        if group(pgid):
            control(group(pgid), "--instr=off")
    return Count(sent, failed, sum(totals(p) for p in new), duration, tuple(sorted(new)),
                 idle)


def _idle(pids: list[int], out_dir: Path, seconds: float) -> float:
    """The subject's instructions per second with no call in flight (its dumps deleted)."""
    control(pids, "--zero")
    before = dumps(out_dir)
    start = time.monotonic()
    time.sleep(seconds)
    elapsed = time.monotonic() - start
    control(pids, "--dump=perfpages-idle")
    new = _wait_dumps(out_dir, before, pids)
    counted = sum(totals(p) for p in new)
    for path in new:
        path.unlink(missing_ok=True)
    return counted / elapsed


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

"""The HTTP load generator: runs a `Load` and returns what came back.

`run(Load(...))` drives the subject from separate processes (so the caller's own work never
competes with the event loop that times requests; forked from a forkserver that has the worker
modules loaded, see `_context`) and returns a `LoadResult` whose 1 s windows
become archive `Window`s; `run_each` runs a duet Load (several `targets`) and returns one
`LoadResult` per target. The event loops themselves live in `perfpages.loadgen.worker`.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from perfpages.archive.histogram import Latency
from perfpages.archive.window import Kind, Scalar, Window
from perfpages.errors import PerfpagesError
from perfpages.loadgen.spec import Load
from perfpages.loadgen.tally import Tally

SAMPLES_HEADER = "offset_s,latency_ms,service_ms,status,process\n"


@dataclass
class LoadResult:
    """Merged windows of all processes, the warm-up, and (cold path) every request's duration."""

    load: Load
    started: float  # Unix time of the measurement's start (after the warm-up)
    windows: list[Tally]
    warmup: Tally | None
    loop: str  # "uvloop" or "asyncio"
    cpu_s: list[float] = field(default_factory=list)  # each process's CPU over the measurement
    samples: list[str] = field(default_factory=list)  # CSV rows, see SAMPLES_HEADER

    def total(self) -> Tally:
        """The whole measurement as one window."""
        out = Tally(index=0, duration_s=self.load.duration_s)
        for w in self.windows:
            out.merge(w)
        out.cpu_max_s = max(self.cpu_s, default=0.0)
        return out

    @property
    def throughput(self) -> float:
        """Responses per second (closed loop: the capacity to hand to an open-loop share)."""
        return self.total().responses / self.load.duration_s

    @property
    def achieved_rate(self) -> float:
        return self.total().completed / self.load.duration_s

    def samples_csv(self) -> str:
        """Every measured request by intended start, for `ArchiveWriter.write_file('samples/…')`."""
        return SAMPLES_HEADER + "".join(self.samples)

    def cold_path(self) -> dict[str, float | int | None]:
        """Requests, p50…p99.99, the slowest and when it happened (seconds from the start)."""
        total = self.total()
        out: dict[str, float | int | None] = {"requests": total.requests}
        out.update({k: round(v, 4) for k, v in total.latency.summary_ms().items()})
        out["slowest_ms"] = round(total.slowest_ms, 4) if total.slowest_at_s is not None else None
        out["slowest_at_s"] = total.slowest_at_s
        return out

    def diagnostics_json(self) -> str:
        """The generator's own record for `diagnostics/`: which loop ran, each process's CPU, and
        per window the encoded service-time, dispatch-lag and loop-lag histograms (lossless, so
        a suite can merge them across rounds with `Latency.decode`)."""
        load = self.load
        data = {
            "loop": self.loop, "processes": load.processes, "callers": load.callers,
            "mode": "open" if load.open_loop else "closed", "offered_rate": load.offered_rate,
            "duration_s": load.duration_s, "cpu_s": [round(c, 4) for c in self.cpu_s],
            "windows": [{"window": t.index, "service": t.service.encode(), "lag": t.lag.encode(),
                         "loop_lag": t.loop_lag.encode(), "cpu_s": round(t.cpu_s, 4)}
                        for t in ([self.warmup] if self.warmup else []) + self.windows],
        }
        return json.dumps(data, indent=1) + "\n"

    def to_windows(self, block: str, label: str, round: int, params: dict[str, Scalar],
                   first_window: int = 0) -> list[Window]:
        """Archive windows: the warm-up (kind 'warmup') if any, then one per measured window."""
        out: list[Window] = []
        if self.warmup is not None:
            out.append(self._window(self.warmup, "warmup", 0, self.started - self.load.warmup_s,
                                    block, label, round, params))
        at = self.started
        for i, tally in enumerate(self.windows):
            out.append(self._window(tally, "measure", first_window + i, at, block, label, round,
                                    params))
            at += tally.duration_s
        return out

    def _window(self, t: Tally, kind: Kind, index: int, at: float, block: str, label: str,
                round: int, params: dict[str, Scalar]) -> Window:
        start = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        rate = t.completed if self.load.open_loop else t.responses
        return Window(block=block, label=label, round=round, params=dict(params), start=start,
                      duration_s=round_s(t.duration_s), kind=kind, window=index,
                      requests=t.requests, codes=dict(t.codes), errors=t.error_count,
                      throughput=rate / t.duration_s if t.duration_s else None,
                      latency=t.latency if t.latency.count else None,
                      metrics=t.metrics(self.load.open_loop))


def round_s(value: float) -> float:
    return round(value, 6)


def merge_parts(load: Load, parts: list[dict[str, Any]]) -> LoadResult:
    """Merge the processes' reports window by window (histograms added losslessly)."""
    lengths = load.windows()
    windows = [Tally(index=i, duration_s=d) for i, d in enumerate(lengths)]
    warmup = Tally(index=-1, duration_s=load.warmup_s) if load.warmup_s > 0 else None
    samples: list[str] = []
    for part in parts:
        for data in part["windows"]:
            tally = Tally.from_json(data)
            if tally.index < 0:
                if warmup is not None:
                    warmup.merge(tally)
            elif tally.index < len(windows):
                windows[tally.index].merge(tally)
        samples.extend(part["samples"])
    samples.sort(key=lambda row: float(row.split(",", 1)[0]))
    return LoadResult(load=load, started=parts[0]["started"], windows=windows, warmup=warmup,
                      loop=parts[0]["loop"], cpu_s=[p["cpu_s"] for p in parts],
                      samples=samples)


def run(load: Load, *, start_timeout_s: float = 60.0, cpus: tuple[int, ...] = (),
        on_start: Callable[[float], None] | None = None) -> LoadResult:
    """Run the load from `load.processes` processes and merge what they measured;
    `cpus` pins them (they wait for the start instant, so pinning after the start is in time);
    `on_start` is told the measurement's start instant (Unix time, after the warm-up) before
    it comes, e.g. to read counters at the window boundaries."""
    if load.targets:
        raise PerfpagesError(f"a Load with {len(load.targets)} targets has a result per target",
                             key="load.targets", fix="call perfpages.loadgen.generator.run_each")
    return run_each(load, start_timeout_s=start_timeout_s, cpus=cpus, on_start=on_start)[0]


def run_each(load: Load, *, start_timeout_s: float = 60.0, cpus: tuple[int, ...] = (),
             on_start: Callable[[float], None] | None = None) -> list[LoadResult]:
    """`run`, one result per target (in `load.targets`' order; one for a Load without)."""
    parts = _run_parts(load, start_timeout_s, cpus, on_start)
    # Each process reports every side: merged side by side, each a LoadResult of its own.
    return [merge_parts(load, [{**part, **part["sides"][i]} for part in parts])
            for i in range(len(parts[0]["sides"]))]


# Loaded once in the forkserver, so a run's processes start in about 0.15 s instead of the 0.6 to
# 1.5 s a fresh interpreter takes to import them. '__main__' as multiprocessing's default: a
# script run by path is imported there once, not again in every process.
PRELOAD = ["__main__", "perfpages.loadgen.generator", "perfpages.loadgen.worker", "uvloop"]


def _context() -> Any:
    """Multiprocessing's forkserver: started by the first run, it lives as long as the harness
    (it exits when the harness's end of its pipe closes, SIGKILL included) and its processes die
    with it (`_child_main`); a run's own processes never outlive the run."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)  # a missing module (uvloop) is skipped
    return ctx


def _run_parts(load: Load, start_timeout_s: float, cpus: tuple[int, ...],
               on_start: Callable[[float], None] | None = None) -> list[dict[str, Any]]:
    ctx = _context()
    pipes, procs = [], []
    # The processes' parent is the forkserver, which outlives the harness while they run: they
    # watch this pipe instead, whose only writing end is ours (closed at our end, or death).
    alive, alive_w = ctx.Pipe(duplex=False)
    finished = False
    try:
        for shard in range(load.processes):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_child_main, args=(child, load, shard, alive),
                               name=f"perfpages-loadgen-{shard}", daemon=True)
            proc.start()
            child.close()
            if cpus and proc.pid is not None:  # started: it has a pid
                os.sched_setaffinity(proc.pid, cpus)
            pipes.append(parent)
            procs.append(proc)
        for pipe in pipes:
            _expect(pipe, "ready", start_timeout_s)
        # One start instant for every process, a little ahead so all of them are waiting for it.
        start_at = time.time() + 0.05 + load.warmup_s
        for pipe in pipes:
            pipe.send(start_at)
        if on_start is not None:
            on_start(start_at)
        budget = load.warmup_s + load.duration_s + load.timeout_s + start_timeout_s
        parts = [_expect(pipe, "result", budget) for pipe in pipes]
        finished = True
    finally:
        for pipe in pipes:  # a process still waiting for its start sees EOF and ends
            pipe.close()
        for proc in procs:
            if finished:  # else (an error, Ctrl-C) stop loading the subject at once
                proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
                proc.join()
        alive.close()
        alive_w.close()
    return parts


def _expect(pipe: Any, what: str, timeout_s: float) -> Any:
    if not pipe.poll(timeout_s):
        raise PerfpagesError(f"a load generator process sent no {what} within {timeout_s:.0f} s",
                             key="loadgen", fix="check the machine is not overloaded")
    try:
        kind, payload = pipe.recv()
    except EOFError:
        raise PerfpagesError("a load generator process died", key="loadgen",
                             fix="run again; if it persists, check memory and limits") from None
    if kind == "error":
        raise PerfpagesError(f"a load generator process failed: {payload}", key="loadgen",
                             fix="check the request templates and the subject's address")
    return payload


def _child_main(pipe: Any, load: Load, shard: int, alive: Any) -> None:
    import ctypes
    import signal
    import sys
    import threading

    from perfpages.loadgen import worker

    if sys.platform.startswith("linux"):  # die with the forkserver, our parent
        ctypes.CDLL(None).prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
        if os.getppid() == 1:
            return

    def watch() -> None:  # die with the harness, even when it is SIGKILLed: its end closes
        alive.poll(None)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, daemon=True, name="harness-watch").start()

    worker.main(pipe, load, shard)


def merged_latency(results: list[LoadResult]) -> Latency:
    """One histogram over several runs' measured windows (e.g. all rounds of a block)."""
    return Latency.merged(w.latency for r in results for w in r.windows)

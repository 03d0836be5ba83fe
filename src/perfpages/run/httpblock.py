"""HTTP blocks of `bench run`: the subject service per label, warmed up, driven case by case.

A turn (one label in one round) needs the label's subject once per group of cases with the same
environment; it warms it up (or, kept up, lets it settle) with the group's first load (archived
as `warmup`), then runs each case's load and archives its 1 s windows. Method v1 runs (no
`method.rule`) start the subject for every turn and stop it after. Method v2 runs keep each
label's subjects up from their first turn to the end of the block, so a round costs seconds and
its windows sit back to back, unless the block's labels need different PostgreSQL settings or
binaries (starting one label's server would restart the server the others are connected to):
such a block restarts per turn, as run.json's notes say. Under the `pairs` order (method v2.1)
a turn is one case (the runner visits a round cell by cell, every label's window of a cell back
to back) and every case settles with its own load first; each measured window records `idle_s`,
how long its subject sat without load of ours before that settle. A capacity measured in a round
serves that round's later cases (and their re-measures). A case whose load fails, or whose
subject would not start, is archived as a failed window; a subject that dies mid-window shows up
as errors, and is started again for the next case.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
import zlib
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path

from perfpages.archive.manifest import Method
from perfpages.archive.reader import FLOOR_LABEL
from perfpages.archive.reader import path_part as slug
from perfpages.archive.window import Scalar, Window, params_key
from perfpages.archive.writer import ArchiveWriter, utc_now
from perfpages.errors import PerfpagesError, clip
from perfpages.loadgen import generator as loadgen
from perfpages.loadgen import locust
from perfpages.loadgen.spec import Load, Request
from perfpages.run import callgrind, collect, cost, counts, instructions
from perfpages.run.blocks import (
    Idle,
    Session,
    Step,
    case_groups,
    floor_windows,
    restart_reason,
    settles_each,
)
from perfpages.run.builds import Build
from perfpages.run.delay import Crossing
from perfpages.run.duet import Duet
from perfpages.run.postgres import Server
from perfpages.run.profile import Profiler
from perfpages.run.service import Service
from perfpages.run.suite import HttpBlockSpec, HttpCase, HttpTurn, Suite

FLOOR_CALLERS = 8


def case_seconds(block: HttpBlockSpec, method: Method, each: bool | None = None) -> float:
    """The progress bar's estimate of one turn: a settle per group of cases, or, in a block
    the `pairs` order pairs (`each`; None: any but a duet under `pairs`), one before every
    window."""
    if block.instructions is not None:  # counted in calls, not seconds
        return callgrind.estimate_s(block.instructions, len(block.cases))
    window = block.window_s or method.window_s
    if each if each is not None else method.order == "pairs" and not block.duet:
        return len(block.cases) * (method.warmup_s + window)
    groups = len({json.dumps(c.env, sort_keys=True) for c in block.cases})
    return groups * method.warmup_s + len(block.cases) * window


class HttpBlocks:
    """The driver of `HttpBlockSpec` blocks (see `perfpages.run.blocks.BlockDriver`): prepared
    labels, their working directories, their subjects."""

    def __init__(self, session: Session) -> None:
        self.session = session
        # label -> the server address its `prepare` was given (stored configuration may name it)
        self.prepared: dict[str, tuple[str, int]] = {}
        self._workdir: Path | None = None
        self.warm = False  # this block keeps its subjects up across its rounds
        self.counted = False  # this block's subjects run under callgrind
        self.pg_wrap: tuple[str, ...] = ()  # what its PostgreSQL server runs under (callgrind)
        self.each = False  # this block settles before every window (paired under `pairs`)
        # (label, env, delayed) -> its subject kept up, and the server it is connected to
        self.running: dict[tuple[str, str, bool], tuple[Service, Server]] = {}
        self.idle = Idle()  # per subject (the keys of `running`): when its last load ended
        # (label, round, env) -> the capacity its capacity case measured in that round
        self.capacities: dict[tuple[str, int, str], float] = {}
        self.duet = Duet(session, self._service, self._load)  # duet blocks' turns

    @property
    def workdir(self) -> Path:
        if self._workdir is None:  # made on first use: a run without HTTP blocks leaves none
            self._workdir = Path(tempfile.mkdtemp(prefix="perfpages-http-"))
            self.session.clusters.owned.add(self._workdir)  # reaped if the run is killed
        return self._workdir

    def open_block(self, suite: Suite, block: HttpBlockSpec, method: Method,
                   builds: list[Build]) -> None:
        """Before a block's first round: method v2 keeps its subjects up if it can."""
        self.close_block()
        self.counted = block.instructions is not None and callgrind.check()
        self.pg_wrap = instructions.server_wrap(self.session, block) if self.counted else ()
        self.warm = method.rule is not None and not restart_reason(builds)
        self.each = settles_each(method, self.unpaired(block, builds))

    def close_block(self) -> None:
        """After a block, and on the way out whatever happened: every subject kept is stopped."""
        running, self.running, self.warm, self.pg_wrap = self.running, {}, False, ()
        self.idle.forget()
        self.capacities.clear()
        for service, _ in running.values():
            service.stop()

    def close(self) -> None:
        self.close_block()
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    def parameters(self, block: HttpBlockSpec) -> tuple[str, ...]:
        return block.parameters

    def scope(self, block: HttpBlockSpec, method: Method,
              labels: list[str]) -> tuple[int, list[str]]:
        names = [n for n in labels if not block.labels or n in block.labels]
        return min(block.rounds or method.rounds, method.rounds), names

    def turn_seconds(self, block: HttpBlockSpec, method: Method,
                     each: bool | None = None) -> float:
        return case_seconds(block, method, each)

    def cells(self, block: HttpBlockSpec) -> list[tuple[str, bool]]:
        return [(params_key(c.params), c.capacity) for c in block.cases]

    def unpaired(self, block: HttpBlockSpec, builds: list[Build]) -> str:
        if block.duet:
            return "a duet serves its labels at once"
        reason = restart_reason(builds)
        return f"subjects restarted every turn: {reason}" if reason else ""

    def plans(self, block: HttpBlockSpec) -> dict[str, str]:
        return {}

    def _service(self, suite: Suite, b: Build, env: dict[str, str], log: Path,
                 delayed: bool = False) -> tuple[Service, Server]:
        """The subject for a label, not started; `delayed`: it reaches PostgreSQL through the
        delay proxy (its store and its data alike, as a deployment across a network would)."""
        assert suite.service is not None
        clusters = self.session.clusters
        server = clusters.start(suite, b, self.pg_wrap)
        target = server.target.with_db(clusters.db(suite, server))
        if delayed:
            target = self.session.delayed(target)
        work = self.workdir / slug(b.label.name)
        work.mkdir(parents=True, exist_ok=True)
        address = (target.host, target.port)
        try:
            if self.prepared.get(b.label.name) != address and suite.service.prepare is not None:
                suite.service.prepare(b, target, work)
                self.prepared[b.label.name] = address
            spec = suite.service.spec(b, target, work, env)
            if spec.cwd is None:  # never the checkout: `python -m pkg` there runs its code
                spec = replace(spec, cwd=work)
        except PerfpagesError:
            raise
        except Exception as exc:  # a suite's own code: name it, never a traceback
            raise PerfpagesError(f"the suite's service hook failed: {type(exc).__name__}: {exc}",
                                 key=f"suite {suite.name}", fix="fix the suite module") from None
        return Service(spec, log, self.session.cpus("subject")), server

    def floor(self, suite: Suite, block: HttpBlockSpec, position: str,
              b: Build, writer: ArchiveWriter) -> None:
        """The subject's health endpoint, closed loop, straight after start: a drift check."""
        assert suite.service is not None
        self.duet.know(b)  # the block's first label: a duet's base
        params: dict[str, Scalar] = {"position": position, "floor": "health",
                                     "callers": FLOOR_CALLERS}
        if writer.has(Window(block.name, FLOOR_LABEL, 0, params, "", 0, kind="floor").key):
            return
        log = writer.run_dir / "diagnostics" / block.name / "floor-server.log"
        start = utc_now()
        try:
            service, _ = self._service(suite, b, {}, log)
            with service:
                # One-second windows: the floor's own spread, for the drift decision.
                seconds = floor_windows(suite.floor_s)
                load = Load([Request(service.url + suite.service.floor_path)],
                            duration_s=seconds, warmup_s=1.0, callers=FLOOR_CALLERS,
                            window_s=1.0)
                result = loadgen.run(load, cpus=self.session.cpus("load"))
        except PerfpagesError as exc:
            self.session.append(writer, Window(block.name, FLOOR_LABEL, 0, params, start, 0.0,
                                               kind="floor", status="failed", error=str(exc)))
            return
        for w in result.to_windows(block.name, FLOOR_LABEL, 0, params):
            if w.kind == "measure":
                self.session.append(writer, replace(w, kind="floor"))

    def _subject(self, suite: Suite, b: Build, env: dict[str, str], log: Path,
                 delayed: bool, fresh: bool = False) -> tuple[Service, Server]:
        """The label's subject for a group of cases, started (or still up from a former turn
        of a block that keeps it, unless `fresh`)."""
        key = (b.label.name, json.dumps(env, sort_keys=True), delayed)
        kept = self.running.pop(key, None)
        if kept is not None:
            if kept[0].alive() and not fresh:
                self.running[key] = kept
                return kept
            kept[0].stop()  # died since (its last windows' errors say so), or not wanted
        service, server = self._service(suite, b, env, log, delayed)
        if self.counted:  # its calls counted (perfpages.run.instructions)
            service = callgrind.traced(service, self.workdir / "callgrind" / slug(key[0]))
        self.idle.forget(key)  # a fresh start: its first use
        service.start()
        if self.warm:
            self.running[key] = (service, server)
        return service, server

    def turn(self, suite: Suite, block: HttpBlockSpec, rnd: int, b: Build,
             writer: ArchiveWriter, method: Method, totals: collect.Totals,
             step: Step, only: frozenset[str] | None = None, attempt: int = 1) -> None:
        if block.duet:  # two labels' subjects at once; busy duet windows are not measured again
            if attempt == 1:
                self.duet.turn(suite, block, rnd, b, writer, method, step)
            return
        name = b.label.name
        window_s = block.window_s or method.window_s
        pairs = self.each  # every window after a settle of its own load
        per_case = (case_seconds(block, method) / len(block.cases) if block.instructions
                    else window_s + (method.warmup_s if pairs else 0.0))

        def asked(case: HttpCase) -> bool:
            return only is None or params_key(case.params) in only

        def wanted(case: HttpCase) -> bool:
            """To be measured now: asked for (`only`: these parameter sets) and not archived."""
            return asked(case) and not writer.has(Window(block.name, name, rnd, case.params,
                                                         "", 0, attempt=attempt).key)

        base = f"diagnostics/{block.name}/{slug(name)}"
        for group in case_groups(block.cases):
            if not any(wanted(c) for c in group):
                step(f"{block.name} r{rnd} {name}: archived",
                     per_case * sum(asked(c) for c in group))
                continue
            log = writer.run_dir / base / "server.log"
            start = utc_now()
            delayed = any(c.delay_ms is not None for c in group)
            env = json.dumps(group[0].env, sort_keys=True)
            subject = (name, env, delayed)
            try:
                # A one-round block measures from the subject's start (the cold path): its
                # first case measured again starts it again.
                fresh = (attempt > 1 and self.scope(block, method, [])[0] == 1
                         and wanted(group[0]))
                service, server = self._subject(suite, b, group[0].env, log, delayed, fresh)
            except PerfpagesError as exc:
                for case in group:
                    if wanted(case):
                        self._failed(writer, block, name, rnd, case, start, str(exc), attempt)
                step(f"{block.name} r{rnd} {name}: subject failed",
                     per_case * sum(asked(c) for c in group))
                continue
            try:
                before = self.session.snapshot(server, suite)
                # the capacity later cases take shares of: this round's, once measured
                capacity: float | None = self.capacities.get((name, rnd, env))
                settled = False  # the group's first load runs the warm-up (the settle)
                for index, case in enumerate(group):
                    later = any(wanted(c) for c in group[index + 1:])
                    record = wanted(case)
                    if not record and not (case.capacity and later and capacity is None):
                        if asked(case):
                            step(f"{block.name} r{rnd} {name}: archived", per_case)
                        continue
                    if not service.alive():  # it died in the last case (its errors say so)
                        service.stop()
                        self.idle.forget(subject)
                        try:
                            service.start()
                        except PerfpagesError as exc:
                            for rest in group[index:]:
                                if wanted(rest):
                                    self._failed(writer, block, name, rnd, rest, utc_now(),
                                                 str(exc), attempt)
                            break
                    seed = zlib.crc32(f"{rnd}/{name}/{params_key(case.params)}".encode())
                    turn = HttpTurn(service.url, window_s,
                                    0.0 if settled and not pairs else method.warmup_s,
                                    seed=seed & 0xFFFF, capacity=capacity)
                    settled = True
                    network = self.session.crossing(server) if delayed else None
                    idle = self.idle.since(subject)
                    try:
                        result = self._run_case(
                            writer, block, b, rnd, case, turn, service,
                            partial(self._meter, suite, block, service, server),
                            record=record, attempt=attempt,
                            profile=block.flamegraph and rnd == 1 and case is block.cases[0]
                            and attempt == 1, network=network, idle_s=idle)
                    finally:
                        self.idle.used(subject)
                    if case.capacity and result is not None:
                        capacity = self.capacities[(name, rnd, env)] = result.throughput
                    step(f"{block.name} r{rnd} {name} {params_key(case.params)}", per_case)
                # A subject kept up keeps its connections: waiting for them to end would wait
                # out the timeout (pg_stat_statements counts at once; the rest within a second).
                after = self.session.snapshot(server, suite, settle=not self.warm)
                if before and after:
                    totals.add(before, after)
            finally:
                if not self.warm:
                    service.stop()
                    self.idle.forget(subject)

    def _failed(self, writer: ArchiveWriter, block: HttpBlockSpec, label: str, rnd: int,
                case: HttpCase, start: str, error: str, attempt: int = 1) -> None:
        self.session.append(writer, Window(block.name, label, rnd, dict(case.params), start, 0.0,
                                           status="failed", error=clip(error, 300), errors=1,
                                           attempt=attempt))

    def _engine(self, block: HttpBlockSpec, load: Load,
                meter: cost.Meter | None = None) -> loadgen.LoadResult:
        """The block's engine runs the case's load (the floors always use perfpages' own);
        `meter` reads the cost counters at perfpages' own windows' boundaries."""
        if block.engine == "locust":  # remote workers reach the master on every interface
            return locust.run(load, workers=block.workers, expect_remote=block.remote_workers,
                              master_host="0.0.0.0" if block.remote_workers else "127.0.0.1",
                              cpus=self.session.cpus("load"))
        return loadgen.run(load, cpus=self.session.cpus("load"),
                           on_start=meter.at_windows(load.windows()) if meter else None)

    def _meter(self, suite: Suite, block: HttpBlockSpec, service: Service,
               server: Server) -> cost.Meter | None:
        """Cost per call for perfpages' own engine (locust's windows are its own)."""
        if block.engine == "locust" or service.process is None:
            return None
        admin = self.session.clusters.admin_db(server)
        stats = (lambda: server.target.connect(admin)) if self.session.diagnostics_ok else None
        return cost.Meter(service.process.pid, server.pid, stats,
                          self.session.clusters.db(suite, server), admin)

    @staticmethod
    def _load(case: HttpCase, turn: HttpTurn) -> Load:
        """The case's Load from the suite's factory: its errors fail the case, in one line."""
        try:
            load = case.load(turn)
        except PerfpagesError:
            raise
        except Exception as exc:
            raise PerfpagesError(f"the case's load factory failed: {type(exc).__name__}: {exc}",
                                 key=f"case {params_key(case.params)}",
                                 fix="fix the suite module") from None
        if not isinstance(load, Load):
            raise PerfpagesError(f"the case's load factory returned {type(load).__name__}, "
                                 "not a perfpages.Load", key=f"case {params_key(case.params)}",
                                 fix="return perfpages.Load(...) from the factory")
        return replace(load, samples=True) if case.samples else load

    def _run_case(self, writer: ArchiveWriter, block: HttpBlockSpec, b: Build, rnd: int,
                  case: HttpCase, turn: HttpTurn, service: Service,
                  meter_for: Callable[[], cost.Meter | None], record: bool, profile: bool,
                  network: Crossing | None = None, attempt: int = 1,
                  idle_s: float | None = None) -> loadgen.LoadResult | None:
        name = b.label.name
        if block.instructions is not None:  # counted under callgrind, in calls
            instructions.case(self.session, writer, block, name, rnd, case, turn, service,
                              self._load, record, attempt)
            return None
        start = utc_now()
        extra: dict[str, float | None] = {}
        costs: list[dict[str, float]] = []
        try:
            load = self._load(case, turn)
            if network is not None:
                network.begin(case.delay_ms or 0.0)
            profiler = Profiler(service.process.pid) if profile and service.process else None
            meter = meter_for() if record else None
            with meter or contextlib.nullcontext():
                try:
                    result = self._engine(block, load, meter)
                finally:
                    if profiler is not None:
                        profiler.stop()
                if network is not None:  # per call, warm-up included (the counters span
                    # both); counted from the windows: total() would merge every histogram
                    extra = network.end(sum(t.requests for t in result.windows)
                                        + (result.warmup.requests if result.warmup else 0))
                if meter is not None:  # counts per call from a batch no call straddles
                    readings = meter.stop()
                    exact = counts.batch(meter, load, turn.seed)
                    costs = [{**c, **exact} for c in cost.window_costs(
                        readings, [(t.completed, t.duration_s) for t in result.windows])]
        except PerfpagesError as exc:
            if record:
                self._failed(writer, block, name, rnd, case, start, str(exc), attempt)
            return None
        if not record:
            return result
        measured = iter(costs)
        for w in result.to_windows(block.name, name, rnd, case.params):
            if w.kind == "measure":  # the network's counts span the case: they stand
                w = replace(w, metrics={**w.metrics, **next(measured, {}), **extra},
                            idle_s=idle_s)
            self.session.append(writer, replace(w, attempt=attempt))
        again = f"-attempt{attempt}" if attempt != 1 else ""
        base = f"{block.name}/{slug(name)}/r{rnd}-{slug(params_key(case.params))}{again}"
        if case.samples:
            writer.write_file(f"samples/{base}.csv", result.samples_csv())
            writer.write_file(f"diagnostics/{base}-cold-path.json",
                              json.dumps(result.cold_path(), indent=2) + "\n")
        if profiler is not None:
            profiler.save(writer, f"diagnostics/{block.name}/{slug(name)}",
                          list(block.flame_rules), f"{name}: {params_key(case.params)}")
        return result


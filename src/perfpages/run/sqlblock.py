"""pgbench blocks of `bench run`: a label's turn is a warm-up, then one window per client count.

In a block the `pairs` order pairs (method v2.1) a turn is one cell, and every window settles
first with its own load (its scripts at its clients and delay, archived as `warmup` under the
cell's parameters); each measured window records `idle_s`, how long the label's server sat
without load of ours before that settle.

Also the pgbench floor every block gets before and after it (select-only, one client, straight
to PostgreSQL): whether the machine drifted while the block ran.
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from typing import Any

from perfpages.archive.manifest import Method
from perfpages.archive.reader import FLOOR_LABEL
from perfpages.archive.window import Scalar, Window, params_key
from perfpages.archive.writer import ArchiveWriter, utc_now
from perfpages.run import collect, cost, pgbench
from perfpages.run.blocks import Idle, Session, Step, floor_windows, restart_reason, settles_each
from perfpages.run.builds import Build
from perfpages.run.postgres import Server, Target
from perfpages.run.suite import BlockSpec, Suite


def floor(session: Session, suite: Suite, block: str, position: str, b: Build,
          writer: ArchiveWriter) -> None:
    """pgbench select-only, one client, on the first label's server (warm-up not archived), as
    one-second windows: the floor carries its own second-to-second spread, which the drift
    decision needs (`decision.drifted`)."""
    params: dict[str, Scalar] = {"position": position, "clients": 1}
    missing = [i for i in range(floor_windows(suite.floor_s)) if not writer.has(
        Window(block, FLOOR_LABEL, 0, params, "", 0, kind="floor", window=i).key)]
    if not missing:  # a resumed run measures only the seconds it lacks
        return
    server = session.clusters.start(suite, b)
    target = server.target.with_db(session.clusters.floor_db(server))
    script = [pgbench.Script(builtin="select-only")]
    pgbench.run(server.bin, target, script, 1, 1, env=b.env, cpus=session.cpus("load"))
    rates: list[float] = []
    for index in missing:
        start = utc_now()
        res = pgbench.run(server.bin, target, script, 1, 1, env=b.env,
                          cpus=session.cpus("load"))
        w = pgbench.to_window(block, FLOOR_LABEL, 0, params, "floor", start, res)
        session.append(writer, replace(w, window=index))
        tps = w.metrics.get("tps")
        if w.status == "ok" and tps is not None:
            rates.append(float(tps))
    machine = writer.manifest.machine
    if position == "before" and rates and "floor_tps" not in machine:
        # The machine's speed beside its fingerprint: the first block's floor, before it.
        writer.manifest = replace(writer.manifest, machine={
            **machine, "floor_tps": round(statistics.median(rates), 1)})


class PgbenchBlocks:
    """The driver of `BlockSpec` blocks (see `perfpages.run.blocks.BlockDriver`)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.per_second = False  # bench.calibrate: one-second windows, as HTTP blocks archive
        self.idle = Idle()  # per server (its pid): when the last load of ours on it ended
        self.each = False  # this block settles before every window (paired under `pairs`)

    def parameters(self, block: BlockSpec) -> tuple[str, ...]:
        return block.parameters

    def scope(self, block: BlockSpec, method: Method,
              labels: list[str]) -> tuple[int, list[str]]:
        return min(block.rounds or method.rounds, method.rounds), labels

    def turn_seconds(self, block: BlockSpec, method: Method, each: bool | None = None) -> float:
        windows = len(block.cells())
        window_s = block.window_s or method.window_s
        if each if each is not None else method.order == "pairs":
            # a settle before every window, in pgbench's whole seconds
            settle = max(1, round(method.warmup_s)) if method.warmup_s > 0 else 0
            return windows * (settle + window_s)
        return method.warmup_s + windows * window_s

    def cells(self, block: BlockSpec) -> list[tuple[str, bool]]:
        return [(params_key(p), False) for p in block.cells()]

    def unpaired(self, block: BlockSpec, builds: list[Build]) -> str:
        reason = restart_reason(builds)  # PostgreSQL restarted for every window otherwise
        return f"PostgreSQL restarted between labels: {reason}" if reason else ""

    def floor(self, suite: Suite, block: BlockSpec, position: str, b: Build,
              writer: ArchiveWriter) -> None:
        return None  # the pgbench floor is the runner's, for every block

    def plans(self, block: BlockSpec) -> dict[str, str]:
        return dict(block.explain)

    def open_block(self, suite: Suite, block: BlockSpec, method: Method,
                   builds: list[Build]) -> None:
        self.idle.forget()  # pgbench is the load: nothing of the label's runs between turns
        self.each = settles_each(method, self.unpaired(block, builds))

    def close_block(self) -> None:
        self.idle.forget()

    def close(self) -> None:
        return None

    def turn(self, suite: Suite, block: BlockSpec, rnd: int, b: Build, writer: ArchiveWriter,
             method: Method, totals: collect.Totals, step: Step,
             only: frozenset[str] | None = None, attempt: int = 1) -> None:
        name = b.label.name
        clusters = self.session.clusters
        window_s = block.window_s or method.window_s
        pairs = self.each  # a settle before every window, at its own cell
        cells = [p for p in block.cells() if only is None or params_key(p) in only]
        todo = [p for p in cells if not writer.has(
            Window(block.name, name, rnd, p, "", 0, attempt=attempt).key)]
        if not todo:
            step(f"{block.name} r{rnd} {name}: archived",
                 len(cells) * (window_s + method.warmup_s) if pairs
                 else method.warmup_s + len(cells) * window_s)
            return
        server = clusters.start(suite, b)
        subject = server.pid  # a restarted server is a new subject: its first use
        target = server.target.with_db(clusters.db(suite, server))
        if block.delays_ms:  # pgbench reaches the server through the delay proxy
            target = self.session.delayed(target)
        defines = {**block.defines}
        admin = clusters.admin_db(server)
        for group in ([[p] for p in cells] if pairs else [cells]):
            if pairs and group[0] not in todo:
                step(f"{block.name} r{rnd} {name}: archived", method.warmup_s + window_s)
                continue
            # the settle: the group's own cell under `pairs`, else the block's most clients
            warm_params: dict[str, Scalar] = (dict(group[0]) if pairs
                                              else {"clients": max(block.clients)})
            warm = Window(block.name, name, rnd, warm_params, "", 0, kind="warmup",
                          attempt=attempt)
            idle = self.idle.since(subject)
            if method.warmup_s > 0 and not writer.has(warm.key):
                if block.delays_ms and pairs:  # at the delay the window runs at
                    self.session.crossing(server).begin(float(group[0]["delay_ms"]))
                start = utc_now()
                res = pgbench.run(server.bin, target, list(block.scripts),
                                  int(warm_params["clients"]), method.warmup_s,
                                  prepared=block.prepared, defines=defines, env=b.env,
                                  sampling=block.log_sampling, cpus=self.session.cpus("load"))
                self.idle.used(subject)
                self.session.append(writer, replace(pgbench.to_window(
                    block.name, name, rnd, warm.params, "warmup", start, res), attempt=attempt))
            step(f"{block.name} r{rnd} {name}: warm-up", method.warmup_s)
            before = self.session.snapshot(server, suite)
            # Cost per transaction: PostgreSQL's CPU (pgbench's own left out) and its statements.
            meter = cost.Meter(None, server.pid,
                               (lambda: server.target.connect(admin))
                               if self.session.diagnostics_ok else None,
                               clusters.db(suite, server), admin)
            with meter, collect.WaitSampler(lambda: server.target.connect(admin),
                                            clusters.db(suite, server)) as sampler:
                for params in group:
                    if params in todo:
                        self.window(block, rnd, b, writer, server, target, params, window_s,
                                    meter, attempt, idle)
                        idle = None if pairs else self.idle.since(subject)
                    step(f"{block.name} r{rnd} {name} {params_key(params)}", window_s)
            after = self.session.snapshot(server, suite, settle=True)
            if before and after:
                totals.add(before, after)
            totals.waits.update(sampler.events)
            totals.samples += sampler.samples

    def window(self, block: BlockSpec, rnd: int, b: Build, writer: ArchiveWriter,
               server: Server, target: Target, params: dict[str, Any], window_s: float,
               meter: cost.Meter, attempt: int, idle: float | None) -> None:
        """One measured window of a cell, archived (with its cost per call and, through the
        delay proxy, its round trips)."""
        crossing = self.session.crossing(server) if block.delays_ms else None
        if crossing is not None:
            crossing.begin(float(params["delay_ms"]))
        start = utc_now()
        first = meter.read()
        res = pgbench.run(server.bin, target, list(block.scripts), int(params["clients"]),
                          window_s, prepared=block.prepared, defines=dict(block.defines),
                          env=b.env, sampling=block.log_sampling,
                          cpus=self.session.cpus("load"), per_second=self.per_second)
        self.idle.used(server.pid)
        w = pgbench.to_window(block.name, b.label.name, rnd, params, "measure", start, res)
        spent = cost.per_call(first, meter.read(), res.transactions + res.errors)
        w = replace(w, metrics={**w.metrics, **spent})
        if crossing is not None:
            w = replace(w, metrics={**w.metrics, **crossing.end(res.transactions + res.errors)})
        for part in pgbench.to_seconds(w, res) if self.per_second else [w]:
            self.session.append(writer, replace(part, attempt=attempt, idle_s=idle))

"""Duet HTTP blocks (`HttpBlockSpec(duet=True)`): two labels' subjects served at once.

Duet benchmarking (Bulej et al., ICPE 2020) runs both versions at the same time on the same
machine, so both see the same machine at the same moment. Here the block's first label (the
base) is paired with each other label in that label's turn: both subjects run at once on the
same PostgreSQL server, and one duet Load (`perfpages.loadgen.spec.Load.targets`) alternates
its requests between them, caller k's i-th request going to side (k + i) mod 2; which subject
is side 0 flips from round to round. Each label's windows are archived as usual, with the same
round number, so pairing by round compares windows measured side by side. The base's own turn
measures nothing (it is measured in its partners' turns); with more than two labels it is
measured beside each of them, its windows from the j-th pair numbered j, j + P, j + 2P… (P
pairs), and its round pools them. Each caller passes through both subjects, so in a closed
loop both answer the same number of requests: a duet compares latency, not throughput.

Not in a duet: the delay proxy (its counts cannot be split between two subjects), py-spy, the
Locust engine (refused by `HttpBlockSpec`), and per-label statement totals (both subjects
share the server's pg_stat_statements).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from perfpages.archive.manifest import Method
from perfpages.archive.reader import path_part as slug
from perfpages.archive.window import Window, params_key
from perfpages.archive.writer import ArchiveWriter, utc_now
from perfpages.errors import PerfpagesError, clip
from perfpages.loadgen import generator as loadgen
from perfpages.loadgen.spec import Load
from perfpages.run.blocks import Session, Step, case_groups
from perfpages.run.builds import Build
from perfpages.run.postgres import Server
from perfpages.run.service import Service
from perfpages.run.suite import HttpBlockSpec, HttpCase, HttpTurn, Suite

# What HTTP blocks lend a duet: a label's subject (not started) and a case's Load.
Subject = Callable[[Suite, Build, dict[str, str], Path], tuple[Service, Server]]
MakeLoad = Callable[[HttpCase, HttpTurn], Load]


def labels_of(suite: Suite, block: HttpBlockSpec) -> list[str]:
    """The labels the block runs, in the suite's order (the runner's): the first is the base."""
    return [x.name for x in suite.labels if not block.labels or x.name in block.labels]


def check(suite: Suite) -> None:
    """Before a run: a duet block's labels share one PostgreSQL server at once, so it needs
    two labels or more, with one set of pg_settings."""
    for block in suite.blocks:
        if not isinstance(block, HttpBlockSpec) or not block.duet:
            continue
        labels = [suite.label(n) for n in labels_of(suite, block)]
        other = next((x for x in labels if x.pg_settings != labels[0].pg_settings), None)
        if len(labels) < 2:
            problem, fix = (f"needs two labels or more, and runs {len(labels)}",
                            "run it with two labels or more, or leave it out with --blocks")
        elif other is not None:
            problem, fix = (f"but labels {labels[0].name!r} and {other.name!r} have different "
                            "pg_settings: they cannot share one PostgreSQL server",
                            "give them the same pg_settings, or drop duet=True")
        else:
            continue
        raise PerfpagesError(f"block {block.name!r} runs as a duet, {problem}",
                             key=f"blocks.{block.name}.duet", fix=fix)


def engine_text(suite: Suite, block: HttpBlockSpec) -> str:
    """How run.json's `blocks.B.engine` records a duet block."""
    names = labels_of(suite, block)
    return (f"perfpages duet: {names[0]} beside {', '.join(names[1:])}, both subjects at once "
            "on one PostgreSQL, the load alternating between them request by request")


class Duet:
    """The turns of duet blocks, for `perfpages.run.httpblock.HttpBlocks`, with its way of
    making a label's subject and a case's load."""

    def __init__(self, session: Session, subject: Subject, make_load: MakeLoad) -> None:
        self.session, self.subject, self.make_load = session, subject, make_load
        self.builds: dict[str, Build] = {}  # every label seen: the base's floor comes first

    def know(self, b: Build) -> None:
        self.builds[b.label.name] = b

    def turn(self, suite: Suite, block: HttpBlockSpec, rnd: int, b: Build,
             writer: ArchiveWriter, method: Method, step: Step) -> None:
        """The label's turn: beside the base (the base's own turn only moves the progress)."""
        self.know(b)
        names = labels_of(suite, block)
        base, name = names[0], b.label.name
        window_s = block.window_s or method.window_s
        seconds = window_s * len(block.cases)
        if name == base:
            step(f"{block.name} r{rnd} {base}: measured beside the others", seconds)
            return
        first = self.builds.get(base)
        if first is None:  # the runner's floor before the block runs on the base first
            raise PerfpagesError(f"duet block {block.name!r}: the base {base!r} was never seen",
                                 key=f"blocks.{block.name}.duet")
        pair = Pair(self, suite, block, rnd, (first, b), names.index(name) - 1,
                    len(names) - 1, writer, method)
        for group in case_groups(block.cases):
            pair.run(group, step)


class Pair:
    """The base and one other label in one round: their subjects, their windows."""

    def __init__(self, duet: Duet, suite: Suite, block: HttpBlockSpec, rnd: int,
                 builds: tuple[Build, Build], index: int, pairs: int, writer: ArchiveWriter,
                 method: Method) -> None:
        self.duet, self.suite, self.block, self.rnd = duet, suite, block, rnd
        self.index, self.pairs = index, pairs
        self.writer, self.method = writer, method
        self.window_s = block.window_s or method.window_s
        # Side 0 is the base in odd rounds, the other label in even ones.
        self.sides = builds if rnd % 2 else (builds[1], builds[0])
        self.base = builds[0].label.name
        self.text = f"{block.name} r{rnd} {builds[0].label.name}+{builds[1].label.name}"

    def window_of(self, label: str, window: int) -> int:
        """The base's windows of pair j are numbered j, j + P, …: one key per pair."""
        return window * self.pairs + self.index if label == self.base else window

    def archived(self, label: str, case: HttpCase) -> bool:
        key = Window(self.block.name, label, self.rnd, case.params, "", 0,
                     window=self.window_of(label, 0)).key
        return self.writer.has(key)

    def failed(self, case: HttpCase, start: str, error: str) -> None:
        for b in self.sides:
            name = b.label.name
            if not self.archived(name, case):
                self.duet.session.append(self.writer, Window(
                    self.block.name, name, self.rnd, dict(case.params), start, 0.0,
                    window=self.window_of(name, 0), status="failed", error=clip(error, 300),
                    errors=1))

    def start(self, env: dict[str, str]) -> list[Service]:
        """Both subjects, on one server: refused when the labels cannot share it."""
        a, b = self.sides
        if a.pg_bin != b.pg_bin or a.label.pg_settings != b.label.pg_settings:
            raise PerfpagesError(f"labels {a.label.name!r} and {b.label.name!r} cannot share "
                                 "one PostgreSQL server (other binaries or pg_settings)",
                                 key=f"blocks.{self.block.name}.duet",
                                 fix="give them the same pg_settings, or drop duet=True")
        services: list[Service] = []
        try:
            for side in self.sides:
                log = self.writer.run_dir / "diagnostics" / self.block.name / slug(
                    side.label.name) / "server.log"
                service, _ = self.duet.subject(self.suite, side, env, log)
                services.append(service)
                service.start()
        except BaseException:
            for service in services:
                service.stop()
            raise
        return services

    def run(self, group: list[HttpCase], step: Step) -> None:
        names = [b.label.name for b in self.sides]
        if all(self.archived(n, c) for n in names for c in group):
            step(f"{self.text}: archived", self.window_s * len(group))
            return
        try:
            services = self.start(group[0].env)
        except PerfpagesError as exc:
            start = utc_now()
            for case in group:
                self.failed(case, start, str(exc))
            step(f"{self.text}: subjects failed", self.window_s * len(group))
            return
        try:
            capacity: float | None = None
            for index, case in enumerate(group):
                if not all(s.alive() for s in services):  # one died in the last case
                    for s in services:
                        s.stop()
                    try:
                        services = self.start(group[0].env)
                    except PerfpagesError as exc:
                        for rest in group[index:]:
                            self.failed(rest, utc_now(), str(exc))
                        break
                warmup = self.method.warmup_s if index == 0 else 0.0
                total = self.case(case, services, warmup, capacity)
                if case.capacity and total is not None:
                    capacity = total
                step(f"{self.text} {params_key(case.params)}", self.window_s)
        finally:
            for s in services:
                s.stop()

    def case(self, case: HttpCase, services: list[Service], warmup_s: float,
             capacity: float | None) -> float | None:
        """One case's duet load; archives each label's windows; returns the pair's combined
        throughput (the capacity later cases take shares of: the load is split in two)."""
        names = [b.label.name for b in self.sides]
        seed = zlib.crc32(f"{self.rnd}/{'+'.join(names)}/{params_key(case.params)}".encode())
        turn = HttpTurn(services[0].url, self.window_s, warmup_s, seed=seed & 0xFFFF,
                        capacity=capacity)
        start = utc_now()
        try:
            load = self.duet.make_load(case, turn)
            load = replace(load, targets=tuple(s.url for s in services))
            results = loadgen.run_each(load, cpus=self.duet.session.cpus("load"))
        except PerfpagesError as exc:
            self.failed(case, start, str(exc))
            return None
        for name, result in zip(names, results, strict=True):
            if self.archived(name, case):
                continue
            for w in result.to_windows(self.block.name, name, self.rnd, case.params):
                self.duet.session.append(self.writer,
                                         replace(w, window=self.window_of(name, w.window)))
            if case.samples:
                beside = f"-beside-{slug(names[1 - names.index(name)])}" \
                    if name == self.base and self.pairs > 1 else ""
                base = (f"{self.block.name}/{slug(name)}/r{self.rnd}-"
                        f"{slug(params_key(case.params))}{beside}")
                self.writer.write_file(f"samples/{base}.csv", result.samples_csv())
                self.writer.write_file(f"diagnostics/{base}-cold-path.json",
                                       json.dumps(result.cold_path(), indent=2) + "\n")
        return sum(r.throughput for r in results)

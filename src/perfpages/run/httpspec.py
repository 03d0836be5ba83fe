"""The HTTP half of the suite API (`perfpages.run.suite` re-exports it): a service to start,
its HTTP blocks and their cases, and the turn a case's load factory is given."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from perfpages.errors import PerfpagesError
from perfpages.run.delay import as_param

NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


@dataclass(frozen=True)
class HttpTurn:
    """What a case's load factory knows when it is called: where the subject listens, and the
    capacity measured earlier in the same turn (for open-loop shares)."""

    base_url: str
    window_s: float
    warmup_s: float
    seed: int
    capacity: float | None = None


@dataclass(frozen=True)
class HttpCase:
    """One measured load of an HTTP block: its parameters (archived) and how to make the load.

    `load(turn)` returns a `perfpages.Load`. Cases with the same `env` share one start of the
    subject; a case with `capacity=True` sets the capacity later cases take shares of.
    `samples=True` keeps every request in samples/ (the cold path). `delay_ms` puts a network
    between the subject and PostgreSQL: every chunk held that long each way (the parameter
    `delay_ms` is added; see `perfpages.run.delay`)."""

    params: dict[str, str | int | float]
    load: Callable[[HttpTurn], Any]
    env: dict[str, str] = field(default_factory=dict)
    capacity: bool = False
    samples: bool = False
    delay_ms: float | None = None

    def __post_init__(self) -> None:
        if self.delay_ms is None:
            return
        if not 0 <= self.delay_ms <= 1000:
            raise PerfpagesError(f"delay_ms={self.delay_ms!r} is not between 0 and 1000",
                                 key=f"case {self.params}", fix="give a delay in milliseconds")
        object.__setattr__(self, "params", {**self.params, "delay_ms": as_param(self.delay_ms)})


@dataclass(frozen=True)
class Instructions:
    """An instructions block's windows (`perfpages.run.callgrind`): the subject runs under
    valgrind's callgrind and each window is `calls` calls (not seconds) from `callers`
    concurrent callers, closed loop, after `warmup` calls; its metric is `instructions` per
    call. One caller keeps the count exact; more callers add thread interleaving (state their
    own A/A spread). `idle_s`: after each window, the subject's instructions over this many
    seconds without calls (its timers: a gunicorn worker's and master's once-a-second loops)
    give a rate per second, taken off the window's count for its duration (0: not measured),
    since a window's duration follows the machine's speed. `postgres=True`: the label's
    PostgreSQL server runs under callgrind too, and each window also counts every server
    process (postmaster, backends, background workers) as `pg_instructions` per call."""

    calls: int = 300
    callers: int = 1
    warmup: int = 20
    idle_s: float = 5.0
    postgres: bool = False

    def __post_init__(self) -> None:
        if (self.calls < 1 or self.callers < 1 or self.warmup < 0 or self.callers > self.calls
                or not 0 <= self.idle_s <= 600):
            raise PerfpagesError(f"instructions: calls={self.calls}, callers={self.callers}, "
                                 f"warmup={self.warmup}, idle_s={self.idle_s}",
                                 key="instructions", fix="give calls >= callers >= 1, "
                                 "warmup >= 0 and idle_s from 0 to 600")


INSTRUCTION_METRICS = ("instructions", "pg_instructions")


@dataclass(frozen=True)
class HttpBlockSpec:
    """A block that drives the suite's subject service over HTTP with the load generator.

    `labels`/`rounds`/`window_s` narrow the suite's defaults for this block (a cold path of
    one long round on one build, say). `flamegraph` samples the subject with py-spy during the
    first case of round 1, for every label, and files the CPU shares by `flame_rules`.
    `duet` runs each other label's subject at the same time as the first label's, on one
    PostgreSQL server, the load alternating between them request by request (see
    `perfpages.run.duet`): an option to be proven by its own A/A pair, not a default."""

    name: str
    cases: tuple[HttpCase, ...]
    title: str = ""
    description: str = ""
    metrics: tuple[str, ...] = ("throughput", "p50", "p99")
    labels: tuple[str, ...] = ()
    rounds: int | None = None
    window_s: float | None = None
    flamegraph: bool = False
    flame_rules: tuple[tuple[str, str], ...] = ()
    engine: Literal["perfpages", "locust"] = "perfpages"
    workers: int = 1  # Locust: local worker processes
    remote_workers: int = 0  # Locust: workers the master waits for (`perfpages loadgen.worker`)
    duet: bool = False  # two labels' subjects at once, the load alternating (perfpages.run.duet)
    instructions: Instructions | None = None  # the subject under callgrind: instructions per call

    def __post_init__(self) -> None:
        if self.instructions is not None:
            self._counted(self.instructions)
        if not NAME.match(self.name):
            raise PerfpagesError(f"bad block name {self.name!r}", key="blocks",
                                 fix="use lower-case letters, digits, '-' or '_'")
        if not self.cases:
            raise PerfpagesError(f"block {self.name!r} needs cases", key=f"blocks.{self.name}")
        if self.engine not in ("perfpages", "locust"):
            raise PerfpagesError(f"block {self.name!r}: unknown engine {self.engine!r}",
                                 key=f"blocks.{self.name}.engine",
                                 fix='use engine="perfpages" or engine="locust"')
        if self.workers < 1 or self.remote_workers < 0 or (
                self.engine != "locust" and (self.workers, self.remote_workers) != (1, 0)):
            raise PerfpagesError(f"block {self.name!r}: workers need engine=\"locust\", at "
                                 "least one local", key=f"blocks.{self.name}.workers",
                                 fix='set engine="locust", workers >= 1, remote_workers >= 0')
        what = ("the Locust engine" if self.engine != "perfpages" else "a flame graph"
                if self.flamegraph else "delay_ms" if any(c.delay_ms is not None
                                                          for c in self.cases)
                # alternating callers make both sides answer as many calls: a throughput
                # "change" is an artefact (measured: −1.3 % "clear" where sequential saw +80 %)
                else "throughput among its metrics" if "throughput" in self.metrics else "")
        if self.duet and what:
            raise PerfpagesError(f"block {self.name!r} runs as a duet, which cannot take {what}",
                                 key=f"blocks.{self.name}.duet", fix=f"drop duet=True or {what}")

    def _counted(self, spec: Instructions) -> None:
        """An instructions block: its metric is the count, its windows' parameters say how many
        calls from how many callers (its cases' own `callers` would not be what ran)."""
        other = ("a duet" if self.duet else "a flame graph" if self.flamegraph
                 else "the Locust engine" if self.engine != "perfpages" else "")
        if other:
            raise PerfpagesError(f"block {self.name!r} counts instructions, which cannot take "
                                 f"{other}", key=f"blocks.{self.name}.instructions",
                                 fix=f"drop {other} or instructions=")
        counted = INSTRUCTION_METRICS if spec.postgres else INSTRUCTION_METRICS[:1]
        metrics = tuple(m for m in self.metrics if m in counted)
        object.__setattr__(self, "metrics", metrics or counted)
        object.__setattr__(self, "cases", tuple(
            replace(c, params={**c.params, "calls": spec.calls, "callers": spec.callers})
            for c in self.cases))

    @property
    def parameters(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(k for case in self.cases for k in case.params))


@dataclass(frozen=True)
class Service:
    """How an HTTP suite runs its subject for a label.

    `prepare(build, target, workdir)` runs once per label and run, before its first turn (create
    its store, apply its configuration); `spec(build, target, workdir, env)` returns the
    `perfpages.run.service.ServiceSpec` to start (`env`: the case's overrides)."""

    spec: Callable[..., Any]
    prepare: Callable[..., None] | None = None
    floor_path: str = "/health"

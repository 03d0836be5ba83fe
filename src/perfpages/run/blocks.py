"""Block drivers: how `bench run` measures one kind of block, behind one protocol.

The runner owns the order (blocks × rounds × labels, interleaved) and the pgbench floors; a
driver owns what one label's turn in one round does, and archives its windows through the
`Session` the runner shares with every driver. Drivers never call back into the runner.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import psycopg

from perfpages.archive.manifest import Method
from perfpages.archive.window import Window
from perfpages.archive.writer import ArchiveWriter
from perfpages.errors import PerfpagesError
from perfpages.run import collect
from perfpages.run.builds import Build
from perfpages.run.clusters import Clusters
from perfpages.run.delay import Crossing, DelayProxy
from perfpages.run.postgres import Server, Target
from perfpages.run.preflight import Watch, sample_seconds, wait_limit
from perfpages.run.suite import HttpCase, Suite

Step = Callable[[str, float], None]  # progress: what is running, seconds of the estimate done


def case_groups(cases: tuple[HttpCase, ...]) -> list[list[HttpCase]]:
    """An HTTP block's cases by environment: each group shares one start of its subject(s)."""
    out: dict[str, list[HttpCase]] = {}
    for case in cases:
        out.setdefault(json.dumps(case.env, sort_keys=True), []).append(case)
    return list(out.values())


def restart_reason(builds: list[Build]) -> str:
    """Why a block's subjects cannot stay up side by side ("" when they can): one PostgreSQL
    server runs at a time, restarted whenever a label needs other settings, and a subject
    connected to it would lose its connections (and its port: a restart takes a new one)."""
    if len({b.pg_bin for b in builds}) > 1:
        return "its labels run on different PostgreSQL binaries"
    if len({json.dumps(b.label.pg_settings, sort_keys=True, default=str) for b in builds}) > 1:
        return "its labels set different pg_settings (PostgreSQL restarts between them)"
    return ""


class Idle:
    """When the run's last load on each subject ended: a window's `idle_s` is the time from
    then to the start of its settle (None: the subject's first use)."""

    def __init__(self) -> None:
        self.ended: dict[object, float] = {}

    def since(self, subject: object) -> float | None:
        last = self.ended.get(subject)
        return None if last is None else max(0.0, time.monotonic() - last)

    def used(self, subject: object) -> None:
        self.ended[subject] = time.monotonic()

    def forget(self, subject: object | None = None) -> None:
        """A subject started afresh (or, None: every subject, at the end of a block)."""
        if subject is None:
            self.ended.clear()
        else:
            self.ended.pop(subject, None)


def settles_each(method: Method, why_unpaired: str) -> bool:
    """Whether every window gets a settle of its own: a block the `pairs` order pairs."""
    return method.order == "pairs" and not why_unpaired


def floor_windows(floor_s: float) -> int:
    """How many one-second windows a floor of `floor_s` seconds is: at least two, so that it
    has a range (a floor is a cell like any other, and drift is decided on ranges)."""
    return max(2, round(floor_s))


@dataclass
class Session:
    """What the runner shares with its block drivers: servers, the archive hook, diagnostics."""

    clusters: Clusters
    on_window: Callable[[Window], None] | None = None
    diagnostics_ok: bool = True
    watch: Watch = field(default_factory=Watch)  # the machine: preflights, load per window
    placement: dict[str, list[int]] = field(default_factory=dict)  # the run's CPU sets
    _proxy: DelayProxy | None = field(default=None, init=False, repr=False)

    def cpus(self, part: str) -> tuple[int, ...]:
        """The CPUs `part` ("subject", "load") is pinned to; empty: anywhere."""
        return tuple(self.placement.get(part, ()))

    def append(self, writer: ArchiveWriter, window: Window) -> None:
        if window.machine is None:
            window = replace(window, machine=self.watch.window(window.start, window.duration_s))
        writer.append(window)
        if self.on_window:
            self.on_window(window)

    def preflight(self, block: str, writer: ArchiveWriter, wait_s: float | None, scope: str,
                  step: Step) -> None:
        """Before a block: is the machine quiet? (waits up to `wait_s`; archived either way)"""
        self.watch.external_server = self.clusters.dsn is not None
        self.watch.check(block, writer, wait_limit(wait_s, scope), lambda text: step(text, 0),
                         sample_seconds(scope))

    def close(self) -> None:
        self.watch.close()
        if self._proxy is not None:
            self._proxy.close()
            self._proxy = None

    def delayed(self, target: Target) -> Target:
        """`target` reached through the delay proxy (one for the run, started on first use: a
        subject's stored configuration may name its port), at no delay until a case sets one."""
        if target.host.startswith("/"):
            raise PerfpagesError(f"a delay needs PostgreSQL over TCP, not the socket directory "
                                 f"{target.host}", key="--dsn",
                                 fix="give the server's host as an address")
        if self._proxy is None:
            self._proxy = DelayProxy()
        self._proxy.route(target.host, target.port)
        self._proxy.set(0.0)
        return replace(target, host=self._proxy.host, port=self._proxy.port)

    def crossing(self, server: Server) -> Crossing:
        """A measured stretch through the proxy, counting the server's statements."""
        assert self._proxy is not None, "delayed() first"

        def statements() -> float | None:
            try:
                with server.target.connect(self.clusters.admin_db(server)) as conn:
                    return collect.statement_calls(conn)
            except psycopg.Error:  # an external server without pg_stat_statements
                return None

        return Crossing(self._proxy, statements)

    def snapshot(self, server: Server, suite: Suite,
                 settle: bool = False) -> collect.Snapshot | None:
        if not self.diagnostics_ok:
            return None
        try:
            with server.target.connect(self.clusters.admin_db(server)) as conn:
                if settle:  # backends flush their statistics as they exit: wait for them
                    collect.wait_idle(conn, self.clusters.db(suite, server))
                return collect.snapshot(conn, self.clusters.db(suite, server))
        except psycopg.Error:
            self.diagnostics_ok = False  # e.g. an external server without pg_stat_statements
            return None


class BlockDriver(Protocol):
    """One kind of block (`BlockSpec`, `HttpBlockSpec`): what the runner asks of it."""

    each: bool  # the open block settles before every window: `pairs` pairs it (open_block)

    def parameters(self, block: Any) -> tuple[str, ...]:
        """The parameter names its windows carry (declared in run.json)."""
        ...

    def scope(self, block: Any, method: Method, labels: list[str]) -> tuple[int, list[str]]:
        """The rounds and labels the block runs (a block may narrow the suite's)."""
        ...

    def turn_seconds(self, block: Any, method: Method, each: bool | None = None) -> float:
        """The progress bar's estimate of one label's turn (`each`: a settle before every
        window, as a paired block under `pairs` has; None: whenever the order is `pairs`)."""
        ...

    def cells(self, block: Any) -> list[tuple[str, bool]]:
        """Its cells (`params_key`) in the block's order, each with whether it must lead a
        round (a capacity later cells take shares of): what the `pairs` order visits."""
        ...

    def unpaired(self, block: Any, builds: list[Build]) -> str:
        """Why the block cannot measure its labels' windows of a cell back to back ("" when
        it can): it then runs label by label in the balanced order, a turn per label and round
        with one warm-up, as method v2.0 did (a server restarted per label wants a long one)."""
        ...

    def floor(self, suite: Suite, block: Any, position: str, b: Build,
              writer: ArchiveWriter) -> None:
        """A floor of the driver's own beside the pgbench floor (or nothing)."""
        ...

    def open_block(self, suite: Suite, block: Any, method: Method, builds: list[Build]) -> None:
        """Before the block's first round (`builds`: the labels it runs): under `pairs`, a
        block it can pair settles before every window from now on."""
        ...

    def turn(self, suite: Suite, block: Any, rnd: int, b: Build, writer: ArchiveWriter,
             method: Method, totals: collect.Totals, step: Step,
             only: frozenset[str] | None = None, attempt: int = 1) -> None:
        """One label's turn in one round: warm-up and measure windows, archived. `only`: just
        these parameter sets (`params_key`); `attempt` 2: measured again (busy the first time).
        In a block paired under `pairs` every measured window comes after its own settle."""
        ...

    def close_block(self) -> None:
        """After the block's last turn, and on any way out of it: stop what it kept running."""
        ...

    def plans(self, block: Any) -> dict[str, str]:
        """Named queries to EXPLAIN after the block, outside the timed windows."""
        ...

    def close(self) -> None:
        """Remove what the driver made for the run (working directories)."""
        ...

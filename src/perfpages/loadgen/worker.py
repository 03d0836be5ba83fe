"""One load generator process: an event loop (uvloop where present) driving HTTP/1.1 connections
(`perfpages.loadgen.client`).

Runs in a forked process (see `perfpages.loadgen.generator.run`): it says "ready", waits for
the shared start instant, runs its share of the callers or of the offered rate, and sends
back its windows.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import os
import random
import signal
import time
from collections import Counter, deque
from collections.abc import Callable
from typing import Any

from perfpages.archive.histogram import Latency
from perfpages.loadgen.client import ConnectError, Connection, HttpError, Origin, fetch, now_s
from perfpages.loadgen.spec import Load, Request
from perfpages.loadgen.tally import Tally
from perfpages.loadgen.template import Template

PROBE_S = 0.01  # how often the event loop's own lag and CPU are sampled
WATCHDOG_S = 0.05  # how often requests are checked against their timeout


def main(pipe: Any, load: Load, shard: int) -> None:
    """Entry point of the process; every failure goes back as one line of text."""
    # Ctrl-C is the parent's to handle (it stops this process): no traceback from here.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        loop_name, factory = _loop_factory(load.uvloop)
        with asyncio.Runner(loop_factory=factory) as runner:
            part = runner.run(Shard(load, shard, pipe).run())
        part["loop"] = loop_name
        pipe.send(("result", part))
    except (EOFError, BrokenPipeError):
        pass  # the parent gave up on this run (another process failed): nothing to report
    except Exception as exc:  # report, never hang the parent
        with contextlib.suppress(OSError):
            pipe.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        pipe.close()


def _loop_factory(want_uvloop: bool) -> tuple[str, Callable[[], asyncio.AbstractEventLoop]]:
    if want_uvloop:
        try:
            import uvloop
        except ImportError:
            pass
        else:
            return "uvloop", uvloop.new_event_loop
    return "asyncio", asyncio.new_event_loop


class Bucket:
    """One window's Tally plus what its requests recorded since the last flush: appending a
    rounded microsecond value costs tens of nanoseconds, hdrh's record_value() (pure Python)
    microseconds, so values are kept here and recorded once per distinct value, losslessly."""

    __slots__ = ("codes", "lag", "latency", "service", "tally")

    def __init__(self, tally: Tally) -> None:
        self.tally = tally
        self.latency: list[int] = []
        self.service: list[int] = []
        self.lag: list[int] = []
        self.codes: dict[int, int] = {}  # by status as an int: no str() per response

    def flush(self) -> None:
        tally = self.tally
        for values, hist in ((self.latency, tally.latency), (self.service, tally.service),
                             (self.lag, tally.lag)):
            if values:
                _record_all(hist, values)
                values.clear()
        for code, n in self.codes.items():
            tally.codes[str(code)] += n
        self.codes.clear()


def _record_all(hist: Latency, values: list[int]) -> None:
    for us, n in Counter(values).items():
        # A zero lag is a real value, not an out-of-range one: floor it at the histogram's 1 µs.
        hist.record_us(us if us > 1 else 1, n)


async def sleep_until(t: float) -> None:
    # Event-loop timers have millisecond resolution and may wake a little early.
    while (delay := t - now_s()) > 0:
        await asyncio.sleep(delay)


class Slot:
    """A caller's (or open-loop chain's) request in flight, for the watchdog: setting a deadline
    per request is cheaper than a dict entry keyed by the current task. Open loop reuses them,
    and with them their kept-alive connections: at most one per slot and origin."""

    __slots__ = ("conns", "deadline", "expired", "task")

    def __init__(self, task: asyncio.Task[Any] | None = None) -> None:
        self.task = task
        self.deadline = IDLE
        self.expired = False
        self.conns: dict[Origin, Connection] = {}


IDLE = float("inf")  # a slot's deadline with no request in flight
FLUSH_AT = 1 << 16  # values a bucket may hold before it is recorded mid-window (bounds memory)


class Side:
    """One target's share of this process: its templates, windows and kept samples (a Load
    without `targets` has one side; a duet, one per target)."""

    __slots__ = ("buckets", "fixed", "samples", "templates", "warm", "warm_bucket", "windows")

    def __init__(self, load: Load, requests: tuple[Request, ...]) -> None:
        self.templates = [Template(r) for r in requests]
        # One template without placeholders (the usual benchmark): the same request every time.
        only = self.templates[0]
        self.fixed = only.static if len(self.templates) == 1 and not only.fill else None
        self.windows = [Tally(index=i, duration_s=d) for i, d in enumerate(load.windows())]
        self.warm = Tally(index=-1, duration_s=load.warmup_s)
        self.buckets = [Bucket(t) for t in self.windows]
        self.warm_bucket = Bucket(self.warm) if load.warmup_s > 0 else self.buckets[0]
        self.samples: list[str] = []

    def flush(self) -> None:
        self.warm_bucket.flush()
        for bucket in self.buckets:
            bucket.flush()

    def report(self, load: Load) -> dict[str, Any]:
        tallies = ([self.warm] if load.warmup_s > 0 else []) + self.windows
        return {"windows": [t.to_json() for t in tallies], "samples": self.samples}

    def share_health(self, first: Side) -> None:
        """The generator's own figures (its event loop's lag, its CPU), which the probe records
        on the first side: one loop serves every target, so each side's windows carry them."""
        for mine, theirs in zip([self.warm, *self.windows], [first.warm, *first.windows],
                                strict=True):
            mine.loop_lag.merge(theirs.loop_lag)
            mine.cpu_s, mine.cpu_max_s = theirs.cpu_s, theirs.cpu_max_s


class Shard:
    """This process's share of the load, and its windows."""

    def __init__(self, load: Load, shard: int, pipe: Any) -> None:
        self.load, self.shard, self.pipe = load, shard, pipe
        self.open = load.open_loop
        self.timeout_s = load.timeout_s
        self.callers = load.callers_of(shard)
        # This process's callers' numbers among all processes' (which target each starts on).
        self.first_caller = sum(load.callers_of(s) for s in range(shard))
        self.rng = random.Random(f"{load.seed}:params:{shard}")
        self.sides = [Side(load, requests) for requests in load.sides()]
        self.main = self.sides[0]  # the probe's, and a single-target Load's only one
        total = 0.0
        self.cumulative = []
        for r in load.requests:
            total += r.weight
            self.cumulative.append(total)
        self.window_s, self.last = load.window_s, len(load.windows()) - 1  # for bucket_at()
        self.t0 = self.t_start = self.t_end = 0.0
        self.free = self.callers
        self.backlog: deque[tuple[float, Side]] = deque()
        self.stopping = False
        self.slots: list[Slot] = []  # at most one per caller
        self.spare: list[Slot] = []  # open loop: slots of chains that have ended
        self.parent = os.getppid()

    def pick(self, side: Side) -> Template:
        templates = side.templates
        if len(templates) == 1:
            return templates[0]
        x = self.rng.random() * self.cumulative[-1]
        return templates[bisect.bisect_right(self.cumulative, x)]

    def bucket_at(self, t: float, side: Side) -> Bucket:
        if t < self.t0:
            return side.warm_bucket
        return side.buckets[min(int((t - self.t0) / self.window_s), self.last)]

    def tally_at(self, t: float, side: Side) -> Tally:
        return self.bucket_at(t, side).tally

    def flush(self) -> None:
        for side in self.sides:
            side.flush()

    def slot(self, task: asyncio.Task[Any] | None = None) -> Slot:
        slot = Slot(task)
        self.slots.append(slot)
        return slot

    async def run(self) -> dict[str, Any]:
        load = self.load
        # Each caller (open loop: each of at most `callers` chains) holds its own connections, so
        # there are as many as there are callers; no per-request timer (see watchdog()):
        # per-request work is the generator's CPU, and at high rates that CPU is the limit.
        try:
            self.pipe.send(("ready", None))
            start_at = self.pipe.recv()  # the measurement's start, Unix time, shared by all
            self.loop = asyncio.get_running_loop()
            self.t0 = now_s() + (start_at - time.time())
            self.t_start = self.t0 - load.warmup_s
            self.t_end = self.t0 + load.duration_s
            probe = asyncio.create_task(self.probe())
            watchdog = asyncio.create_task(self.watchdog())
            if self.open:
                await self.open_loop()
            else:
                await asyncio.gather(*(self.caller(self.first_caller + j)
                                       for j in range(self.callers)))
            self.stopping = True
            cpu_s = await probe
            await watchdog
        finally:
            for slot in self.slots:
                for conn in slot.conns.values():
                    conn.close()
        self.flush()
        for side in self.sides[1:]:
            side.share_health(self.main)
        return {"sides": [side.report(load) for side in self.sides], "started": start_at,
                "cpu_s": cpu_s}

    async def probe(self) -> float:
        """Sample the event loop's wake-up lag and this process's CPU time, window by window."""
        await sleep_until(self.t_start)
        main = self.main
        current, cpu_prev, measured = self.tally_at(now_s(), main), time.process_time(), 0.0
        while True:
            target = now_s() + PROBE_S
            await asyncio.sleep(PROBE_S)
            now = now_s()
            finished = now >= self.t_end or self.stopping
            here = current if finished else self.tally_at(now, main)
            here.loop_lag.record_us(max((now - target) * 1e6, 1.0))
            self.exit_if_orphaned()
            if here is not current or finished:
                cpu = time.process_time()
                current.cpu_s += cpu - cpu_prev
                current.cpu_max_s = current.cpu_s
                if current.index >= 0:
                    measured += cpu - cpu_prev
                current, cpu_prev = here, cpu
                if not finished:
                    self.flush()  # a window ended: record its values (late ones come later)
            if finished:
                return measured

    async def send(self, intended: float, sent: float, slot: Slot, side: Side) -> None:
        """One request to `side`, due at `intended` and started at `sent`. Closed loop: latency
        runs from the moment the request went to the socket, as wrk's does; open loop: from
        `intended` (coordinated omission corrected), with service time from the socket."""
        bucket = self.bucket_at(intended, side)
        tally = bucket.tally
        tally.requests += 1
        status: int | str
        slot.deadline = sent + self.timeout_s
        wire = done = sent
        try:
            origin, data, no_body, idempotent = side.fixed or self.pick(side).make(self.rng)
            # The body is read to its end, counted, not kept (its arrival, not its content, is
            # measured); redirects are not followed (a 3xx counts as such).
            conn = await fetch(slot.conns, origin, data, no_body, idempotent)
            done = now_s()
            status, wire = conn.status, conn.sent
            tally.sent_bytes += len(data)
            tally.received_bytes += conn.got
        except asyncio.CancelledError:
            if not slot.expired:
                raise
            slot.expired = False
            slot.task.uncancel()  # type: ignore[union-attr]
            status = "timeout"
        except ConnectError:
            status = "connect"
        except (HttpError, OSError):
            status = "other"
        finally:
            slot.deadline = IDLE
        if isinstance(status, str):
            done = now_s()
            tally.errors[status] += 1
            latency = done - (intended if self.open else wire)
        else:
            codes = bucket.codes
            codes[status] = codes.get(status, 0) + 1
            if self.open:
                latency = done - intended
                bucket.service.append(round((done - wire) * 1e6))
                bucket.lag.append(round((wire - intended) * 1e6))
            else:
                latency = done - wire
            values = bucket.latency
            values.append(round(latency * 1e6))
            if len(values) >= FLUSH_AT:
                bucket.flush()
            if done < self.t_end:
                self.bucket_at(done, side).tally.completed += 1
            if intended >= self.t0 and latency * 1000.0 > tally.slowest_ms:
                tally.note_slowest(latency * 1000.0, intended - self.t0)
        if self.load.samples and intended >= self.t0:
            side.samples.append(f"{intended - self.t0:.6f},{latency * 1000.0:.3f},"
                                f"{(done - wire) * 1000.0:.3f},{status},{self.shard}\n")

    def exit_if_orphaned(self) -> None:
        # The parent was killed (its `finally` never ran): stop loading the subject at once.
        if os.getppid() != self.parent:
            os._exit(1)

    async def watchdog(self) -> None:
        """Time requests out by cancelling them: one sweep every WATCHDOG_S instead of a timer
        armed and disarmed on every request."""
        while not self.stopping or any(s.deadline < IDLE for s in self.slots):
            await asyncio.sleep(WATCHDOG_S)
            self.exit_if_orphaned()
            now = now_s()
            for slot in self.slots:
                if slot.deadline <= now and not slot.expired:
                    slot.expired = True
                    slot.task.cancel()  # type: ignore[union-attr]

    async def caller(self, k: int) -> None:
        """Closed loop: the next request as soon as the last one is answered; caller k's i-th
        request goes to side (k + i) mod n, so the side a caller starts on alternates too (or,
        without `alternate`, always to side k mod n)."""
        slot = self.slot(asyncio.current_task())
        await sleep_until(self.t_start)
        end, send, sides = self.t_end, self.send, self.sides
        n, step = len(sides), 1 if self.load.alternate else 0
        i = k % n
        while (now := now_s()) < end:
            await send(now, now, slot, sides[i])
            i = (i + step) % n

    async def open_loop(self) -> None:
        """Fire on the timetable, never waiting for a response: a request that finds every
        connection busy waits in a backlog (its wait counts in its latency and dispatch lag), and
        is dropped, and counted, once it is `drop_after_s` late. Nothing is sent after the end:
        what the backlog still holds then is dropped and counted, and the run ends once the
        requests in flight are answered or time out."""
        load, loop = self.load, self.loop
        assert load.offered_rate is not None
        rate = load.offered_rate / load.processes
        arrivals = random.Random(f"{load.seed}:arrivals:{self.shard}")
        poisson = load.arrivals == "poisson"
        # Processes interleave their timetables so that together they offer an even rate.
        t = self.t_start + (arrivals.expovariate(rate) if poisson
                            else self.shard / load.offered_rate)
        tasks: set[asyncio.Task[None]] = set()
        sides, arrival = self.sides, self.shard  # due request i: side (shard + i) % n
        while t < self.t_end:
            now = now_s()
            if t > now:
                await asyncio.sleep(t - now)
                now = now_s()
            while t <= now and t < self.t_end:
                side = sides[arrival % len(sides)]
                arrival += 1
                self.tally_at(t, side).offered += 1
                if self.free > 0:
                    self.free -= 1
                    slot = self.spare.pop() if self.spare else self.slot()
                    # The chain runs from the loop's next turn: its slot knows its task by then.
                    slot.task = task = loop.create_task(self.chain(t, side, slot))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                else:
                    self.backlog.append((t, side))
                t += arrivals.expovariate(rate) if poisson else 1.0 / rate
        await sleep_until(self.t_end)
        while self.backlog:
            t, side = self.backlog.popleft()
            self.tally_at(t, side).drops += 1
        while tasks:
            await asyncio.gather(*list(tasks))

    async def chain(self, t: float, side: Side, slot: Slot) -> None:
        """Hold one connection slot while the backlog has requests, oldest first (its
        connections, one per target, serve every side), until the end: a request due before it
        but not yet sent is dropped (the backlog's rest is open_loop()'s to count)."""
        limit, end = self.load.drop_limit_s, self.t_end
        while True:
            sent = now_s()
            if sent - t > limit or sent >= end:
                self.tally_at(t, side).drops += 1
            else:
                await self.send(t, sent, slot, side)
            if not self.backlog or now_s() >= end:
                break
            t, side = self.backlog.popleft()
        self.spare.append(slot)
        self.free += 1

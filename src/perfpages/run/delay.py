"""A database across a network: a TCP proxy that holds every chunk for a set time each way.

The subject of an HTTP block whose cases set `delay_ms` reaches PostgreSQL through this proxy,
on 127.0.0.1, so that every round trip it makes to the database costs the delay twice, as a
database in another zone would. Only the subject's connections pass through it: the load
generator, the floors and the harness's own queries never do.

Why a proxy and not `tc netem`: netem (and the prio qdisc that would confine it to PostgreSQL's
port) needs a kernel built with sch_netem and sch_prio, and root. The machines perfpages is
built and tested on have neither module, so a netem path could never be tested. The proxy needs
no privilege, changes nothing on the host, and is a child process that dies with the run.

What it is not: it delays each chunk a `recv` returns, not each packet, so it does not model
bandwidth, loss or reordering; a request/response protocol such as PostgreSQL's sees the same
added latency either way. Its timer overshoots by tens of microseconds, so it measures the hold
it actually added (`Hops.added_rtt_ms`), and round trips are read from latency against that,
not against the nominal delay. It also counts round trips itself (`Hops.turns`: answers that
follow something the client sent), which cross-checks the slope.

`python -m perfpages.run.delay` is the proxy process; `DelayProxy` starts and drives it, one
JSON line per command on its stdin, one JSON line back on its stdout.
"""

from __future__ import annotations

import contextlib
import json
import queue
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from perfpages.errors import PerfpagesError
from perfpages.processes import die_with_parent

HOST = "127.0.0.1"  # the proxy listens on the loopback only, never on another address
START_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Hops:
    """What passed through the proxy since the last reset."""

    chunks_up: int  # subject → PostgreSQL
    chunks_down: int  # PostgreSQL → subject
    hold_up_s: float  # summed hold of the chunks going up
    hold_down_s: float
    turns: int  # answers that followed a message from the subject: round trips
    connections: int

    @property
    def added_rtt_ms(self) -> float | None:
        """The mean hold up plus the mean hold down: what one round trip gained, measured."""
        if not self.chunks_up or not self.chunks_down:
            return None
        return 1000.0 * (self.hold_up_s / self.chunks_up + self.hold_down_s / self.chunks_down)


class DelayProxy:
    """The proxy process: `route()` it to a server, `set()` a delay, read its `hops()`."""

    def __init__(self) -> None:
        try:
            self.process: subprocess.Popen[str] | None = subprocess.Popen(
                [sys.executable, "-m", "perfpages.run.delay"], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1,
                start_new_session=True, preexec_fn=die_with_parent(signal.SIGKILL))
        except OSError as exc:
            raise PerfpagesError(f"cannot start the delay proxy: {exc.strerror}",
                                 fix="check the Python installation") from None
        self.port = int(self._reply(START_TIMEOUT_S)["port"])
        self.host = HOST

    def _reply(self, timeout_s: float = START_TIMEOUT_S) -> dict[str, Any]:
        assert self.process is not None and self.process.stdout is not None
        # One reply line per command, written whole: select, then readline never blocks.
        ready, _, _ = select.select([self.process.stdout], [], [], timeout_s)
        line = self.process.stdout.readline() if ready else ""
        if not line:
            self.close()
            raise PerfpagesError("the delay proxy stopped answering",
                                 fix="run again; report it if it repeats")
        return dict(json.loads(line))

    def _command(self, **command: Any) -> dict[str, Any]:
        if self.process is None or self.process.poll() is not None:
            raise PerfpagesError("the delay proxy is not running",
                                 fix="run again; report it if it repeats")
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(command) + "\n")
            self.process.stdin.flush()
        except OSError:
            self.close()
            raise PerfpagesError("the delay proxy exited",
                                 fix="run again; report it if it repeats") from None
        return self._reply()

    def route(self, host: str, port: int) -> None:
        """Where new connections go (the label's PostgreSQL server)."""
        self._command(upstream=[host, port])

    def set(self, delay_ms: float) -> None:
        """The hold each way from now on; the counters start again from zero."""
        self._command(delay_ms=float(delay_ms), reset=True)

    def hops(self) -> Hops:
        data = self._command(stats=True)
        return Hops(**{k: data[k] for k in Hops.__dataclass_fields__})

    def close(self) -> None:
        proc, self.process = self.process, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()  # the proxy exits when its stdin ends
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def __enter__(self) -> DelayProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def as_param(delay_ms: float) -> int | float:
    """A delay as its `delay_ms` parameter: 1, not 1.0, so pages select it as written."""
    return int(delay_ms) if delay_ms == int(delay_ms) else float(delay_ms)


class Crossing:
    """One measured stretch through the proxy (a case, a pgbench window): the hold each way,
    and per call what crossed — round trips the proxy counted, statements the server counted
    (`statements()` reads the server's running total, or None where it cannot)."""

    def __init__(self, proxy: DelayProxy, statements: Callable[[], float | None]) -> None:
        self.proxy = proxy
        self.statements = statements
        self.before: float | None = None

    def begin(self, delay_ms: float) -> None:
        self.proxy.set(delay_ms)
        self.before = self.statements()

    def end(self, calls: int) -> dict[str, float | None]:
        """The metrics of the stretch, per call (`calls`: every call it made, warm-up too)."""
        hops = self.proxy.hops()
        after = self.statements()
        if calls <= 0:
            return {}
        statements = (None if after is None or self.before is None
                      else (after - self.before) / calls)
        return {"added_rtt_ms": hops.added_rtt_ms, "round_trips": hops.turns / calls,
                "statements": statements}


# The proxy process. Threads, not asyncio: an event loop's timers wait in whole milliseconds
# (epoll), which would turn a 0.5 ms hold into 1 ms; a sleeping thread wakes within ~0.1 ms.

class _State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.upstream: tuple[str, int] | None = None
        self.delay_s = 0.0
        self.reset()

    def reset(self) -> None:
        with self.lock:
            self.chunks = {"up": 0, "down": 0}
            self.hold = {"up": 0.0, "down": 0.0}
            self.turns = 0
            self.connections = 0

    def stats(self) -> dict[str, Any]:
        with self.lock:
            return {"chunks_up": self.chunks["up"], "chunks_down": self.chunks["down"],
                    "hold_up_s": self.hold["up"], "hold_down_s": self.hold["down"],
                    "turns": self.turns, "connections": self.connections}


class _Connection:
    """One subject connection and its upstream: two directions, each a reader and a sender."""

    def __init__(self, state: _State, client: socket.socket, server: socket.socket) -> None:
        self.state = state
        self.asked = False  # the subject sent something that has not been answered yet
        for sock in (client, server):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for direction, src, dst in (("up", client, server), ("down", server, client)):
            pending: queue.SimpleQueue[tuple[float, float, bytes] | None] = queue.SimpleQueue()
            threading.Thread(target=self._read, args=(direction, src, pending),
                             daemon=True).start()
            threading.Thread(target=self._send, args=(direction, dst, pending),
                             daemon=True).start()

    def _read(self, direction: str, src: socket.socket,
              pending: queue.SimpleQueue[tuple[float, float, bytes] | None]) -> None:
        while True:
            try:
                data = src.recv(1 << 16)
            except OSError:
                data = b""
            if not data:
                pending.put(None)
                return
            now = time.perf_counter()
            if direction == "up":
                self.asked = True
            elif self.asked:
                self.asked = False
                with self.state.lock:
                    self.state.turns += 1
            pending.put((now, now + self.state.delay_s, data))

    def _send(self, direction: str, dst: socket.socket,
              pending: queue.SimpleQueue[tuple[float, float, bytes] | None]) -> None:
        while True:
            item = pending.get()
            if item is None:
                with contextlib.suppress(OSError):
                    dst.shutdown(socket.SHUT_WR)
                return
            arrived, due, data = item
            wait = due - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            try:
                dst.sendall(data)
            except OSError:
                return
            held = time.perf_counter() - arrived
            with self.state.lock:
                self.state.chunks[direction] += 1
                self.state.hold[direction] += held


def _accept(state: _State, listener: socket.socket) -> None:
    while True:
        client, _ = listener.accept()
        upstream = state.upstream
        if upstream is None:
            client.close()
            continue
        try:
            server = socket.create_connection(upstream, timeout=10)
            server.settimeout(None)
        except OSError:
            client.close()
            continue
        with state.lock:
            state.connections += 1
        _Connection(state, client, server)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the harness's to handle
    state = _State()
    listener = socket.socket()
    listener.bind((HOST, 0))
    listener.listen(128)
    threading.Thread(target=_accept, args=(state, listener), daemon=True).start()
    print(json.dumps({"port": listener.getsockname()[1]}), flush=True)
    for line in sys.stdin:  # ends when the harness closes our stdin, or dies
        command = json.loads(line)
        if "upstream" in command:
            host, port = command["upstream"]
            state.upstream = (str(host), int(port))
        if "delay_ms" in command:
            state.delay_s = float(command["delay_ms"]) / 1000.0
        if command.get("reset"):
            state.reset()
        print(json.dumps(state.stats() if command.get("stats") else {"ok": True}), flush=True)


if __name__ == "__main__":
    main()

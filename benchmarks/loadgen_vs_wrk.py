"""perfpages' HTTP load generator against wrk (Debian package), side by side on this machine.

    python benchmarks/loadgen_vs_wrk.py [--rounds 5] [--duration 3] [--baseline REF]

Two trivial servers run in subprocesses (uvloop where installed), each answering "ok":
  raw      a bare asyncio protocol, as cheap as a Python server gets; also /work, which spins
           200 µs of CPU per request, one request at a time (a CPU-bound subject in miniature);
  aiohttp  a one-route aiohttp.web application.

In every round each configuration runs once, the runs compared with each other back to back (their
order flips every round), so that other work on the machine hits both tools alike:
  1. highest req/s on each server's /: wrk (1 thread; 16 and 64 connections) and the generator
     (closed loop, 1 process × 16 and 64 callers, 2 processes × 64 callers): ratio = the
     generator's best ÷ wrk's best in the round (target >= 0.5);
  2. p50 at equal load: the same connection count (closed loop) on the aiohttp server's / (16)
     and on raw /work (1 and 8), where the server, not the client, sets the pace; the req/s ratio
     shows whether the load really was equal (p50 target: within 15 %);
  3. p50 of one connection on raw / (each tool at its own pace): the client's own overhead, in µs.
Ratios are reported per round, then as median (min–max), and beside every run the client's CPU
per 1,000 requests (the generator's processes over the measurement; wrk's from its rusage).

With --baseline REF (a git revision, e.g. main) the generator of that revision runs too, in the
same groups and rounds, as "gen@REF": a change to the generator measured before and after, side
by side with wrk, in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from perfpages import Load, Request
from perfpages.loadgen.generator import run

WORK_S = 0.0002
ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"


class _Http(asyncio.Protocol):
    """Keep-alive HTTP/1.1 without a body on requests: enough for GETs from wrk and aiohttp."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: asyncio.Transport = transport  # type: ignore[assignment]
        self.buffer = b""

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            head, self.buffer = self.buffer[:end], self.buffer[end + 4:]
            self.transport.write(self.answer(head))

    def answer(self, head: bytes) -> bytes:
        if head.startswith(b"GET /work"):
            until = time.perf_counter() + WORK_S  # CPU-bound, one request at a time
            while time.perf_counter() < until:
                pass
        return ANSWER


async def _serve_raw() -> None:
    server = await asyncio.get_running_loop().create_server(_Http, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


async def _serve_aiohttp() -> None:
    from aiohttp import web

    async def ok(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/", ok)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print(site._server.sockets[0].getsockname()[1], flush=True)  # type: ignore[union-attr]
    await asyncio.Event().wait()


def start_server(kind: str) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen([sys.executable, __file__, "--serve", kind], stdout=subprocess.PIPE,
                            text=True)
    return proc, int(proc.stdout.readline())  # type: ignore[union-attr]


@dataclass
class Measure:
    rate: float  # responses per second
    p50_ms: float
    cpu_pct: float | None = None  # generator: the busiest process's CPU, % of one core
    cpu_per_k_ms: float | None = None  # the client's CPU per 1,000 requests


def wrk(url: str, connections: int, duration: float, script: str | None = None) -> Measure:
    """wrk -t1 (`script`: a Lua file shaping the requests, as benchmarks/engines_on_subject.py
    draws its keys)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)  # wrk is the only child waited for
    shape = ["-s", script] if script else []
    out = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{duration:g}s", "--latency",
                          *shape, url], capture_output=True, text=True, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    value, unit = re.search(r"50%\s+([\d.]+)(us|ms|s)", out).groups()  # type: ignore[union-attr]
    sent = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    return Measure(rate, float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit],
                   cpu_per_k_ms=1e6 * cpu / max(sent, 1))


def generator(url: str, callers: int, duration: float, processes: int = 1) -> Measure:
    result = run(Load([Request(url)], duration_s=duration, callers=callers, processes=processes))
    total = result.total()
    return Measure(result.throughput, total.latency.percentile_ms(50),
                   100.0 * max(result.cpu_s) / duration,
                   1e6 * sum(result.cpu_s) / max(total.requests, 1))


def generator_at(src: Path, url: str, callers: int, duration: float,
                 processes: int = 1) -> Measure:
    """The generator of another revision (its source tree at `src`), in a process of its own."""
    args = json.dumps([url, callers, duration, processes])
    out = subprocess.run([sys.executable, __file__, "--generate", args], capture_output=True,
                         text=True, check=True, env={**os.environ, "PYTHONPATH": str(src)}).stdout
    return Measure(**json.loads(out.splitlines()[-1]))


def checkout(ref: str, into: str) -> Path:
    """The `src` tree of a git revision of this repository, extracted under `into`."""
    repo = Path(__file__).resolve().parent.parent
    archive = subprocess.run(["git", "-C", str(repo), "archive", ref, "src"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", into], input=archive, check=True)
    return Path(into) / "src"


def span(values: list[float], fmt: str = "{:.2f}") -> str:
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–" \
           f"{fmt.format(max(values))})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--duration", type=float, default=3.0)
    parser.add_argument("--baseline", metavar="REF", help="also run the generator of this git "
                        "revision (e.g. main), as gen@REF")
    parser.add_argument("--serve", choices=("raw", "aiohttp"), help=argparse.SUPPRESS)
    parser.add_argument("--generate", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.generate:
        print(json.dumps(asdict(generator(*json.loads(args.generate)))))
        return
    if args.serve:
        serve = _serve_raw() if args.serve == "raw" else _serve_aiohttp()
        try:
            import uvloop
        except ImportError:
            asyncio.run(serve)
        else:
            uvloop.run(serve)
        return
    if not shutil.which("wrk"):
        sys.exit("wrk is not installed: apt-get install -y wrk")
    (raw, raw_port), (aio, aio_port) = start_server("raw"), start_server("aiohttp")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            tools: dict[str, Callable[..., Measure]] = {"gen": generator}
            if args.baseline:
                src = checkout(args.baseline, tmp)
                tools[f"gen@{args.baseline}"] = lambda *a: generator_at(src, *a)
            rounds = measure(f"http://127.0.0.1:{raw_port}", f"http://127.0.0.1:{aio_port}",
                             args.rounds, args.duration, tools)
    finally:
        for proc in (raw, aio):
            proc.terminate()
            proc.wait()
    summarise(rounds, list(tools))


def measure(raw: str, aio: str, n: int, d: float,
            tools: dict[str, Callable[..., Measure]]) -> list[dict[str, Measure]]:
    # Groups of runs compared with each other; a group's runs go back to back (in an order that
    # flips every round), so the machine's drift - other work on it - hits both tools alike.
    groups: list[dict[str, Callable[[], Measure]]] = []
    for server, base in (("raw", raw), ("aiohttp", aio)):
        group: dict[str, Callable[[], Measure]] = {}
        for c in (16, 64):
            group[f"{server} / wrk c{c}"] = lambda b=base, c=c: wrk(f"{b}/", c, d)
            for tool, gen in tools.items():
                group[f"{server} / {tool} c{c}"] = lambda b=base, c=c, g=gen: g(f"{b}/", c, d)
        for tool, gen in tools.items():
            group[f"{server} / {tool} 2p c64"] = lambda b=base, g=gen: g(f"{b}/", 64, d, 2)
        groups.append(group)
    for c in (1, 8):
        group = {f"raw /work wrk c{c}": lambda c=c: wrk(f"{raw}/work", c, d)}
        for tool, gen in tools.items():
            group[f"raw /work {tool} c{c}"] = lambda c=c, g=gen: g(f"{raw}/work", c, d)
        groups.append(group)
    group = {"raw / wrk c1": lambda: wrk(f"{raw}/", 1, d)}
    for tool, gen in tools.items():
        group[f"raw / {tool} c1"] = lambda g=gen: g(f"{raw}/", 1, d)
    groups.append(group)
    rounds: list[dict[str, Measure]] = []
    for r in range(n):
        got: dict[str, Measure] = {}
        print(f"round {r + 1}: load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores",
              flush=True)
        for group in groups:
            names = list(group) if r % 2 == 0 else list(group)[::-1]
            for name in names:
                got[name] = m = group[name]()
                cpu = f", generator CPU {m.cpu_pct:3.0f} %" if m.cpu_pct is not None else ""
                print(f"round {r + 1} {name:>25}: {m.rate:9,.0f} req/s, p50 "
                      f"{m.p50_ms * 1000:7.0f} µs, {m.cpu_per_k_ms:6.1f} ms CPU per 1,000 "
                      f"requests{cpu}", flush=True)
        rounds.append(got)
    return rounds


def summarise(rounds: list[dict[str, Measure]], tools: list[str]) -> None:
    print(f"\nmedian (min–max) over {len(rounds)} interleaved rounds")
    for name in rounds[0]:
        print(f"  {name:>25}: {span([g[name].rate for g in rounds], '{:,.0f}')} req/s, p50 "
              f"{span([g[name].p50_ms * 1000 for g in rounds], '{:.0f}')} µs, CPU per 1,000 "
              f"requests {span([g[name].cpu_per_k_ms or 0.0 for g in rounds], '{:.1f}')} ms")

    def best(g: dict[str, Measure], server: str, tool: str) -> float:
        return max(m.rate for k, m in g.items() if (k.startswith(f"{server} / {tool} c")
                   and not k.endswith(" c1")) or k == f"{server} / {tool} 2p c64")

    for tool in tools:
        print(f"\nratios, {tool} ÷ wrk, per round → median (min–max):")
        for server in ("raw", "aiohttp"):
            print(f"  highest req/s, {server} server: "
                  + span([best(g, server, tool) / best(g, server, "wrk") for g in rounds]))
        pairs = [("aiohttp / wrk c16", f"aiohttp / {tool} c16", "aiohttp /, 16 connections"),
                 ("raw /work wrk c1", f"raw /work {tool} c1", "raw /work, 1 connection"),
                 ("raw /work wrk c8", f"raw /work {tool} c8", "raw /work, 8 connections")]
        for w, g_, what in pairs:
            print(f"  {what}: req/s {span([g[g_].rate / g[w].rate for g in rounds])}, "
                  f"p50 {span([g[g_].p50_ms / g[w].p50_ms for g in rounds])}")
        print("  one connection on raw /: p50 generator − wrk (µs) "
              + span([(g[f"raw / {tool} c1"].p50_ms - g["raw / wrk c1"].p50_ms) * 1000
                      for g in rounds], "{:.0f}"))
        print("  CPU per request, raw / c16 and aiohttp / c16: "
              + ", ".join(span([(g[f"{s} / {tool} c16"].cpu_per_k_ms or 0.0)
                                / (g[f"{s} / wrk c16"].cpu_per_k_ms or 1.0) for g in rounds])
                          for s in ("raw", "aiohttp")) + " × wrk's")


if __name__ == "__main__":
    main()

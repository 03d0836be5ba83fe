"""Chunked bodies with small chunks: the generator's parser, and whole runs, before and after.

    python benchmarks/loadgen_chunked.py [--rounds 3] [--duration 3] [--baseline REF]

The parser once copied the rest of its read after every chunk, so its cost grew with read size ×
chunks: with 1 KB chunks of a 1 MB body the generator, not the server, set the pace (issue 24).
Two measurements, each for the perfpages on the path and, with --baseline REF (e.g. main), for
that git revision's generator too (run in a process of its own), interleaved round by round:

  1. parse: one 1 MB response of 1 KB and of 50 B chunks fed to a `Connection` in reads of
     16, 64 and 256 KiB, in this process, no sockets: CPU µs per response (median of 20), ns
     per chunk; flat across read sizes means the cost no longer depends on them;
  2. run: a raw server (subprocess) answering every GET with the same 1 MB chunked body in one
     write; the generator, closed loop, 1 and 4 callers for --duration s: req/s and p50.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import ClassVar

from loadgen_vs_wrk import _Http as Http  # beside this script
from loadgen_vs_wrk import checkout, span
from perfpages import Load, Request
from perfpages.loadgen.client import Connection
from perfpages.loadgen.generator import run

BODY = 1 << 20
CHUNKS = (1024, 50)
READS = (16 << 10, 64 << 10, 256 << 10)


def response(chunk: int) -> bytes:
    frame = b"%x\r\n" % chunk + b"y" * chunk + b"\r\n"
    return (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + frame * (BODY // chunk)
            + b"0\r\n\r\n")


class _Sink:
    def write(self, data: bytes) -> None:
        pass

    def close(self) -> None:
        pass


def parse_us(chunk: int, read: int, repeat: int = 20) -> float:
    """Median CPU µs to parse one whole response arriving in reads of `read` bytes."""
    data = response(chunk)
    reads = [data[at:at + read] for at in range(0, len(data), read)]
    loop = asyncio.new_event_loop()
    times = []
    try:
        for _ in range(repeat):
            conn = Connection(loop)
            conn.connection_made(_Sink())  # type: ignore[arg-type]
            waiter = conn.send(b"GET / HTTP/1.1\r\n\r\n", False)
            start = time.process_time()  # CPU time: other work on the machine barely moves it
            for r in reads:
                conn.data_received(r)
            times.append(time.process_time() - start)
            assert waiter.result() == 200
    finally:
        loop.close()
    return statistics.median(times) * 1e6


def parse_all() -> dict[str, float]:
    return {f"{chunk} B chunks, {read >> 10} KiB reads": parse_us(chunk, read)
            for chunk in CHUNKS for read in READS}


def run_all(port: int, duration: float) -> dict[str, list[float]]:
    out = {}
    for chunk in CHUNKS:
        for callers in (1, 4):
            result = run(Load([Request(f"http://127.0.0.1:{port}/{chunk}")],
                              duration_s=duration, callers=callers))
            total = result.total()
            assert total.error_count == 0, total.errors
            out[f"{chunk} B chunks, {callers} caller(s)"] = [
                result.throughput, total.latency.percentile_ms(50)]
    return out


class _Chunked(Http):
    """Keep-alive HTTP/1.1 answering GET /SIZE with the chunked body of SIZE-byte chunks."""

    answers: ClassVar[dict[bytes, bytes]] = {str(c).encode(): response(c) for c in CHUNKS}

    def answer(self, head: bytes) -> bytes:
        return self.answers[head.split(b" ")[1][1:]]


async def _serve() -> None:
    server = await asyncio.get_running_loop().create_server(_Chunked, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


def elsewhere(src: Path, what: str) -> dict[str, object]:
    """This script's `what` measurement with another revision's perfpages (its `src`)."""
    out = subprocess.run([sys.executable, __file__, "--measure", what], capture_output=True,
                         text=True, check=True, env={**os.environ, "PYTHONPATH": str(src)}).stdout
    return json.loads(out.splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=3.0)
    parser.add_argument("--baseline", metavar="REF", help="also measure this git revision's "
                        "generator (e.g. main)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(_serve())
        return
    if args.measure:
        what = json.loads(args.measure)
        print(json.dumps(parse_all() if what[0] == "parse" else run_all(*what[1:])))
        return
    server = subprocess.Popen([sys.executable, __file__, "--serve"], stdout=subprocess.PIPE,
                              text=True)
    port = int(server.stdout.readline())  # type: ignore[union-attr]
    results: dict[str, list[dict[str, object]]] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            tools = {"gen": lambda what: parse_all() if what[0] == "parse" else run_all(port,
                                                                                         what[1])}
            if args.baseline:
                src = checkout(args.baseline, tmp)
                tools[f"gen@{args.baseline}"] = lambda what: elsewhere(
                    src, json.dumps([what[0], port, *what[1:]] if what[0] == "run" else what))
            for r in range(args.rounds):
                names = list(tools) if r % 2 == 0 else list(tools)[::-1]
                for name in names:
                    for what in (("parse",), ("run", args.duration)):
                        got = tools[name](what)
                        results.setdefault(f"{name} {what[0]}", []).append(got)
                        print(f"round {r + 1} {name} {what[0]}: {json.dumps(got)}", flush=True)
    finally:
        server.terminate()
        server.wait()
    summarise(results, args.rounds)


def summarise(results: dict[str, list[dict[str, object]]], rounds: int) -> None:
    print(f"\nmedian (min–max) over {rounds} interleaved rounds")
    for name, got in results.items():
        print(f"{name}:")
        for key in got[0]:
            values = [g[key] for g in got]
            if name.endswith("parse"):
                chunks = BODY // int(key.split()[0])
                us = [float(v) for v in values]  # type: ignore[arg-type]
                print(f"  {key:>28}: {span(us, '{:,.0f}')} µs per response, "
                      f"{span([u * 1000 / chunks for u in us], '{:.0f}')} ns per chunk")
            else:
                pairs = [list(v) for v in values]  # type: ignore[call-overload]
                print(f"  {key:>28}: {span([p[0] for p in pairs], '{:,.1f}')} req/s, p50 "
                      f"{span([p[1] for p in pairs], '{:.2f}')} ms")


if __name__ == "__main__":
    main()

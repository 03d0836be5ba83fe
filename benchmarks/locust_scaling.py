"""The Locust engine's scaling on this machine: 1 against 2 local workers, closed loop.

    python benchmarks/locust_scaling.py [--rounds 3] [--duration 3]

The bare asyncio server of benchmarks/loadgen_vs_wrk.py (uvloop where installed) answers "ok"
on /; each round runs, back to back in an order that flips every round, Locust with 1 and with 2
workers at 16 and 64 users, and perfpages' own generator (1 process, 64 callers) for scale.
Per round: each configuration's req/s, p50 and the busiest worker's CPU; then the highest req/s
per worker count and the ratio 2 workers ÷ 1 worker, as median (min–max) over the rounds.
Nothing is asserted: on a 2-core machine the server and the workers share the cores.
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections.abc import Callable

# Beside this file: a script's own directory comes first on sys.path.
from loadgen_vs_wrk import Measure, start_server
from perfpages import Load, Request
from perfpages.loadgen import generator, locust


def on_locust(url: str, users: int, duration: float, workers: int) -> Measure:
    result = locust.run(Load([Request(url)], duration_s=duration, callers=users),
                        workers=workers)
    return Measure(result.throughput, result.total().latency.percentile_ms(50),
                   100.0 * max(result.cpu_s) / duration,
                   1e6 * sum(result.cpu_s) / max(result.total().requests, 1))


def on_generator(url: str, callers: int, duration: float) -> Measure:
    result = generator.run(Load([Request(url)], duration_s=duration, callers=callers))
    return Measure(result.throughput, result.total().latency.percentile_ms(50),
                   100.0 * max(result.cpu_s) / duration,
                   1e6 * sum(result.cpu_s) / max(result.total().requests, 1))


def span(values: list[float], fmt: str = "{:.2f}") -> str:
    return (f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–"
            f"{fmt.format(max(values))})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=3.0)
    args = parser.parse_args()
    server, port = start_server("raw")
    url, d = f"http://127.0.0.1:{port}/", args.duration
    runs: dict[str, Callable[[], Measure]] = {
        f"locust {w}w u{u}": (lambda w=w, u=u: on_locust(url, u, d, w))
        for w in (1, 2) for u in (16, 64)}
    runs["generator 1p c64"] = lambda: on_generator(url, 64, d)
    rounds: list[dict[str, Measure]] = []
    try:
        for r in range(args.rounds):
            print(f"round {r + 1}: load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} "
                  "cores", flush=True)
            got: dict[str, Measure] = {}
            for name in (list(runs) if r % 2 == 0 else list(runs)[::-1]):
                got[name] = m = runs[name]()
                print(f"round {r + 1} {name:>17}: {m.rate:8,.0f} req/s, p50 "
                      f"{m.p50_ms * 1000:6.0f} µs, busiest worker CPU {m.cpu_pct:3.0f} %, "
                      f"{m.cpu_per_k_ms:5.1f} ms CPU per 1,000 requests", flush=True)
            rounds.append(got)
    finally:
        server.terminate()
        server.wait()

    def best(g: dict[str, Measure], w: int) -> float:
        return max(m.rate for k, m in g.items() if k.startswith(f"locust {w}w"))

    print(f"\nmedian (min–max) over {len(rounds)} interleaved rounds")
    for name in runs:
        print(f"  {name:>17}: {span([g[name].rate for g in rounds], '{:,.0f}')} req/s")
    print(f"  highest req/s, 1 worker:  {span([best(g, 1) for g in rounds], '{:,.0f}')}")
    print(f"  highest req/s, 2 workers: {span([best(g, 2) for g in rounds], '{:,.0f}')}")
    print(f"  ratio 2 workers ÷ 1 worker: {span([best(g, 2) / best(g, 1) for g in rounds])}")


if __name__ == "__main__":
    main()

"""Benchmark: pgbench through the harness vs pgbench by hand, interleaved (target: within 2 %).

One embedded server with the `sky` quick catalogue (100,000 sources). Each round runs, in an
order that alternates, the same 70/30 lookup/cone mix for WINDOW seconds at CLIENTS clients:
- through the harness: `perfpages.pgbench.run` (per-transaction logs, histograms, cross-check);
- by hand: the bare `pgbench -n -T … -c … -j … -M prepared -f lookup.sql@70 -f cone.sql@30`.
The ratio is harness tps ÷ by-hand tps (pgbench's own summary for both), per round; the median
and the range of the ratios are printed, with the harness's logged throughput beside it.

    python benchmarks/bench_harness_overhead.py [ROUNDS] [WINDOW_S] [CLIENTS]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from perfpages import pgbench  # noqa: E402
from perfpages.postgres import EmbeddedServer, embedded_binaries  # noqa: E402
from perfpages.suite import BlockSpec, load  # noqa: E402


def by_hand(server: EmbeddedServer, block: BlockSpec, clients: int, seconds: int) -> float:
    cmd = [str(server.bin / "pgbench"), "-n", "-T", str(seconds), "-c", str(clients),
           "-j", str(min(clients, os.cpu_count() or 1)), "-M", "prepared",
           *server.target.args()]
    for name, value in block.defines.items():
        cmd += ["-D", f"{name}={value}"]
    for script in block.scripts:
        cmd += script.args()
    out = subprocess.run([*cmd, "bench"], capture_output=True, text=True, check=True).stdout
    return pgbench.parse_summary(out)["tps"]


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    seconds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    clients = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    sky = load("sky", ROOT / "benchmarks", quick=True)
    block = sky.blocks[0]
    server = EmbeddedServer(embedded_binaries())
    try:
        server.start({})
        with server.target.connect("postgres") as conn:
            conn.execute("CREATE DATABASE bench")
        with server.target.connect("bench") as conn:
            for ext in sky.dataset.extensions:
                conn.execute(f"CREATE EXTENSION IF NOT EXISTS {ext} CASCADE")
            sky.dataset.load(conn, sky.dataset.rows, sky.dataset.seed)
            conn.execute("VACUUM ANALYZE")
        target = server.target.with_db("bench")
        harness_run = lambda: pgbench.run(server.bin, target, list(block.scripts),  # noqa: E731
                                          clients, seconds, defines=block.defines)
        harness_run()  # warm-up, discarded
        ratios, logged = [], []
        for rnd in range(rounds):
            results: dict[str, float] = {}
            for side in (("harness", "hand") if rnd % 2 == 0 else ("hand", "harness")):
                if side == "harness":
                    res = harness_run()
                    assert res.error is None, res.error
                    results["harness"] = res.tps or 0.0
                    logged.append(res.transactions / res.duration_s / (res.tps or 1))
                else:
                    results["hand"] = by_hand(server, block, clients, seconds)
            ratios.append(results["harness"] / results["hand"])
            print(f"round {rnd + 1}: harness {results['harness']:,.0f} tps, by hand "
                  f"{results['hand']:,.0f} tps, ratio {ratios[-1]:.3f}")
        print(f"harness ÷ by hand: median {statistics.median(ratios):.3f} "
              f"(range {min(ratios):.3f}–{max(ratios):.3f}) over {rounds} interleaved rounds of "
              f"{seconds} s at {clients} clients; target within 2 %")
        print(f"harness logged throughput ÷ its own summary tps: median "
              f"{statistics.median(logged):.3f}")
    finally:
        server.destroy()


if __name__ == "__main__":
    main()

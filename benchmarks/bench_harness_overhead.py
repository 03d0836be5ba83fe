"""Benchmark: pgbench through the harness vs pgbench by hand, interleaved (target: within 2 %).

One embedded server with the `sky` quick catalogue (100,000 sources). Each round runs the same
70/30 lookup/cone mix for WINDOW seconds at CLIENTS clients, three ways, in an order that rotates
every round:
- harness: `perfpages.run.pgbench.run`, exactly what `bench run` does for a window (per-transaction
  logs, histograms, the cross-check with the summary);
- by hand: the bare `pgbench -n -T … -c … -j … -M prepared -f lookup.sql@70 -f cone.sql@30`;
- by hand + -l: the same with per-transaction logging, to separate the cost of the logs from the
  cost of the harness's plumbing;
- harness 1/10: the harness with `log_sampling=0.1` (pgbench --sampling-rate), the cheaper logs.
Ratios use pgbench's own summary tps for every arm; per round, then median and range.

    python benchmarks/bench_harness_overhead.py [ROUNDS] [WINDOW_S] [CLIENTS]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from perfpages.run import pgbench  # noqa: E402
from perfpages.run.postgres import EmbeddedServer, Target, embedded_binaries  # noqa: E402
from perfpages.run.suite import BlockSpec, load  # noqa: E402


def by_hand(server: EmbeddedServer, target: Target, block: BlockSpec, clients: int,
            seconds: int, log: bool) -> float:
    cmd = [str(server.bin / "pgbench"), "-n", "-T", str(seconds), "-c", str(clients),
           "-j", str(min(clients, os.cpu_count() or 1)), "-M", "prepared", *target.args()]
    for name, value in block.defines.items():
        cmd += ["-D", f"{name}={value}"]
    for script in block.scripts:
        cmd += script.args()
    with tempfile.TemporaryDirectory(dir="/dev/shm" if os.access("/dev/shm", os.W_OK)
                                     else None) as tmp:
        if log:
            cmd += ["-l", f"--log-prefix={tmp}/tx"]
        out = subprocess.run([*cmd, target.dbname], capture_output=True, text=True,
                             check=True).stdout
    return pgbench.parse_summary(out)["tps"]


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    seconds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
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

        def harness(sampling: float = 1.0) -> float:
            res = pgbench.run(server.bin, target, list(block.scripts), clients, seconds,
                              defines=block.defines, sampling=sampling)
            assert res.error is None, res.error
            return res.tps or 0.0

        arms = {"harness": harness, "harness 1/10": lambda: harness(0.1),
                "hand": lambda: by_hand(server, target, block, clients, seconds, False),
                "hand+l": lambda: by_hand(server, target, block, clients, seconds, True)}
        harness()  # warm-up, discarded
        names = list(arms)
        tps: dict[str, list[float]] = {n: [] for n in names}
        for rnd in range(rounds):
            shift = rnd % len(names)
            order = names[shift:] + names[:shift]
            for name in order:
                tps[name].append(arms[name]())
            print(f"round {rnd + 1}: " + ", ".join(f"{n} {tps[n][-1]:,.0f}" for n in names),
                  flush=True)

        def ratio(a: str, b: str) -> str:
            r = [x / y for x, y in zip(tps[a], tps[b], strict=True)]
            return f"median {statistics.median(r):.3f} (range {min(r):.3f}–{max(r):.3f})"

        print(f"{rounds} rounds of {seconds} s at {clients} clients, order rotating:")
        print(f"  harness ÷ by hand:       {ratio('harness', 'hand')}  (target within 2 %)")
        print(f"  harness ÷ by hand + -l:  {ratio('harness', 'hand+l')}  (the plumbing)")
        print(f"  by hand + -l ÷ by hand:  {ratio('hand+l', 'hand')}  (the per-transaction log)")
        print(f"  harness, 1 in 10 transactions logged (log_sampling=0.1) ÷ by hand: "
              f"{ratio('harness 1/10', 'hand')}")
    finally:
        server.destroy()


if __name__ == "__main__":
    main()

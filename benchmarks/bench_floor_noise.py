"""Benchmark: how often the drift rule flags an idle machine, by threshold (target ≤ 2 %).

A floor is what `bench run` measures before and after each block: pgbench select-only, one
client, after one second of warm-up, as one-second windows (`perfpages.run.sqlblock.floor`). On
a machine where nothing else runs, no two floors should count as drift. This measures `FLOORS`
such floors `GAP_S` seconds apart on the embedded PostgreSQL the runs use, then decides every pair
of them with the rule the report uses (`perfpages.analysis.decision.drifted`) at each threshold,
and the old single-value rule (one 4-second figure a side) beside it. Run it on a quiet machine:

    python benchmarks/bench_floor_noise.py            # 16 floors, 30 s apart: about 9 minutes
    FLOORS=6 GAP_S=5 python benchmarks/bench_floor_noise.py   # a quick look
"""

from __future__ import annotations

import itertools
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from perfpages.analysis.decision import Cell, drifted  # noqa: E402
from perfpages.run import pgbench  # noqa: E402
from perfpages.run.blocks import floor_windows  # noqa: E402
from perfpages.run.postgres import EmbeddedServer, embedded_binaries  # noqa: E402

FLOORS = int(os.environ.get("FLOORS", "16"))
GAP_S = float(os.environ.get("GAP_S", "30"))
FLOOR_S = 4.0  # the full suites' floor_s
THRESHOLDS = (0.10, 0.15, 0.20, 0.25, 0.30)


def main() -> None:
    server = EmbeddedServer(embedded_binaries())
    try:
        server.start({})
        target = server.target.with_db("postgres")
        pgbench.run_init(server.bin, server.target, "postgres")
        script = [pgbench.Script(builtin="select-only")]
        floors = []
        for i in range(FLOORS):
            pgbench.run(server.bin, target, script, 1, 1)  # the warm-up, as a floor has
            seconds = [pgbench.run(server.bin, target, script, 1, 1).tps or 0.0
                       for _ in range(floor_windows(FLOOR_S))]
            floors.append(Cell(tuple(seconds)))
            print(f"floor {i + 1:2d}/{FLOORS}: " + " ".join(f"{v:,.0f}" for v in seconds),
                  flush=True)
            if i + 1 < FLOORS:
                time.sleep(GAP_S)
    finally:
        server.destroy()
    pairs = list(itertools.combinations(floors, 2))
    medians = [f.median for f in floors]
    print(f"\n{FLOORS} idle floors, {GAP_S:g} s apart: medians {min(medians):,.0f}–"
          f"{max(medians):,.0f} tps ({max(medians) / min(medians):.2f}×); {len(pairs)} pairs")
    print("threshold  ranges rule (floors of 1 s windows)  one value a side (the old rule)")
    best = None
    for t in THRESHOLDS:
        ranges = sum(drifted(a, b, t) for a, b in pairs) / len(pairs)
        single = sum(drifted(Cell((sum(a.values) / a.n,)), Cell((sum(b.values) / b.n,)), t)
                     for a, b in pairs) / len(pairs)
        print(f"{t:8.0%}   {ranges:32.1%}   {single:28.1%}")
        if best is None and ranges <= 0.02:
            best = t
    print(f"\nthe smallest threshold flagging at most 2 % of idle pairs: "
          f"{'none of these' if best is None else f'{best:.0%}'}")


if __name__ == "__main__":
    main()

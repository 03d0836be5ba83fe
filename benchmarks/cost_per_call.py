"""Benchmark: does cost per call resolve what throughput cannot, and what does measuring it cost?

1. Spread (issue 21's targets: A/A spread of CPU and buffers per call at least 5× narrower than
   throughput's; the smallest change in CPU per call resolved at α = 1 % at most 2 %): a real
   `bench run` of QueryAPIGate's calls block (quick data, ROUNDS interleaved rounds) with the A/A
   pair 0.43.0 / 0.43.0-again and 0.42.0, into a temporary results directory (not archived).
   Per metric and call: the A/A pair's Hodges–Lehmann shift with its exact 99 % interval (its
   width is the spread), the resolution (smallest change resolved with 80 % power at α = 1 %,
   `perfpages.analysis.decision.Change.resolution`), and 0.42.0 → 0.43.0's change and verdict.
2. Overhead (target: within 1 %): pgbench at CLIENTS clients on one embedded server, windows of
   WINDOW seconds with and without a `perfpages.run.cost.Meter` reading every second (the HTTP
   blocks' rate), interleaved, order alternating; the ratio of pgbench's tps per round pair, and
   the meter's own CPU per reading.

    python benchmarks/cost_per_call.py [--rounds 20] [--overhead-rounds 12] [--window 5]
    python benchmarks/cost_per_call.py --run results/2026-12-03-queryapigate   # 1. from an archive
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from perfpages.analysis.decision import Change, Rule  # noqa: E402
from perfpages.analysis.tidy import Tidy  # noqa: E402
from perfpages.archive.reader import open_run  # noqa: E402
from perfpages.run import cost, pgbench  # noqa: E402
from perfpages.run.postgres import EmbeddedServer, embedded_binaries  # noqa: E402
from perfpages.run.suite import load as load_suite  # noqa: E402

METRICS = ("throughput", "p50", "cpu_ms", "pg_cpu_ms", "statements", "buffers_hit")


def spread(rounds: int, archived: Path | None = None) -> None:
    if archived is not None:  # an archived run of the suite: its calls block, as measured
        run = open_run(archived)
        print(f"run {run.manifest.id} (archived): {run.manifest.method.rounds} rounds")
    else:
        results = Path(tempfile.mkdtemp(prefix="perfpages-cost-bench-"))
        cmd = [str(Path(sys.executable).parent / "perfpages"), "bench.run", "--suite",
               "queryapigate", "--quick", "--blocks", "calls", "--labels",
               "0.42.0,0.43.0,0.43.0-again", "--rounds", str(rounds), "--results", str(results),
               "--preflight-wait", "0"]
        started = time.monotonic()
        subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        run = open_run(next(p for p in results.iterdir() if (p / "run.json").exists()))
        print(f"run {run.manifest.id}: {rounds} rounds, {time.monotonic() - started:.0f} s")
    rule = Rule.of(run.manifest.method)
    cells = Tidy.of(run).cells
    calls = sorted({key[1] for key in cells if key[0] == "calls"})
    print(f"{'call':36} {'metric':12} {'A/A shift (99 % interval)':32} {'width':>7} "
          f"{'resolves':>9} {'0.42.0 → 0.43.0':>24}")
    widths: dict[str, list[float]] = {m: [] for m in METRICS}
    resolutions: dict[str, list[float]] = {m: [] for m in METRICS}
    for call in calls:
        for metric in METRICS:
            a = cells.get(("calls", call, "0.43.0", metric))
            b = cells.get(("calls", call, "0.43.0-again", metric))
            old = cells.get(("calls", call, "0.42.0", metric))
            if not (a and b and old):
                continue
            aa = Change(metric, a, b, rule)
            low, high = aa.interval or (float("nan"), float("nan"))
            widths[metric].append(high - low)
            resolutions[metric].append(aa.resolution)
            release = Change(metric, old, a, rule)
            print(f"{call:36} {metric:12} {aa.percent:+6.2f} % ({low:+.2f} … {high:+.2f})"
                  f"{'':6} {high - low:6.2f} {aa.resolution:8.2f} % "
                  f"{release.percent:+8.2f} % {release.verdict:>14}")
    print("\nmedian across the calls: A/A interval width, resolution (percent)")
    base_w = statistics.median(widths["throughput"])
    for metric in METRICS:
        if widths[metric]:
            w = statistics.median(widths[metric])
            res = statistics.median(resolutions[metric])
            print(f"  {metric:12} width {w:6.2f}  resolution {res:6.2f}  throughput's width "
                  f"÷ this {base_w / w if w else float('inf'):5.1f}×")


def overhead(rounds: int, window: int, clients: int) -> None:
    sky = load_suite("sky", ROOT / "benchmarks", quick=True)
    block = sky.blocks[0]
    server = EmbeddedServer(embedded_binaries())
    try:
        server.start({})
        with server.target.connect("postgres") as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            conn.execute("CREATE DATABASE bench")
        with server.target.connect("bench") as conn:
            for ext in sky.dataset.extensions:
                conn.execute(f"CREATE EXTENSION IF NOT EXISTS {ext} CASCADE")
            sky.dataset.load(conn, sky.dataset.rows, sky.dataset.seed)
            conn.execute("VACUUM ANALYZE")
        target = server.target.with_db("bench")
        ratios, own = [], []
        for rnd in range(rounds):
            tps: dict[bool, float] = {}
            for metered in ((True, False) if rnd % 2 == 0 else (False, True)):
                meter = cost.Meter(None, server.pid,
                                   (lambda: server.target.connect("postgres")) if metered
                                   else None, "bench", "postgres")
                with meter:
                    if metered:
                        meter.schedule([time.time() + i for i in range(window + 2)])
                    res = pgbench.run(server.bin, target, list(block.scripts), clients, window,
                                      defines=dict(block.defines))
                    meter.stop()
                tps[metered] = res.tps or float("nan")
                if metered and meter.readings:
                    own.append(meter.own_cpu_s / len(meter.readings))
            ratios.append(tps[True] / tps[False])
        print(f"\noverhead: pgbench tps with ÷ without the meter, {rounds} rounds of {window} s "
              f"at {clients} clients: median {statistics.median(ratios):.4f} "
              f"(range {min(ratios):.4f}–{max(ratios):.4f}); the meter's own CPU per reading "
              f"{statistics.median(own) * 1000:.2f} ms (one reading a second per window "
              f"boundary: {statistics.median(own) * 100 / (os.cpu_count() or 1):.2f} % of the "
              "machine)")
    finally:
        server.destroy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--overhead-rounds", type=int, default=12)
    parser.add_argument("--window", type=int, default=5)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--skip-spread", action="store_true")
    parser.add_argument("--run", type=Path, help="read the spread from this archived run of "
                        "the queryapigate suite (results/ID) instead of measuring; no overhead")
    args = parser.parse_args()
    if args.run is not None:
        spread(args.rounds, args.run)
        return
    if not args.skip_spread:
        spread(args.rounds)
    overhead(args.overhead_rounds, args.window, args.clients)


if __name__ == "__main__":
    main()

"""Benchmark: `bench report` on a synthetic archive of 1 million requests in 100 windows.

Target (issue 2): at most 2 s. Prints the wall time and peak memory of the whole command
(`invoke bench.report --format md`, a fresh process each time) and of an empty command
(`invoke --list`) measured alternately in the same run, so start-up cost is visible.

    python benchmarks/report_large.py [--repeat 5]
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

from perfpages.testing import Spec, generate

ROOT = Path(__file__).resolve().parent.parent


def timed(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"{' '.join(cmd)} failed with status {status}")
    return time.perf_counter() - start, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        # 2 labels x 5 rounds x 10 one-second windows = 100 windows of 10,000 requests each.
        spec = Spec(run_id="2026-11-30-synthetic-large", labels={"a": 1.0, "b": 1.05},
                    blocks={"callers": [{"callers": 32}]}, rounds=5, windows=10, rate=10_000,
                    distinct=10_000, floors=False)
        run = generate(Path(tmp), spec)
        requests = sum(w.requests or 0 for w in run.windows)
        size = (run.path / "results.jsonl").stat().st_size / 1024
        print(f"archive: {len(run.windows)} windows, {requests:,} requests, "
              f"results.jsonl {size:,.0f} KiB")
        inv = [sys.executable, "-m", "invoke"]
        report = [*inv, "bench.report", "--results", tmp, "--format", "md"]
        baseline = [*inv, "--list"]
        rows: dict[str, list[tuple[float, float]]] = {"report": [], "baseline": []}
        for _ in range(args.repeat):  # interleaved, so drift hits both alike
            rows["report"].append(timed(report))
            rows["baseline"].append(timed(baseline))
        for name, values in rows.items():
            secs = [v[0] for v in values]
            mib = max(v[1] for v in values)
            print(f"{name:9s} median {statistics.median(secs):.2f} s "
                  f"(min {min(secs):.2f}, max {max(secs):.2f}), peak RSS {mib:.0f} MiB")
        ratio = statistics.median(v[0] for v in rows["report"]) / 2.0
        print(f"report ÷ 2 s target: {ratio:.2f}")


if __name__ == "__main__":
    main()

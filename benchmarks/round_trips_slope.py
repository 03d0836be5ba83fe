"""Benchmark: how close the slope of latency against the added round trip comes to the round
trips the proxy counts (target: every round within ±0.5, the `trips()` claim's tolerance).

The slope is timed, so its accuracy depends on the machine: on a quiet one the tiny database
suite's 1, 2 and 3 statements a call read as 1, 2 and 3 round trips; on a loaded one a slope
may stray (3.54 for 3 has been seen). The tests assert only what is counted
(tests/test_network.py); this script measures the timed part. It replays `tinydb` (one caller,
delays 0, 2 and 4 ms) into a temporary directory — nothing is archived into results/ — or reads
a run you name, and prints per series the count, the slope of every round and the verdict:

    python benchmarks/round_trips_slope.py                 # replay tinydb, ROUNDS=3 rounds
    python benchmarks/round_trips_slope.py RUN_DIR         # an archived run with delays
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from perfpages.site.macros import series_round_trips  # noqa: E402
from perfpages.site.pins import Pins  # noqa: E402
from perfpages.site.store import RunStore  # noqa: E402

ROUNDS = int(os.environ.get("ROUNDS", "3"))
TOLERANCE = 0.5  # the trips() claim's default


def replay(results: Path) -> Path:
    done = subprocess.run([sys.executable, "-m", "perfpages", "bench.run", "--suite", "tinydb",
                           "--rounds", str(ROUNDS), "--results", str(results)], cwd=ROOT,
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(done.stderr[-2000:] or done.stdout[-2000:])
    return next(results.iterdir())


def report(run_dir: Path) -> int:
    """Print each series' count and slopes; the number of series with a round beyond the
    tolerance of its count."""
    pins = Pins({"run": RunStore(run_dir.parent).get(run_dir.name)})
    strays = 0
    print(f"{run_dir.name}: slope of p50 against the added round trip, per round")
    for row in series_round_trips(pins, "p50", {}):
        count = round(row.counted.median) if row.counted is not None else None
        slopes = ", ".join(f"{v:.2f}" for v in row.trips.slope.values)
        ok = count is not None and row.trips.within(count, TOLERANCE)
        strays += not ok
        print(f"  {row.name}: counted {count if count is not None else '—'}, slopes {slopes} "
              f"— {'within' if ok else 'BEYOND'} ±{TOLERANCE}")
    return strays


def main() -> None:
    if len(sys.argv) > 1:
        strays = report(Path(sys.argv[1]).resolve())
    else:
        with tempfile.TemporaryDirectory() as tmp:
            strays = report(replay(Path(tmp)))
    print(f"{strays} series with a round beyond ±{TOLERANCE} of the count")


if __name__ == "__main__":
    main()

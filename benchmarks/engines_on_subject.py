"""The load engines on the real subject: perfpages' generator, wrk and Locust, side by side.

    python benchmarks/engines_on_subject.py [--rounds 3] [--duration 8] [--callers 32]
                                            [--label 0.43.0+cache] [--no-locust]

One QueryAPIGate subject from the `queryapigate` suite (its label's exact PyPI release, its
store and configuration, one gunicorn worker, the embedded PostgreSQL with the quick data set)
is started once and kept warm; in every round each engine runs the plain lookup at the same
number of connections, closed loop, one after the other (the order rotates every round), so
that what the machine does to one it does to the others:

  generator   perfpages' built-in generator (one process)
  wrk         wrk -t1 with a Lua script drawing the same random keys (Debian package `wrk`)
  locust-N    Locust with N local workers (perfpages.loadgen.locust), when installed

Reported per round, then as median (min-max): each engine's calls per second and p50, and the
ratios generator / wrk (issue target: >= 0.97) and locust / wrk. The subject's CPU, not the
engine's, should set the pace: a ratio well below 1 is an engine taking CPU from the subject.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from loadgen_vs_wrk import wrk  # beside this script
from perfpages import Load, Request
from perfpages.loadgen import generator
from perfpages.run.builds import resolve
from perfpages.run.clusters import Clusters
from perfpages.run.service import Service
from perfpages.run.suite import load as load_suite

HERE = Path(__file__).parent
Measure = tuple[float, float]  # calls per second, p50 in ms

WRK_SCRIPT = """
wrk.headers["X-API-Key"] = "{key}"
request = function()
  return wrk.format("GET", "/q/account_by_aid?aid=" .. math.random(1, {rows}))
end
"""


def requests(base: str, key: str, rows: int) -> list[Request]:
    return [Request(base + "/q/account_by_aid?aid={aid}", headers={"X-API-Key": key},
                    fill={"aid": (1, rows)})]


def run_generator(base: str, key: str, rows: int, callers: int, seconds: float) -> Measure:
    result = generator.run(Load(requests(base, key, rows), duration_s=seconds, warmup_s=1.0,
                                callers=callers))
    total = result.total()
    return total.responses / seconds, total.latency.percentile_ms(50)


def run_wrk(base: str, key: str, rows: int, callers: int, seconds: float) -> Measure:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(WRK_SCRIPT.format(key=key, rows=rows))
    try:
        measured = wrk(base, callers, seconds, script.name)  # loadgen_vs_wrk's, parsing included
    finally:
        Path(script.name).unlink()
    return measured.rate, measured.p50_ms


def run_locust(workers: int) -> Callable[[str, str, int, int, float], Measure]:
    def measure(base: str, key: str, rows: int, callers: int, seconds: float) -> Measure:
        from perfpages.loadgen import locust

        result = locust.run(Load(requests(base, key, rows), duration_s=seconds, warmup_s=1.0,
                                 callers=callers), workers=workers)
        total = result.total()
        return total.responses / seconds, total.latency.percentile_ms(50)

    return measure


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=8.0)
    ap.add_argument("--callers", type=int, default=32)
    ap.add_argument("--label", default="0.43.0+cache")
    ap.add_argument("--no-locust", action="store_true")
    args = ap.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is not installed: apt-get install wrk")
    engines: dict[str, Callable[[str, str, int, int, float], Measure]] = {
        "generator": run_generator, "wrk": run_wrk}
    if not args.no_locust:
        try:
            import perfpages.loadgen.locust  # noqa: F401
            engines |= {"locust-1": run_locust(1), "locust-2": run_locust(2)}
        except ImportError:
            print("perfpages.loadgen.locust is not here: Locust left out")
    suite = load_suite("queryapigate", HERE, quick=True)
    qag = sys.modules["perfpages_suite_queryapigate"]
    rows = suite.dataset.rows
    build = resolve(suite.label(args.label))
    clusters = Clusters()
    work = Path(tempfile.mkdtemp(prefix="perfpages-engines-"))
    try:
        server = clusters.start(suite, build)
        target = server.target.with_db(clusters.db(suite, server))
        assert suite.service is not None and suite.service.prepare is not None
        suite.service.prepare(build, target, work)
        spec = suite.service.spec(build, target, work, {})
        with Service(spec, work / "server.log") as subject:
            key = qag.KEYS["plain"]
            run_generator(subject.url, key, rows, args.callers, 3.0)  # warm the subject
            names = list(engines)
            results: dict[str, list[Measure]] = {n: [] for n in names}
            for rnd in range(args.rounds):
                order = names[rnd % len(names):] + names[:rnd % len(names)]
                for name in order:
                    results[name].append(engines[name](subject.url, key, rows, args.callers,
                                                       args.duration))
                print(f"round {rnd + 1}: " + ", ".join(
                    f"{n} {results[n][-1][0]:,.0f}/s p50 {results[n][-1][1]:.2f} ms"
                    for n in names), flush=True)
    finally:
        clusters.destroy()
        shutil.rmtree(work, ignore_errors=True)

    def summary(values: list[float], digits: int = 2) -> str:
        return (f"{statistics.median(values):.{digits}f} "
                f"({min(values):.{digits}f}-{max(values):.{digits}f})")

    print(f"\n{args.label}, plain lookup, {args.callers} connections, {args.duration:g} s, "
          f"{args.rounds} rounds (median (min-max) of per-round figures):")
    for n in names:
        print(f"  {n:10} {summary([r for r, _ in results[n]], 0)} calls/s, "
              f"p50 {summary([p for _, p in results[n]])} ms")
    for n in names:
        if n != "wrk":
            ratios = [a[0] / b[0] for a, b in zip(results[n], results["wrk"], strict=True)]
            print(f"  {n} / wrk throughput: {summary(ratios)}")


if __name__ == "__main__":
    main()

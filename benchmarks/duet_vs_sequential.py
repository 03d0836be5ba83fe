"""Duet against sequential windows on the real subject: the A/A spread, its bias, the resolution.

    python benchmarks/duet_vs_sequential.py [--rounds 30] [--duration 2] [--callers 32]
                                            [--label 0.43.0+cache] [--seed 1]

Three QueryAPIGate subjects from the `queryapigate` suite (each its label's exact PyPI release,
its own store and configuration, one gunicorn worker; perfpages' own build, cluster and service
code), all on one embedded PostgreSQL with the quick data set, started once and kept warm:

  A   --label (0.43.0+cache: the issue's probe), A' the same build again under a second label
      (the A/A pair), B 0.42.0.

In every round, six measurements in a fresh random order (seeded), the plain lookup in closed
loop, windows of --duration seconds:

  sequential A/A   A and A' one after the other, in a random order, --callers callers each;
  duet A/A         A and A' at once, 2 × --callers callers alternating request by request
                   (about --callers at each), perfpages' duet load (`Load.targets`, what
                   `HttpBlockSpec(duet=True)` sends); which is target 0 is random per round;
  split A/A        A and A' at once, --callers callers each, every caller keeping to its own
                   subject (`Load(alternate=False)`: two closed loops side by side, the classic
                   duet of independent harnesses);
  and the same three for B/A (0.42.0 and A).

Alternating callers couple the two subjects: each caller passes through both, so both sides
answer the same number of requests (throughput compares nothing), and at saturation the
callers queue at whichever subject is slower at the moment, so latency magnifies small
differences. The split design keeps them apart but lets each subject take the other's CPU.

Reported per design, from the per-round log ratios of throughput and p50 (A'/A; A/B):
  A/A spread  robust sd of the per-round log ratio A'/A (in %), the median ratio (the bias
              between identical servers: it should be 0), and the exact paired test's verdict;
  B/A         the median shift 0.43.0 vs 0.42.0 with its 99 % interval, and the resolution
              (perfpages.analysis.ranktest.resolution, paired by round, α = 1 %, 80 % power);
  seconds     measuring time per round (a sequential pair takes two windows, a duet one).
Duet wins where its A/A spread is smaller, its bias nil, and its resolution finer (per second of
measuring too). Wall time: about 8 × (--duration + 2) s per round (each window spawns its load
process, about 2 s), plus half a minute to set up.
"""

from __future__ import annotations

import argparse
import math
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from perfpages import Load, Request
from perfpages.analysis import ranktest
from perfpages.loadgen import generator
from perfpages.loadgen.tally import Tally
from perfpages.run.builds import Build, resolve
from perfpages.run.clusters import Clusters
from perfpages.run.service import Service
from perfpages.run.suite import Suite
from perfpages.run.suite import load as load_suite

HERE = Path(__file__).parent
ALPHA, POWER = 0.01, 0.8
DESIGNS = ("sequential", "duet", "split")
PAIRS = ("A/A", "B/A")
Measure = tuple[float, float]  # throughput (responses/s), p50 (ms)


def requests(base: str, key: str, rows: int) -> list[Request]:
    return [Request(base + "/q/account_by_aid?aid={aid}", headers={"X-API-Key": key},
                    fill={"aid": (1, rows)})]


def figures(total: Tally, seconds: float) -> Measure:
    return total.responses / seconds, total.latency.percentile_ms(50)


class Bench:
    def __init__(self, key: str, rows: int, callers: int, seconds: float) -> None:
        self.key, self.rows, self.callers, self.seconds = key, rows, callers, seconds

    def sequential(self, urls: list[str], seed: int) -> list[Measure]:
        """One window per subject, one after the other, in the order given."""
        out = []
        for url in urls:
            load = Load(requests(url, self.key, self.rows), duration_s=self.seconds,
                        callers=self.callers, seed=seed)
            out.append(figures(generator.run(load).total(), self.seconds))
        return out

    def duet(self, urls: list[str], seed: int, alternate: bool = True) -> list[Measure]:
        """One window of both at once, the load alternating (about `callers` at each)."""
        load = Load(requests(urls[0], self.key, self.rows), duration_s=self.seconds,
                    callers=2 * self.callers, seed=seed, targets=tuple(urls),
                    alternate=alternate)
        return [figures(r.total(), self.seconds) for r in generator.run_each(load)]

    def split(self, urls: list[str], seed: int) -> list[Measure]:
        """One window of both at once, `callers` at each, each caller keeping to its own."""
        return self.duet(urls, seed, alternate=False)


def start_subjects(suite: Suite, builds: dict[str, Build], clusters: Clusters, work: Path,
                   subjects: dict[str, Service]) -> None:
    """Every label's subject on the one server, prepared (its own store) and started; each
    goes into `subjects` as it starts, for the caller to stop whatever happens."""
    assert suite.service is not None and suite.service.prepare is not None
    for name, build in builds.items():
        server = clusters.start(suite, build)  # the same binaries and settings: one server
        target = server.target.with_db(clusters.db(suite, server))
        home = work / name
        home.mkdir()
        suite.service.prepare(build, target, home)
        spec = suite.service.spec(build, target, home, {})
        subjects[name] = Service(spec, home / "server.log")
        subjects[name].start()


def pct(log_value: float) -> float:
    return (math.exp(log_value) - 1) * 100


def report(data: dict[tuple[str, str], list[tuple[Measure, Measure]]], seconds: dict[str, float],
           names: dict[str, str], rounds: int) -> None:
    """Per design: the A/A spread and bias, the B/A shift and resolution, measuring time."""
    print(f"\n{rounds} rounds; A = {names['A']}, A' = {names['A2']}, B = {names['B']}; "
          f"α = {ALPHA:g}, power {POWER:g}, tests paired by round")
    for metric, index in (("throughput", 0), ("p50", 1)):
        print(f"\n{metric}:")
        print(f"  {'design':11} {'A/A sd':>8} {'A/A bias':>9} {'A/A p':>7}   "
              f"{'B→A shift (99 % interval)':>30} {'resolution':>10} {'s/round':>8}")
        for design in DESIGNS:
            aa = data[design, "A/A"]
            a, a2 = [m[0][index] for m in aa], [m[1][index] for m in aa]
            logs = [math.log(y / x) for x, y in zip(a, a2, strict=True) if x > 0 and y > 0]
            sd = ranktest.robust_sd(logs) * 100
            bias = pct(statistics.median(logs)) if logs else math.nan
            aa_test = ranktest.shift_test(a, a2, paired=True, alpha=ALPHA)
            ba = data[design, "B/A"]
            b, a_ = [m[0][index] for m in ba], [m[1][index] for m in ba]
            test = ranktest.shift_test(b, a_, paired=True, alpha=ALPHA)
            res = ranktest.resolution(b, a_, paired=True, alpha=ALPHA, power=POWER)
            shift = (f"{test.shift_pct:+.1f} % ({test.low_pct:+.1f}…{test.high_pct:+.1f} %)"
                     f"{' clear' if test.p < ALPHA else ''}")
            print(f"  {design:11} {sd:7.1f} % {bias:+8.1f} % {aa_test.p:7.3f}   {shift:>30} "
                  f"{res:8.1f} % {seconds[design] / rounds:7.1f}")
    print("\nA/A sd: robust sd of the per-round log ratio A'/A (×100); bias: its median ratio "
          "− 1 (identical servers: 0); A/A p: the exact paired test (below α: a false 'clear'). "
          "A duet wins where its sd is smaller with no bias and its resolution finer per second "
          "of measuring (resolution shrinks as 1/√rounds: a design twice as fast per round "
          "affords 1.41× finer). Alternating duet: throughput is equal on both sides by "
          "construction; read its latency.")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--duration", type=float, default=2.0)
    ap.add_argument("--callers", type=int, default=32)
    ap.add_argument("--label", default="0.43.0+cache", help="the 0.43.0 label (A)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if args.rounds < 1 or args.duration <= 0 or args.callers < 1:
        sys.exit("--rounds, --duration and --callers must be positive")
    started = time.monotonic()
    suite = load_suite("queryapigate", HERE, quick=True)
    qag = sys.modules["perfpages_suite_queryapigate"]
    a = suite.label(args.label)
    labels = {"A": a, "A2": a.again(f"{a.name}-again"), "B": suite.label("0.42.0")}
    names = {role: spec.name for role, spec in labels.items()}
    builds = {spec.name: resolve(spec) for spec in labels.values()}
    if len({(b.pg_bin, str(b.label.pg_settings)) for b in builds.values()}) != 1:
        sys.exit("the labels cannot share one PostgreSQL server (other binaries or settings)")
    bench = Bench(qag.KEYS["plain"], suite.dataset.rows, args.callers, args.duration)
    clusters = Clusters()
    work = Path(tempfile.mkdtemp(prefix="perfpages-duet-"))
    data: dict[tuple[str, str], list[tuple[Measure, Measure]]] = {
        (d, p): [] for d in DESIGNS for p in PAIRS}
    seconds = dict.fromkeys(DESIGNS, 0.0)
    subjects: dict[str, Service] = {}
    try:
        start_subjects(suite, builds, clusters, work, subjects)
        url = {role: subjects[name].url for role, name in names.items()}
        for role in url:  # warm each subject alone, then each pair together
            bench.sequential([url[role]], seed=0)
        for first, second in (("A", "A2"), ("B", "A")):
            bench.duet([url[first], url[second]], seed=0)
            bench.split([url[first], url[second]], seed=0)
        print(f"set up and warmed in {time.monotonic() - started:.0f} s", flush=True)
        for rnd in range(1, args.rounds + 1):
            rng = random.Random(f"{args.seed}-{rnd}")
            steps = [(d, p) for d in DESIGNS for p in PAIRS]
            rng.shuffle(steps)
            line = []
            for design, pair in steps:
                roles = ["A", "A2"] if pair == "A/A" else ["B", "A"]
                order = roles[::-1] if rng.random() < 0.5 else roles
                run: Callable[[list[str], int], list[Measure]] = getattr(bench, design)
                t0 = time.monotonic()
                got = dict(zip(order, run([url[r] for r in order], rnd), strict=True))
                seconds[design] += time.monotonic() - t0
                data[design, pair].append((got[roles[0]], got[roles[1]]))
                ratio = got[roles[1]][0] / got[roles[0]][0] if got[roles[0]][0] else math.nan
                shown = "→".join(order).replace("A2", "A'")
                line.append(f"{design[:3]} {pair} {shown} {ratio:.3f}")
            line.sort()
            print(f"round {rnd}: " + "; ".join(line), flush=True)
    finally:
        for subject in subjects.values():
            subject.stop()
        clusters.destroy()
        shutil.rmtree(work, ignore_errors=True)
    report(data, seconds, names, args.rounds)
    print(f"\nwall time {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()

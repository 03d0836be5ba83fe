"""`bench.calibrate`: measure one block A/A (or read a calibration run back) and print this
machine's noise, what each design resolves, and the design to use."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from perfpages.analysis.calibration import (
    BUDGET,
    DESIGNS,
    EXTRAPOLATE_FROM,
    Calibration,
    Design,
    calibrate,
)
from perfpages.archive.calibration import MAX_MINUTES, TURN_S
from perfpages.archive.reader import open_run, resolve
from perfpages.archive.vocabulary import ALPHA, POWER
from perfpages.errors import PerfpagesError

FORMATS = ("term", "json")


def minutes_of(text: str | float | None) -> float:
    """--minutes: a number of minutes above 0 and at most a day; one line otherwise."""
    if text is None:
        return 10.0
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= MAX_MINUTES):
        raise PerfpagesError(f"--minutes {text} is not a number of minutes above 0 and at most "
                             f"{MAX_MINUTES} (a day)", key="--minutes",
                             fix="give minutes in that range, e.g. 10 or 0.5")
    return value


def print_calibration(results_dir: Path, console: Console, *, run: str | None = None,
                      suite: str | None = None, block: str | None = None,
                      label: str | None = None, minutes: str | float | None = None,
                      fmt: str = "term", benchmarks: Path = Path("benchmarks"),
                      quick: bool = False, seed: int | None = None, command: str = "") -> int:
    if fmt not in FORMATS:
        raise PerfpagesError(f"unknown format {fmt!r}", key="--format", fix="use term or json")
    if run is not None:
        given = [f for f, v in (("--suite", suite), ("--block", block), ("--label", label),
                                ("--minutes", minutes)) if v is not None]
        if given:
            raise PerfpagesError(f"--run reads a calibration run back; {given[0]} measures",
                                 key=given[0], fix=f"drop {given[0]}, or drop --run")
        run_dir = resolve(results_dir, run)
    else:
        if not suite or not block:
            missing = "--suite" if not suite else "--block"
            raise PerfpagesError("no block to calibrate", key=missing,
                                 fix="pass --suite NAME --block BLOCK, or --run RUN to read a "
                                     "calibration run back")
        planned = minutes_of(minutes)  # before the runner's imports (psycopg: about a second)
        from perfpages.run.calibrate import calibrate as measure

        run_dir = measure(suite, block, label, planned, benchmarks=benchmarks,
                          results=results_dir, quick=quick, seed=seed, command=command,
                          console=console if fmt == "term" else Console(stderr=True))
    data = calibrate(open_run(run_dir))
    if fmt == "json":
        sys.stdout.write(json.dumps(data.to_json(), indent=2, ensure_ascii=False) + "\n")
    else:
        show(data, console)
    return 0


def _pct(fraction: float) -> str:
    return f"{fraction * 100:.1f} %" if math.isfinite(fraction) else "—"


def _res(value: float, extrapolated: bool) -> str:
    if math.isnan(value):
        return "—"  # too few rounds measured to say
    if math.isinf(value):
        return "never"  # the test cannot reach α at the design's rounds
    return f"{value:.1f} %" + ("*" if extrapolated else "")


def _clear(design: Design, kind: str) -> str:
    k, n = design.clear[kind]
    return f"{k} of {n}" if n else "—"  # none decided: too few rounds for the test


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if math.isfinite(seconds) else "—"


def show(c: Calibration, console: Console) -> None:
    def say(text: str) -> None:
        console.print(Text(text))

    say(f"Calibration {c.run}: block {c.block}, {c.label} against its twin {c.twin} "
        f"(the same build), {c.rounds} rounds of {TURN_S} s windows; a turn's overhead "
        f"{c.overhead_s:.1f} s beyond its {c.turn_seconds} measured seconds.")
    noise = Table("cell", "metric", "1 s", f"{TURN_S} s window", "its level", "pair corr.",
                  title="Noise: robust sd of the logarithms (1 s within a turn; windows "
                        "across rounds; the level the seconds do not explain); correlation "
                        "of the pair's windows in a round", title_justify="left")
    for n in c.noise:
        noise.add_row(Text(n.cell), n.metric, _pct(n.second), _pct(n.window), _pct(n.level),
                      f"{n.round_corr:+.2f}" if math.isfinite(n.round_corr) else "—")
    console.print(noise)
    if c.busy or c.remeasured:
        say(f"Busy: {c.busy} of {c.windows} windows were measured while the machine was busy; "
            f"{c.remeasured} turn{'s were' if c.remeasured != 1 else ' was'} measured again "
            "at the end of the block, and only the re-measure is counted. A calibration "
            "takes longer than --minutes asks on a busy machine.")
    designs = Table("design", "windows", "paired", "unpaired", "A/A paired", "A/A unpaired",
                    "time", "calibrate", title=f"Designs, 40 s a label: resolution of the "
                    f"worst cell ({POWER * 100:.0f} % power at α = {ALPHA:g}), A/A comparisons "
                    "called clear, time per block, the least time a calibration takes here to "
                    "measure the design's rounds", title_justify="left")
    for d in c.designs:
        designs.add_row(d.name, str(d.rounds), _res(d.paired, d.extrapolated),
                        _res(d.unpaired, d.extrapolated), _clear(d, "paired"),
                        _clear(d, "unpaired"), _minutes(d.seconds),
                        f"≥ {_minutes(d.calibrate_s)}")
    console.print(designs)
    if any(math.isnan(d.paired) for d in c.designs):
        say(f"— fewer than {EXTRAPOLATE_FROM} rounds measured: calibrate longer (--minutes).")
    if any(d.extrapolated and not math.isnan(d.paired) for d in c.designs):
        say(f"* computed at the design's rounds from the noise of the {c.rounds} measured: "
            "calibrate longer (the calibrate column) to count its A/A comparisons.")
    say(f"Time per block: the pair ({c.label}, {c.twin}); each further label adds its turns.")
    best = c.recommended
    rule = (f"the finest design whose block takes at most {BUDGET:g} × the "
            f"{DESIGNS[0][0]} × {DESIGNS[0][1]} s design's time ({_minutes(c.budget_s)})")
    if best is None:
        say(f"Recommendation: none — no design resolves anything at α = {ALPHA:g} within "
            f"{rule}.")
        return
    value, test = best.best
    other = best.unpaired if test == "paired" else best.paired
    name = "Wilcoxon signed-rank, paired by round" if test == "paired" else "Mann–Whitney"
    say(f"Recommendation: {best.name} ({best.rounds} rounds of {best.window_s} s windows), "
        f"{name}: resolves {value:.1f} % (the other test: {_res(other, False)}) in "
        f"{_minutes(best.seconds)} per block — {rule}.")

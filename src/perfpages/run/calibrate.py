"""`bench.calibrate`: an A/A run of one block, archived like any run.

The block runs a label and its twin (`LabelSpec.again`: the same build under `LABEL-aa`) for as
many rounds as fit in the minutes given, the two in a fresh random order each round; each turn
measures one 8 s window per cell, archived as eight 1 s windows (HTTP blocks archive seconds
anyway; pgbench blocks are asked to). The runner does the rest, as for `bench.run`: the run's id
says `calibrate`, and perfpages.analysis.calibration reads it back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from perfpages.archive.calibration import MAX_MINUTES, SLUG, TURN_S, twin_of
from perfpages.archive.manifest import Method
from perfpages.errors import PerfpagesError
from perfpages.run.blocks import floor_windows
from perfpages.run.httpblock import case_seconds
from perfpages.run.runner import Options, Runner
from perfpages.run.sqlblock import PgbenchBlocks
from perfpages.run.suite import BlockSpec, HttpBlockSpec, Suite

MIN_ROUNDS = 2  # fewer cannot say how windows vary from round to round
STARTUP_S = 2.0  # a guess of a turn's cost beyond its warm-up and windows, for the round count


def turn_seconds(suite: Suite, block: BlockSpec | HttpBlockSpec) -> float:
    """A turn's warm-up and windows, at the calibration's window."""
    assert suite.warmup_s is not None  # Suite.__post_init__ fills it from its rule's design
    method = Method(rounds=1, warmup_s=suite.warmup_s, window_s=TURN_S)
    if isinstance(block, HttpBlockSpec):
        return case_seconds(block, method)
    cells = len(block.cells())
    return method.warmup_s + cells * TURN_S


def rounds_in(suite: Suite, block: BlockSpec | HttpBlockSpec, minutes: float) -> int:
    """The rounds of two turns that fit in `minutes`, after the block's floors."""
    floors = 2 * (floor_windows(suite.floor_s) + 1) * (2 if isinstance(block, HttpBlockSpec)
                                                        else 1)
    per_round = 2 * (turn_seconds(suite, block) + STARTUP_S)
    return max(MIN_ROUNDS, int((minutes * 60 - floors) // per_round))


def adapter(label: str | None, minutes: float) -> Callable[[Suite], Suite]:
    """The suite as the calibration runs it: its one chosen block, the label (default: the
    first the block runs) and its twin, 8 s windows, shuffled, as many rounds as fit."""
    def adapt(suite: Suite) -> Suite:
        block = suite.blocks[0]
        runs = getattr(block, "labels", ()) or [x.name for x in suite.labels]
        name = label or next(x.name for x in suite.labels if x.name in runs)
        twin = suite.label(name).again(twin_of(name))
        if any(x.name == twin.name for x in suite.labels):
            raise PerfpagesError(f"suite {suite.name!r} already has a label {twin.name!r}",
                                 key="--label", fix="calibrate another label, or rename it")
        if isinstance(block, HttpBlockSpec):
            block = replace(block, window_s=float(TURN_S), rounds=None,
                            labels=(name, twin.name) if block.labels else ())
        else:
            block = replace(block, window_s=float(TURN_S))
        return replace(suite, labels=(suite.label(name), twin), blocks=(block,),
                       order="shuffle", rounds=rounds_in(suite, block, minutes),
                       notes=f"calibration: an A/A run of block {block.name}, {name} and its "
                             f"twin {twin.name}, {TURN_S} s windows archived second by second. "
                             + suite.notes)
    return adapt


def calibrate(suite: str, block: str, label: str | None, minutes: float, *, benchmarks: Path,
              results: Path, quick: bool = False, seed: int | None = None, command: str = "",
              console: Console | None = None) -> Path:
    """Measure; returns the calibration run's directory."""
    if not 0 < minutes <= MAX_MINUTES:
        raise PerfpagesError(f"--minutes {minutes:g} is not a number of minutes above 0 and at "
                             f"most {MAX_MINUTES} (a day)", key="--minutes",
                             fix="give minutes in that range, e.g. 10 or 0.5")
    opts = Options(suite=suite, benchmarks=benchmarks, results=results,
                   labels=[label] if label else None, blocks=[block], quick=quick, seed=seed,
                   command=command, adapt=adapter(label, minutes), slug=SLUG)
    runner = Runner(opts, console or Console(stderr=True))
    pgbench = runner.drivers[BlockSpec]
    assert isinstance(pgbench, PgbenchBlocks)
    pgbench.per_second = True  # the seconds of each window, as HTTP blocks archive them
    return runner.run()

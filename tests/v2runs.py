"""Method v2 fixture runs: generated windows written by the real archive writer, with
`method.rule` recorded (an exact rank test), rounds in a fresh random order, a base, a changed
label with a known shift and an A/A twin of the base (the same build under another name)."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

from perfpages.archive.manifest import Block, Label, Manifest, Method, Pin
from perfpages.archive.reader import FLOOR_LABEL
from perfpages.archive.window import Window
from perfpages.archive.writer import ArchiveWriter
from perfpages.testing import MACHINE

V2 = "2026-12-01-synthetic-v2"
EPOCH = datetime(2026, 12, 1, 10, 0, 0)
PARAMS = [{"call": "lookup", "callers": 32}, {"call": "page", "callers": 32}]


def write_v2(results: Path, run_id: str = V2, *, shift: float = 0.10, noise: float = 0.03,
             rounds: int = 20, aa: bool = True, test: str = "wilcoxon", seed: int = 11,
             aa_shift: float = 0.0, blocks: tuple[str, ...] = ("callers",),
             floors: tuple[float, float] | None = None, again: int = 0,
             machine: dict[str, object] | None = None,
             rule: dict[str, object] | None = None,
             p50_factor: dict[str, float] | None = None) -> str:
    """A complete method v2 run: labels base, changed (throughput × (1 + shift), p50 ÷ it) and,
    with `aa`, base-again (the base's build; `aa_shift` moves it, to make a noisy A/A pair).
    Each window's level carries its own noise (`noise`, a fraction). `floors`: a pgbench floor
    before and after each block (tps, two one-second windows each). `again`: that many of each
    block's first windows ran on a busy machine and were measured again at the block's end
    (attempt 2, quiet). `machine`: run.json's, instead of the synthetic one. `rule`: run.json's
    `method.rule`, instead of `test` at α = 1 % (method 2.0). `p50_factor`: per label, its p50
    times that (a latency that moves against the throughput)."""
    base = Label("base", Pin("package", requirement="demo==1.0", version="1.0",
                             artifacts={"demo-1.0-py3-none-any.whl": "ab" * 32}))
    labels = {"base": base,
              "changed": Label("changed", Pin("package", requirement="demo==1.1", version="1.1",
                                              artifacts={"demo-1.1-py3-none-any.whl": "cd" * 32}))}
    factor = {"base": 1.0, "changed": 1.0 + shift}
    if aa:
        labels["base-again"] = Label("base-again", base.pin, description="base again")
        factor["base-again"] = 1.0 + aa_shift
    manifest = Manifest(
        id=run_id, suite="synthetic", title="Synthetic method v2 run (generated values)",
        scope="synthetic", status="running", started=EPOCH.strftime("%Y-%m-%dT%H:%M:%SZ"),
        command="tests/v2runs.py", harness={"version": "synthetic", "commit": None},
        labels=labels,
        method=Method(rounds=rounds, order="shuffle", seed=seed, warmup_s=1, window_s=2,
                      min_rounds=5, rule=rule or {"test": test, "alpha": 0.01}),
        machine=machine or MACHINE,
        blocks={b: Block(b, title=b, metrics=("throughput", "p50")) for b in blocks})
    rng = random.Random(seed)
    clock = EPOCH
    redo: list[Window] = []
    with ArchiveWriter.create(results, manifest) as writer:
        for block in blocks:
            for position, tps in zip(("before", "after"), floors or (), strict=False):
                for second in range(2):
                    writer.append(Window(block=block, label=FLOOR_LABEL, round=0, kind="floor",
                                         window=second, start=clock.isoformat() + "Z",
                                         params={"position": position, "clients": 1},
                                         duration_s=1.0, metrics={"tps": tps + second}))
            for rnd in range(1, rounds + 1):
                order = list(labels)
                rng.shuffle(order)
                for label in order:
                    for params in PARAMS:
                        busy = len(redo) < again
                        window = _window(block, label, rnd, params, clock,
                                         factor[label] * (1 + rng.gauss(0, noise)), busy,
                                         (p50_factor or {}).get(label, 1.0))
                        writer.append(window)
                        redo += [window] * busy
                        clock += timedelta(seconds=2)
            for window in redo:
                writer.append(replace(window, attempt=2, machine=QUIET,
                                      start=clock.isoformat() + "Z"))
                clock += timedelta(seconds=2)
            redo = []
        writer.finish("complete", ended=clock.isoformat() + "Z")
    return run_id


BUSY = {"busy_pct": 80.0, "others_pct": 35.0, "steal_pct": 0.2, "load1": 1.3}
QUIET = {"busy_pct": 50.0, "others_pct": 2.0, "steal_pct": 0.0, "load1": 0.5}


def _window(block: str, label: str, rnd: int, params: dict[str, object], clock: datetime,
            level: float, busy: bool, p50_factor: float = 1.0) -> Window:
    requests = int(2000 * level)
    return Window(block=block, label=label, round=rnd, params=dict(params),
                  start=clock.isoformat() + "Z", duration_s=2.0, requests=requests,
                  codes={"200": requests}, metrics={"p50": 16.0 / level * p50_factor},
                  machine=BUSY if busy else QUIET)  # as a real run, every window's figures

"""The calibration analysis on synthetic calibration runs written by the archive writer: per-second
values around a per-window level of a known spread, so that the designs' order is known."""

from __future__ import annotations

import math
import random
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from perfpages.analysis.calibration import DESIGNS, Calibration, calibrate
from perfpages.archive.calibration import TURN_S, check
from perfpages.archive.histogram import Latency
from perfpages.archive.manifest import Block, Label, Manifest, Method, Pin
from perfpages.archive.reader import Run, open_run
from perfpages.archive.window import Window
from perfpages.archive.writer import ArchiveWriter
from perfpages.errors import ArchiveError
from perfpages.testing import MACHINE, generate

START = datetime(2026, 11, 1, 10, 0, 0)
OVERHEAD_S = 3  # between turns: the synthetic clock's start-up and warm-up


def write_calibration(results: Path, rounds: int, *, level: float = 0.15,
                      second: float = 0.05, shift: float = 0.0, seed: int = 3,
                      run_id: str = "2026-11-01-synthetic-calibrate", busy: float = 0.0) -> Run:
    """A calibration run of one cell: each turn's level is drawn anew (sd `level`, log scale),
    each second around it (sd `second`); the twin is `shift` faster (0: an A/A pair). A
    fraction `busy` of the turns is measured on a busy machine (its seconds swing by ±40 %) and
    measured again, quietly, at the end of the block (attempt 2), as the runner does."""
    rng = random.Random(seed)
    pin = Pin("package", requirement="demo==1.0", version="1.0")
    labels = {"a": Label("a", pin), "a-aa": Label("a-aa", pin, description="a again")}
    manifest = Manifest(
        id=run_id, suite="synthetic", title="Synthetic calibration (generated values)",
        scope="synthetic", status="running", started=START.strftime("%Y-%m-%dT%H:%M:%SZ"),
        command="test", harness={"version": "synthetic", "commit": None}, labels=labels,
        method=Method(rounds=rounds, order="shuffle", seed=seed, warmup_s=1, window_s=1),
        machine=MACHINE, blocks={"calls": Block("calls", metrics=("throughput", "p50"))})
    clock = START

    def turn(writer: ArchiveWriter, rnd: int, label: str, attempt: int, swing: float) -> None:
        nonlocal clock
        clock += timedelta(seconds=OVERHEAD_S)
        level_ = rng.gauss(0, level) + (math.log1p(shift) if label == "a-aa" else 0.0)
        for index in range(TURN_S):
            sign = 1 if index % 2 else -1
            rate = 1000 * math.exp(level_ + rng.gauss(0, second) + sign * swing)
            requests = int(rate)
            lat = Latency()
            lat.record_ms(4000 / rate, requests)  # 4 callers: latency mirrors the rate
            writer.append(Window("calls", label, rnd, {"callers": 4}, clock.isoformat() + "Z",
                                 1.0, window=index, requests=requests, codes={"200": requests},
                                 latency=lat, attempt=attempt,
                                 machine={"others_pct": 300.0 if swing else 2.0}))
            clock += timedelta(seconds=1)

    again = []
    with ArchiveWriter.create(results, manifest) as writer:
        for rnd in range(1, rounds + 1):
            order = ["a", "a-aa"]
            rng.shuffle(order)
            for label in order:
                swing = 0.4 if rng.random() < busy else 0.0
                turn(writer, rnd, label, 1, swing)
                if swing:
                    again.append((rnd, label))
        for rnd, label in again:
            turn(writer, rnd, label, 2, 0.0)
        writer.finish("complete", ended=clock.isoformat() + "Z")
    return open_run(results / run_id)


@pytest.fixture(scope="module")
def long_run(tmp_path_factory: pytest.TempPathFactory) -> Calibration:
    return calibrate(write_calibration(tmp_path_factory.mktemp("results"), rounds=80))


def test_more_windows_resolve_finer_when_windows_have_levels(long_run: Calibration) -> None:
    c = long_run
    assert [(d.rounds, d.window_s) for d in c.designs] == list(DESIGNS)
    assert c.rounds == 80 and not any(d.extrapolated for d in c.designs)
    unpaired = [d.unpaired for d in c.designs]
    assert unpaired == sorted(unpaired, reverse=True) and unpaired[0] > 1.3 * unpaired[-1]
    # Wilcoxon on 5 pairs cannot reach α = 1 %: 2/2^5 > 0.01.
    assert math.isinf(c.designs[0].paired)
    paired = [d.paired for d in c.designs[1:]]
    assert paired == sorted(paired, reverse=True)


def test_every_disjoint_chunk_at_every_offset_is_one_aa_comparison(long_run: Calibration) -> None:
    c = long_run
    for d in c.designs:
        chunks, offsets = 80 // d.rounds, TURN_S // d.window_s
        n = chunks * offsets * 2  # one cell, two metrics
        assert d.clear["unpaired"][1] == n
        assert d.clear["paired"][1] == (0 if d.rounds == 5 else n)
        assert d.clear["unpaired"][0] <= n // 4  # an A/A pair: few are clear


def test_a_real_shift_is_clear_in_every_comparison(tmp_path: Path) -> None:
    c = calibrate(write_calibration(tmp_path, rounds=40, shift=0.5, level=0.05))
    for d in c.designs:
        for test in ("paired", "unpaired"):
            k, n = d.clear[test]
            assert k == n and (n > 0 or (test == "paired" and d.rounds == 5))


def test_noise_structure_and_timing(long_run: Calibration) -> None:
    c = long_run
    assert {(n.cell, n.metric) for n in c.noise} == {("callers=4", "throughput"),
                                                     ("callers=4", "p50")}
    for n in c.noise:  # the generator's structure: windows spread more than seconds explain
        assert n.window > n.second / math.sqrt(TURN_S) and n.level > 0
    # The synthetic clock: every turn OVERHEAD_S before its eight seconds, nothing outside them.
    assert c.overhead_s == pytest.approx(OVERHEAD_S) and c.fixed_s == pytest.approx(0)
    for d in c.designs:
        assert d.seconds == pytest.approx(d.rounds * 2 * (OVERHEAD_S + d.window_s))
    best = c.recommended
    assert best is not None and best.seconds <= c.budget_s
    assert all(d.seconds > c.budget_s or d.best[0] >= best.best[0] for d in c.designs)
    data = c.to_json()
    assert len(data["designs"]) == 4 and data["recommended"]["rounds"] == best.rounds


def test_fewer_rounds_than_a_design_extrapolate_and_count_nothing(tmp_path: Path) -> None:
    c = calibrate(write_calibration(tmp_path, rounds=12))
    by = {d.rounds: d for d in c.designs}
    assert not by[5].extrapolated and not by[10].extrapolated
    assert by[20].extrapolated and by[40].extrapolated
    assert by[20].clear == {"paired": (0, 0), "unpaired": (0, 0)}
    assert by[10].clear["unpaired"][1] == 1 * 2 * 2  # one chunk, two offsets, two metrics
    assert math.isfinite(by[40].unpaired) and math.isfinite(by[40].paired)


def test_too_few_rounds_say_nothing(tmp_path: Path) -> None:
    c = calibrate(write_calibration(tmp_path, rounds=3))
    assert all(math.isnan(d.paired) or math.isinf(d.paired) for d in c.designs)
    assert all(math.isnan(d.unpaired) for d in c.designs[1:])
    assert c.recommended is None or c.recommended.rounds == 5


def test_a_run_that_is_not_a_calibration_is_refused(tmp_path: Path) -> None:
    run = generate(tmp_path)
    with pytest.raises(ArchiveError, match="is not a calibration run"):
        check(run.manifest)


def test_a_busy_turn_counts_its_re_measure_alone(tmp_path: Path) -> None:
    """A turn measured again (the machine was busy) is read from its re-measure alone: the noise
    is the quiet seconds' (5 %), not the two attempts interleaved, and the busy windows and
    re-measured turns are counted."""
    quiet = calibrate(write_calibration(tmp_path / "quiet", rounds=12))
    busy = calibrate(write_calibration(tmp_path / "busy", rounds=12, busy=0.5))
    assert 6 <= busy.remeasured <= 18 and busy.busy == busy.remeasured * TURN_S
    assert busy.windows == (12 * 2 + busy.remeasured) * TURN_S
    assert (quiet.busy, quiet.remeasured, quiet.windows) == (0, 0, 12 * 2 * TURN_S)
    for n in busy.noise:
        assert 0.03 < n.second < 0.08, n  # interleaved with the busy attempt: ~0.4
    # the least time to measure a design's rounds: this run's time per round, re-measures in
    assert busy.designs[0].calibrate_s > quiet.designs[0].calibrate_s
    per_round = 2 * (OVERHEAD_S + TURN_S)
    for d in quiet.designs:
        assert d.calibrate_s == pytest.approx(d.rounds * per_round, rel=0.02)

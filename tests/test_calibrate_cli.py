"""`perfpages bench.calibrate` through the real command line: A/A runs of the tiny suites on
embedded PostgreSQL (a fraction of a minute each), their re-analysis, and bad input."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from perfpages.analysis.calibration import DESIGNS
from perfpages.archive.calibration import TURN_S
from perfpages.archive.reader import find_runs, open_run, verify
from sites import perfpages
from test_calibration import write_calibration

DESIGN_NAMES = [f"{r} × {w} s" for r, w in DESIGNS]


@pytest.mark.postgres
def test_a_pgbench_block_is_calibrated_and_read_back(tmp_path: Path) -> None:
    done = perfpages("bench.calibrate", "--suite", "tiny", "--block", "lookup", "--minutes",
                     "0.3", "--seed", "4", "--results", str(tmp_path))
    assert done.returncode == 0, done.stderr
    (run_dir,) = find_runs(tmp_path)
    assert "-calibrate-" in run_dir.name and verify(run_dir) == []
    run = open_run(run_dir)
    assert list(run.manifest.labels) == ["a", "a-aa"] and run.manifest.method.order == "shuffle"
    pins = [replace(x.pin, note="") for x in run.manifest.labels.values()]
    assert pins[0] == pins[1]  # the same build (a pin without a package notes its description)
    # Every turn: eight one-second windows of pgbench's log.
    turns: dict[tuple[str, int], list[int]] = {}
    for w in run.measured:
        turns.setdefault((w.label, w.round), []).append(w.window)
    assert len(turns) == 2 * run.manifest.method.rounds >= 4
    assert all(sorted(ix) == list(range(TURN_S)) for ix in turns.values())
    for name in DESIGN_NAMES:
        assert name in done.stdout
    assert "Recommendation" in done.stdout and "Noise" in done.stdout
    again = perfpages("bench.calibrate", "--run", run_dir.name, "--format", "json",
                      "--results", str(tmp_path))
    assert again.returncode == 0, again.stderr
    data = json.loads(again.stdout)
    assert data["run"] == run_dir.name and data["label"] == "a" and data["twin"] == "a-aa"
    assert [(d["rounds"], d["window_s"]) for d in data["designs"]] == list(DESIGNS)
    assert data["rounds"] == run.manifest.method.rounds
    assert find_runs(tmp_path) == [run_dir]  # re-reading measured nothing


@pytest.mark.postgres
def test_an_http_block_is_calibrated_with_the_label_asked_for(tmp_path: Path) -> None:
    done = perfpages("bench.calibrate", "--suite", "tinyhttp", "--block", "load", "--label",
                     "fast", "--minutes", "0.2", "--format", "json", "--results", str(tmp_path))
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert (data["block"], data["label"], data["twin"]) == ("load", "fast", "fast-aa")
    assert len(data["designs"]) == 4
    cells = {n["cell"] for n in data["noise"]}
    assert cells == {"mode=capacity", "mode=open, share_pct=50"}
    run = open_run(find_runs(tmp_path)[0])
    assert set(run.manifest.labels) == {"fast", "fast-aa"}
    assert {w.label for w in run.measured} == {"fast", "fast-aa"}


@pytest.mark.parametrize(("args", "line"), [
    (["--suite", "nosuch", "--block", "x"], "--suite: no suite 'nosuch'"),
    (["--suite", "tiny", "--block", "nosuch"], "suite 'tiny' has no block 'nosuch'"),
    (["--suite", "tiny", "--block", "lookup", "--label", "zz"], "suite 'tiny' has no label 'zz'"),
    (["--suite", "tiny", "--block", "lookup", "--minutes", "0"], "--minutes: --minutes 0 is"),
    (["--suite", "tiny", "--block", "lookup", "--minutes", "-2"], "--minutes: --minutes -2 is"),
    (["--suite", "tiny", "--block", "lookup", "--minutes", "soon"], "--minutes: --minutes soon"),
    *((["--suite", "tiny", "--block", "lookup", "--minutes", m],
       f"--minutes: --minutes {m} is not a number of minutes above 0 and at most 1440 (a day)")
      for m in ("1e9", "1e300", "nan", "inf", "1441")),
    (["--suite", "tiny"], "--block: no block to calibrate"),
    (["--suite", "tiny", "--block", "lookup", "--format", "xml"], "--format: unknown format"),
    (["--run", "nosuch"], "no run"),
])
def test_bad_input_is_one_line(tmp_path: Path, args: list[str], line: str) -> None:
    done = perfpages("bench.calibrate", *args, "--results", str(tmp_path))
    assert done.returncode == 1 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and line in lines[0], done.stderr
    assert find_runs(tmp_path) == []


def test_a_run_that_is_not_a_calibration_is_one_line(tmp_path: Path) -> None:
    from perfpages.testing import generate

    run = generate(tmp_path)
    done = perfpages("bench.calibrate", "--run", run.id, "--results", str(tmp_path))
    assert done.returncode == 1
    assert done.stderr.strip() == (f"error: --run: run {run.id} is not a calibration run — name "
                                   "a run made by bench.calibrate (its id says calibrate)")
    write_calibration(tmp_path, rounds=6)
    mixed = perfpages("bench.calibrate", "--run", "calibrate", "--suite", "tiny",
                      "--results", str(tmp_path))
    assert mixed.returncode == 1 and mixed.stderr.startswith("error: --suite: --run reads")
    shown = perfpages("bench.calibrate", "--run", "calibrate", "--results", str(tmp_path))
    assert shown.returncode == 0, shown.stderr
    assert all(name in shown.stdout for name in DESIGN_NAMES)


def test_a_busy_calibration_says_so_and_how_long_each_design_needs(tmp_path: Path) -> None:
    run = write_calibration(tmp_path, rounds=12, busy=0.5)
    shown = perfpages("bench.calibrate", "--run", run.id, "--results", str(tmp_path))
    assert shown.returncode == 0, shown.stderr
    data = json.loads(perfpages("bench.calibrate", "--run", run.id, "--format", "json",
                                "--results", str(tmp_path)).stdout)
    busy, windows = data["busy_windows"], data["windows"]
    turns = data["remeasured_turns"]
    assert busy == turns * TURN_S and windows == (24 + turns) * TURN_S
    assert f"Busy: {busy} of {windows} windows were measured while the machine was busy; " \
        f"{turns} turns were measured again" in " ".join(shown.stdout.split())
    minutes = [d["calibrate_minutes"] for d in data["designs"]]
    assert minutes == sorted(minutes) and minutes[0] > 0
    for m in minutes:
        assert f"≥ {m:.1f} min" in shown.stdout

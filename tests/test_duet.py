"""Duet HTTP blocks end to end: tinyhttp's `calls` block with `duet=True`, through the real
command line, real subjects and PostgreSQL. The labels' subjects answer /item with different
status codes, so each label's windows show which subject their requests reached."""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from perfpages.archive.reader import open_run, verify
from perfpages.errors import PerfpagesError
from perfpages.run.suite import HttpBlockSpec, HttpCase
from sites import perfpages
from test_httpsuite import subjects  # beside this file

ROOT = Path(__file__).resolve().parent.parent
CALLS = 'HttpBlockSpec("calls", (item(), item(1, "/fail")), title="Items and failures")'
LABELS = '''LabelSpec("slow", env={"TINY_DELAY_MS": "2"}, description="2 ms per item")'''


def duet_suite(tmp_path: Path, labels: str) -> Path:
    """tinyhttp with its `calls` block as a duet and `labels` in place of its label "slow"."""
    bench = tmp_path / "bench"
    shutil.copytree(ROOT / "benchmarks" / "tinyhttp", bench / "tinyhttp")
    source = (ROOT / "benchmarks" / "tinyhttp.py").read_text()
    assert CALLS in source and LABELS in source
    duet = CALLS[:-1] + ", metrics=('p50', 'p99'), duet=True)"  # a duet compares latency
    source = source.replace(CALLS, duet).replace(LABELS, labels)
    (bench / "tinyhttp.py").write_text(source)
    return bench


@pytest.mark.postgres
def test_a_duet_block_archives_each_labels_windows_in_the_same_rounds(
        tmp_path: Path, leftovers: Callable[[], list[int]], session_tmp: Path) -> None:
    """fast (the base) beside slow (its /item answers 203) and beside again (fast again)."""
    bench = duet_suite(tmp_path, 'LabelSpec("slow", env={"TINY_ITEM_STATUS": "203"}), '
                                 'LabelSpec("again")')
    results = tmp_path / "results"
    done = perfpages("bench", "run", "--suite", "tinyhttp", "--blocks", "calls", "--rounds", "2",
                     "--suites", str(bench), "--results", str(results), "--preflight-wait", "0")
    assert done.returncode == 0, done.stderr[-2000:]
    (run_dir,) = [p for p in results.iterdir() if p.is_dir()]
    assert verify(run_dir) == []
    run = open_run(run_dir)
    assert run.manifest.status == "complete"
    engine = run.manifest.blocks["calls"].engine
    assert engine.startswith("perfpages duet: fast beside slow, again, both subjects at once")
    measured = [w for w in run.measured if w.block == "calls"]
    assert all(w.status == "ok" and w.requests for w in measured)
    cells = Counter((w.label, w.round, w.params["call"]) for w in measured)
    # One 1 s window per case and pair: the base twice a round (beside each other label).
    assert cells == {(label, rnd, call): 2 if label == "fast" else 1
                     for label in ("fast", "slow", "again") for rnd in (1, 2)
                     for call in ("item", "fail")}
    base = sorted((w.round, w.params["call"], w.window) for w in measured if w.label == "fast")
    assert base == [(r, c, i) for r in (1, 2) for c in ("fail", "item") for i in (0, 1)]
    # Every label's requests reached its own subject: slow's /item answers 203.
    for w in measured:
        want = {"fail": "500", "item": "203" if w.label == "slow" else "200"}[w.params["call"]]
        assert set(w.codes) == {want}, (w.label, w.params, w.codes)
    warmups = Counter(w.label for w in run.windows if w.kind == "warmup" and w.block == "calls")
    assert warmups == {"fast": 4, "slow": 2, "again": 2}  # per round, each pair warms up once
    assert subjects(session_tmp) == [] and leftovers() == []


def test_labels_with_different_pg_settings_are_refused_in_one_line(tmp_path: Path) -> None:
    bench = duet_suite(tmp_path, 'LabelSpec("slow", pg_settings={"work_mem": "8MB"})')
    done = perfpages("bench", "run", "--suite", "tinyhttp", "--blocks", "calls",
                     "--suites", str(bench), "--results", str(tmp_path / "results"))
    assert done.returncode != 0 and not (tmp_path / "results").exists()
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert ("block 'calls' runs as a duet, but labels 'fast' and 'slow' have different "
            "pg_settings: they cannot share one PostgreSQL server") in lines[0]
    assert "blocks.calls.duet" in lines[0] and "drop duet=True" in lines[0]


def test_a_duet_with_one_label_is_refused(tmp_path: Path) -> None:
    bench = duet_suite(tmp_path, LABELS)
    done = perfpages("bench", "run", "--suite", "tinyhttp", "--blocks", "calls", "--labels",
                     "fast", "--suites", str(bench), "--results", str(tmp_path / "results"))
    assert done.returncode != 0 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "runs as a duet, needs two labels or more, and runs 1" in done.stderr


@pytest.mark.parametrize(("extra", "what"), [
    ({"engine": "locust"}, "the Locust engine"),
    ({"flamegraph": True}, "a flame graph"),
])
def test_what_a_duet_cannot_take(extra: dict[str, object], what: str) -> None:
    case = HttpCase({"call": "x"}, lambda turn: None)
    with pytest.raises(PerfpagesError, match=f"a duet, which cannot take {what}") as info:
        HttpBlockSpec("calls", (case,), duet=True, **extra)  # type: ignore[arg-type]
    assert info.value.key == "blocks.calls.duet"
    with pytest.raises(PerfpagesError, match="cannot take throughput among its metrics"):
        HttpBlockSpec("calls", (case,), duet=True)  # default metrics: throughput first
    with pytest.raises(PerfpagesError, match="a duet, which cannot take delay_ms"):
        HttpBlockSpec("calls", (HttpCase({"call": "x"}, lambda turn: None, delay_ms=1),),
                      duet=True, metrics=("p50",))

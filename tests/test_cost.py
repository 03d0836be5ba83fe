"""Cost per call (perfpages.run.cost): counters differenced over a window's completed calls,
CPU of a real process tree from /proc, and the metrics on a real HTTP run's windows."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from perfpages.analysis import report
from perfpages.analysis.metric import COST_METRICS, info
from perfpages.archive.reader import open_run
from perfpages.run import cost

ROOT = Path(__file__).resolve().parent.parent


def reading(cpu: float, stmts: float, at: float, stats_at: float | None = None) -> cost.Reading:
    return cost.Reading(cpu, cpu / 2, stmts, 3 * stmts, 0.0, cpu_at=at,
                        stats_at=at if stats_at is None else stats_at)


def test_per_call_divides_the_growth_by_the_completed_calls() -> None:
    got = cost.per_call(reading(1.0, 100, 10.0), reading(1.5, 500, 11.0), 100, 1.0)
    assert got == {"cpu_ms": 5.0, "pg_cpu_ms": 2.5, "statements": 4.0, "buffers_hit": 12.0,
                   "buffers_read": 0.0}


def test_a_late_reading_is_taken_as_a_rate_over_its_own_interval() -> None:
    # Read 0.25 s late: 1.25 s of counting for a 1 s window of 100 calls.
    got = cost.per_call(reading(1.0, 0, 10.0), reading(1.5, 500, 11.25), 100, 1.0)
    assert got["statements"] == 4.0 and got["cpu_ms"] == 4.0


def test_no_cost_for_an_empty_window_or_a_counter_that_went_back() -> None:
    assert cost.per_call(reading(1.0, 10, 0.0), reading(2.0, 20, 1.0), 0, 1.0) == {}
    restarted = cost.per_call(reading(5.0, 10, 0.0), reading(1.0, 20, 1.0), 10, 1.0)
    assert "cpu_ms" not in restarted and "pg_cpu_ms" not in restarted
    assert restarted["statements"] == 1.0
    absent = cost.Reading(None, None, None, None, None, cpu_at=1.0, stats_at=1.0)
    assert cost.per_call(absent, absent, 10, 1.0) == {}


def test_window_costs_pairs_consecutive_readings_and_skips_missing_ones() -> None:
    rs = [reading(0.0, 0, 0.0), reading(1.0, 40, 1.0), None, reading(3.0, 120, 3.0)]
    got = cost.window_costs(rs, [(10, 1.0), (10, 1.0), (10, 1.0), (10, 1.0)])
    assert got[0]["statements"] == 4.0 and got[1] == {} and got[2] == {} and got[3] == {}


def test_tree_cpu_counts_live_descendants_and_reaped_ones() -> None:
    """A child that spawns a grandchild which burns CPU and exits: the root's tree counts the
    grandchild's CPU (reaped into the child's cutime) and the child's own."""
    script = textwrap.dedent("""
        import os, subprocess, sys, time
        burn = ("import os,time\\nt=time.process_time()\\n"
                "while time.process_time()-t<0.3: pass\\nprint(sum(os.times()[:2]))")
        spent = float(subprocess.run([sys.executable, "-c", burn], capture_output=True,
                                     text=True, check=True).stdout)
        print(spent, flush=True)
        sys.stdin.readline()
    """)
    root = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert root.stdout is not None and root.stdin is not None
        grandchild = float(root.stdout.readline())
        total, gone = cost.tree_cpu([root.pid, None])
        assert gone is None and total is not None
        assert total >= grandchild - 2 * cost.TICK_S  # the exited grandchild still counts
        assert cost.tree_cpu([2**22 + 7])[0] is None  # no such process
        root.stdin.write("\n")
        root.stdin.flush()
    finally:
        root.wait(10)


def test_cost_metrics_are_known_metrics_with_a_direction() -> None:
    for name in ("cpu_ms", "pg_cpu_ms", "buffers_hit", "buffers_read", "statements"):
        assert name in COST_METRICS and info(name).higher_is_better is False, name
    assert info("cpu_ms").title == "subject CPU per call"


@pytest.mark.postgres
@pytest.mark.network
def test_every_measured_window_of_a_real_run_has_its_cost(queryapigate_smoke: Path) -> None:
    """QueryAPIGate 0.43.0, one round of the calls block (the smoke run test_httpsuite reads
    too: conftest.py): each call's windows carry its CPU, PostgreSQL's, its statements and
    buffers per call, and the report tables them."""
    run_dir = queryapigate_smoke
    r = open_run(run_dir)
    windows = [w for w in r.measured if w.block == "calls"]
    costed = [w for w in windows if "cpu_ms" in w.metrics]
    # A window in which no call completed (a first, slow call) has no per-call cost.
    assert {w.params["call"] for w in costed} == {w.params["call"] for w in windows}
    for w in costed:
        m = w.metrics
        assert m["cpu_ms"] > 0 and m["pg_cpu_ms"] > 0, m
        assert m["statements"] >= 1 and m["buffers_hit"] > 0, m
    # A few statements per call (a first window that loads metadata runs many more).
    assert 2 <= statistics.median(w.metrics["statements"] for w in costed) <= 8
    data = report.build(r)
    titles = [t["title"] for t in data["tables"]]
    assert any(t.endswith(": cost per call") for t in titles), titles
    table = next(t for t in data["tables"] if t["title"].endswith(": cost per call"))
    assert {row[1].split(" ")[0].rstrip(":") for row in table["rows"]} >= {"cpu_ms", "statements"}
    assert json.dumps(data)  # plain data all through
    # why(): the cost table with the rule's verdicts, the statements, and the missing stacks said.
    from perfpages.site.macros import Macros
    from perfpages.site.pins import Pins
    from perfpages.site.store import RunStore

    pins = Pins({"r": RunStore(run_dir.parent).get(run_dir.name)})
    text = Macros(pins).namespace()["why"]("0.43.0", "0.43.0-again", block="calls")
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert any(r.startswith("| subject CPU per call |") and "of 4 clear" in r for r in rows)
    assert any(r.startswith("| statements per call |") for r in rows), rows
    assert "Statements whose time per call changed most" in text
    assert "kept no raw py-spy stacks" in text  # the calls block is not profiled


def test_why_on_an_archived_run_says_what_it_did_not_archive() -> None:
    """queryapigate-2 predates cost per call and raw stacks: why() still shows its statement
    changes, and says, not hides, the rest; bad arguments are one-line errors."""
    from perfpages.errors import AnalysisError
    from perfpages.site.macros import Macros
    from perfpages.site.pins import Pins
    from perfpages.site.store import RunStore

    pins = Pins({"q": RunStore(ROOT / "results").get("2026-12-02-queryapigate-2")})
    why = Macros(pins).namespace()["why"]
    text = why("0.42.0", "0.43.0-noaccess", block="calls", top=3)
    table = [line for line in text.splitlines() if line.startswith("| ") and "|---" not in line]
    assert len(table) == 4  # a header and the top 3 statements
    assert "archived none for block calls" in text and "kept no raw py-spy stacks" in text
    for bad, message in ((dict(block="nope"), "no block 'nope'"),
                         (dict(block="calls", top=0), "top=0"),
                         (dict(block="calls", run="zz"), "zz")):
        with pytest.raises(AnalysisError, match=message):
            why("0.42.0", "0.43.0", **bad)
    with pytest.raises(AnalysisError, match="no label 'x'"):
        why("0.42.0", "x", block="calls")

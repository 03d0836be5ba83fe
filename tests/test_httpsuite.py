"""HTTP blocks of `bench run` end to end: a real subject process, sockets and PostgreSQL floors
(the tiny HTTP suite, a standard-library server, in seconds) and a QueryAPIGate smoke run."""

from __future__ import annotations

import contextlib
import csv
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from perfpages.analysis import report
from perfpages.archive import files
from perfpages.archive.reader import FLOOR_LABEL, open_run, verify
from perfpages.archive.stacks import read_stacks
from perfpages.run.runner import Options, run
from sites import perfpages, quiet

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"
pytestmark = pytest.mark.postgres  # every run here has PostgreSQL floors

Leftovers = Callable[[], list[int]]  # the `leftovers` fixture: this session's servers only


def subjects(session_tmp: Path) -> list[int]:
    """Tiny HTTP subjects this session started (they inherit its TMPDIR; others' do not)."""
    found = []
    for p in psutil.process_iter(["cmdline"]):
        if any("tinyhttp/server.py" in part for part in (p.info["cmdline"] or [])):
            with contextlib.suppress(psutil.Error):
                if p.environ().get("TMPDIR") == str(session_tmp):
                    found.append(p.pid)
    return found


@pytest.fixture(scope="module")
def http_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("results")
    return run(Options(suite="tinyhttp", benchmarks=BENCHMARKS, results=results, seed=5,
                       command="invoke bench.run --suite tinyhttp"), quiet())


def test_http_blocks_archive_every_case(http_run: Path) -> None:
    r = open_run(http_run)
    assert verify(http_run) == [] and r.manifest.status == "complete"
    assert r.manifest.blocks["calls"].parameters == ("call", "callers")
    cells = {(w.block, w.label, w.round, w.params.get("call") or w.params.get("mode"))
             for w in r.measured}
    for label in ("fast", "slow"):
        for rnd in (1, 2):
            assert {("calls", label, rnd, "item"), ("calls", label, rnd, "fail")} <= cells
    # Blocks narrow labels and rounds: the open loop ran on "fast", the cold path once on "slow".
    assert {c[1] for c in cells if c[0] == "load"} == {"fast"}
    assert {(c[1], c[2]) for c in cells if c[0] == "cold"} == {("slow", 1)}
    warmups = [w for w in r.windows if w.kind == "warmup"]
    assert warmups and all(w.params == {"call": "item", "callers": 2} for w in warmups
                           if w.block == "calls")


def test_status_codes_and_latency_are_real(http_run: Path) -> None:
    r = open_run(http_run)
    fails = [w for w in r.measured if w.params.get("call") == "fail"]
    assert fails and all(set(w.codes) == {"500"} and w.requests for w in fails)
    data = report.build(r)
    calls = next(t for t in data["tables"] if t["title"] == "Items and failures")
    assert any("⚠" in cell for row in calls["rows"] if "call=fail" in row[0] for cell in row)
    # The slow build sleeps 2 ms per item: its median cannot be below that.
    slow = [w.latency for w in r.measured if w.label == "slow" and w.params.get("call") == "item"]
    assert all(lat is not None and lat.percentile_ms(50) >= 2.0 for lat in slow)


def test_open_loop_offers_a_share_of_the_capacity_measured_in_the_turn(http_run: Path) -> None:
    r = open_run(http_run)
    for rnd in (1, 2):
        capacity = [w for w in r.measured if w.block == "load" and w.round == rnd
                    and w.params == {"mode": "capacity"}]
        opened = [w for w in r.measured if w.block == "load" and w.round == rnd
                  and w.params.get("mode") == "open"]
        assert capacity and opened
        measured = sum(w.requests or 0 for w in capacity) / sum(w.duration_s for w in capacity)
        offered = opened[0].metrics["offered_rate"]
        assert offered == pytest.approx(0.5 * measured, rel=0.15)


def test_cold_path_keeps_every_request(http_run: Path) -> None:
    sample = files.read_text(http_run, "samples/cold/slow/r1-call-health.csv")  # or .csv.gz
    rows = list(csv.DictReader(sample.splitlines()))
    window = next(w for w in open_run(http_run).measured if w.block == "cold")
    assert len(rows) == window.requests and all(row["status"] == "200" for row in rows)
    cold = json.loads((http_run / "diagnostics/cold/slow/r1-call-health-cold-path.json")
                      .read_text())
    assert cold["requests"] == window.requests


def test_floors_flamegraph_logs_and_nothing_left(http_run: Path, leftovers: Leftovers,
                                                 session_tmp: Path) -> None:
    r = open_run(http_run)
    health = [w for w in r.floors if w.params.get("floor") == "health"]
    # Per block, a floor before and after, each two one-second windows (floor_s=1: at least 2).
    assert len(health) == 2 * 4 * 2
    assert all(w.label == FLOOR_LABEL and w.requests for w in health)
    assert sorted({w.window for w in health}) == [0, 1]
    assert len([w for w in r.floors if "tps" in w.metrics]) == 2 * 4 * 2  # pgbench, per block
    shares = json.loads((http_run / "diagnostics/profile/fast/cpu-shares.json").read_text())
    # The profile covers the whole load (2.5 s of a CPU-bound endpoint at 100 Hz).
    assert shares["samples"] >= 20 and sum(shares["shares_pct"].values()) == pytest.approx(100)
    assert shares["shares_pct"]["Work"] > 0
    svg = (http_run / "diagnostics/profile/fast/flamegraph.svg").read_text()
    assert svg.startswith("<svg") and "fast: call=spin" in svg  # the first case only
    stacks = read_stacks(http_run, "profile", "fast")  # the raw samples, kept for diffs
    assert stacks is not None and sum(stacks.values()) == shares["samples"]
    assert any(frame.startswith("spin (") for stack in stacks for frame in stack)
    assert read_stacks(http_run, "profile", "slow") is None  # not profiled
    assert files.read_text(http_run, "diagnostics/calls/fast/server.log").count("listening") == 2
    assert subjects(session_tmp) == [] and leftovers() == []


def test_a_subject_that_will_not_start_is_archived_as_failed(tmp_path: Path, leftovers: Leftovers,
                                                             session_tmp: Path) -> None:
    bench = tmp_path / "bench"
    shutil.copytree(BENCHMARKS / "tinyhttp", bench / "tinyhttp")
    source = (BENCHMARKS / "tinyhttp.py").read_text()
    source = source.replace('env={"TINY_DELAY_MS": "2"}', 'env={"TINY_EXIT": "1"}')
    (bench / "tinyhttp.py").write_text(source)
    run_dir = run(Options(suite="tinyhttp", benchmarks=bench, results=tmp_path / "r",
                          blocks=["calls"], rounds=1), quiet())
    r = open_run(run_dir)
    failed = [w for w in r.measured if w.label == "slow"]
    assert failed and all(w.status == "failed" for w in failed)
    assert all("exited with status 3 before it was healthy" in (w.error or "") for w in failed)
    assert all(w.status == "ok" for w in r.measured if w.label == "fast")
    assert subjects(session_tmp) == [] and leftovers() == []


def test_a_one_round_block_archived_alone_is_a_complete_run(tmp_path: Path) -> None:
    """tinyhttp's `cold` runs one round of its `slow` label only: chosen alone through the
    command line, the run holds that label and one round, is complete, and says so in its id."""
    done = perfpages("bench", "run", "--suite", "tinyhttp", "--blocks", "cold", "--rounds", "2",
                     "--preflight-wait", "0", "--results", str(tmp_path))
    assert done.returncode == 0, done.stderr
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert run_dir.name.endswith("-tinyhttp-cold")
    r = open_run(run_dir)
    assert r.manifest.status == "complete" and list(r.manifest.labels) == ["slow"]
    assert r.manifest.method.rounds == 1 and {w.round for w in r.measured} == {1}
    assert list(r.manifest.blocks) == ["cold"] and not verify(run_dir)


@pytest.mark.network
def test_queryapigate_smoke(queryapigate_smoke: Path) -> None:
    """The real suite on the real 0.43.0 release from PyPI: one round of two blocks, tiny
    windows; the second reaches PostgreSQL through the delay proxy, so the label is prepared
    again for the proxy's address (its stored configuration names the server). One-second
    windows, not quick's two: every assertion is on cells, codes and counts, and ten windows
    a second shorter are a tenth of the test. The run is shared with test_cost (conftest.py)."""
    run_dir = queryapigate_smoke
    r = open_run(run_dir)
    assert r.manifest.method.window_s == 1.0
    pin = r.manifest.labels["0.43.0"].pin
    assert pin.kind == "package" and pin.version == "0.43.0" and len(pin.artifacts) == 1
    calls = [w for w in r.measured if w.block == "calls"]
    assert {w.params["call"] for w in calls} == {"lookup-plain", "lookup-governed", "page",
                                                 "write"}
    assert {w.label for w in calls} == {"0.43.0", "0.43.0-again"}
    for w in calls:  # every call of both labels
        assert w.status == "ok" and w.requests and set(w.codes) == {"200"}, (w.params, w.codes)
    network = [w for w in r.measured if w.block == "network"]
    assert {w.label for w in network} == {"0.43.0"}
    assert {(w.params["callers"], w.params["delay_ms"]) for w in network} == {
        (1, 0), (1, 0.5), (1, 1), (1, 2), (1, 5), (32, 0.5)}
    for w in network:  # every call crossed the proxy: round trips counted, the store's included
        assert w.status == "ok" and set(w.codes) == {"200"}, (w.params, w.codes)
        assert w.metrics["round_trips"] >= 2 and w.metrics["statements"] >= 2, w.metrics
    text = "\n".join(files.read_text(run_dir, p.relative_to(run_dir).as_posix())
                     for p in run_dir.rglob("*") if p.is_file())  # .gz files decompressed
    assert "qag-bench-plain" not in text  # the keys never reach the archive

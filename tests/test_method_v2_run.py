"""Method v2's design in the run stage: a suite's rule and the design it brings, the `pairs`
order (every label's window of a cell back to back, balanced, reproducible from run.json),
subjects kept up across a block, each window's idle time, busy cells measured again and counted
instead of the originals, replays in a fresh order; method v1 runs unchanged."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from perfpages.analysis import report
from perfpages.analysis import rows as run_rows
from perfpages.archive import files, vocabulary
from perfpages.archive.manifest import Method
from perfpages.archive.reader import open_run, read_manifest, verify
from perfpages.archive.window import Window, params_key
from perfpages.errors import PerfpagesError
from perfpages.run import schedule
from perfpages.run.blocks import Session
from perfpages.run.clusters import Clusters
from perfpages.run.replay import replay_options
from perfpages.run.runner import Options, run
from perfpages.run.sqlblock import PgbenchBlocks
from perfpages.run.suite import BlockSpec, DataSet, LabelSpec, Script, Suite, load
from sites import quiet
from test_httpsuite import subjects

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"
FIXTURES = Path(__file__).parent / "fixtures"
Leftovers = Callable[[], list[int]]


def _suite(**kwargs: object) -> Suite:
    return Suite("s", "s", labels=(LabelSpec("a"), LabelSpec("b")),
                 blocks=(BlockSpec("x", scripts=(Script(builtin="select-only"),)),),
                 dataset=DataSet("d", rows=1, load=lambda c, r, s: None), **kwargs)  # type: ignore[arg-type]


# What an exact suite records now: method 2.1 (its resolution by simulation, Holm's certificate)
RULE_21 = {"test": "wilcoxon", "alpha": 0.01, "version": "2.1", "certify_alpha": 0.01,
           "target_pct": 20.0}  # the default target (vocabulary.TARGET_PCT)


# ---- the suite's rule and its design ---------------------------------------------------------

def test_ranges_keeps_the_v1_design_and_records_no_rule() -> None:
    s = _suite()
    assert (s.rule, s.rounds, s.order, s.warmup_s, s.window_s) == ("ranges", 5, "rotate", 5.0, 30.0)
    assert s.rule_json is None


def test_an_exact_rule_brings_the_v2_design_and_explicit_values_win() -> None:
    s = _suite(rule="wilcoxon")
    assert (s.rounds, s.order, s.warmup_s, s.window_s) == (20, "pairs", 0.5, 2.0)
    assert s.rule_json == RULE_21
    s = _suite(rule="mann-whitney", alpha=0.05, rounds=7, order="rotate", window_s=4.0,
               resolution_target=10)
    assert (s.rounds, s.order, s.warmup_s, s.window_s) == (7, "rotate", 0.5, 4.0)
    assert s.rule_json == {"test": "mann-whitney", "alpha": 0.05, "version": "2.1",
                           "certify_alpha": 0.01, "target_pct": 10.0}
    assert _suite(rule="wilcoxon", order="fixed").order == "fixed"


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"rule": "t-test"}, "unknown rule 't-test'"),
    ({"rule": "wilcoxon", "alpha": 0.5}, "alpha=0.5 is not between 0 and 0.5"),
    ({"alpha": 0.0}, "alpha=0.0"),
    ({"rule": "wilcoxon", "order": "random"}, "unknown order 'random'"),
    ({"rounds": 0}, "rounds must be at least 1"),
    ({"resolution_target": 10}, "resolution_target needs an exact rule"),
    ({"rule": "wilcoxon", "resolution_target": 0}, "resolution_target=0 is not a percentage"),
    ({"rule": "wilcoxon", "resolution_target": "10"}, "resolution_target='10'"),
])
def test_bad_rule_settings_are_one_line(kwargs: dict[str, object], needle: str) -> None:
    with pytest.raises(PerfpagesError) as err:
        _suite(**kwargs)
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_a_pgbench_block_narrows_the_rounds() -> None:
    block = BlockSpec("x", scripts=(Script(builtin="select-only"),), rounds=3)
    driver = PgbenchBlocks(Session(Clusters()))
    assert driver.scope(block, Method(rounds=20), ["a"]) == (3, ["a"])
    assert driver.scope(block, Method(rounds=2), ["a"]) == (2, ["a"])
    with pytest.raises(PerfpagesError, match="rounds must be at least 1"):
        BlockSpec("x", scripts=(Script(builtin="select-only"),), rounds=0)


# ---- which windows are busy, and which the analysis counts -------------------------------------

def _window(label: str, rnd: int, figures: dict[str, float] | None, attempt: int = 1,
            call: str = "item", throughput: float = 100.0) -> Window:
    return Window("calls", label, rnd, {"call": call}, "2026-01-01T00:00:00Z", 1.0,
                  machine=figures, attempt=attempt, requests=int(throughput),
                  throughput=throughput)


QUIET = {"busy_pct": 50.0, "others_pct": 1.0, "steal_pct": 0.0}
BUSY = {"busy_pct": 90.0, "others_pct": vocabulary.BUSY_OTHERS_PCT + 5, "steal_pct": 0.0}
STOLEN = {"busy_pct": 50.0, "others_pct": 0.0, "steal_pct": vocabulary.BUSY_STEAL_PCT + 1}


def test_busy_cells_are_found_by_the_preflight_thresholds_in_run_order() -> None:
    writer = SimpleNamespace(windows=[
        _window("a", 1, QUIET), _window("b", 1, BUSY), _window("a", 2, STOLEN),
        _window("b", 2, STOLEN, call="fail"), _window("b", 2, None),
        _window("a", 3, BUSY, attempt=2),  # a re-measure is never measured again
        Window("other", "a", 1, {}, "", 1.0, machine=BUSY)])  # another block

    method = Method(rounds=3, order="shuffle", seed=3)
    found = schedule.busy(writer.windows, "calls", ["a", "b"], method, 0)
    expected = [(1, "b", frozenset({"call=item"}))] + [
        (2, name, frozenset({"call=item"} if name == "a" else {"call=fail"}))
        for name in schedule.order(["a", "b"], method, 0, 2)]
    assert found == expected


def test_under_pairs_a_busy_cell_is_measured_again_for_every_label() -> None:
    """One label's busy window re-measures the whole (round, cell), every label back to back,
    in the order the cells ran; the analysis then counts attempt 2 for all of them."""
    plan = [[("call=item", ("a", "b")), ("call=fail", ("b", "a"))],
            [("call=fail", ("a", "b")), ("call=item", ("b", "a"))]]
    writer = SimpleNamespace(windows=[
        _window("a", 1, QUIET), _window("b", 1, BUSY), _window("b", 1, QUIET, call="fail"),
        _window("a", 1, QUIET, call="fail"), _window("a", 2, STOLEN, call="fail"),
        _window("b", 2, QUIET, call="fail"), _window("b", 2, BUSY), _window("a", 2, QUIET),
        _window("a", 2, BUSY, attempt=2)])  # a re-measure is never measured again
    method = Method(rounds=2, order="pairs", seed=3)
    found = schedule.busy_cells(writer.windows, "calls", ["a", "b"], method, 0, plan)
    assert [(r, c) for r, c, _ in found] == [(1, "call=item"), (2, "call=fail"),
                                             (2, "call=item")]
    assert all(sorted(order) == ["a", "b"] for _, _, order in found)
    again = [_window(name, r, QUIET, attempt=2, call=c.removeprefix("call="))
             for r, c, order in found for name in order]
    counted = run_rows.counted(writer.windows[:-1] + again)
    for r, c, _ in found:  # every label of a re-measured cell counted from attempt 2
        assert {w.attempt for w in counted
                if (w.round, params_key(w.params)) == (r, c)} == {2}


def test_the_last_attempt_of_a_cell_is_the_one_counted() -> None:
    windows = [_window("a", 1, BUSY, throughput=10.0), _window("a", 1, QUIET, attempt=2,
                                                                throughput=30.0),
               _window("a", 2, QUIET, throughput=50.0), _window("b", 1, BUSY, throughput=70.0)]
    assert run_rows.counted(windows) == [windows[1], windows[2], windows[3]]
    # The original stays archived and in order; only the analysis skips it.
    assert [w.to_json().get("attempt") for w in windows] == [None, 2, None, None]


def test_archived_runs_count_every_window_and_write_no_attempt() -> None:
    runs = [p.parent for p in FIXTURES.rglob("run.json")]
    assert runs
    for run_dir in runs:
        try:
            r = open_run(run_dir)
        except Exception:  # a deliberately broken fixture
            continue
        assert run_rows.counted(r.windows) == r.windows
        assert all("attempt" not in w.to_json() for w in r.windows)


# ---- a real run under an exact rule -------------------------------------------------------------

def _bench(tmp: Path, rule: str = "wilcoxon", settings: bool = False, rounds: int = 3) -> Path:
    """tinyhttp under an exact rule: its one-second windows (the least a block may have), the
    settle before each window and the profile's windows halved (the tests here count windows,
    starts and orders, not sizes)."""
    bench = tmp / "bench"
    shutil.copytree(BENCHMARKS / "tinyhttp", bench / "tinyhttp", dirs_exist_ok=True)
    source = (BENCHMARKS / "tinyhttp.py").read_text()
    assert source.count("rounds=2, warmup_s=0.5,") == source.count("window_s=2.0,") == 1
    source = source.replace("rounds=2, warmup_s=0.5,",
                            f"rounds={rounds}, rule={rule!r}, warmup_s=0.25,")
    source = source.replace("window_s=2.0,", "window_s=1.0,")  # the profile block's
    if settings:  # the slow label needs another PostgreSQL setting: a restart between labels
        source = source.replace('env={"TINY_DELAY_MS": "2"}',
                                'env={"TINY_DELAY_MS": "2"}, pg_settings={"work_mem": "8MB"}')
    (bench / "tinyhttp.py").write_text(source)
    return bench


@pytest.fixture
def thresholds(monkeypatch: pytest.MonkeyPatch) -> Callable[[float], None]:
    """Every window busy (-1) or none (a huge threshold): the preflight's rule, deterministic."""
    def set_to(value: float) -> None:
        monkeypatch.setattr(vocabulary, "BUSY_OTHERS_PCT", value)
        monkeypatch.setattr(vocabulary, "BUSY_STEAL_PCT", value)
    return set_to


@pytest.fixture(scope="module")
def busy_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """calls (both labels, 3 rounds) and profile (one round, py-spy), every window busy."""
    tmp = tmp_path_factory.mktemp("v2")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(vocabulary, "BUSY_OTHERS_PCT", -1.0)
        yield run(Options(suite="tinyhttp", benchmarks=_bench(tmp), results=tmp / "results",
                          blocks=["calls", "profile"], seed=8), quiet())


@pytest.mark.postgres
def test_an_exact_run_records_its_rule_and_design(busy_run: Path) -> None:
    m = read_manifest(busy_run)
    assert m.method.rule == RULE_21
    assert (m.method.order, m.method.seed, m.method.rounds) == ("pairs", 8, 3)
    assert "restarted every turn" not in m.method.notes
    assert verify(busy_run) == [] and m.status == "complete"


def _measured(run_dir: Path, block: str) -> list[dict[str, object]]:
    """The block's measured windows, as results.jsonl lists them (the order they ran)."""
    lines = [json.loads(x) for x in files.read_text(run_dir, "results.jsonl").splitlines()]
    return [x for x in lines if x["block"] == block and x["kind"] == "measure"]


def _visits(windows: list[dict[str, object]]) -> list[tuple[object, str, list[str]]]:
    """Runs of consecutive windows of one (attempt, round, cell): each with its labels."""
    out: list[tuple[object, str, list[str]]] = []
    for x in windows:
        key = (x.get("attempt", 1), x["round"])
        cell = params_key(x["params"])  # type: ignore[arg-type]
        if out and out[-1][:2] == (key, cell):
            out[-1][2].append(str(x["label"]))
        else:
            out.append((key, cell, [str(x["label"])]))
    return out


@pytest.mark.postgres
def test_each_cell_runs_its_labels_back_to_back_in_a_balanced_order(busy_run: Path) -> None:
    """From run.json and results.jsonl alone: within a round, a cell's windows are consecutive
    (no other cell's measured window between them), the labels' positions and each pair's order
    balanced over the rounds, the re-measures paired alike; the order is the seed's."""
    m = read_manifest(busy_run)
    labels = list(m.labels)
    windows = _measured(busy_run, "calls")
    visits = _visits(windows)
    cells = {params_key(x["params"]) for x in windows}  # type: ignore[arg-type]
    for attempt in (1, 2):
        mine = [v for v in visits if v[0][0] == attempt]
        # each (round, cell) one run of consecutive windows, every label's, one label at a time
        assert sorted((v[0][1], v[1]) for v in mine) == sorted(
            (r, c) for r in range(1, m.method.rounds + 1) for c in cells)
        for _, _, ran in mine:
            seen = list(dict.fromkeys(ran))
            assert sorted(seen) == sorted(labels)
            assert ran == [name for name in seen for _ in range(ran.count(name))]
    first = [v for v in visits if v[0][0] == 1]
    for cell in cells:
        orders = [list(dict.fromkeys(v[2])) for v in first if v[1] == cell]
        leads = Counter(o[0] for o in orders)  # 3 rounds, 2 labels: 2 and 1
        assert sorted(leads[name] for name in labels) == [1, 2]
    # the order run.json's seed gives, round by round
    block = next(b for b in load("tinyhttp", busy_run.parent.parent / "bench").blocks
                 if b.name == "calls")
    cells = [(params_key(c.params), c.capacity) for c in block.cases]
    plan = schedule.plan(cells, m.method, 0, m.method.rounds, labels)
    assert [(v[1], list(dict.fromkeys(v[2]))) for v in first] == [
        (cell, list(order)) for visits in plan for cell, order in visits]
    other = replace(m.method, seed=9)
    assert schedule.plan(cells, other, 0, m.method.rounds, labels) != plan


@pytest.mark.postgres
def test_every_window_records_how_long_its_subject_sat_idle(busy_run: Path) -> None:
    windows = _measured(busy_run, "calls")
    assert all(x.get("idle_s", 0) >= 0 for x in windows)  # type: ignore[operator]
    # the subjects, kept up: only each label's first window is its subject's first use
    unused = [x["label"] for x in windows if "idle_s" not in x]
    assert sorted(unused) == sorted(read_manifest(busy_run).labels)
    assert [w.idle_s for w in open_run(busy_run).measured if w.block == "calls"] == [
        x.get("idle_s") for x in windows]


@pytest.mark.postgres
def test_subjects_start_once_per_block_and_label(busy_run: Path) -> None:
    for label in ("fast", "slow"):
        log = files.read_text(busy_run, f"diagnostics/calls/{label}/server.log")
        assert log.count("listening") == 1  # 3 rounds and 3 re-measures, one start
    # A one-round block measures from the subject's start: its re-measure starts it again;
    # its two environments are two starts each time.
    assert files.read_text(busy_run, "diagnostics/profile/fast/server.log").count(
        "listening") == 2 * 2
    shares = json.loads((busy_run / "diagnostics/profile/fast/cpu-shares.json").read_text())
    assert shares["samples"] > 0 and shares["shares_pct"]["Work"] > 0
    for label in ("fast", "slow"):
        summary = json.loads(files.read_text(busy_run, f"diagnostics/calls/{label}/summary.json"))
        assert summary["database"] and "statements" in summary


@pytest.mark.postgres
def test_busy_windows_are_measured_again_and_counted_instead(busy_run: Path) -> None:
    r = open_run(busy_run)
    cells = {(w.block, w.label, w.round, params_key(w.params)) for w in r.measured}
    for attempt in (1, 2):
        assert {(w.block, w.label, w.round, params_key(w.params))
                for w in r.measured if w.attempt == attempt} == cells
    warm = {(w.label, w.round) for w in r.windows if w.kind == "warmup" and w.attempt == 2}
    assert warm == {(c[1], c[2]) for c in cells}  # each re-measured turn settles first
    # The re-measures come after the block's last round, in the rounds' order.
    lines = [json.loads(x) for x in files.read_text(busy_run, "results.jsonl").splitlines()]
    calls = [(x.get("attempt", 1), x["round"]) for x in lines
             if x["block"] == "calls" and x["kind"] == "measure"]
    assert calls == sorted(calls)
    # What the analysis counts: the second attempt's values, every table alike.
    rows = run_rows.load(r)
    for (block, label, rnd, pkey) in cells:
        again = [w for w in r.measured if (w.block, w.label, w.round, params_key(w.params))
                 == (block, label, rnd, pkey) and w.attempt == 2]
        value = rows[(rows.block == block) & (rows.label == label) & (rows["round"] == rnd)
                     & (rows.parameters == pkey) & (rows.metric == "requests")]["value"]
        assert list(value) == [float(sum(w.requests or 0 for w in again))]
    assert report.build(r)["tables"]


@pytest.mark.postgres
def test_nothing_outlives_the_run(busy_run: Path, leftovers: Leftovers,
                                  session_tmp: Path) -> None:
    assert subjects(session_tmp) == [] and leftovers() == []


@pytest.mark.postgres
def test_replays_keep_the_recorded_rule(busy_run: Path, tmp_path: Path) -> None:
    bench = _bench(tmp_path, rule="ranges")  # the suite changed its rule since
    opts = replay_options(busy_run.parent, busy_run.name, bench, "invoke bench.replay")
    assert opts.method is not None and opts.method.rule == RULE_21
    # a fresh order: a seed of its own, the original's recorded beside it
    assert opts.method.order == "pairs" and opts.seed == opts.method.seed
    assert opts.method.seed is not None and opts.method.seed != 8 and opts.replay_of_seed == 8


@pytest.mark.postgres
def test_labels_with_other_settings_restart_per_turn(tmp_path: Path, thresholds: Callable[
        [float], None], leftovers: Leftovers, session_tmp: Path) -> None:
    thresholds(1e9)  # never busy: no re-measure
    run_dir = run(Options(suite="tinyhttp", benchmarks=_bench(tmp_path, settings=True, rounds=2),
                          results=tmp_path / "results", blocks=["calls"]), quiet())
    m = read_manifest(run_dir)
    assert "block calls: subjects restarted every turn" in m.method.notes
    assert "block calls: label by label, not cell by cell" in m.method.notes
    assert "different pg_settings" in m.method.notes
    for label in ("fast", "slow"):
        log = files.read_text(run_dir, f"diagnostics/calls/{label}/server.log")
        assert log.count("listening") == 2  # one start per round
    r = open_run(run_dir)
    assert r.measured and all(w.status == "ok" and w.attempt == 1 for w in r.measured)
    assert verify(run_dir) == [] and subjects(session_tmp) == [] and leftovers() == []


@pytest.mark.postgres
def test_an_interrupted_re_measure_is_resumed(tmp_path: Path, thresholds: Callable[[float], None],
                                              leftovers: Leftovers, session_tmp: Path) -> None:
    thresholds(-1.0)  # every window busy

    def stop_at_the_first_re_measure(w: Window) -> None:
        if w.attempt == 2 and w.kind == "measure":
            raise KeyboardInterrupt

    bench = _bench(tmp_path, rounds=2)
    with pytest.raises(PerfpagesError, match="partial"):
        run(Options(suite="tinyhttp", benchmarks=bench, results=tmp_path / "results",
                    blocks=["calls"], labels=["fast"], on_window=stop_at_the_first_re_measure),
            quiet())
    assert subjects(session_tmp) == [] and leftovers() == []
    (run_dir,) = list((tmp_path / "results").iterdir())
    assert read_manifest(run_dir).status == "partial"
    run(Options(suite=None, benchmarks=bench, results=tmp_path / "results",
                resume=run_dir.name), quiet())
    r = open_run(run_dir)
    assert r.manifest.status == "complete" and verify(run_dir) == []
    assert r.manifest.method.rule == RULE_21
    again = [(w.round, params_key(w.params), w.window) for w in r.measured if w.attempt == 2]
    assert len(again) == len(set(again)) and {(x[0], x[1]) for x in again} == {
        (w.round, params_key(w.params)) for w in r.measured}
    assert subjects(session_tmp) == [] and leftovers() == []

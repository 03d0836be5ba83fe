"""`bench run` end to end on the embedded PostgreSQL, with the tiny suite (seconds per run)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from perfpages.analysis import report
from perfpages.archive.reader import FLOOR_LABEL, open_run, read_manifest
from perfpages.archive.window import Window
from perfpages.errors import PerfpagesError
from perfpages.run import suite as suite_module
from perfpages.run.overrides import parse_assignments
from perfpages.run.postgres import free_port
from perfpages.run.runner import Options, run
from sites import quiet

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"

Leftovers = Callable[[], list[int]]  # the `leftovers` fixture: this session's servers only


def our_data_dirs(root: Path) -> set[str]:
    return {p.name for p in root.glob("perfpages-pg-*")}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("results")
    return run(Options(suite="tiny", benchmarks=BENCHMARKS, results=results, seed=11,
                       command="invoke bench.run --suite tiny"), quiet())


@pytest.mark.postgres
def test_tiny_suite_end_to_end(tiny_run: Path) -> None:
    r = open_run(tiny_run)  # validated against the schema and its checksums
    m = r.manifest
    assert (m.status, m.scope, m.suite, list(m.labels)) == ("complete", "test", "tiny", ["a", "b"])
    assert m.machine["postgresql"].startswith("18")
    assert m.machine["pg_settings"]["track_io_timing"] == "on"
    assert m.labels["b"].pg_settings == {"work_mem": "8MB"} and m.labels["a"].pin.kind == "none"
    assert m.method.seed == 11 and m.method.rounds == 2
    measured = [(w.round, w.label) for w in r.measured]
    assert measured == [(1, "a"), (1, "b"), (2, "b"), (2, "a")]  # rotated every round
    assert all(w.status == "ok" and w.requests and w.latency for w in r.measured)
    assert len([w for w in r.windows if w.kind == "warmup"]) == 4
    floors = [(w.params["position"], w.window) for w in r.floors]  # one-second windows
    assert floors == [("before", 0), ("before", 1), ("after", 0), ("after", 1)]
    assert all(w.label == FLOOR_LABEL and w.duration_s == 1 for w in r.floors)
    assert all(w.metrics["tps"] and w.metrics["tps"] > 0 for w in r.windows)
    for w in r.measured:  # what a transaction cost PostgreSQL: its CPU, statements, buffers
        assert w.metrics["pg_cpu_ms"] > 0 and w.metrics["statements"] >= 1, w.metrics
        assert w.metrics["buffers_hit"] + w.metrics["buffers_read"] > 0, w.metrics


@pytest.mark.postgres
def test_diagnostics_are_archived_and_reported(tiny_run: Path) -> None:
    summary = json.loads((tiny_run / "diagnostics/lookup/b/summary.json").read_text())
    top = summary["statements"]["by_total_time"][0]
    assert "FROM items WHERE id = $1" in top["query"] and top["calls"] > 0
    assert summary["database"]["buffer_hit_ratio"] > 0.5
    assert summary["waits"]["samples"] > 0
    plan = json.loads((tiny_run / "diagnostics/lookup/a/explain-lookup.json").read_text())
    assert "Shared Hit Blocks" in json.dumps(plan) and plan[0]["Plan"]["Node Type"]
    assert (tiny_run / "diagnostics/setup.json").is_file()
    data = report.build(open_run(tiny_run))
    assert any(line.startswith("lookup / a: buffer hit ratio") for line in data["diagnostics"])
    assert data["drift"] and data["drift"][0]["block"] == "lookup"


@pytest.mark.postgres
def test_nothing_left_running(tiny_run: Path, leftovers: Leftovers) -> None:
    assert leftovers() == []


@pytest.mark.postgres
def test_servers_of_another_session_are_not_ours(session_tmp: Path, leftovers: Leftovers,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay beside the tests (its own temporary root) is never taken for a leftover."""
    from perfpages.run.postgres import EmbeddedServer, embedded_binaries, leftover_servers

    other = Path(tempfile.mkdtemp(prefix="perfpages-other-", dir=session_tmp.parent))
    other.chmod(0o711)  # as root, the server user traverses it to its data directory
    server = EmbeddedServer(embedded_binaries())
    try:
        with monkeypatch.context() as m:  # its data directory is made at the first start
            m.setattr(tempfile, "tempdir", str(other))
            server.start({})
        assert server.running() and server.data is not None
        assert server.data.parent == other
        assert leftover_servers(other) == [server._postmaster().pid]  # type: ignore[union-attr]
        assert leftovers() == []
    finally:
        server.destroy()
        shutil.rmtree(other, ignore_errors=True)
    assert leftover_servers(other) == []


@pytest.mark.postgres
def test_interrupted_run_is_partial_then_resumed(tmp_path: Path,
                                                 leftovers: Leftovers) -> None:
    seen: list[Window] = []

    def stop_after_three(w: Window) -> None:
        seen.append(w)
        if len(seen) == 3:
            raise KeyboardInterrupt

    opts = Options(suite="tiny", benchmarks=BENCHMARKS, results=tmp_path, labels=["a"],
                   on_window=stop_after_three)
    with pytest.raises(PerfpagesError) as err:
        run(opts, quiet())
    assert "partial" in str(err.value) and "--resume" in str(err.value)
    run_dir = next(tmp_path.iterdir())
    assert read_manifest(run_dir).status == "partial"
    before = open_run(run_dir).windows
    assert len(before) == 3 and leftovers() == []
    resumed = run(Options(suite=None, benchmarks=BENCHMARKS, results=tmp_path,
                          resume=run_dir.name), quiet())
    assert resumed == run_dir
    r = open_run(run_dir)
    assert r.manifest.status == "complete"
    assert [w.to_json() for w in r.windows[:3]] == [w.to_json() for w in before]
    assert sorted((w.kind, w.round) for w in r.windows) == sorted(
        [("floor", 0)] * 4 + [("warmup", 1), ("warmup", 2), ("measure", 1), ("measure", 2)])
    assert sorted((w.params["position"], w.window) for w in r.floors) == [
        ("after", 0), ("after", 1), ("before", 0), ("before", 1)]
    with pytest.raises(PerfpagesError, match="already complete"):
        run(Options(suite=None, benchmarks=BENCHMARKS, results=tmp_path, resume=run_dir.name))


@pytest.mark.postgres
def test_a_resumed_run_keeps_the_summary_of_a_block_measured_before(tmp_path: Path,
                                                                    leftovers: Leftovers) -> None:
    """A block whose windows an earlier process measured is not summarised again, with the
    empty counters of a process that measured none of it."""
    def stop_at_the_floor_after(w: Window) -> None:  # the block's diagnostics are written
        if w.kind == "floor" and w.params.get("position") == "after":
            raise KeyboardInterrupt

    with pytest.raises(PerfpagesError, match="partial"):
        run(Options(suite="tiny", benchmarks=BENCHMARKS, results=tmp_path, labels=["a"],
                    on_window=stop_at_the_floor_after), quiet())
    run_dir = next(tmp_path.iterdir())
    summary = run_dir / "diagnostics/lookup/a/summary.json"
    first = json.loads(summary.read_text())
    assert first["served"] > 0 and first["statements"]["by_total_time"], first
    run(Options(suite=None, benchmarks=BENCHMARKS, results=tmp_path, resume=run_dir.name),
        quiet())
    assert read_manifest(run_dir).status == "complete" and leftovers() == []
    assert json.loads(summary.read_text()) == first


BROKEN = '''
from pathlib import Path
from perfpages.run.pgbench import Script
from perfpages.run.suite import BlockSpec, DataSet, LabelSpec, Suite

def load(conn, rows, seed):
    conn.execute("CREATE TABLE t (id int)")
    conn.execute("INSERT INTO no_such_table VALUES (1)")

def suite(quick):
    return Suite(name="broken", title="Broken", labels=(LabelSpec("a"),),
                 blocks=(BlockSpec("b", scripts=(Script(Path(__file__)),)),),
                 dataset=DataSet("t", rows=1, load=load), rounds=1, scope="test")
'''


@pytest.mark.postgres
def test_failure_leaves_no_process_and_no_archive(tmp_path: Path, leftovers: Leftovers,
                                                  session_tmp: Path) -> None:
    bench = tmp_path / "benchmarks"
    bench.mkdir()
    (bench / "broken.py").write_text(BROKEN)
    dirs = our_data_dirs(session_tmp)
    with pytest.raises(PerfpagesError) as err:
        run(Options(suite="broken", benchmarks=bench, results=tmp_path / "results"), quiet())
    text = str(err.value)
    assert "\n" not in text and "no_such_table" in text and "failed to load" in text
    assert leftovers() == []
    assert our_data_dirs(session_tmp) <= dirs  # the throwaway data directory is gone too
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


def invoke(*args: str, results: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "invoke", "-r", str(ROOT), "bench.run", *args,
                           "--results", str(results)], capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize(("args", "needle"), [
    (["--suite", "nope"], "no suite 'nope'"),
    (["--suite", "tiny", "--labels", "zz"], "no label 'zz'"),
    (["--suite", "tiny", "--labels", "a", "--dsn", "postgresql://bob:s3cret@127.0.0.1:{port}/app"],
     "cannot connect to postgresql://bob@127.0.0.1"),
])
def test_user_errors_are_one_line(tmp_path: Path, args: list[str], needle: str,
                                  leftovers: Leftovers) -> None:
    args = [a.replace("{port}", str(free_port())) for a in args]
    done = invoke(*args, results=tmp_path)
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    assert needle in lines[0] and "s3cret" not in done.stderr + done.stdout
    assert "Traceback" not in done.stderr
    assert not any(tmp_path.iterdir())  # nothing archived, not even a partial run
    assert leftovers() == []


@pytest.mark.postgres
def test_ctrl_c_from_the_terminal(tmp_path: Path, leftovers: Leftovers) -> None:
    """A real SIGINT to the invoke process: a partial run, no server left; --resume completes."""
    proc = subprocess.Popen([sys.executable, "-m", "invoke", "-r", str(ROOT), "bench.run",
                             "--suite", "tiny", "--labels", "a", "--results", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    lines = 0
    while time.monotonic() < deadline and lines < 2 and proc.poll() is None:
        time.sleep(0.1)
        lines = sum(len(p.read_text().splitlines()) for p in tmp_path.glob("*/results.jsonl"))
    assert lines >= 2, "the run never archived two windows"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "is partial" in err.strip().splitlines()[-1]
    run_dir = next(p for p in tmp_path.iterdir() if p.is_dir())
    assert read_manifest(run_dir).status == "partial"
    assert leftovers() == []
    done = invoke("--suite", "tiny", "--resume", run_dir.name, results=tmp_path)
    assert done.returncode == 0, done.stderr
    assert read_manifest(run_dir).status == "complete"
    shutil.rmtree(run_dir)


FAILING = '''
from pathlib import Path
from perfpages.run.pgbench import Script
from perfpages.run.suite import BlockSpec, DataSet, LabelSpec, Suite

HERE = Path(__file__).parent

def load(conn, rows, seed):
    conn.execute("CREATE TABLE t (id int)")

def suite(quick):
    (HERE / "missing.sql").write_text("SELECT * FROM no_such_table;\\n")
    return Suite(name="failing", title="Failing windows", labels=(LabelSpec({label!r}{pin}),),
                 blocks=(BlockSpec("b", scripts=(Script(HERE / "missing.sql"),)),),
                 dataset=DataSet("t", rows=1, load=load), rounds=1, warmup_s=0, window_s=1,
                 floor_s=1, min_rounds=1, scope="test")
'''


def failing_suite(tmp_path: Path, pin: str = "") -> Path:
    bench = tmp_path / "benchmarks"
    bench.mkdir()
    (bench / "failing.py").write_text(FAILING.format(label="a", pin=pin))
    return bench


@pytest.mark.postgres
def test_a_failed_window_is_archived_not_dropped(tmp_path: Path,
                                                 leftovers: Leftovers) -> None:
    bench = failing_suite(tmp_path)
    run_dir = run(Options(suite="failing", benchmarks=bench, results=tmp_path / "r"), quiet())
    r = open_run(run_dir)
    assert r.manifest.status == "failed"  # its only cell has no successful window
    assert any("1 of 1 windows failed" in note for note in r.notes)
    [window] = r.measured
    assert window.status == "failed" and "no_such_table" in (window.error or "")
    assert all(w.status == "ok" for w in r.floors)
    rows = report.build(r)["tables"][0]["rows"]
    assert any(report.WARN in cell for row in rows for cell in row)
    assert leftovers() == []


@pytest.mark.network
def test_a_version_that_does_not_exist_is_one_line(tmp_path: Path) -> None:
    bench = failing_suite(tmp_path, pin=', package="six==0.0.999"')
    with pytest.raises(PerfpagesError) as err:
        run(Options(suite="failing", benchmarks=bench, results=tmp_path / "r"), quiet())
    assert "\n" not in str(err.value) and "six==0.0.999" in str(err.value)
    assert not (tmp_path / "r").exists()


@pytest.mark.postgres
def test_second_replay_reuses_the_loaded_cluster(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 leftovers: Leftovers) -> None:
    monkeypatch.setenv("PERFPAGES_CACHE", str(tmp_path / "cache"))
    setups = []
    for _ in range(2):  # one round each: the cluster's reuse is the question, not the rounds
        run_dir = run(Options(suite="tiny", benchmarks=BENCHMARKS, results=tmp_path / "r",
                              labels=["a"], rounds=1), quiet())
        setups.append(json.loads((run_dir / "diagnostics/setup.json").read_text()))
        r = open_run(run_dir)
        assert r.manifest.status == "complete" and all(w.status == "ok" for w in r.windows)
    assert [s["cluster_cached"] for s in setups] == [False, True]
    assert len(list((tmp_path / "cache" / "clusters").iterdir())) == 1
    assert leftovers() == []


@pytest.mark.postgres
def test_external_server_by_dsn_never_archives_its_password(tmp_path: Path,
                                                            leftovers: Leftovers) -> None:
    from perfpages.run.postgres import EmbeddedServer, embedded_binaries

    external = EmbeddedServer(embedded_binaries())  # stands in for a server the user runs
    try:
        external.start({})
        with external.target.connect("postgres") as conn:
            conn.execute("CREATE DATABASE extdb")
        dsn = f"postgresql://postgres:s3cret@127.0.0.1:{external.port}/extdb"
        run_dir = run(Options(suite="tiny", benchmarks=BENCHMARKS, results=tmp_path,
                              labels=["a"], dsn=dsn, command=f"invoke bench.run --dsn {dsn}"),
                      quiet())
        r = open_run(run_dir)
        assert r.manifest.status == "complete" and all(w.status == "ok" for w in r.windows)
        assert f"postgresql://postgres@127.0.0.1:{external.port}/extdb" in r.manifest.command
        for path in run_dir.rglob("*"):
            assert not path.is_file() or b"s3cret" not in path.read_bytes(), path
        assert external.running()  # the harness never stops a server it does not own
        with pytest.raises(PerfpagesError, match="need the embedded server"):
            run(Options(suite="tiny", benchmarks=BENCHMARKS, results=tmp_path, dsn=dsn), quiet())
        assert [p.name for p in tmp_path.iterdir()] == [run_dir.name]  # nothing half-made
    finally:
        external.destroy()
    assert leftovers() == []


@pytest.mark.parametrize(("source", "line", "needle"), [
    ("def suite(quick):\n    return 1 +\n", 2, "syntax error"),
    ("from perfpages import Suite\n\ndef suite(quick):\n"
     "    return Suite(name='x', title='t', labels=(), blocks=())\n", 4,
     "TypeError: Suite.__init__() missing 1 required positional argument: 'dataset'"),
    ("import dataclasses, tiny\nfrom perfpages import LabelSpec\n\ndef suite(quick):\n"
     "    labels = (LabelSpec('a'), LabelSpec('a'))\n"
     "    return dataclasses.replace(tiny.suite(quick), labels=labels)\n",
     6, "needs distinct label names"),
    ("def suite(quick):\n    return {}['missing']\n", 2, "KeyError: 'missing'"),
    ("def suite(quick):\n    return 'not a suite'\n", None, "did not return a perfpages.Suite"),
])
def test_a_broken_suite_module_is_one_line_with_its_line(tmp_path: Path, source: str,
                                                         line: int | None, needle: str) -> None:
    shutil.copy(BENCHMARKS / "tiny.py", tmp_path / "tiny.py")
    (tmp_path / "broken.py").write_text(source)
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(PerfpagesError) as caught:
            suite_module.load("broken", tmp_path)
    finally:
        sys.path.remove(str(tmp_path))
    where = f"{tmp_path / 'broken.py'}:{line}: " if line else f"{tmp_path / 'broken.py'}: "
    assert str(caught.value).startswith(where) and needle in str(caught.value)
    assert "\n" not in str(caught.value)


# ---- --ref and --pin: another build for a label without editing the suite -------------------

@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A throwaway git repository of a tiny package: versions 1.0 and 2.0 on main."""
    from test_build import package_repo

    path = tmp_path_factory.mktemp("tinypkg")
    return path, package_repo(path)


@pytest.mark.parametrize(("refs", "pins", "resume", "needle"), [
    ({"zz": "main"}, {}, None, "--ref: this run has no label 'zz' — choose among: a, b"),
    ({"a": "main"}, {}, None, "--ref: label 'a' is not pinned to a git repository"),
    ({}, {"b": "six"}, None, "--pin: b='six' is neither an exact package pin nor a git pin"),
    ({}, {"b": "git+/no/ref"}, None, "--pin: b='git+/no/ref' is not git+REPO@REF"),
    ({"b": "main"}, {"b": "git+/x@main"}, None, "--ref: label 'b' is given both --pin and --ref"),
    ({"a": "main"}, {}, "2026-01-01-tiny", "--ref: a resumed run cannot change its pins"),
])
def test_ref_and_pin_mistakes_are_one_line(tmp_path: Path, refs: dict[str, str],
                                           pins: dict[str, str], resume: str | None,
                                           needle: str) -> None:
    with pytest.raises(PerfpagesError) as err:
        run(Options(suite="tiny", benchmarks=BENCHMARKS, results=tmp_path, refs=refs, pins=pins,
                    resume=resume), quiet())
    assert str(err.value).startswith(needle) and "\n" not in str(err.value)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("values", [["a"], ["=main"], ["a="], ["a=x", "a=y"]])
def test_malformed_assignments_are_one_line(values: list[str]) -> None:
    with pytest.raises(PerfpagesError) as err:
        parse_assignments(values, "--ref")
    assert str(err.value).startswith("--ref: ") and "\n" not in str(err.value)


@pytest.mark.postgres
@pytest.mark.network
def test_pins_replace_the_labels_builds(tmp_path: Path, package: tuple[Path, list[str]],
                                        leftovers: Leftovers) -> None:
    repo, (first, second) = package
    run_dir = run(Options(suite="tiny", benchmarks=BENCHMARKS, results=tmp_path, rounds=1,
                          pins={"a": f"git+{repo}@{first}", "b": f"git+{repo}@main"}), quiet())
    r = open_run(run_dir)
    assert r.manifest.status == "complete" and all(w.status == "ok" for w in r.windows)
    a, b = r.manifest.labels["a"], r.manifest.labels["b"]
    assert (a.pin.commit, a.pin.ref, b.pin.commit, b.pin.ref) == (first, first, second, "main")
    assert a.pin.describe() == f"{repo.name} @ {first}"  # no local path, the SHA once
    assert b.pg_settings == {"work_mem": "8MB"}  # the rest of the label is the suite's
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip() or None
    assert r.manifest.suite_repository is not None
    assert r.manifest.suite_repository["commit"] == head == r.manifest.harness["commit"]
    assert leftovers() == []


GIT_PINNED = '''
import dataclasses, sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import tiny

def suite(quick):
    base = tiny.suite(quick)
    return dataclasses.replace(base, labels=(dataclasses.replace(
        base.labels[0], git={repo!r}, ref="main"),) + base.labels[1:])
'''


@pytest.mark.postgres
@pytest.mark.network
def test_ref_through_the_command_line(tmp_path: Path, package: tuple[Path, list[str]],
                                      leftovers: Leftovers) -> None:
    """A suite repository of its own (not perfpages'), a git-pinned label moved to another
    commit by --ref: run.json names both repositories' commits, apart."""
    repo, (first, _) = package
    suites = tmp_path / "suites"
    suites.mkdir()
    shutil.copy(BENCHMARKS / "tiny.py", suites)
    shutil.copytree(BENCHMARKS / "tiny", suites / "tiny")
    (suites / "pinned.py").write_text(GIT_PINNED.format(repo=str(repo)))
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m",
                  "suites"]):
        subprocess.run(["git", "-C", str(suites), *args], check=True, capture_output=True)
    suite_head = subprocess.run(["git", "-C", str(suites), "rev-parse", "HEAD"], check=True,
                                capture_output=True, text=True).stdout.strip()
    done = invoke("--suite", "pinned", "--suites", str(suites), "--labels", "a", "--rounds", "1",
                  "--seed", "5", "--ref", f"a={first[:12]}", results=tmp_path / "r")
    assert done.returncode == 0, done.stderr
    m = read_manifest(next((tmp_path / "r").iterdir()))
    assert m.status == "complete" and (m.method.rounds, m.method.seed) == (1, 5)
    assert (m.labels["a"].pin.commit, m.labels["a"].pin.ref) == (first, first[:12])
    assert m.labels["a"].pin.describe() == f"{repo.name} @ {first}"
    assert m.suite_repository == {"commit": suite_head, "dirty": False}
    assert m.harness["commit"] != suite_head and f"--ref a={first[:12]}" in m.command
    assert leftovers() == []


@pytest.mark.parametrize(("args", "needle"), [
    (["--ref", "a"], "error: --ref: 'a' is not LABEL=VALUE"),
    (["--pin", "a=six==1.16.0", "--pin", "a=six==1.17.0"],
     "error: --pin: label 'a' is given twice"),
    (["--ref", "zz=main"], "error: --ref: this run has no label 'zz'"),
    (["--rounds", "two"], "error: --rounds: not a whole number: 'two'"),
])
def test_ref_pin_and_number_mistakes_on_the_command_line(tmp_path: Path, args: list[str],
                                                          needle: str) -> None:
    done = invoke("--suite", "tiny", *args, results=tmp_path)
    assert done.returncode == 1 and done.stderr.startswith(needle), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not any(tmp_path.iterdir())


@pytest.mark.postgres
def test_a_floor_cut_short_is_completed_on_resume(tmp_path: Path, leftovers: Leftovers) -> None:
    # The floor is one-second windows: a run interrupted after the first second of its first
    # floor measures only the second it lacks when resumed.
    def stop_after_one(w: Window) -> None:
        raise KeyboardInterrupt

    opts = Options(suite="tiny", benchmarks=BENCHMARKS, results=tmp_path, labels=["a"],
                   on_window=stop_after_one)
    with pytest.raises(PerfpagesError, match="partial"):
        run(opts, quiet())
    run_dir = next(tmp_path.iterdir())
    assert [(w.kind, w.window) for w in open_run(run_dir).windows] == [("floor", 0)]
    run(Options(suite=None, benchmarks=BENCHMARKS, results=tmp_path, resume=run_dir.name),
        quiet())
    r = open_run(run_dir)
    assert r.manifest.status == "complete" and leftovers() == []
    assert [(w.params["position"], w.window) for w in r.floors] == [
        ("before", 0), ("before", 1), ("after", 0), ("after", 1)]

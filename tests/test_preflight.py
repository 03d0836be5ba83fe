"""A quiet machine, checked: the preflight's parsing of the real /proc, a competing process seen
and waited for, the machine's load on each window, and how reports and pages show a busy run."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from perfpages.analysis import report
from perfpages.archive import preflight as rule
from perfpages.archive import vocabulary
from perfpages.archive.reader import open_run
from perfpages.archive.window import Window
from perfpages.archive.writer import ArchiveWriter, utc_now
from perfpages.errors import ArchiveError
from perfpages.run import preflight
from perfpages.site import header
from perfpages.site.page import render
from perfpages.site.runpages import render as run_page
from perfpages.site.store import RunStore
from perfpages.testing import Spec, generate

MACHINE = {"busy_pct": 80.0, "others_pct": 35.0, "steal_pct": 0.2, "load1": 1.3}


def orphan(code: str) -> int:
    """A process outside this test's tree: started by a child that exits at once, so its parent
    is no longer us (as another run's or test suite's processes are not the run's)."""
    starter = ("import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', "
               f"{code!r}], start_new_session=True, stdin=subprocess.DEVNULL, "
               "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); print(p.pid)")
    out = subprocess.run([sys.executable, "-c", starter], capture_output=True, text=True,
                         check=True)
    return int(out.stdout.strip())


@pytest.fixture
def rivals() -> Iterator[tuple[int, int]]:
    """A busy loop, and an idle process that calls itself `postgres` (its kernel name, comm)."""
    busy = orphan("while True: pass")
    idle = orphan("import time\nopen('/proc/self/comm', 'w').write('postgres')\n"
                  "time.sleep(120)")
    try:
        yield busy, idle
    finally:
        for pid in (busy, idle):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_parse_stat_on_the_real_proc() -> None:
    me = preflight.parse_stat(Path("/proc/self/stat").read_text())
    assert (me.pid, me.ppid) == (os.getpid(), os.getppid())
    assert me.name == Path("/proc/self/comm").read_text().strip()
    assert me.ticks >= 0 and me.reaped >= 0 and me.start > 0
    # A name may hold spaces and parentheses: the kernel writes it as it is.
    child = subprocess.Popen([sys.executable, "-c", "import sys, time\nopen('/proc/self/comm', "
                              "'w').write('x) (y z')\nprint(flush=True)\ntime.sleep(30)"],
                             stdout=subprocess.PIPE, text=True)
    try:
        child.stdout.readline()  # type: ignore[union-attr]
        odd = preflight.parse_stat(Path(f"/proc/{child.pid}/stat").read_text())
        assert (odd.pid, odd.ppid, odd.name) == (child.pid, os.getpid(), "x) (y z")
        assert child.pid in preflight.tree(preflight.processes(), os.getpid())
    finally:
        child.kill()
        child.wait()


def test_cpu_and_load_from_the_real_proc() -> None:
    cpu = preflight.Cpu.read()
    assert 0 < cpu.idle < cpu.total and cpu.steal >= 0
    assert 1 <= cpu.cores <= (os.cpu_count() or 1)
    a = preflight.Snapshot.take()
    time.sleep(0.2)
    figures = preflight.figures(a, preflight.Snapshot.take())
    assert figures is not None and set(figures) == {"busy_pct", "own_pct", "others_pct",
                                                    "steal_pct", "load1"}
    assert 0 <= figures["own_pct"] <= figures["busy_pct"] <= 100 * cpu.cores
    assert figures["others_pct"] == pytest.approx(figures["busy_pct"] - figures["own_pct"],
                                                  abs=0.11)


def test_the_wait_limit() -> None:
    assert preflight.wait_limit(None, "full") == preflight.wait_limit(None, "quick") == 60
    assert preflight.wait_limit(None, "test") == 0  # the tests' own tiny runs never wait
    assert preflight.wait_limit(3, "test") == 3 and preflight.wait_limit(0, "full") == 0
    # ... and sample a quarter as long: the record is kept, nobody waits on it
    assert preflight.sample_seconds("full") == preflight.sample_seconds("quick") == 2.0
    assert preflight.sample_seconds("test") == 0.5


def writer_for(tmp_path: Path) -> ArchiveWriter:
    demo = generate(tmp_path / "demo")
    return ArchiveWriter.create(tmp_path / "results", replace(demo.manifest, status="running",
                                                              files={}))


def test_a_competing_process_is_seen_waited_for_and_archived(
        tmp_path: Path, rivals: tuple[int, int]) -> None:
    busy, idle = rivals
    writer = writer_for(tmp_path)
    watch = preflight.Watch()
    notes: list[str] = []
    try:
        record = watch.check("callers", writer, 1, notes.append)
    finally:
        watch.close()
    listed = {p["pid"]: p for p in record["processes"]}
    assert listed[busy]["cpu_pct"] > vocabulary.BUSY_OTHERS_PCT and "why" not in listed[busy]
    assert listed[idle] == {"pid": idle, "name": "postgres", "cpu_pct": listed[idle]["cpu_pct"],
                            "why": "PostgreSQL"}
    assert os.getpid() not in listed  # the run's own processes are never rivals
    assert record["busy"] and any("competing process" in r for r in record["reasons"])
    assert record["checks"] >= 2 and record["waited_s"] >= 1  # it waited, then went on
    assert any("waiting for a quiet machine" in n for n in notes)
    # Archived through the writer (redacted, checksummed), valid against the schema; a second
    # preflight (a later block, or a resumed run's) is appended.
    again = preflight.Watch()
    again.check("one-caller", writer, 0)
    records = rule.read(writer.run_dir)
    assert [r["block"] for r in records] == ["callers", "one-caller"]
    assert records[0]["processes"] == record["processes"]  # names (comm) only, no command line
    writer.abandon()


def test_a_bad_preflight_line_names_the_file_and_key(tmp_path: Path) -> None:
    path = tmp_path / rule.PREFLIGHT_FILE
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"time": utc_now(), "block": "x", "load1": 0, "busy_pct": 0,
                                "others_pct": 0, "steal_pct": 0, "processes": [],
                                "waited_s": 0, "busy": False, "reasons": [],
                                "argv": "psql password=x"}) + "\n")
    with pytest.raises(ArchiveError, match="unknown key") as caught:
        rule.read(tmp_path)
    assert "preflight.jsonl:1" in str(caught.value)


def test_windows_carry_the_machine_while_the_sampler_runs(tmp_path: Path) -> None:
    watch = preflight.Watch()
    watch.start()
    try:
        start = utc_now()
        time.sleep(1.2)
        found = watch.window(start, 1.0)
        assert found is not None and set(found) == {"busy_pct", "others_pct", "steal_pct",
                                                    "load1"}
        assert watch.window("2020-01-01T00:00:00Z", 1.0) is None  # before the sampler ran
    finally:
        watch.close()
    assert preflight.Watch().window(start, 1.0) is None  # no sampler: no figures


def test_the_schema_takes_windows_with_and_without_machine() -> None:
    base = Window("b", "l", 1, {"clients": 1}, "2026-11-01T10:00:00Z", 1.0, throughput=5.0)
    for w in (base, replace(base, machine=MACHINE)):
        assert Window.from_json(w.to_json(), "results.jsonl", 1) == w
    bad = {**base.to_json(), "machine": {**MACHINE, "cmdline": 1}}
    with pytest.raises(ArchiveError, match="unknown key"):
        Window.from_json(bad, "results.jsonl", 1)
    with pytest.raises(ArchiveError):
        Window.from_json({**base.to_json(), "machine": {"others_pct": -1}}, "results.jsonl", 1)


RUN = "2026-11-09-synthetic-busy"


@pytest.fixture(scope="module")
def busy_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("results")
    generate(root, Spec(run_id=RUN, labels={"a": 1.0, "b": 1.1}, machine=MACHINE,
                        preflight="busy"))
    generate(root, Spec(run_id="2026-11-09-synthetic-calm", labels={"a": 1.0, "b": 1.1},
                        machine={**MACHINE, "others_pct": 2.0}, preflight="quiet"))
    return root


def test_report_warns_about_a_busy_machine(busy_results: Path) -> None:
    data = report.build(open_run(busy_results / RUN))
    warned = "\n".join(data["warnings"])
    assert "preflight callers: the machine was busy" in warned
    assert "1 competing process (postgres 4242)" in warned and "waited 60 s" in warned
    assert "callers: the machine was busy in 60 of 60 windows (a 30, b 30" in warned
    assert "other processes up to 35 % of a core" in warned
    assert [r["block"] for r in data["preflight"]] == ["callers", "one-caller"]
    assert {(x["block"], x["label"], x["busy"]) for x in data["machine_load"]} == {
        ("callers", "a", 30), ("callers", "b", 30), ("one-caller", "a", 15),
        ("one-caller", "b", 15)}
    calm = report.build(open_run(busy_results / "2026-11-09-synthetic-calm"))
    assert not any("busy" in w for w in calm["warnings"])
    assert any(n.startswith("preflight callers: quiet (load 0.10") for n in calm["notes"])
    assert "preflight" not in report.to_markdown(calm).split("Note:")[0]  # a note, not a warning


def test_run_page_and_performance_page_show_a_busy_machine(busy_results: Path) -> None:
    text = run_page(open_run(busy_results / RUN), "")
    quiet = text[text.index("### Quiet machine"):]
    assert "- ⚠ callers: the machine was busy" in quiet
    assert "| callers | a | 30 | ⚠ 30 | 35 % | 0.2 % |" in quiet
    page = ("# Busy\n\n{{ figure('throughput', label='a', block='callers', "
            "where={'call': 'page'}) }}\n")
    store = RunStore(busy_results)
    done = render(page, {"runs": {"r": RUN}}, path="p.md", offset=0, store=store)
    assert "busy" not in done.markdown  # the page's own text (its snapshot) says nothing of it
    lines = header.under_title(done.markdown, header.markdown(done.runs)).split("\n")
    assert lines[0] == "# Busy" and lines[2] == '!!! warning "Before the figures"'
    shown = "\n".join(lines)
    # the report's warnings, word for word
    assert "<code>r</code>: preflight callers: the machine was busy" in shown
    assert "<code>r</code>: callers: the machine was busy in 60 of 60 windows" in shown
    calm = render(page, {"runs": {"r": "2026-11-09-synthetic-calm"}}, path="p.md", offset=0,
                  store=store)
    assert not any(i.kind in ("busy", "windows") for i in header.items(calm.runs["r"]))


def test_one_decision_calls_a_window_busy_and_the_run_says_why() -> None:
    """`archive.preflight.busy` is the one decision (the run measures again what it calls busy,
    the analysis counts the same windows); the run's reasons name each figure it found over,
    on every side of each threshold."""
    values = [None, 0.0, vocabulary.BUSY_STEAL_PCT, vocabulary.BUSY_STEAL_PCT + 0.1,
              vocabulary.BUSY_OTHERS_PCT, vocabulary.BUSY_OTHERS_PCT + 0.1, 150.0]
    cases = [{k: v for k, v in (("others_pct", o), ("steal_pct", s)) if v is not None}
             for o in values for s in values]
    assert not rule.busy(None)
    said = [(rule.busy(c), len(preflight.reasons(c)), len(rule.over(c))) for c in cases]
    assert all(busy == bool(n) and n == m for busy, n, m in said)
    assert sum(busy for busy, _, _ in said) == 34  # 2 busy others × 7 steal + 5 quiet × 4 busy

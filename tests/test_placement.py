"""CPU placement (the subject, PostgreSQL and the load pinned to CPU sets, recorded in the
manifest) and the load generator's own CPU beside each cell, flagged when it may set the pace."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from perfpages.analysis import decision, report
from perfpages.archive.reader import open_run, verify
from perfpages.archive.writer import ArchiveWriter
from perfpages.errors import PerfpagesError
from perfpages.run.postgres import EmbeddedServer, embedded_binaries
from perfpages.run.suite import Placement
from perfpages.site import runpages

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "COLUMNS": "200"}
CPUS = sorted(os.sched_getaffinity(0))


def project(tmp_path: Path, placement: str) -> Path:
    """The tiny HTTP suite in a project of its own, its calls block only, with `placement`;
    its subject prints the CPUs it may run on."""
    bench = tmp_path / "bench"
    shutil.copytree(ROOT / "benchmarks" / "tinyhttp", bench / "tinyhttp")
    server = bench / "tinyhttp" / "server.py"
    server.write_text(server.read_text().replace(
        'print("listening", flush=True)',
        'print("listening on cpus", sorted(os.sched_getaffinity(0)), flush=True)'))
    source = (ROOT / "benchmarks" / "tinyhttp.py").read_text()
    source = source.replace("    Suite,\n)", "    Suite,\n)\nfrom perfpages import Placement")
    source = source.replace('scope="test",', f'scope="test", placement={placement},')
    assert placement in source
    (bench / "tinyhttp.py").write_text(source)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.perfpages]\nsuites = "bench"\nresults = "results"\n')
    return tmp_path


def bench_run(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "perfpages", "bench.run", "--suite", "tinyhttp",
                           "--blocks", "calls", "--rounds", "1", "--labels", "fast"],
                          cwd=cwd, capture_output=True, text=True, env=ENV)


def test_a_placement_names_cpu_numbers() -> None:
    assert Placement(subject=(1, 0, 1), load=(0,)).to_json() == {"subject": [0, 1], "load": [0]}
    with pytest.raises(PerfpagesError, match=r"placement\.load: .* is not a set of CPU numbers"):
        Placement(load=(-1,))
    with pytest.raises(PerfpagesError, match="CPU 4096 is not available here"):
        Placement.check({"subject": [4096]})


@pytest.fixture(scope="module")
def placed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One run of the tiny HTTP suite's calls block with the subject and the load placed."""
    tmp_path = tmp_path_factory.mktemp("placed")
    done = bench_run(project(tmp_path, f"Placement(subject=({CPUS[-1]},), load=({CPUS[0]},))"))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return next((tmp_path / "results").iterdir())


@pytest.mark.postgres
def test_the_subject_runs_on_its_cpus_and_the_manifest_says_so(placed: Path) -> None:
    assert verify(placed) == []
    run = open_run(placed)
    assert run.manifest.method.placement == {"subject": [CPUS[-1]], "load": [CPUS[0]]}
    log = (placed / "diagnostics" / "calls" / "fast" / "server.log").read_text()
    assert f"listening on cpus [{CPUS[-1]}]" in log
    assert "CPU placement" in runpages.render(run, "https://example.org/")


@pytest.mark.postgres
def test_a_cpu_this_machine_lacks_is_one_line_and_no_archive(tmp_path: Path) -> None:
    done = bench_run(project(tmp_path, "Placement(load=(4096,))"))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "placement.load: CPU 4096 is not available here" in lines[0]
    results = tmp_path / "results"
    assert not results.exists() or not any(results.iterdir())


def test_the_generator_busy_rule_is_a_share_of_a_core() -> None:
    assert decision.generator_busy(decision.GENERATOR_BUSY_PCT + 0.1)
    assert not decision.generator_busy(decision.GENERATOR_BUSY_PCT)


@pytest.mark.postgres
def test_the_generators_cpu_is_shown_beside_each_cell_and_flagged(placed: Path,
                                                                  tmp_path: Path) -> None:
    original = open_run(placed)
    data = report.build(original)
    cells = {(x["parameters"], x["label"]) for x in data["generator"]}
    assert cells == {("call=item, callers=2", "fast"), ("call=fail, callers=1", "fast")}
    assert not any(x["busy"] for x in data["generator"])  # a tiny server: the generator idles
    # The same windows with the item cell's generator at 95 % of a core: flagged everywhere.
    busy = replace(original.manifest, id=original.manifest.id + "-busy", files={})
    with ArchiveWriter.create(tmp_path / "results", busy) as writer:
        for w in original.windows:
            if w.kind == "measure" and w.params.get("call") == "item":
                w = replace(w, metrics={**w.metrics, "generator_cpu_pct": 95.0})
            writer.append(w)
        writer.finish("complete")
    run = open_run(tmp_path / "results" / busy.id)
    data = report.build(run)
    flagged = [x for x in data["generator"] if x["busy"]]
    assert [x["parameters"] for x in flagged] == ["call=item, callers=2"]
    assert any("the load generator's busiest process used up to 95 % of a core" in line
               for line in data["warnings"])
    page = runpages.render(run, "https://example.org/")
    assert "### The load generator" in page and "⚠ 95 %" in page


@pytest.mark.postgres
def test_postgres_and_every_backend_run_on_their_cpus() -> None:
    server = EmbeddedServer(embedded_binaries())
    server.cpus = (CPUS[-1],)
    try:
        server.start({})
        assert server.proc is not None
        assert os.sched_getaffinity(server.proc.pid) == {CPUS[-1]}
        with server.target.connect() as conn:  # a backend forked after the start inherits it
            backend = conn.execute("SELECT pg_backend_pid()").fetchone()
            assert backend is not None and os.sched_getaffinity(backend[0]) == {CPUS[-1]}
    finally:
        server.destroy()

"""The writer and reader of run directories: round trips, durability, resume, immutability."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from perfpages import load
from perfpages.archive.histogram import Latency
from perfpages.archive.manifest import Block, Label, Manifest, Method, Pin
from perfpages.archive.reader import RESULTS_FILE, open_run, resolve, verify
from perfpages.archive.window import Window
from perfpages.archive.writer import ArchiveWriter, new_run_id
from perfpages.errors import ArchiveError
from perfpages.testing import Spec, generate

FIXTURE = Path(__file__).parent / "fixtures" / "results" / "2026-11-01-synthetic-demo"


def manifest(run_id: str = "2026-11-30-tiny", rounds: int = 1) -> Manifest:
    return Manifest(
        id=run_id, suite="tiny", title="Tiny test run", scope="test", status="running",
        started="2026-11-30T10:00:00Z", command="pytest",
        harness={"version": "0.1.0", "commit": None},
        labels={"a": Label("a", Pin("none")), "b": Label("b", Pin("none"))},
        method=Method(rounds=rounds), machine={"cpu": "x", "cores": 2, "memory_gib": 1.0,
                                               "kernel": "k", "python": "3.11"},
        blocks={"b1": Block("b1")})


def window(label: str, rnd: int, requests: int = 100, **kw: object) -> Window:
    lat = Latency()
    lat.record_ms(1.0, requests)
    fields = {"block": "b1", "label": label, "round": rnd, "params": {"callers": 1},
              "start": "2026-11-30T10:00:00Z", "duration_s": 1.0, "requests": requests,
              "codes": {"200": requests}, "latency": lat}
    fields.update(kw)
    return Window(**fields)  # type: ignore[arg-type]


def test_committed_fixture_is_intact_and_reproducible(tmp_path: Path) -> None:
    # Archived before sealing (format 1): intact, with a note rather than an error.
    problems = verify(FIXTURE)
    assert problems == [] and problems.notes == ["unsealed (archived before sealing)"]
    regenerated = generate(tmp_path).path
    assert (regenerated / RESULTS_FILE).read_bytes() == (FIXTURE / RESULTS_FILE).read_bytes()


def test_round_trip_keeps_every_field(tmp_path: Path) -> None:
    with ArchiveWriter.create(tmp_path, manifest()) as writer:
        w = window("a", 1, metrics={"tps": 12.5}, errors=2, codes={"200": 98, "503": 2})
        writer.append(w)
        writer.append(window("b", 1))
        writer.write_file("diagnostics/b1/statements.json", "[]")
    run = open_run(tmp_path / "2026-11-30-tiny")
    assert run.manifest.status == "complete" and run.manifest.format_version == 2
    assert set(run.manifest.files) == {"results.jsonl", "diagnostics/b1/statements.json"}
    seal = json.loads((run.path / "seal.json").read_text())
    assert set(seal["files"]) == {"run.json", *run.manifest.files}
    assert verify(run.path) == [] and verify(run.path).notes == []
    first = run.windows[0]
    assert (first.label, first.errors, first.codes, first.metrics) == (
        "a", 2, {"200": 98, "503": 2}, {"tps": 12.5})
    assert first.latency is not None and first.latency.count == 100
    assert run.manifest.to_json() == json.loads((run.path / "run.json").read_text())


def test_each_window_is_on_disk_when_append_returns(tmp_path: Path) -> None:
    writer = ArchiveWriter.create(tmp_path, manifest())
    writer.append(window("a", 1))
    lines = (writer.run_dir / RESULTS_FILE).read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["label"] == "a"
    # The run is readable mid-way, as running, and can't pass for complete.
    assert open_run(writer.run_dir).manifest.status == "running"
    writer.finish("partial")


def test_interrupted_run_is_partial_and_resume_completes_it(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt), ArchiveWriter.create(tmp_path, manifest()) as writer:
        writer.append(window("a", 1))
        raise KeyboardInterrupt
    run_dir = tmp_path / "2026-11-30-tiny"
    # A crash tore the window in progress: the partial run is still readable, minus that line.
    with (run_dir / RESULTS_FILE).open("a") as fh:
        fh.write('{"block": "b1", "lab')
    run = open_run(run_dir)
    assert run.manifest.status == "partial" and len(run.windows) == 1 and run.notes
    writer = ArchiveWriter.resume(run_dir)
    assert writer.has(window("a", 1).key) and not writer.has(window("b", 1).key)
    writer.append(window("b", 1))
    done = writer.finish()
    assert done is not None and done.manifest.status == "complete" and len(done.windows) == 2
    assert verify(run_dir) == []


def test_complete_run_cannot_be_resumed_or_overwritten(tmp_path: Path) -> None:
    with ArchiveWriter.create(tmp_path, manifest()) as writer:
        writer.append(window("a", 1))
        writer.append(window("b", 1))
    with pytest.raises(ArchiveError, match="complete and immutable"):
        ArchiveWriter.resume(tmp_path / "2026-11-30-tiny")
    with pytest.raises(ArchiveError, match="already exists"):
        ArchiveWriter.create(tmp_path, manifest())
    assert new_run_id(tmp_path, "tiny", day="2026-11-30") == "2026-11-30-tiny-2"


def test_writer_refuses_duplicates_and_undeclared_labels(tmp_path: Path) -> None:
    writer = ArchiveWriter.create(tmp_path, manifest())
    writer.append(window("a", 1))
    with pytest.raises(ArchiveError, match="duplicate"):
        writer.append(window("a", 1))
    with pytest.raises(ArchiveError, match="undeclared label 'zz'"):
        writer.append(window("zz", 1))
    writer.finish("partial")
    assert len(open_run(writer.run_dir).windows) == 1


def test_writer_refuses_paths_outside_the_run(tmp_path: Path) -> None:
    writer = ArchiveWriter.create(tmp_path, manifest())
    for bad in ("../escape.txt", "run.json"):
        with pytest.raises(ArchiveError, match="outside"):
            writer.write_file(bad, "x")
    writer.finish("partial")


def test_failed_window_is_kept_and_counted(tmp_path: Path) -> None:
    with ArchiveWriter.create(tmp_path, manifest(rounds=1)) as writer:
        writer.append(window("a", 1))
        writer.append(Window(block="b1", label="b", round=1, params={"callers": 1},
                             start="2026-11-30T10:00:01Z", duration_s=0.2, status="failed",
                             error="server exited with code 1", errors=1))
    frame = load(tmp_path / "2026-11-30-tiny")
    failed = frame[(frame.label == "b") & (frame.metric == "failed_windows")]["value"]
    assert failed.tolist() == [1.0]


def test_load_is_tidy_and_merges_histograms_per_round(tmp_path: Path) -> None:
    with ArchiveWriter.create(tmp_path, manifest(rounds=1)) as writer:
        # Two windows of one round: 99 fast requests and 1 slow one in the second window.
        fast, slow = Latency(), Latency()
        fast.record_ms(1.0, 99)
        slow.record_ms(100.0)
        writer.append(window("a", 1, requests=99, latency=fast))
        writer.append(window("a", 1, requests=1, latency=slow, window=1, codes={"500": 1}))
        writer.append(window("b", 1))
    frame = load(tmp_path / "2026-11-30-tiny")
    frame = frame[frame.label == "a"]
    assert list(frame.columns[:8]) == ["run", "kind", "block", "label", "round", "parameters",
                                       "metric", "value"]
    values = frame.set_index("metric")["value"]
    assert values["requests"] == 100 and values["non_2xx"] == 1
    assert values["throughput"] == pytest.approx(50.0)  # 100 requests over 2 s
    # Merged: p50 is the fast value and max the slow one; averaging percentiles would give ~50 ms.
    assert values["p50"] == pytest.approx(1.0, rel=0.01)
    assert values["max"] == pytest.approx(100.0, rel=0.01)
    assert frame["callers"].unique().tolist() == [1]


def test_latency_clamps_and_counts_out_of_range_values() -> None:
    lat = Latency()
    lat.record_us(0)
    lat.record_us(10**13)
    assert lat.count == 2 and lat.clamped == 2
    restored = Latency.decode(lat.encode(), lat.clamped)
    assert restored.count == 2 and restored.clamped == 2


def test_resolve_finds_runs_by_id_part_and_newest(tmp_path: Path) -> None:
    for rid in ("2026-11-01-synthetic-demo", "2026-11-02-synthetic-other"):
        shutil.copytree(FIXTURE, tmp_path / rid)
    assert resolve(tmp_path, None).name == "2026-11-02-synthetic-other"
    assert resolve(tmp_path, "other").name == "2026-11-02-synthetic-other"
    with pytest.raises(ArchiveError, match="ambiguous"):
        resolve(tmp_path, "synthetic")
    with pytest.raises(ArchiveError, match="no run 'nope'"):
        resolve(tmp_path, "nope")


def test_synthetic_spec_controls_labels_and_rounds(tmp_path: Path) -> None:
    run = generate(tmp_path, Spec(run_id="2026-11-03-synthetic-small", labels={"x": 1.0},
                                  rounds=3, floors=False))
    assert list(run.manifest.labels) == ["x"] and run.manifest.scope == "synthetic"
    assert {w.round for w in run.windows} == {1, 2, 3}
    assert replace(run.manifest, status="complete").title.startswith("Synthetic")


@pytest.fixture
def small_disk(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A 1 MiB tmpfs: a real full disk (root only; skipped where mounting is not allowed)."""
    import subprocess

    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_a_full_disk_leaves_the_run_partial_and_resumable(tmp_path: Path,
                                                          small_disk: Path) -> None:
    """The writer keeps room for run.json in its lock file: when the disk fills while windows
    are appended, the run still says `partial` (not `running (writer dead)`), as the guide
    promises, and a later writer can take it over."""
    import errno

    from perfpages.archive.reader import read_manifest, status_text

    demo = generate(tmp_path / "demo", Spec(floors=False))
    writer = ArchiveWriter.create(small_disk, replace(demo.manifest, files={}))
    appended = 0
    with pytest.raises(OSError) as full:
        for r in range(10_000):
            for w in demo.windows:
                writer.append(replace(w, round=w.round + 10 * r))
                appended += 1
    assert full.value.errno == errno.ENOSPC and appended > 0
    writer.abandon()
    run_dir = small_disk / demo.manifest.id
    m = read_manifest(run_dir)
    assert m.status == "partial" and status_text(run_dir, m) == "partial"
    assert not (run_dir / ".lock").exists()

"""Sealed runs: the writer seals run.json with every other file when a run completes; verify
holds a sealed run to its seal, passes runs archived before sealing with a note, and the writer
never completes (or seals) a run the reader would refuse."""

from __future__ import annotations

import hashlib
import json
import math
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from perfpages.archive.histogram import Latency
from perfpages.archive.manifest import Block, Label, Manifest, Method, Pin
from perfpages.archive.reader import open_run, read_manifest, verify
from perfpages.archive.window import Window
from perfpages.archive.writer import ArchiveWriter
from perfpages.cli import console
from perfpages.errors import ArchiveError
from perfpages.testing import Spec, generate

ROOT = Path(__file__).resolve().parent.parent
LEGACY = ROOT / "tests" / "fixtures" / "results" / "2026-11-01-synthetic-demo"
EDITED = r"run\.json: checksum mismatch \(the file changed after the run was sealed\) — restore"


def edit_manifest(run_dir: Path, change: Callable[[dict], None]) -> None:
    data = json.loads((run_dir / "run.json").read_text())
    change(data)
    (run_dir / "run.json").write_text(json.dumps(data, indent=2) + "\n")


def manifest(rounds: int = 1) -> Manifest:
    return Manifest(
        id="2026-11-30-sealed", suite="tiny", title="Tiny test run", scope="test",
        status="running", started="2026-11-30T10:00:00Z", command="pytest",
        harness={"version": "0.1.0", "commit": None},
        labels={"a": Label("a", Pin("none")), "b": Label("b", Pin("none"))},
        method=Method(rounds=rounds), blocks={"b1": Block("b1")},
        machine={"cpu": "x", "cores": 2, "memory_gib": 1.0, "kernel": "k", "python": "3.11"})


def window(label: str, rnd: int = 1, **kw: object) -> Window:
    lat = Latency()
    lat.record_ms(1.0, 10)
    fields = {"block": "b1", "label": label, "round": rnd, "params": {"callers": 1},
              "start": "2026-11-30T10:00:00Z", "duration_s": 1.0, "requests": 10,
              "codes": {"200": 10}, "latency": lat}
    fields.update(kw)
    return Window(**fields)  # type: ignore[arg-type]


def test_a_complete_run_is_sealed_with_run_json_inside(scratch_run: Path) -> None:
    seal = json.loads((scratch_run / "seal.json").read_text())
    run_json = hashlib.sha256((scratch_run / "run.json").read_bytes()).hexdigest()
    manifest = read_manifest(scratch_run)
    assert manifest.format_version == 2 and manifest.status == "complete"
    assert seal == {"format": "perfpages-seal", "algorithm": "sha256",
                    "files": {**manifest.files, "run.json": run_json}}
    problems = verify(scratch_run)
    assert problems == [] and problems.notes == []


@pytest.mark.parametrize(("what", "change"), [
    ("a package pin's artifact", lambda m: m["labels"]["v1.0"]["pin"]["artifacts"].update(
        {"demo_service-v1.0-py3-none-any.whl": "ab" * 32})),
    ("a git pin's commit", lambda m: m["labels"]["v1.1"]["pin"].update(commit="e" * 40)),
    ("the round count, down", lambda m: m["method"].update(rounds=4)),
    ("the round count, up", lambda m: m["method"].update(rounds=6)),
    ("the title", lambda m: m.update(title="A better title")),
])
def test_run_json_edited_after_completion_fails(scratch_run: Path, what: str,
                                                change: Callable[[dict], None]) -> None:
    edit_manifest(scratch_run, change)
    problems = verify(scratch_run)
    assert problems, what
    assert re.search(EDITED, str(problems[0])), problems
    with pytest.raises(ArchiveError, match=EDITED):  # and report, cite, the site refuse it too
        open_run(scratch_run)


def test_runs_archived_before_sealing_verify_with_a_note(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(LEGACY, tmp_path / LEGACY.name)
    assert read_manifest(tmp_path / LEGACY.name).format_version == 1
    code = console.run_command(lambda out: console.verify_runs(tmp_path, None, out),
                               Console(file=sys.stdout))
    out = capsys.readouterr()
    assert code == 0 and out.err == ""
    size = verify(tmp_path / LEGACY.name).size
    assert size is not None and size.files == 2 and not size.compressed
    assert out.out.splitlines() == [f"ok: {LEGACY.name} (complete) · {size.text()}",
                                    f"note: {LEGACY.name}: unsealed (archived before sealing)",
                                    f"1 run verified, 1 unsealed: {LEGACY.name}"]


def test_a_seal_deleted_from_a_sealed_run_is_not_taken_for_legacy(scratch_run: Path) -> None:
    (scratch_run / "seal.json").unlink()
    assert [str(p) for p in verify(scratch_run)] == [
        f"{scratch_run}: seal.json is missing (a complete format-2 run is sealed) — restore it "
        "from git; a seal is never rewritten by hand (when its writer was killed sealing it, "
        f"a .lock is left and `invoke bench.run --resume {scratch_run.name}` seals it)"]


def test_a_resumed_legacy_run_is_sealed_when_it_completes(tmp_path: Path) -> None:
    writer = ArchiveWriter.create(tmp_path, manifest())
    writer.append(window("a"))
    writer.finish("partial")
    run_dir = writer.run_dir
    edit_manifest(run_dir, lambda m: m.update(format_version=1))  # as an older perfpages left it
    writer = ArchiveWriter.resume(run_dir)
    writer.append(window("b"))
    done = writer.finish()
    assert done is not None and done.manifest.format_version == 2
    assert (run_dir / "seal.json").is_file() and verify(run_dir) == []


def test_the_writer_leaves_an_incomplete_run_partial(tmp_path: Path) -> None:
    run_dir = tmp_path / "2026-11-30-sealed"
    lacking = (r"results\.jsonl: label 'b' has no measure window in any block; the run is "
               r"left partial — complete it with `invoke bench\.run --resume 2026-11-30-sealed`")
    with pytest.raises(ArchiveError, match=lacking), \
            ArchiveWriter.create(tmp_path, manifest()) as writer:
        writer.append(window("a"))
    assert read_manifest(run_dir).status == "partial" and not (run_dir / "seal.json").exists()
    writer = ArchiveWriter.resume(run_dir)
    writer.append(window("b"))
    assert writer.finish() is not None and verify(run_dir) == []


def test_the_writer_refuses_what_the_reader_would(tmp_path: Path) -> None:
    writer = ArchiveWriter.create(tmp_path, manifest())
    with pytest.raises(ArchiveError, match="undeclared block 'zz'"):
        writer.append(window("a", block="zz"))
    with pytest.raises(ArchiveError, match=r"latency\.hdr: the histogram holds 10 values for 11 "
                                           r"responses"):
        writer.append(window("a", requests=11, codes={"200": 11}))
    with pytest.raises(ArchiveError, match=r"requests: a number beyond ±2\^53"):
        writer.append(window("a", requests=2**60, codes={}, latency=None))
    # A rate over a zero-length window is not measured: archived as null, never as NaN.
    writer.append(window("a", metrics={"rate": math.nan, "ok": 1.0}))
    writer.append(window("b"))
    done = writer.finish()
    assert done is not None and done.windows[0].metrics == {"rate": None, "ok": 1.0}
    assert "NaN" not in (writer.run_dir / "results.jsonl").read_text()


def test_the_writer_never_seals_a_link(tmp_path: Path) -> None:
    writer = ArchiveWriter.create(tmp_path, manifest())
    writer.append(window("a"))
    writer.append(window("b"))
    (writer.run_dir / "samples" / "passwd").symlink_to("/etc/passwd")
    with pytest.raises(ArchiveError, match=r"samples/passwd: a symbolic link — "):
        writer.finish()
    assert not (writer.run_dir / "seal.json").exists()


def test_a_declared_block_that_never_ran_keeps_a_run_from_completing(tmp_path: Path) -> None:
    run = generate(tmp_path, Spec(run_id="2026-11-03-synthetic-one", floors=False,
                                  blocks={"callers": [{"call": "lookup", "callers": 32}]}))
    problems = verify(run.path)
    assert problems == [] and problems.notes == []  # it declares the block it generated only
    ghost = replace(run.manifest, id="2026-11-03-synthetic-ghost", status="running", files={},
                    blocks={**run.manifest.blocks, "ghost": Block("ghost", title="never ran")})
    writer = ArchiveWriter.create(tmp_path, ghost)
    for window in run.windows:
        writer.append(window)
    with pytest.raises(ArchiveError, match="block 'ghost' is declared but has no measure window; "
                                           "the run is left partial"):
        writer.finish()
    assert read_manifest(tmp_path / ghost.id).status == "partial"


def test_the_command_line_verifies_and_refuses(scratch_run: Path) -> None:
    def invoke(results: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "invoke", "-r", str(ROOT), "bench.verify",
                               "--results", str(results)], capture_output=True, text=True)

    ok = invoke(scratch_run.parent)
    assert ok.returncode == 0, ok.stderr
    assert re.fullmatch(rf"ok: {scratch_run.name} \(complete\) · \d+ files · [\d.]+ KiB\n"
                        r"1 run verified, 0 unsealed\n", ok.stdout)
    edit_manifest(scratch_run, lambda m: m["method"].update(rounds=4))
    edited = invoke(scratch_run.parent)
    assert edited.returncode == 1 and "Traceback" not in edited.stderr
    assert edited.stdout == "1 run verified, 1 with problems, 0 unsealed\n"
    first = edited.stderr.splitlines()[0]
    assert first.startswith(f"error: {scratch_run}/run.json: checksum mismatch (the file changed "
                            "after the run was sealed) — ")
    missing = invoke(Path("/nonexistent"))
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr == ("error: /nonexistent: no such results directory — pass the "
                              "directory that holds the runs with --results\n")

"""The site trusts the seal, not its cache: every build checks each pinned run's seal (also with
run pages off), and a cache entry is used only under the current seal's sha256, with its own
checksum intact, for a run unchanged since its full check. `latest:SUITE` never pins an older
run silently when the newest is corrupt."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perfpages.archive import reader
from perfpages.errors import ArchiveError, PerfpagesError
from perfpages.site.store import RunStore
from sites import DEMO, Failed, build_site

PIN = f"---\nruns:\n  demo: {DEMO}\n---\n"
PAGE = PIN + "# Demo\n\n{{ figure('throughput', label='v1.1', where={'call': 'page'}) }}\n"
FAKE = 777777.0


@pytest.fixture
def own(demo_results: Path, tmp_path: Path) -> Path:
    """A results/ directory holding a private copy of the demo run."""
    shutil.copytree(demo_results / DEMO, tmp_path / "results" / DEMO)
    time.sleep(2 * reader.SETTLE_NS / 1e9)  # copied files settle: a run then is recorded intact
    return tmp_path / "results"


def fake_cells(cache: Path) -> None:
    """Every throughput value of the cached cells set to FAKE, the file still valid JSON."""
    (entry,) = (cache / "cells").glob(f"{DEMO}.*.json")
    saved = json.loads(entry.read_text())
    for cell in saved["data"]["cells"]:
        if cell["metric"] == "throughput":
            cell["values"] = [FAKE] * len(cell["values"])
    entry.write_text(json.dumps(saved))


def edit_seal(run_dir: Path) -> None:
    data = json.loads((run_dir / "seal.json").read_text())
    data["files"]["results.jsonl"] = "0" * 64
    (run_dir / "seal.json").write_text(json.dumps(data))


SEALS = {
    "deleted": (lambda d: (d / "seal.json").unlink(), "seal.json is missing"),
    "garbage": (lambda d: (d / "seal.json").write_text("{garbage"), "seal.json:1: not valid JSON"),
    "wrong": (edit_seal, "results.jsonl: checksum mismatch"),
}


def test_a_warm_build_with_run_pages_off_refuses_a_bad_seal(own: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    build_site(project, {"index.md": PAGE}, own, run_pages=False)  # the cache is warm
    assert list((project / ".cache/perfpages/cells").glob(f"{DEMO}.*.json"))
    good = (own / DEMO / "seal.json").read_bytes()
    for damage, expected in SEALS.values():
        damage(own / DEMO)
        with pytest.raises(Failed) as failed:
            build_site(project, {"index.md": PAGE}, own, run_pages=False)
        assert any(f"runs.demo: run '{DEMO}' is corrupt" in m and expected in m
                   for m in failed.value.messages), failed.value.messages
        (own / DEMO / "seal.json").write_bytes(good)
    build_site(project, {"index.md": PAGE}, own, run_pages=False)  # restored: builds again


def test_an_edited_cache_never_publishes(own: Path, tmp_path: Path) -> None:
    """Through `mkdocs build --strict`: the entry edited by hand is read again from the run."""
    project = tmp_path / "project"
    first, _ = build_site(project, {"index.md": PAGE}, own, run_pages=False)
    true = re.search(r"[\d,.]+ ?/s", (first / "index.html").read_text())
    assert true is not None
    fake_cells(project / ".cache/perfpages")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q"],
                          cwd=project, capture_output=True, text=True,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr
    html = (project / "site" / "index.html").read_text()
    assert "777" not in html and true.group(0) in html
    (entry,) = (project / ".cache/perfpages/cells").glob(f"{DEMO}.*.json")
    assert FAKE not in json.loads(entry.read_text())["data"]["cells"][0]["values"]  # rewritten


def test_a_cache_entry_is_used_only_for_an_unchanged_run(
        own: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    first = RunStore(own, cache).get(DEMO)
    checked: list[Path] = []
    full = reader.open_run
    monkeypatch.setattr(reader, "_INTACT", {})  # a new build: nothing known intact in memory
    monkeypatch.setattr(reader, "open_run", lambda d: checked.append(d) or full(d))
    assert RunStore(own, cache).get(DEMO).cells == first.cells
    assert checked == []  # unchanged since its full check: neither hashed nor inflated
    results = own / DEMO / "results.jsonl"
    results.write_bytes(results.read_bytes())  # the same bytes, written again: checked in full
    assert RunStore(own, cache).get(DEMO).cells == first.cells
    assert checked == [own / DEMO]
    fake_cells(cache)
    assert RunStore(own, cache).get(DEMO).cells == first.cells  # the edited entry: read again
    (own / DEMO / "seal.json").unlink()
    with pytest.raises(ArchiveError, match=r"seal\.json is missing"):
        RunStore(own, cache).get(DEMO)


def test_latest_refuses_when_the_newest_run_of_the_suite_is_corrupt(own: Path) -> None:
    store = RunStore(own)
    place = {"where": "docs/h.md", "line": 2, "key": "runs.h"}
    assert store.latest("synthetic", **place) == DEMO
    (own / "2026-11-10-synthetic2").mkdir()  # another suite's corrupt run: not this one's
    (own / "2026-11-10-synthetic2" / "run.json").write_text("{not json")
    assert store.latest("synthetic", **place) == DEMO
    newer = own / "2026-11-09-synthetic-newer"
    newer.mkdir()
    (newer / "run.json").write_text("{not json")
    with pytest.raises(PerfpagesError, match=r"docs/h\.md:2: runs\.h: run "
                                             r"'2026-11-09-synthetic-newer', which may be the "
                                             r"newest of suite 'synthetic', is corrupt "):
        store.latest("synthetic", **place)
    newer.rename(own / "2026-10-01-synthetic-older")  # older than the newest good run: no doubt
    assert store.latest("synthetic", **place) == DEMO

"""A page claims on instructions per call like any metric: `faster(..., metric="instructions")`
holds when the other label counts clearly fewer (lower is better), and `slower` the other way
(a synthetic run written by the real archive writer, decided by the exact rule)."""

from __future__ import annotations

import json
from pathlib import Path

from perfpages.analysis.metric import INSTRUCTIONS_NOTE, info
from perfpages.archive.manifest import Block, Label, Manifest, Method, Pin
from perfpages.archive.window import Window
from perfpages.archive.writer import ArchiveWriter
from perfpages.site.claims import Conditions
from perfpages.site.pins import Pins
from perfpages.site.store import RunStore
from perfpages.testing import MACHINE, generate
from sites import perfpages

PARAMS = {"call": "item", "calls": 300, "callers": 1}


def write_run(results: Path, counts: dict[str, list[float]]) -> str:
    labels = {name: Label(name, Pin("none", note="generated"), env={"BUILD": name})
              for name in counts}
    rounds = len(next(iter(counts.values())))
    manifest = Manifest(
        id="2026-12-05-instructions", suite="synthetic",
        title="Generated counts (not a measurement)", scope="synthetic", status="running",
        started="2026-12-05T10:00:00Z", command="tests/test_instructions_claims.py",
        harness={"version": "synthetic", "commit": None}, labels=labels,
        method=Method(rounds=rounds, order="shuffle", seed=1, warmup_s=0, window_s=1,
                      min_rounds=5, rule={"test": "wilcoxon", "alpha": 0.01}),
        machine=MACHINE,
        blocks={"ins": Block("ins", title="instructions", metrics=("instructions",))})
    with ArchiveWriter.create(results, manifest) as writer:
        for label, values in counts.items():
            for rnd, value in enumerate(values, start=1):
                writer.append(Window(block="ins", label=label, round=rnd, params=PARAMS,
                                     start="2026-12-05T10:00:00Z", duration_s=3.0,
                                     requests=300, codes={"200": 300},
                                     metrics={"instructions": value}))
    return manifest.id


def test_fewer_instructions_per_call_is_faster(tmp_path: Path) -> None:
    assert info("instructions").higher_is_better is False
    assert info("instructions").unit == "per call"
    # 8 rounds: the fewest whose exact Wilcoxon test can be clear at α = 1 % (2/2⁸ < 0.01)
    base = [237_010.0, 237_004.0, 237_015.0, 237_008.0, 237_001.0, 237_012.0, 237_006.0,
            237_011.0]
    fewer = [v * 0.9 for v in base]  # 10 % fewer in every round
    run_id = write_run(tmp_path, {"a": base, "b": fewer})
    conditions = Conditions(Pins({"r": RunStore(tmp_path).get(run_id)}))
    assert conditions.faster("a", "b", metric="instructions", block="ins").holds
    assert not conditions.slower("a", "b", metric="instructions", block="ins").holds
    assert conditions.slower("b", "a", metric="instructions", block="ins").holds


def test_a_table_of_instructions_says_what_they_cannot_show(tmp_path: Path) -> None:
    """The report and the run page (one reading) put the note beside every instructions table,
    and only there, through the real command line."""
    base = [237_010.0, 237_004.0, 237_015.0, 237_008.0, 237_001.0]
    run_id = write_run(tmp_path, {"a": base, "b": base})
    generate(tmp_path)  # a run of throughput and latency: no such note
    for run, noted in ((run_id, True), ("2026-11-01-synthetic-demo", False)):
        done = perfpages("bench.report", "--run", run, "--format", "json",
                         "--results", str(tmp_path))
        assert done.returncode == 0, done.stderr
        notes = [n for t in json.loads(done.stdout)["tables"] for n in t["notes"]]
        assert (INSTRUCTIONS_NOTE in notes) is noted
        md = perfpages("bench.report", "--run", run, "--format", "md", "--results", str(tmp_path))
        assert ("they are not time" in md.stdout) is noted

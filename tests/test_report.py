"""`bench report` and `bench cite` against golden text from the committed synthetic fixture."""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from perfpages.analysis.cite import cite
from perfpages.analysis.report import build, to_markdown
from perfpages.archive.reader import Run, open_run
from perfpages.archive.window import Window
from perfpages.archive.writer import ArchiveWriter
from perfpages.cli import console
from perfpages.testing import Spec, generate

RESULTS = Path(__file__).parent / "fixtures" / "results"
GOLDEN = Path(__file__).parent / "golden"
RUN = "2026-11-01-synthetic-demo"


def golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("PERFPAGES_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"differs from {path}; PERFPAGES_UPDATE_GOLDEN=1 rewrites it"


def test_markdown_report_matches_golden() -> None:
    golden("report-demo.md", to_markdown(build(open_run(RESULTS / RUN))))


def test_terminal_report_matches_golden() -> None:
    out = io.StringIO()
    term = Console(file=out, width=150, color_system=None, force_terminal=False)
    data = build(open_run(RESULTS / RUN), ("v1.0", "v1.1"))
    console.print_terminal(data, term)
    golden("report-demo-compare.txt", out.getvalue())


def test_cite_matches_golden() -> None:
    golden("cite-demo.md", cite(open_run(RESULTS / RUN), "https://perf.example.org/"))


def test_json_report_is_the_data(capsys: pytest.CaptureFixture[str]) -> None:
    code = console.print_report(RESULTS, RUN, "v1.0,v1.1", "json", None, Console())
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert data["run"] == RUN and [t["title"] for t in data["tables"]] == ["32 callers",
                                                                          "One caller"]
    verdicts = {row[-1] for row in data["changes"]["rows"]}
    assert verdicts <= {"clear gain", "clear loss", "ranges overlap"}
    assert all(row[3] == "v1.1 vs v1.0" for row in data["changes"]["rows"])


def test_min_rounds_withholds_verdicts() -> None:
    data = build(open_run(RESULTS / RUN), min_rounds=6)
    assert {row[-1] for row in data["changes"]["rows"]} == {"too few rounds (5 < 6)"}


@pytest.mark.parametrize(("args", "message"), [
    (("nope", None, "md", None), "no run 'nope'"),
    ((RUN, "v1.0", "md", None), "--compare: --compare takes two labels"),
    ((RUN, "v1.0,v7", "md", None), "no label 'v7' in run"),
    ((RUN, None, "html", None), "--format: unknown format 'html' — use term, md or json"),
    ((RUN, None, "md", "0"), "--min-rounds: not a round count: '0'"),
    ((RUN, None, "md", None, "losses"), "--fail-on: unknown condition 'losses' — use --fail-on "
                                        "loss"),
    ((RUN, None, "md", None, ""), "--fail-on: unknown condition ''"),
])
def test_report_usage_errors_are_one_line(args: tuple, message: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    ref, compare, fmt, rounds, *fail_on = args
    code = console.run_command(lambda out: console.print_report(
        RESULTS, ref, compare, fmt, rounds, out, fail_on=fail_on[0] if fail_on else None))
    err = capsys.readouterr().err
    assert code == 1 and len(err.splitlines()) == 1 and message in err


def test_list_shows_every_run(capsys: pytest.CaptureFixture[str]) -> None:
    code = console.list_runs(RESULTS, Console(file=sys.stdout, width=200))
    out = capsys.readouterr().out
    assert code == 0
    assert RUN in out and "complete" in out and "v1.1 + cache" in out


def test_compare_across_runs_checks_comparability(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    import perfpages.testing as synthetic

    shutil.copytree(RESULTS / RUN, tmp_path / RUN)
    monkeypatch.setattr(synthetic, "MACHINE", {**synthetic.MACHINE, "cores": 20})
    synthetic.generate(tmp_path, synthetic.Spec(run_id="2026-11-02-synthetic-bigbox", seed=9))
    compare = "demo:v1.1,bigbox:v1.1"
    code = console.run_command(
        lambda out: console.print_report(tmp_path, None, compare, "json", None, out))
    err = capsys.readouterr().err
    assert code == 1 and "runs are not comparable" in err and "machine.cores 2 ≠ 20" in err
    code = console.print_report(tmp_path, None, compare, "json", None, Console(), True)
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert data["labels"] == [f"{RUN}:v1.1", "2026-11-02-synthetic-bigbox:v1.1"]
    assert data["changes"]["rows"] and any("machine.cores" in n for n in data["notes"])
    # Both runs, both machines, both floors; the rounds were never interleaved, and said so.
    other = "2026-11-02-synthetic-bigbox"
    assert [(r["run"], r["machine"].split(", ")[1]) for r in data["runs"]] == [
        (RUN, "2 cores"), (other, "20 cores")]
    assert all(r["floors"] for r in data["runs"])
    assert {d["run"] for d in data["drift"]} == {RUN, other}
    assert "never interleaved" in data["method"] and "3 interleaved rounds" not in data["method"]
    assert sum(w.startswith("not interleaved:") for w in data["warnings"]) == 1
    assert console.print_report(tmp_path, None, compare, "md", None, Console(), True) == 0
    md = capsys.readouterr().out
    assert f"- {RUN}: " in md and f"- {other}: " in md and "20 cores" in md
    assert f"- {RUN} / callers: tps floor" in md and f"- {other} / callers: tps floor" in md


def test_labels_of_one_run_named_as_run_and_label_stay_interleaved(
        capsys: pytest.CaptureFixture[str]) -> None:
    """`--compare RUN:a,RUN:b` names two labels of one run: their rounds were interleaved, and
    the report says nothing else."""
    code = console.print_report(RESULTS, None, f"{RUN}:v1.0,{RUN}:v1.1", "json", None, Console())
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert "interleaved rounds" in data["method"] and "never" not in data["method"]
    assert not any(w.startswith("not interleaved") for w in data["warnings"])


@pytest.mark.parametrize(("speed", "flagged"), [(1.0, False), (1.3, True)])
def test_an_aa_pair_reports_the_noise_floor(tmp_path: Path, speed: float, flagged: bool) -> None:
    """Two labels with the same build are an A/A pair: the report gives what they measured as
    the noise floor, and flags it when identical builds differ clearly."""
    steady = generate(tmp_path, Spec(run_id="2026-11-08-synthetic-aa",
                                     labels={"a": 1.0, "b": speed}, rounds=5, floors=False))
    labels = steady.manifest.labels
    same = {"a": labels["a"], "b": replace(labels["b"], pin=labels["a"].pin, description="A/A")}
    with ArchiveWriter.create(tmp_path / "aa", replace(steady.manifest, labels=same,
                                                       files={})) as writer:
        for window in steady.windows:
            writer.append(window)
        writer.finish("complete")
    notes = build(open_run(tmp_path / "aa" / steady.manifest.id))["notes"]
    floor = [n for n in notes if n.startswith("A/A (same build)")]
    assert floor and all("b vs a" in n and "the noise floor" in n for n in floor)
    assert any("identical builds differ clearly" in n for n in floor) == flagged
    # The demo's labels are distinct builds: no A/A lines there.
    assert not any("A/A" in n for n in build(open_run(RESULTS / RUN))["notes"])


def rewrite(run: Run, results: Path, window: Callable[[Window], Window] = lambda w: w,
            **manifest: object) -> Run:
    """A copy of `run` under `results` with its manifest and windows edited, written by the
    real writer (so it is a valid, complete archive)."""
    changed = replace(run.manifest, files={}, **manifest)  # type: ignore[arg-type]
    with ArchiveWriter.create(results, changed) as writer:
        for w in run.windows:
            writer.append(window(w))
        writer.finish("complete")
    return open_run(results / run.manifest.id)


def troubled(w: Window) -> Window:
    """The machine slows down during `callers`; v1.1 gets 5xx on one call and loses windows."""
    if w.kind == "floor" and w.block == "callers" and w.params.get("position") == "after":
        return replace(w, metrics={"tps": 20_000.0})
    if w.label == "v1.1" and w.params.get("call") == "page" and w.requests:
        return replace(w, codes={"200": w.requests - 4, "503": 4})
    if w.label == "v1.1" and w.block == "one-caller" and w.round == 2:
        return replace(w, status="failed", error="connection refused", requests=None, codes={},
                       latency=None)
    return w


def test_warnings_are_data_and_end_the_report(tmp_path: Path) -> None:
    demo = open_run(RESULTS / RUN)
    run = rewrite(demo, tmp_path, troubled, scope="quick",
                  method=replace(demo.manifest.method, min_rounds=6))
    data = build(run)
    warned = data["warnings"]
    assert warned[0] == "quick run: the suite's reduced sizes, not its full measurement"
    assert "callers / v1.1: 60 non-2xx responses in the rounds of call=page, callers=32" in warned
    assert any(w.startswith("one-caller / v1.1: 3 failed windows") for w in warned)
    assert "callers: v1.1 vs v1.0: 6 of 6 changes have too few rounds for a verdict (5 < 6)" \
        in warned
    assert any(w.startswith("callers: the tps floor drifted −50 %") and "±10 % threshold" in w
               for w in warned)
    markdown = to_markdown(data)
    assert all(f"- {w}" in markdown for w in warned)
    out = io.StringIO()
    console.print_terminal(data, Console(file=out, width=300, color_system=None))
    printed = out.getvalue().split("⚠ Warnings")[1].splitlines()[1:]
    assert printed == [f"- {w}" for w in warned]


def test_cite_carries_every_warning_the_report_prints(tmp_path: Path) -> None:
    demo = open_run(RESULTS / RUN)
    run = rewrite(demo, tmp_path, troubled, scope="test",
                  method=replace(demo.manifest.method, min_rounds=6))
    out = io.StringIO()
    console.print_terminal(build(run), Console(file=out, width=300, color_system=None))
    printed = out.getvalue().split("⚠ Warnings")[1].splitlines()[1:]
    text = cite(run, "")
    assert len(printed) >= 5 and all(line in text.splitlines() for line in printed)
    assert "test run: a tiny run made by tests, not a measurement" in text
    # The warnings come before the numbers they qualify; the rest of the block is unchanged.
    assert text.index("⚠ **Warnings**") < text.index("median (min–max) of the rounds")
    assert text.endswith(f"Verify: `invoke bench.verify --run {RUN}`\n")


def test_saturation_and_drift_of_an_archived_run_reach_the_cite_block() -> None:
    run = open_run(Path(__file__).parent.parent / "results" / "2026-11-30-sky-quick")
    text = cite(run, "")
    assert "- quick run: the suite's reduced sizes" in text
    assert "- mix: the tps floor drifted" in text
    assert "- mix / pg18: saturated from 8 to 16 clients" in text


def test_cite_without_a_site_url_has_no_link(capsys: pytest.CaptureFixture[str]) -> None:
    first = cite(open_run(RESULTS / RUN), "").splitlines()[0]
    assert first == (f"**Synthetic demo run (generated values, not a measurement)** — perfpages "
                     f"run `{RUN}`")
    assert console.print_cite(RESULTS, RUN, "") == 0
    printed = capsys.readouterr().out
    assert "](" not in printed and "http" not in printed.split("- pins:")[0]
    assert console.print_cite(RESULTS, RUN, "https://perf.example.org/sub/") == 0
    assert f"](https://perf.example.org/sub/runs/{RUN}/)" in capsys.readouterr().out


def slower(results: Path, factor: float) -> Run:
    """A synthetic run whose second label runs at `factor` times the speed of the first."""
    return generate(results, Spec(run_id="2026-11-09-synthetic-slower",
                                  labels={"base": 1.0, "change": factor}))


def test_fail_on_loss_exits_1_with_a_line_per_clear_loss(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = slower(tmp_path, 0.8)
    data = build(run)
    losses = [row for row in data["changes"]["rows"] if row[-1] == "clear loss"]
    assert losses and len(data["losses"]) == len(losses)
    # Without the flag a loss is only reported.
    assert console.print_report(tmp_path, None, None, "md", None, Console()) == 0
    assert capsys.readouterr().err == ""
    code = console.print_report(tmp_path, None, None, "json", None, Console(), fail_on="loss")
    captured = capsys.readouterr()
    assert code == 1 and json.loads(captured.out)["losses"] == data["losses"]
    lines = captured.err.splitlines()
    assert len(lines) == len(losses)
    assert all(line.startswith("fail: clear loss: ") for line in lines)
    block, params, metric, _, base, other, change, _ = losses[0]
    assert lines[0] == (f"fail: clear loss: {block} {params} {metric} base→change {change} "
                        f"({base} → {other})")


def test_fail_on_loss_passes_without_a_clear_loss(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    slower(tmp_path, 1.25)  # faster: only gains
    code = console.print_report(tmp_path, None, None, "term", None, Console(), fail_on="loss")
    captured = capsys.readouterr()
    assert code == 0 and captured.err == "" and "clear gain" in captured.out
    # A loss too small to be clear (ranges overlap) does not fail either.
    noisy = generate(tmp_path / "noisy", Spec(run_id="2026-11-10-synthetic-noisy", noise=0.2,
                                               labels={"base": 1.0, "change": 0.97}))
    assert not build(noisy)["losses"]
    assert console.print_report(tmp_path / "noisy", None, None, "md", None, Console(),
                                fail_on="loss") == 0

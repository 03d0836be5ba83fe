"""What the commands print in a narrow terminal or a pipe (rich assumes 80 columns there):
nothing that identifies a row — block, parameters, metric, label, run id — is ever cut."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from rich.cells import cell_len
from rich.console import Console

from perfpages.analysis.report import build
from perfpages.archive.reader import open_run
from perfpages.cli import console
from perfpages.testing import Spec, generate

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"  # archived runs: read, never written
GATE = "2026-11-30-queryapigate"  # lookup-plain and lookup-governed differ only past 12 chars
DEMO = Path(__file__).parent / "fixtures" / "results" / "2026-11-01-synthetic-demo"
TABLE_LINE = tuple("┏┃┡│├└")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The real command line, piped: no COLUMNS, so rich lays tables out for 80 columns."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return subprocess.run([sys.executable, "-m", "invoke", "-r", str(ROOT), *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, check=False)


def identifying_words(data: dict[str, Any]) -> Counter[str]:
    """Every word of every identifying cell (parameters, metric; block and label pair in the
    changes), counted once per row that holds it."""
    words: Counter[str] = Counter()
    for table in data["tables"]:
        for row in table["rows"]:
            words.update(" ".join(row[:2]).split())
    for row in data["changes"]["rows"]:
        words.update(" ".join(row[:4]).split())
    return words


def assert_uncut(text: str, data: dict[str, Any], width: int) -> None:
    assert "…" not in text
    assert max(cell_len(line) for line in text.splitlines() if line.startswith(TABLE_LINE)) \
        <= width
    for word, rows in identifying_words(data).items():
        assert text.count(word) >= rows, f"{word!r} is cut or missing"


def render(data: dict[str, Any], width: int) -> str:
    out = io.StringIO()
    console.print_terminal(data, Console(file=out, width=width, color_system=None,
                                         soft_wrap=True))
    return out.getvalue()


def test_parameters_stay_whole_at_80_columns() -> None:
    data = build(open_run(RESULTS / GATE))
    text = render(data, 80)
    assert_uncut(text, data, 80)
    # The two calls read apart, in the block tables and in the changes.
    assert "call=lookup-plain," in text and "call=lookup-governed," in text
    assert "call=lookup-…" not in text


@pytest.mark.parametrize("width", [40, 60, 100, 150])
def test_nothing_is_cut_at_any_width(width: int) -> None:
    data = build(open_run(RESULTS / GATE))
    text = render(data, width)
    assert "…" not in text
    assert max(cell_len(line) for line in text.splitlines() if line.startswith(TABLE_LINE)) \
        <= width
    if width >= 60:  # narrower, a word may fold across lines, but is still all there
        assert_uncut(text, data, width)


def test_a_label_longer_than_its_share_wraps_whole(tmp_path: Path) -> None:
    run = generate(tmp_path, Spec(run_id="2026-11-11-synthetic-long-labels", labels={
        "0.42.0": 1.0, "0.43.0+cache": 1.1, "0.43.0+cache+governor": 1.2}))
    data = build(run)
    text = render(data, 80)
    assert_uncut(text, data, 80)
    assert "0.43.0+cache+governor" in text


def test_list_keeps_every_label_at_80_columns(capsys: pytest.CaptureFixture[str]) -> None:
    out = io.StringIO()
    assert console.list_runs(RESULTS, Console(file=out, width=80, color_system=None)) == 0
    text = out.getvalue()
    assert "…" not in text and "0.43.0+cache" in text and GATE in text
    assert max(cell_len(line) for line in text.splitlines()) <= 80


def test_report_through_a_pipe_keeps_parameters_whole() -> None:
    proc = cli("bench.report", "--run", GATE)
    assert proc.returncode == 0, proc.stderr
    assert_uncut(proc.stdout, build(open_run(RESULTS / GATE)), 80)
    assert "call=lookup-plain," in proc.stdout and "call=lookup-governed," in proc.stdout


def test_list_through_a_pipe_keeps_labels_whole() -> None:
    proc = cli("bench.list")
    assert proc.returncode == 0, proc.stderr
    assert "…" not in proc.stdout and "0.43.0+cache" in proc.stdout
    # a run a line, no word broken: the id, date, suite, scope and status whole, in order
    lines = [line.split() for line in proc.stdout.splitlines()[1:] if line.strip()
             and not line.strip().startswith("replay of")]
    ids = sorted(p.name for p in RESULTS.iterdir() if (p / "run.json").is_file())
    assert sorted(fields[0] for fields in lines) == ids
    for fields in lines:
        assert fields[0].startswith(fields[1]) and len(fields[1]) == 10
        assert fields[4] in ("complete", "partial", "failed", "running"), fields


def test_demo_changes_at_80_columns_keep_their_rows() -> None:
    data = build(open_run(DEMO), ("v1.0", "v1.1"))
    text = render(data, 80)
    assert_uncut(text, data, 80)
    table = text.split("\nChanges")[1].split("\n- ")[0]
    assert table.count("│ v1.1 vs v1.0 ") == len(data["changes"]["rows"])


def test_fail_on_loss_through_the_command_line(tmp_path: Path) -> None:
    generate(tmp_path, Spec(run_id="2026-11-09-synthetic-slower",
                            labels={"base": 1.0, "change": 0.8}))
    proc = cli("bench.report", "--results", str(tmp_path), "--fail-on", "loss")
    losses = build(open_run(tmp_path / "2026-11-09-synthetic-slower"))["losses"]
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert losses and len(lines) == len(losses)
    assert all(line.startswith("fail: clear loss: ") and "base→change" in line for line in lines)
    assert "Traceback" not in proc.stderr and "Changes" in proc.stdout
    assert any(line.startswith("fail: clear loss: callers call=lookup, callers=32 throughput "
                               "(/s) base→change −") for line in lines)
    bad = cli("bench.report", "--results", str(tmp_path), "--fail-on", "regression")
    assert bad.returncode == 1 and bad.stderr.splitlines() == [
        "error: --fail-on: unknown condition 'regression' — use --fail-on loss (exit 1 when "
        "any change is a clear loss)"]


def test_an_a_a_pair_apart_is_noise_not_a_loss(tmp_path: Path) -> None:
    """Identical builds that differ clearly are flagged as a noisy machine; --fail-on loss
    fails only on a loss between different builds."""
    generate(tmp_path, Spec(run_id="2026-11-09-synthetic-twins", labels={"base": 1.0,
                            "again": 0.8}, same={"again": "base"}))
    data = build(open_run(tmp_path / "2026-11-09-synthetic-twins"))
    assert any(row[-1] == "clear loss" for row in data["changes"]["rows"])  # shown as measured
    assert data["losses"] == []
    assert any("identical builds" in w or "A/A" in w for w in data["warnings"])
    proc = cli("bench.report", "--results", str(tmp_path), "--fail-on", "loss")
    assert proc.returncode == 0, proc.stderr


def test_cite_through_the_command_line_links_only_with_a_site_url() -> None:
    linked = cli("bench.cite", "sky-quick")  # mkdocs.yml has a site_url
    assert linked.returncode == 0, linked.stderr
    assert "/runs/2026-11-30-sky-quick/)" in linked.stdout.splitlines()[0]
    assert "- quick run: the suite's reduced sizes, not its full measurement" in linked.stdout
    bare = cli("bench.cite", "sky-quick", "--site-url", "")
    assert bare.returncode == 0, bare.stderr
    assert bare.stdout.splitlines()[0].endswith("— perfpages run `2026-11-30-sky-quick`")


def test_commands_are_named_as_the_user_called_them() -> None:
    """Run as `perfpages …`, what a command prints names `perfpages …` commands; run as
    `invoke …`, `invoke …` ones."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}

    def perfpages(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "perfpages", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, check=False)

    cited = perfpages("bench.cite", "--run", "sky-quick")
    assert cited.returncode == 0, cited.stderr
    assert "Verify: `perfpages bench.verify --run 2026-11-30-sky-quick`" in cited.stdout
    assert "invoke bench." not in cited.stdout
    assert "Verify: `invoke bench.verify" in cli("bench.cite", "--run", "sky-quick").stdout
    missing = perfpages("bench.report", "--run", "no-such-run")
    assert missing.returncode == 1 and "`perfpages bench.list`" in missing.stderr, missing.stderr
    assert "`invoke bench.list`" in cli("bench.report", "--run", "no-such-run").stderr


def test_fail_on_loss_with_a_minimum_effect(tmp_path: Path) -> None:
    """--min-effect PCT: a clear loss smaller than PCT is noted and does not fail; a larger one
    fails as before; a bad value, or one without --fail-on loss, is one line."""
    generate(tmp_path, Spec(run_id="2026-11-09-synthetic-slower",
                            labels={"base": 1.0, "change": 0.8}))
    losses = build(open_run(tmp_path / "2026-11-09-synthetic-slower"))["losses"]
    sizes = sorted(abs(x["percent"]) for x in losses)
    assert sizes and sizes[-1] < 50
    args = ["bench.report", "--results", str(tmp_path), "--fail-on", "loss", "--min-effect"]
    passed = cli(*args, "50")
    assert passed.returncode == 0, passed.stderr
    lines = passed.stderr.splitlines()
    assert len(lines) == len(losses) and all(
        line.startswith("note: clear loss: ") and line.endswith(
            ", below --min-effect 50 %: not failing") for line in lines)
    failed = cli(*args, "5%")
    assert failed.returncode == 1
    assert sum(line.startswith("fail: clear loss: ") for line in failed.stderr.splitlines()) \
        == sum(size >= 5 for size in sizes) > 0
    for value, says in (("1e300", "--min-effect 1e300 is not a percentage from 0 to 1000"),
                        ("nan", "--min-effect nan is not a percentage"),
                        ("-1", "--min-effect -1 is not a percentage")):
        bad = cli(*args, value)
        assert bad.returncode == 1 and len(bad.stderr.splitlines()) == 1
        assert bad.stderr.startswith(f"error: --min-effect: {says}") and bad.stdout == ""
    alone = cli("bench.report", "--results", str(tmp_path), "--min-effect", "5")
    assert alone.returncode == 1 and alone.stderr.startswith(
        "error: --min-effect: --min-effect sets how large a clear loss must be to fail")

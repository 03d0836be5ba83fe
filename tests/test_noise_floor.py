"""A/A pairs: a suite declares a build twice (`LabelSpec.again`), the run measures both, and the
report, the run page, `noise_floor()` and `quiet()` show how far identical builds drifted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfpages import LabelSpec
from perfpages.analysis import decision, noise, report
from perfpages.analysis.decision import Cell, Change
from perfpages.archive import preflight
from perfpages.archive.reader import open_run
from perfpages.errors import AnalysisError, PerfpagesError
from perfpages.site.claims import Conditions
from perfpages.site.macros import Macros
from perfpages.site.pins import Pins
from perfpages.site.runpages import render as run_page
from perfpages.site.store import RunStore
from perfpages.testing import Spec, generate

ROOT = Path(__file__).resolve().parent.parent
STEADY = "2026-11-08-synthetic-aa"
SHIFTED = "2026-11-08-synthetic-aa-shifted"


def test_again_is_the_same_build_under_another_name() -> None:
    base = LabelSpec("0.42", package="demo==0.42", env={"X": "1"}, pg_settings={"jit": "off"},
                     description="the release")
    twin = base.again("0.42-again")
    assert (twin.name, twin.package, twin.env, twin.pg_settings) == (
        "0.42-again", base.package, base.env, base.pg_settings)
    assert "again" in twin.description and base.again("b", description="A/A").description == "A/A"
    with pytest.raises(PerfpagesError, match="bad label name"):
        base.again("no spaces")


def test_the_rule_on_raw_values() -> None:
    a, b = Cell((100.0, 101.0, 99.0, 100.5, 99.5)), Cell((100.2, 102.0, 98.5, 100.0, 101.0))
    assert decision.spread(a, b) == 102 / 100.1 - 1  # the farthest round from both's median
    assert decision.steady(a, b) and not decision.steady(a, Cell((90.0, 110.0, 100.0)))
    c = Change("throughput", a, b)
    assert decision.quiet(c, 5) and not decision.quiet(c, 0.1)
    apart = Change("throughput", a, Cell((108.0, 109.0, 110.0, 111.0, 112.0)))
    assert apart.clear and not decision.quiet(apart, 50)  # clear: never quiet, however small


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("results")
    labels = {"a": 1.0, "a-again": 1.0, "b": 1.1}
    generate(root, Spec(run_id=STEADY, labels=labels, same={"a-again": "a"}))
    generate(root, Spec(run_id=SHIFTED, labels={**labels, "a-again": 1.3},
                        same={"a-again": "a"}))
    return root


def test_pairs_are_found_by_build_not_by_name(results: Path) -> None:
    run = open_run(results / STEADY)
    assert noise.same_builds(run.manifest) == [("a", "a-again")]
    assert run.manifest.labels["a-again"].description == "a again"


def test_report_gives_the_noise_floor(results: Path) -> None:
    data = report.build(open_run(results / STEADY))
    rows = {(r["block"], r["metric"]): r for r in data["noise_floor"]}
    assert set(rows) == {("callers", "throughput"), ("callers", "p50"), ("callers", "p99"),
                         ("one-caller", "p50"), ("one-caller", "p99")}
    assert all(r["pair"] == "a-again vs a" and r["clear"] == 0 for r in rows.values())
    assert rows["callers", "throughput"]["cells"] == 2
    assert rows["callers", "throughput"]["spread_percent"] < 5
    notes = [n for n in data["notes"] if n.startswith("A/A (same build)")]
    assert "A/A (same build) callers: a-again vs a, throughput: " in notes[0]
    assert "(0 of 2 clear); rounds within ±" in notes[0] and notes[0].endswith("the noise floor")
    assert not any("A/A" in w for w in data["warnings"])
    shifted = report.build(open_run(results / SHIFTED))
    assert any("identical builds differ clearly" in w for w in shifted["warnings"])


def test_noise_floor_macro(results: Path) -> None:
    store = RunStore(results)
    macros = Macros(Pins({"r": store.get(STEADY)}))
    lines = macros.noise_floor().strip().split("\n")
    assert lines[0] == "| block | metric | A/A pair | changes | clear | largest spread |"
    assert lines[2].startswith("| 32 callers | throughput | a-again vs a | ")
    assert lines[2].endswith(" | 0 of 2 | " + lines[2].rsplit(" | ", 1)[1])
    assert len(lines) == 2 + 5
    one = macros.noise_floor(block="one-caller", metric="p50", digits=2).strip().split("\n")
    assert len(one) == 3 and one[2].startswith("| One caller | p50 | a-again vs a |")
    spread = one[2].rsplit(" | ", 1)[1].rstrip(" |")
    assert spread.startswith("±") and len(spread.split(".")[1]) == len("00 %")
    shifted = Macros(Pins({"r": store.get(SHIFTED)})).noise_floor(metric="throughput")
    assert "| ⚠ 2 of 2 |" in shifted
    both = Macros(Pins({"s": store.get(STEADY), "t": store.get(SHIFTED)}))
    assert both.noise_floor(run=["s", "t"]).strip().startswith("| run | block |")

def test_a_run_without_an_aa_pair(tmp_path: Path) -> None:
    demo = generate(tmp_path)
    assert noise.same_builds(demo.manifest) == []
    pins = Pins({"d": RunStore(tmp_path).get(demo.id)})
    with pytest.raises(AnalysisError, match="no A/A pair") as caught:
        Macros(pins).noise_floor()
    assert "LabelSpec.again" in str(caught.value)
    with pytest.raises(AnalysisError, match="no A/A pair"):
        Conditions(pins).quiet()
    page = run_page(demo, "")
    assert "Noise floor" not in page and "Quiet machine" not in page
    assert report.build(demo)["noise_floor"] == []


def test_quiet_claim(results: Path) -> None:
    store = RunStore(results)
    steady = Conditions(Pins({"r": store.get(STEADY)}))
    held = steady.quiet(within=5, metric="throughput")
    assert held.holds and "less than 5 %" in held.expected and "a-again vs a" in held.data
    assert not steady.quiet(within=0.01, metric="throughput").holds
    shifted = Conditions(Pins({"r": store.get(SHIFTED)})).quiet(metric="throughput")
    assert not shifted.holds and "(2 of 2 clear)" in shifted.data


def test_run_page_has_a_noise_floor_section(results: Path) -> None:
    text = run_page(open_run(results / SHIFTED), "")
    section = text[text.index("### Noise floor"):]
    assert "| callers | throughput | a-again vs a |" in section and "| ⚠ 2 of 2 |" in section


TINY_AA = '''
from pathlib import Path

from perfpages import BlockSpec, DataSet, LabelSpec, Script, Suite

LOOKUP = Path({lookup!r})


def load_items(conn, rows: int, seed: int) -> None:
    conn.execute("DROP TABLE IF EXISTS items")
    conn.execute("CREATE TABLE items (id integer PRIMARY KEY, v integer NOT NULL)")
    conn.execute("INSERT INTO items SELECT i, (i * 7919 + %s) %% 1000 FROM "
                 "generate_series(1, %s) AS i", (seed, rows))


def suite(quick: bool) -> Suite:
    a = LabelSpec("a", description="stock settings")
    return Suite(
        name="tinyaa", title="Tiny A/A suite (test run)",
        labels=(a, a.again("a-again"), LabelSpec("b", pg_settings={{"work_mem": "8MB"}})),
        blocks=(BlockSpec("lookup", scripts=(Script(LOOKUP),), clients=(1,),
                          defines={{"rows": "1000"}}),),
        dataset=DataSet("items", rows=1000, load=load_items, seed=7),
        rounds=2, warmup_s=1, window_s=1, floor_s=1, min_rounds=2, scope="test",
    )
'''


@pytest.mark.postgres
def test_a_suite_with_an_aa_pair_runs_and_reports_its_noise_floor(tmp_path: Path) -> None:
    suites, results = tmp_path / "suites", tmp_path / "results"
    suites.mkdir()
    (suites / "tinyaa.py").write_text(TINY_AA.format(
        lookup=str(ROOT / "benchmarks" / "tiny" / "lookup.sql")))
    env = {**os.environ, "COLUMNS": "200"}

    def perfpages(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "perfpages", *args, "--results",
                               str(results)], capture_output=True, text=True, env=env, cwd=ROOT)

    done = perfpages("bench.run", "--suite", "tinyaa", "--suites", str(suites),
                     "--preflight-wait", "0", "--seed", "3")
    assert done.returncode == 0, done.stderr
    run = open_run(next(results.iterdir()))
    assert list(run.manifest.labels) == ["a", "a-again", "b"]
    assert noise.same_builds(run.manifest) == [("a", "a-again")]  # the descriptions differ
    assert {w.label for w in run.measured} == {"a", "a-again", "b"}
    # Every window carries the machine's load; the preflight before the block is archived.
    assert all(w.machine is not None and w.machine["busy_pct"] >= w.machine["others_pct"]
               for w in run.windows if w.kind == "measure")
    records = preflight.read(run.path)
    assert [r["block"] for r in records] == ["lookup"] and records[0]["waited_s"] == 0
    assert records[0]["seconds"] < 2  # a test-scope suite samples half a second
    assert os.getpid() not in {p["pid"] for p in records[0]["processes"] if "why" in p}
    assert "diagnostics/preflight.jsonl" in run.manifest.files  # sealed with the run
    shown = perfpages("bench.report", "--format", "json")
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    floor = [n for n in data["notes"] if n.startswith("A/A (same build) lookup: a-again vs a")]
    assert floor and all("the noise floor" in n for n in floor)
    assert [r["pair"] for r in data["noise_floor"]][:1] == ["a-again vs a"]
    term = perfpages("bench.report")
    assert "A/A (same build) lookup: a-again vs a, throughput" in term.stdout
    assert "preflight lookup:" in term.stdout
    assert perfpages("bench.verify").returncode == 0


def test_exact_rule_aa_note_defers_to_certification(tmp_path: Path) -> None:
    """Under the exact rule an A/A cell clear at α on its own is not "the machine is not stable":
    the note points at the block's certification (Holm over its A/A cells) and no warning
    contradicts it."""
    from v2runs import write_v2

    run_id = write_v2(tmp_path, "2026-12-08-synthetic-v2-aa-clear", aa_shift=0.05)
    data = report.build(open_run(tmp_path / run_id))
    notes = [n for n in data["notes"] if n.startswith("A/A (same build)")]
    clear = [n for n in notes if "clear at α on its own" in n]
    assert clear and all("Holm" in n for n in clear)
    assert not any("identical builds differ clearly" in n for n in notes + data["warnings"])

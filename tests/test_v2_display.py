"""Method v2 on display: the change text of an exact rule, resolution and certification in
`bench report` (term, md, json), `bench cite` and the run page — through the real command line
too — on method v2 fixture runs (tests/v2runs.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfpages.analysis import report
from perfpages.analysis.certification import Certificate
from perfpages.analysis.cite import cite
from perfpages.analysis.decision import Cell, Change, Rule
from perfpages.analysis.format import format_change, format_p, format_resolution
from perfpages.archive.reader import open_run
from perfpages.site import runpages
from sites import perfpages
from v2runs import V2, write_v2

NO_PAIR = "2026-12-02-synthetic-v2-no-pair"
NOISY = "2026-12-03-synthetic-v2-noisy-pair"


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("v2-results")
    write_v2(root)
    write_v2(root, NO_PAIR, aa=False)
    write_v2(root, NOISY, aa_shift=0.08)  # the "same build" measured 8 % apart
    return root


def test_the_change_text_of_an_exact_rule() -> None:
    """"+8.1 % (+5.0…+11.2 %, clear gain)": the HL shift, its exact interval with the shift's
    decimals, the verdict; the ranges rule keeps "+8.5 % (clear gain)"."""
    base = Cell(tuple(100.0 + i % 5 for i in range(20)), tuple(range(20)))
    other = Cell(tuple(v * 1.081 for v in base.values), base.rounds)
    c = Change("throughput", base, other, Rule("wilcoxon"))
    low, high = c.interval  # type: ignore[misc]
    assert format_change(c, verdict=c.verdict) == (
        f"+{c.percent:.1f} % (+{low:.1f}…+{high:.1f} %, clear gain)")
    assert format_change(c) == f"+{c.percent:.1f} % (+{low:.1f}…+{high:.1f} %)"
    big = Change("throughput", base, Cell(tuple(v * 1.24 for v in base.values), base.rounds),
                 Rule("wilcoxon"))
    assert format_change(big, verdict="clear gain").startswith("+24 % (+")
    v1 = Change("throughput", Cell((100, 101, 102, 100, 101)), Cell((108, 109, 110, 109, 108)))
    assert format_change(v1, verdict=v1.verdict) == "+7.9 % (clear gain)"
    assert format_change(v1) == "+7.9 %"
    assert format_resolution(7.94) == "7.9 %" and format_resolution(15.2) == "15 %"
    assert format_resolution(float("nan")) == "—"
    assert format_resolution(float("inf")) == "none (too few rounds)"
    assert format_p(0.73) == "0.73" and format_p(2e-6) == "< 0.0001" and format_p(None) == "—"


def test_certificate_lines() -> None:
    ok = Certificate("callers", 6, 0, 7.94, "throughput")
    assert ok.certified
    assert ok.line() == ("callers: certified — A/A pair 0 of 6 cells clear; resolves 7.9 % "
                         "(throughput, worst cell)")
    assert not Certificate("callers", 6, 1, 7.9, "throughput").certified
    assert Certificate("callers", 0, 0, 7.9, "throughput").line().startswith(
        "callers: not certified: no A/A pair")
    coarse = Certificate("callers", 6, 0, 15.0, "throughput", claimed=5.0)
    assert not coarse.certified and "coarser than the 5.0 % claimed" in coarse.why
    assert Certificate("callers", 6, 0, 4.0, "throughput", claimed=5.0).certified


def test_report_shows_interval_p_resolution_and_certification(results: Path) -> None:
    data = report.build(open_run(results / V2))
    changes = data["changes"]
    assert changes["columns"] == ["block", "parameters", "metric", "labels", "base", "other",
                                  "change (interval)", "p", "resolves", "verdict"]
    assert len(changes["rows"]) == len(changes["items"]) == 8  # 2 cells × 2 metrics × 2 pairs
    for row, item in zip(changes["rows"], changes["items"], strict=True):
        assert row[-1] == item["verdict"]
        assert row[6].startswith(("+", "−", "±")) and "…" in row[6]
        assert item["low_percent"] <= item["percent"] <= item["high_percent"]
        # the comparison resolves at least what its A/A pair resolves at the same cell
        assert item["resolution_percent"] >= item["own_resolution_percent"]
        assert row[8] == format_resolution(item["resolution_percent"])
    gains = [i for i in changes["items"] if i["pair"] == "changed vs base"]
    twins = [i for i in changes["items"] if i["pair"] == "base-again vs base"]
    assert all(i["clear"] and i["verdict"] == "clear gain" for i in gains)  # +10 % known shift
    assert all(5 < abs(i["percent"]) < 15 and i["p"] < 0.01 for i in gains)
    assert not any(i["clear"] for i in twins)
    assert all("resolves" in line for line in changes["summary"])
    (cert,) = data["certification"]
    assert cert["certified"] and cert["aa_cells"] == 4 and cert["aa_clear"] == 0
    assert cert["line"].startswith("callers: certified — A/A pair 0 of 4 cells clear; resolves ")
    md = report.to_markdown(data)
    assert "## Certification" in md and cert["line"] in md
    assert "| change (interval) | p | resolves | verdict |" in md
    json.loads(report.to_json(data))  # strict JSON: no Infinity or NaN


def test_a_block_without_an_a_a_pair_or_with_a_noisy_one_is_not_certified(
        results: Path) -> None:
    (alone,) = report.build(open_run(results / NO_PAIR))["certification"]
    assert not alone["certified"]
    assert alone["line"].startswith("callers: not certified: no A/A pair; resolves ")
    (noisy,) = report.build(open_run(results / NOISY))["certification"]
    assert not noisy["certified"] and noisy["aa_clear"] > 0
    assert noisy["line"].startswith(f"callers: not certified — A/A pair {noisy['aa_clear']} of 4")


def test_cite_and_the_run_page_show_certification(results: Path) -> None:
    run = open_run(results / V2)
    block = cite(run, "")
    assert "Certification per block" in block
    assert "- callers: certified — A/A pair 0 of 4 cells clear; resolves " in block
    assert "resolves" in block.split("Certification per block")[0]  # the summary lines
    page = runpages.render(run, "")
    assert "### Certification" in page and "callers: certified" in page
    assert "| change (interval) | p | resolves | verdict |" in page


def test_the_cli_prints_the_v2_report_and_cite(results: Path) -> None:
    term = perfpages("bench.report", "--run", V2, "--results", str(results))
    assert term.returncode == 0, term.stderr
    assert "resolves" in term.stdout and "Certification" in term.stdout
    assert "callers: certified — A/A pair 0 of 4 cells clear" in term.stdout
    done = perfpages("bench.report", "--run", V2, "--results", str(results), "--format", "json")
    items = json.loads(done.stdout)["changes"]["items"]
    assert {i["verdict"] for i in items} == {"clear gain", "no clear change"}
    cited = perfpages("bench.cite", V2, "--results", str(results))
    assert cited.returncode == 0, cited.stderr
    assert "callers: certified — A/A pair 0 of 4 cells clear; resolves" in cited.stdout
    alone = perfpages("bench.cite", NO_PAIR, "--results", str(results))
    assert "callers: not certified: no A/A pair" in alone.stdout


def test_fail_on_loss_prints_the_interval(tmp_path: Path) -> None:
    write_v2(tmp_path, "2026-12-04-synthetic-v2-loss", shift=-0.10)
    done = perfpages("bench.report", "--run", "2026-12-04-synthetic-v2-loss", "--results",
                     str(tmp_path), "--fail-on", "loss", "--format", "json")
    assert done.returncode == 1
    losses = json.loads(done.stdout)["losses"]
    assert len(losses) == 4 and all("…" in x["change"] and x["p"] < 0.01 for x in losses)
    lines = [x for x in done.stderr.splitlines() if x.startswith("fail: clear loss:")]
    assert len(lines) == 4 and all("…" in x and "%)" in x for x in lines)


def test_a_drifting_floor_is_shown_but_is_no_warning_of_a_v2_run(tmp_path: Path) -> None:
    write_v2(tmp_path, floors=(40_000.0, 14_000.0))  # −65 %, as the floors of 2026-11-30 fell
    data = report.build(open_run(tmp_path / V2))
    (floor,) = data["drift"]
    assert floor["flagged"] and floor["drift_percent"] < -60
    assert not any("drifted" in w for w in data["warnings"])
    assert data["certification"][0]["certified"]


def test_no_guide_page_asks_to_discard_runs_whose_floors_drift() -> None:
    """Drift is a fact shown, not a gate: no guide page asks to discard a run for it."""
    docs = Path(__file__).resolve().parent.parent / "docs"
    for page in docs.rglob("*.md"):
        text = page.read_text(encoding="utf-8").lower()
        for word in ("discard the run", "discard runs whose", "reject the run",
                     "rerun when the floors", "runs whose floors drift must"):
            assert word not in text, f"{page}: {word}"

"""Method 2.1's certificate where a reader sees it: `bench report`'s lines and JSON, a page's
`certification()` table and `certified()` claim, and the run's warnings — on generated runs
recorded with a 2.1 rule (a suite's target, Holm's level)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from perfpages.analysis import report
from perfpages.archive.reader import open_run
from sites import Failed, build_site
from v2runs import write_v2

RULE = {"test": "wilcoxon", "alpha": 0.01, "version": "2.1", "certify_alpha": 0.01}
QUIET = "2026-12-08-synthetic-v21"  # 3 % window noise: resolves a few percent
COARSE = "2026-12-09-synthetic-v21-target"  # the same, with a 1 % target it cannot reach
FEW = "2026-12-10-synthetic-v21-few"  # 5 rounds: Wilcoxon cannot reach 1 %


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("v21")
    write_v2(root, QUIET, rule=RULE)
    write_v2(root, COARSE, rule={**RULE, "target_pct": 1.0})
    write_v2(root, FEW, rule=RULE, rounds=5)
    return root


def pin(run: str) -> str:
    return f"---\nruns:\n  r: {run}\n---\n"


def test_the_report_states_the_level_and_why(results: Path) -> None:
    (ok,) = report.build(open_run(results / QUIET))["certification"]
    assert ok["certified"] and ok["version"] == "2.1" and ok["certify_alpha"] == 0.01
    assert ok["line"].startswith("callers: certified at 1 % (Holm over 4 A/A cells) — resolves ")
    assert ok["line"].endswith("% (throughput, worst cell)") and 0 < ok["holm_p"] <= 1
    (coarse,) = report.build(open_run(results / COARSE))["certification"]
    assert not coarse["certified"] and coarse["target_percent"] == 1.0
    assert re.fullmatch(r"callers: not certified: resolves \d\.\d %, coarser than the 1\.0 % "
                        r"target", coarse["line"])
    (few,) = report.build(open_run(results / FEW))["certification"]
    assert not few["certified"]
    assert few["line"] == "callers: not certified: resolves none at 5 rounds"


def test_the_page_table_and_claim_read_the_2_1_certificate(tmp_path: Path,
                                                         results: Path) -> None:
    page = pin(QUIET) + ("# quiet\n\n{{ certification() }}\n\n"
                         "{{ claim('The block is certified', certified(block='callers')) }}\n")
    site, warnings = build_site(tmp_path, {"index.md": page}, results)
    assert warnings == []
    html = (site / "index.html").read_text(encoding="utf-8")
    cells = re.findall(r"<td[^>]*>(.*?)</td>", re.search(r"<table>.*?</table>", html,
                                                         re.S).group(0))  # type: ignore[union-attr]
    assert cells[1] == "A/A pair 0 of 4 cells clear after Holm at 1 %"
    assert cells[4] == "yes (certified at 1 % (Holm over 4 A/A cells))"
    page = pin(FEW) + ("# few\n\n{{ claim('The block is certified', "
                       "certified(block='callers')) }}\n")
    with pytest.raises(Failed) as failed:
        build_site(tmp_path / "few", {"index.md": page}, results)
    (message,) = failed.value.messages
    assert "expected block callers of r certified at 1 %: no A/A cell clear after Holm" in message
    assert "callers: not certified: resolves none at 5 rounds" in message
    site, _ = build_site(tmp_path / "header", {"index.md": page}, results, strict=False)
    # the page's warnings (its header) read the same 2.1 certificate
    assert "not certified: resolves none at 5 rounds" in (site / "index.html").read_text(
        encoding="utf-8")

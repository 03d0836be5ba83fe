"""Pairing facts per block: how far apart the windows a comparison pairs sit, the correlation
pairing removes, and whether a metric depends on the subject's idle time before its window —
on synthetic windows with known starts and values, and through `perfpages bench.report`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from math import asin, exp, pi
from pathlib import Path

import numpy as np
import pytest

from perfpages.analysis import pairing
from perfpages.analysis.decision import Cell
from perfpages.archive.manifest import Manifest
from perfpages.archive.reader import open_run
from perfpages.archive.window import Window
from v2runs import V2, write_v2

FIXTURES = Path(__file__).parent / "fixtures" / "results"
EPOCH = datetime(2026, 12, 4, 10, 0, 0)
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "COLUMNS": "200"}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("results")
    write_v2(out)
    return out


@pytest.fixture(scope="module")
def manifest(results: Path) -> Manifest:
    """A method v2 manifest: block "callers" judging throughput and p50."""
    return open_run(results / V2).manifest


def window(label: str, rnd: int, at: float, *, duration: float = 2.0, index: int = 0,
           call: str = "lookup", p50: float = 10.0, requests: int = 1000,
           idle: float | None = None) -> Window:
    w = Window(block="callers", label=label, round=rnd, params={"call": call},
               start=(EPOCH + timedelta(seconds=at)).isoformat() + "Z", duration_s=duration,
               window=index, requests=requests, codes={"200": requests}, metrics={"p50": p50})
    if idle is not None:
        w.idle_s = idle  # type: ignore[attr-defined]  # method v2.1's field, before or after it lands
    return w


def test_the_gap_is_the_median_distance_between_the_paired_windows_middles() -> None:
    """Four rounds of base and changed, 2 s windows: changed starts 4, 10, 6 and 20 s after
    base; round 1's base is two 1 s windows (100–102 s, its middle 101 s, as the 2 s window
    starting at 100 s); a third label no pair compares is not counted."""
    windows = [window("base", 1, 100, duration=1.0), window("base", 1, 101, duration=1.0,
                                                             index=1)]
    windows += [window("base", r, 100 * r) for r in (2, 3, 4)]
    windows += [window("changed", r, 100 * r + gap)
                for r, gap in zip((1, 2, 3, 4), (4, 10, 6, 20), strict=True)]
    windows += [window("other", r, 100 * r + 50) for r in (1, 2, 3, 4)]
    gaps = pairing.gaps(pairing.middles(windows), [("base", "changed")])
    assert sorted(gaps["callers"]) == pytest.approx([4, 6, 10, 20])
    # The re-measured attempt counts instead of the first: round 4 measured again at 440 s.
    again = window("changed", 4, 440)
    again.attempt = 2
    gaps = pairing.gaps(pairing.middles([*windows, again]), [("base", "changed")])
    assert sorted(gaps["callers"]) == pytest.approx([4, 6, 10, 40])


def test_the_pairing_correlation_is_the_median_over_cells_of_pearson_on_the_logs(
        manifest: Manifest) -> None:
    """lookup: logs 1, 2, 3, 4 against 2, 4, 6, 9 — r = 11.5 / √(5 × 26.75) = 0.99438;
    page: logs 1, 2, 3, 4 against 4, 3, 2, 1 — r = −1; the block's median: their mean."""
    rounds = (1, 2, 3, 4)

    def cell(logs: list[float]) -> Cell:
        return Cell(tuple(exp(v) for v in logs), rounds)

    cells = {("callers", "call=lookup", "base", "throughput"): cell([1, 2, 3, 4]),
             ("callers", "call=lookup", "changed", "throughput"): cell([2, 4, 6, 9]),
             ("callers", "call=page", "base", "throughput"): cell([1, 2, 3, 4]),
             ("callers", "call=page", "changed", "throughput"): cell([4, 3, 2, 1])}
    windows = [window(label, r, 100 * r + (3 if label == "changed" else 0), call=call)
               for label in ("base", "changed") for r in rounds for call in ("lookup", "page")]
    facts = pairing.facts(manifest, windows, cells, [("base", "changed")])
    assert len(facts) == 1
    r_lookup = 11.5 / (5 * 26.75) ** 0.5
    assert facts[0].correlation["throughput"] == pytest.approx((r_lookup - 1) / 2, abs=1e-12)
    assert facts[0].cells == {"throughput": 2}
    assert facts[0].gap_s == pytest.approx(3) and facts[0].pairs == 8
    assert facts[0].line() == ("callers: paired windows 3 s apart (median), pairing "
                               "correlation −0.00 (throughput)")
    # Fewer than three common rounds, or a side that never varies: no correlation.
    assert pairing.correlation(Cell((1.0, 2.0), (1, 2)), Cell((1.0, 3.0), (1, 2))) is None
    assert pairing.correlation(Cell((1.0, 1.0, 1.0), (1, 2, 3)),
                               Cell((1.0, 2.0, 3.0), (1, 2, 3))) is None


def planted(rng: np.random.Generator, n: int, r: float) -> tuple[np.ndarray, np.ndarray]:
    """n pairs of a bivariate normal with correlation r: Spearman's ρ is (6/π) asin(r/2)."""
    z = rng.multivariate_normal([0, 0], [[1, r], [r, 1]], size=n)
    return z[:, 0], z[:, 1]


def test_idle_dependence_finds_a_planted_rho_and_nothing_where_there_is_none(
        manifest: Manifest) -> None:
    """p50 planted with Pearson 0.75 against idle time (Spearman (6/π) asin(0.375) = 0.733),
    across two labels of different levels (each centred on its cell's median); throughput
    independent of it: only p50 is stated."""
    rng = np.random.default_rng(20261204)
    windows = []
    for label, level in (("base", 10.0), ("changed", 20.0)):
        idle, latent = planted(rng, 200, 0.75)
        other = rng.normal(size=200)
        for i in range(200):
            windows.append(window(label, i + 1, 10.0 * i, idle=float(5 + idle[i]),
                                  p50=level * exp(0.1 * latent[i]),
                                  requests=int(1000 * exp(0.1 * other[i]))))
    found = pairing.idle_dependence(manifest, windows)
    recorded, depends = found["callers"]
    assert recorded == 400
    assert [d.metric for d in depends] == ["p50"]
    assert depends[0].rho == pytest.approx(6 / pi * asin(0.375), abs=0.06)
    assert depends[0].p < 0.001 and depends[0].windows == 400
    assert depends[0].text().startswith("p50 rises with the subject's idle time before the "
                                        "window (Spearman ρ = +0.7")
    # Windows archived before idle_s was recorded: nothing to say.
    assert pairing.idle_dependence(manifest, [window("base", 1, 0.0)]) == {}


def report(results: Path, run: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "perfpages", "bench.report", "--results",
                           str(results), "--run", run, "--format", "json"],
                          capture_output=True, text=True, env=ENV, check=True)
    return json.loads(proc.stdout)


def test_bench_report_states_a_line_per_block_for_an_exact_rule_run(results: Path) -> None:
    data = report(results, V2)
    (facts,) = data["pairing"]
    # 20 rounds × 2 parameter sets × 2 compared pairs (changed and the A/A twin vs base).
    assert facts["block"] == "callers" and facts["pairs"] == 80
    assert facts["cells"] == {"throughput": 4, "p50": 4}
    line = facts["lines"][0]
    assert line.startswith("callers: paired windows ") and "pairing correlation" in line
    assert line in data["notes"]  # the terminal prints it as a note
    assert facts["idle_windows"] == 0 and facts["idle"] == []


def test_bench_report_of_a_ranges_rule_run_says_nothing_of_pairing() -> None:
    """The fixture demo run (no method.rule): its report is the one it always was."""
    data = report(FIXTURES, "2026-11-01-synthetic-demo")
    assert "pairing" not in data
    assert not any("paired windows" in note for note in data["notes"])


def test_a_method_v2_run_page_states_its_pairing_facts(results: Path) -> None:
    from perfpages.site import runpages

    text = runpages.render(open_run(results / V2), "https://example.org/")
    section = text.split("### Pairing", 1)[1].split("###", 1)[0]
    assert "- callers: paired windows " in section and "pairing correlation" in section
    demo = runpages.render(open_run(FIXTURES / "2026-11-01-synthetic-demo"),
                           "https://example.org/")
    assert "### Pairing" not in demo

"""Method v2.1 reproductions: a replay is judged change by change, by whether its
Hodges–Lehmann shift is compatible with the original's given both exact intervals, and each
cell states how far apart its medians lie in standard errors of its window noise. Runs that
do not record method v2.1 keep the ranges rule's report, word for word."""

from __future__ import annotations

from dataclasses import replace
from math import exp, log, pi, sqrt
from pathlib import Path

import numpy as np
import pytest

from perfpages.analysis import compatibility, decision
from perfpages.analysis import reproduction as analysis
from perfpages.analysis.decision import Cell, Change, Rule
from perfpages.archive.manifest import Manifest
from perfpages.archive.reader import open_run
from v2runs import write_v2

RULE = Rule("wilcoxon", alpha=0.01)


def change(base: list[float], other: list[float], rule: Rule = RULE) -> Change:
    rounds = tuple(range(len(base)))
    return Change("throughput", Cell(tuple(base), rounds), Cell(tuple(other), rounds), rule)


def noisy(rng: np.random.Generator, n: int, shift: float, sd: float = 0.05) -> Change:
    """n rounds of a base and another label `shift` (a log ratio) above it, each window with
    its own noise and the round's level shared by both (what pairing removes)."""
    level = rng.normal(0, 0.05, n)
    base = np.exp(6 + level + rng.normal(0, sd, n))
    other = np.exp(6 + shift + level + rng.normal(0, sd, n))
    return change(list(base), list(other))


def test_identical_shifts_are_compatible() -> None:
    one = noisy(np.random.default_rng(1), 20, 0.10)
    assert one.clear and decision.compatible(one, one) is True
    z = compatibility.shift_z((one.test.shift_pct, one.test.low_pct, one.test.high_pct), 0.01,
                              (one.test.shift_pct, one.test.low_pct, one.test.high_pct), 0.01)
    assert z == 0


def test_far_apart_shifts_are_not_compatible_and_the_sign_says_which_way() -> None:
    rng = np.random.default_rng(2)
    one, two = noisy(rng, 20, 0.0), noisy(rng, 20, 0.30)
    assert decision.compatible(one, two) is False
    z = compatibility.shift_z((one.test.shift_pct, one.test.low_pct, one.test.high_pct), 0.01,
                              (two.test.shift_pct, two.test.low_pct, two.test.high_pct), 0.01)
    assert z is not None and z > compatibility.z_of(0.01)


def test_the_standard_error_is_read_off_each_exact_interval() -> None:
    """+10 % (0…+20 %) against +10 % (+5…+15 %) at α = 1 %: the log-shifts are equal, the
    second's interval half as wide; (0 − 0) / se = 0. A shift of +30 % (+25…+35 %) against the
    first: z = (log 1.3 − log 1.1) / √(se₁² + se₂²), each se = width / (2 · 2.5758)."""
    assert compatibility.shift_z((10, 0, 20), 0.01, (10, 5, 15), 0.01) == 0
    z = compatibility.z_of(0.01)
    se1 = (log(1.2) - log(1.0)) / (2 * z)
    se2 = (log(1.35) - log(1.25)) / (2 * z)
    expected = (log(1.3) - log(1.1)) / sqrt(se1 ** 2 + se2 ** 2)
    assert compatibility.shift_z((10, 0, 20), 0.01, (30, 25, 35), 0.01) == pytest.approx(
        expected, rel=1e-12)
    assert z == pytest.approx(2.5758, abs=1e-4)


def test_a_change_with_too_few_rounds_or_under_the_ranges_rule_is_not_judged() -> None:
    rng = np.random.default_rng(3)
    few = noisy(rng, 6, 0.1)  # 2/2⁶ > 1 %: Wilcoxon cannot reach α
    assert not few.enough_rounds and decision.compatible(few, few) is None
    ranges = change(list(few.base.values), list(few.other.values), Rule())
    assert decision.compatible(ranges, ranges) is None


def test_two_replays_of_one_distribution_are_incompatible_about_alpha_of_the_time() -> None:
    """1,000 pairs of runs of one distribution (10 pairs a run, α = 5 %): the share judged
    incompatible is α within three Monte Carlo standard errors. (At α = 1 % and 20 pairs the
    exact interval's coverage above 1 − α makes it a little lenient: 0.57 % of 3,000.)"""
    rng = np.random.default_rng(20261204)
    rule = Rule("wilcoxon", alpha=0.05)
    sims, bad = 1000, 0
    for _ in range(sims):
        one, two = (replace(noisy(rng, 10, 0.05), rule=rule) for _ in range(2))
        bad += decision.compatible(one, two) is False
    error = sqrt(0.05 * 0.95 / sims)
    assert abs(bad / sims - 0.05) < 3 * error, bad


def test_a_cells_distance_is_its_log_medians_over_their_standard_error() -> None:
    """Medians 100 and 110, each side's robust sd of its logs known: the distance is
    log(1.1) / (√(π/2) · √(σ₁²/n₁ + σ₂²/n₂))."""
    logs = [-0.1, -0.05, 0.0, 0.05, 0.1]  # median 0, MAD 0.05: σ = 1.4826 × 0.05
    one = [100 * exp(v) for v in logs]
    two = [110 * exp(2 * v) for v in logs]  # twice as noisy
    sd1, sd2 = 1.4826 * 0.05, 1.4826 * 0.10
    expected = log(1.1) / (sqrt(pi / 2) * sqrt(sd1 ** 2 / 5 + sd2 ** 2 / 5))
    assert compatibility.cell_distance(one, two) == pytest.approx(expected, rel=1e-9)
    assert compatibility.cell_distance(two, one) == pytest.approx(-expected, rel=1e-9)
    assert compatibility.cell_distance(one, one) == 0
    assert decision.reproduces(Cell(tuple(one)), Cell(tuple(two)), 0.01) is (
        abs(expected) < compatibility.z_of(0.01))


def v21(m: Manifest) -> Manifest:
    """The manifest as method v2.1 records it (`method.rule.version`)."""
    assert m.method.rule is not None
    return replace(m, method=replace(m.method, rule={**m.method.rule, "version": "2.1"}))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    results = tmp_path_factory.mktemp("results")
    write_v2(results, "2026-12-01-synthetic-v2", seed=11)
    write_v2(results, "2026-12-02-synthetic-v2", seed=12)
    return results / "2026-12-01-synthetic-v2", results / "2026-12-02-synthetic-v2"


def test_a_v2_replay_keeps_the_ranges_report_and_a_v21_replay_is_judged_by_shifts(
        runs: tuple[Path, Path]) -> None:
    one, two = open_run(runs[0]), open_run(runs[1])
    cells_a, cells_b = analysis.run_cells(one), analysis.run_cells(two)
    old = analysis.compare_cells(one.manifest, cells_a, two.manifest, cells_b)
    assert old["criterion"] == "ranges"
    assert analysis.columns(old, "cells")[-1] == "ranges overlap"
    assert old["lines"][0].endswith("cells' ranges overlap on run 2026-12-02-synthetic-v2")
    new = analysis.compare_cells(one.manifest, cells_a, v21(two.manifest), cells_b)
    assert new["criterion"] == "shift"
    # Both judged the same data: cells and changes alike, only the judgement differs.
    assert len(new["cells"]) == len(old["cells"]) and len(new["changes"]) == len(old["changes"])
    assert analysis.columns(new, "cells")[-1] == "apart (SE)"
    assert analysis.columns(new, "changes")[-3:] == ["apart (SE)", "compatible", "verdict kept"]
    summary = new["summary"]
    assert summary["changes_judged"] == len(new["changes"])  # 20 pairs: every change judged
    assert new["lines"][0] == (f"{summary['changes_compatible']} of {summary['changes_judged']}"
                               " changes' shifts are compatible on run 2026-12-02-synthetic-v2 "
                               "(their difference within 2.58 standard errors, α = 1 %)")
    # One distribution twice (the same shift, another seed): every change reproduces here.
    assert all(c["compatible"] for c in new["changes"])
    row = analysis.change_rows(new["changes"])[0]
    assert "…" in row[4] and "…" in row[5]  # each side's shift with its exact interval
    assert analysis.cell_rows(new["cells"])[0][-1].startswith(("+", "−", "-"))
    markdown = "\n".join(analysis.to_markdown(new, full=False))
    assert "Cells" not in markdown  # a cell is a figure, never listed as not reproduced


def test_a_v21_replay_of_a_changed_build_names_the_changes_that_do_not_reproduce(
        tmp_path: Path) -> None:
    write_v2(tmp_path, "2026-12-01-synthetic-v2", shift=0.10, seed=11)
    write_v2(tmp_path, "2026-12-02-synthetic-v2", shift=0.30, seed=12)
    one, two = (open_run(tmp_path / r) for r in ("2026-12-01-synthetic-v2",
                                                  "2026-12-02-synthetic-v2"))
    data = analysis.compare_cells(one.manifest, analysis.run_cells(one), v21(two.manifest),
                                  analysis.run_cells(two))
    wrong = [c for c in data["changes"] if not c["reproduces"]]
    assert wrong and all(c["labels"] == "changed vs base" for c in wrong)
    assert all(c["same"] for c in wrong)  # clear gain on both: the old rule saw no difference
    markdown = "\n".join(analysis.to_markdown(data, full=False))
    assert "## Changes that do not reproduce" in markdown


@pytest.mark.parametrize(("rule", "expected"), [
    (None, (1,)), ({"test": "wilcoxon", "alpha": 0.01}, (2,)),
    ({"test": "wilcoxon", "alpha": 0.01, "version": "2.1"}, (2, 1)),
    ({"test": "wilcoxon", "alpha": 0.01, "version": 2.1}, (2, 1)),
    ({"test": "wilcoxon", "alpha": 0.01, "version": "v2.2"}, (2, 2))])
def test_the_method_version_decides_the_criterion(runs: tuple[Path, Path], rule: dict | None,
                                                   expected: tuple[int, ...]) -> None:
    m = open_run(runs[0]).manifest
    m = replace(m, method=replace(m.method, rule=rule))
    assert analysis.version(m) == expected
    assert analysis.criterion(m) == ("shift" if expected >= (2, 1) else "ranges")

"""A metric that is 0 → 0 (errors), 0 → 4, a call that answered nothing and a floor of 0 tps:
every path renders them without a traceback and without NaN — `bench.report` in every format,
`bench.cite`, a page's tables, changes and claims, the run pages and a strict MkDocs build."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from oddruns import EXACT_RUN, RANGES_RUN, write_all
from perfpages.analysis.decision import Cell, Change, Rule, percent_change
from perfpages.analysis.format import format_change, format_range
from sites import build_site, perfpages

NAN = re.compile(r"\b(nan|NaN|inf|Infinity)\b")


@pytest.fixture(scope="module")
def zeros(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("zeros") / "results"
    root.mkdir()
    write_all(root)
    return root


def _strict(text: str) -> object:
    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in the JSON")
    return json.loads(text, parse_constant=refuse)


def test_a_change_from_zero_is_a_number() -> None:
    zero = Cell((0.0,) * 6)
    four = Cell((4.0,) * 6)
    for rule in (Rule(), Rule("wilcoxon", alpha=0.05)):
        same = Change("errors", zero, zero, rule)
        assert same.percent == 0 and same.better is None and same.verdict in (
            "ranges overlap", "no clear change")
        rise = Change("errors", zero, four, rule)
        assert rise.percent == float("inf") and rise.verdict == "clear loss"
        assert format_change(rise, verdict="clear loss") == "+∞ % (clear loss)"
        assert format_range([same, rise]) == "±0.0 % to +∞ %"
    assert percent_change(0, 0) == 0 and percent_change(0, -1) == float("-inf")
    assert percent_change(4, 5) == 25


@pytest.mark.parametrize("run", [RANGES_RUN, EXACT_RUN])
def test_report_and_cite_on_the_command_line(zeros: Path, run: str) -> None:
    for fmt in ("term", "md", "json"):
        done = perfpages("bench.report", "--results", str(zeros), "--run", run, "--format", fmt)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr and "Warning" not in done.stderr
        if fmt == "json":
            data = _strict(done.stdout)
            assert isinstance(data, dict) and data["changes"]
        else:
            assert not NAN.search(done.stdout), NAN.search(done.stdout)
            assert "+∞ %" in done.stdout  # errors 0 → 4
    cite = perfpages("bench.cite", "--results", str(zeros), "--run", run)
    assert cite.returncode == 0, cite.stderr
    assert "Traceback" not in cite.stderr and not NAN.search(cite.stdout)


def test_a_page_and_the_run_pages_build(zeros: Path, tmp_path: Path) -> None:
    r, x = RANGES_RUN, EXACT_RUN
    lookup, page = '{"call": "lookup"}', '{"call": "page"}'
    text = f"""---
runs: [{r}, {x}]
---
# Zeros

{{{{ table(["throughput", "errors", "error_rate", "p50"], rows="metric", columns="label",
          run="{r}", block="calls", where={page}, change="base") }}}}

{{{{ table("errors", rows="call", columns="label", run="{x}", block="calls", change="base") }}}}

Unchanged: {{{{ change("base", "changed", "errors", run="{r}", block="calls", where={lookup}) }}}}.
Risen: {{{{ change("base", "changed", "errors", run="{x}", block="calls", where={page}) }}}}.

{{{{ claim("errors stay 0", between(0, 0, "base", "changed", "errors", run="{r}",
                                    block="calls", where={lookup})) }}}}

{{{{ chart("call", "errors", run="{r}", block="calls") }}}}

{{{{ noise_floor(run="{r}") }}}}
{{{{ certification(run="{x}") }}}}
The floor moved by {{{{ drift(run="{r}", block="calls") }}}}.
"""
    site, warnings = build_site(tmp_path, {"index.md": text}, zeros)
    assert warnings == []
    html = (site / "index.html").read_text()
    assert "Unchanged: ±0.0 %" in html and "Risen: +∞ %" in html
    assert "floor measured nothing before the block" in html
    assert not NAN.search(re.sub(r"<[^>]*>", " ", html))
    for run in (r, x):
        assert (site / "runs" / run / "index.html").is_file()


def test_a_run_whose_page_fails_is_one_line_and_the_others_build(
        zeros: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever goes wrong rendering one run's page (here a fault put into it), the build
    gets one line naming the run, and every other run still has its page."""
    from perfpages.site import runpages

    original = runpages.render

    def faulty(run: object, *args: object) -> str:
        if getattr(run, "id", "") == RANGES_RUN:
            raise ValueError("cannot convert float NaN to integer")
        return original(run, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(runpages, "render", faulty)
    entries = {e.id: e for e in runpages.RunPages(zeros, None, "").entries()}
    broken = entries[RANGES_RUN].problem or ""
    assert "its page could not be rendered (ValueError: cannot convert" in broken
    assert "\n" not in broken and entries[EXACT_RUN].problem is None

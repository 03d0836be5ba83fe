"""The verdict card (`{{ verdict(…) }}`, site/cards.py): its content for synthetic runs, through
a real strict MkDocs build, and that every change it shows is counted in the page's ledger."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from perfpages.site import cards
from perfpages.site.pins import Pins
from perfpages.site.store import RunStore
from perfpages.testing import generate
from sites import DEMO, build_site
from v2runs import V2, write_v2


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cards")
    write_v2(root)
    generate(root)  # a method v1 run (ranges apart)
    return root


def _cards(html: str) -> list[str]:
    return re.findall(r'<div class="perfpages-card">.*?</div>', html, re.S)


def test_a_card_per_comparison_with_its_verdicts_in_the_ledger(tmp_path: Path,
                                                               results: Path) -> None:
    page = (f"---\nruns:\n  r: {V2}\n---\n# v2\n\n{{{{ verdicts() }}}}\n\n"
            "{{ verdict('base', 'changed', metrics=['throughput', 'p50'], block='callers') }}\n\n"
            "{{ verdict('base', 'changed', block='callers', where={'call': 'lookup'}) }}\n")
    site, warnings = build_site(tmp_path, {"index.md": page}, results)
    assert warnings == []
    html = (site / "index.html").read_text(encoding="utf-8")
    both, one = _cards(html)
    # Two metrics over the block's two calls: a range each, clear in both cells, certified.
    assert both.count("<dl ") == 2 and "<dt>throughput</dt>" in both
    assert "<dt>p50 latency</dt>" in both and "block callers: certified" in both
    assert re.search(r">\+\d+ % to \+\d+ %</dd><dd>across calls<", both)
    assert re.search(r">−\d+ % to −\d+ %</dd><dd>across calls<", both)
    assert both.count("clear gain in 2 of 2") == 2  # lower p50 is a gain too
    assert re.search(r">resolves \d+\.\d(–\d+\.\d)? %<", both)
    # One cell: the shift with its interval and verdict.
    assert re.search(r">\+\d+\.\d %</dd><dd>interval \+\d+\.\d…\+\d+\.\d %</dd>"
                     r'<dd class="perfpages-card-verdict">clear gain</dd>', one)
    # 2 calls × 2 metrics; the lookup's throughput is the same comparison, counted once.
    assert "This page makes 4 verdicts at α = 1 % (4 clear)" in html
    css = (site / "assets" / "perfpages.css").read_text(encoding="utf-8")
    assert ".perfpages-card" in css and "max-width: 30em" in css


def test_a_card_under_the_ranges_rule_states_no_resolution(results: Path) -> None:
    pins = Pins({"d": RunStore(results).get(DEMO)})
    card = cards.build(pins, "v1.0", "v1.1", ["throughput"], block="callers")
    assert [r.metric for r in card.rows] == ["throughput"] and card.blocks == (("d", "callers"),)
    (row,) = card.rows
    assert row.resolves == "—" and row.interval == "" and row.span == "across calls"
    assert len(pins.judged) == len(row.changes) == 2  # each cell judged, in the ledger
    shown = cards.render(card, lambda alias, block: None)
    assert "block callers: not certified (a run before method v2)" in shown
    assert "\n" not in shown.strip()  # one HTML block: Markdown leaves it whole

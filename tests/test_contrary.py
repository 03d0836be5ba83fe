"""Nothing clear left out (`perfpages.site.contrary`): a page that claims or prints a clear
gain while a metric of the same cells is clearly worse must show it — printed by a macro, or
named by the claim's `despite=` — or the strict build fails with page:line and the cells. On a
generated method v2 run whose `changed` label has a clearly higher throughput and a clearly
higher p50, through the real build."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfpages.site.page import render
from perfpages.site.store import RunStore
from sites import Failed, build_site
from v2runs import write_v2

RUN = "2026-12-11-synthetic-contrary"
HEAD = f"---\nruns:\n  r: {RUN}\n---\n# Contrary\n\n"


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("contrary")
    write_v2(root, RUN, shift=0.10, rounds=12, p50_factor={"changed": 1.3})
    return root


def claims(results: Path, body: str) -> list[tuple[int, bool, str]]:
    page = render(body, {"runs": {"r": RUN}}, path="docs/p.md", offset=0,
                  store=RunStore(results))
    return [(c.line, c.holds, c.message) for c in page.claims]


def test_a_claimed_gain_with_a_clear_p50_loss_left_out_fails_at_its_line(results: Path) -> None:
    body = "Intro.\n\n{{ claim('changed is faster', faster('base', 'changed')) }}\n"
    ((line, holds, message),) = claims(results, body)
    assert (line, holds) == (3, False)
    assert message.startswith("docs/p.md:3: claim \"changed is faster\"")
    # every contrary cell, by block, parameters, metric and change
    assert "left out: callers, call=lookup, callers=32: base → changed, p50 +" in message
    assert "call=page, callers=32: base → changed, p50 +" in message
    assert message.count("(clear loss)") == 2


def test_despite_names_it_and_the_claim_holds(results: Path) -> None:
    body = "{{ claim('changed is faster', faster('base', 'changed', despite=['p50'])) }}\n"
    ((_, holds, message),) = claims(results, body)
    assert holds, message
    # a metric that is not clearly the other way cannot be acknowledged as if it were
    body = "{{ claim('changed is faster', faster('base', 'base-again', clear=False, " \
           "despite='p50')) }}\n"
    ((_, holds, message),) = claims(results, body)
    assert not holds and "despite='p50': no cell clearly the other way" in message


def test_printing_the_p50_shows_it(results: Path) -> None:
    body = ("{{ claim('changed is faster', faster('base', 'changed')) }}\n\n"
            "{{ change('base', 'changed', 'p50') }}\n")
    assert [holds for _, holds, _ in claims(results, body)] == [True]


def test_a_printed_gain_alone_fails_as_a_check_at_its_line(results: Path) -> None:
    body = "A.\n\nB.\n\nThroughput: {{ change('base', 'changed') }}\n"
    ((line, holds, message),) = claims(results, body)
    assert (line, holds) == (5, False)
    assert message.startswith("docs/p.md:5: claim \"the clear changes printed here\"")
    # a printed loss alone asks nothing: the rule is about gains shown without their losses
    assert claims(results, "p50: {{ change('base', 'changed', 'p50') }}\n") == []


def test_the_strict_build_fails_then_passes_with_despite(tmp_path: Path,
                                                         results: Path) -> None:
    planted = HEAD + "{{ claim('changed is faster', faster('base', 'changed')) }}\n"
    with pytest.raises(Failed) as failed:
        build_site(tmp_path, {"index.md": planted}, results)
    (message,) = [m for m in failed.value.messages if "left out" in m]
    assert "docs/index.md:7: claim \"changed is faster\"" in message
    assert "p50 +" in message and "(clear loss)" in message
    fixed = HEAD + ("{{ claim('changed is faster', faster('base', 'changed', "
                    "despite=['p50'])) }}\n")
    site, warnings = build_site(tmp_path / "fixed", {"index.md": fixed}, results)
    assert not [w for w in warnings if "left out" in w]
    html = (site / "index.html").read_text(encoding="utf-8")
    assert "</span> (despite a clearly higher p50 latency: +" in html
    assert "2 of 2 clear)" in html


ROOT = Path(__file__).resolve().parents[1]
# sizing v2's short answer as it stood before the check (throughput and p95 only, "everywhere")
SIZING_BEFORE = """Intro.

**the sized settings are clearly faster everywhere this run looked**:

| Comparison | Throughput | p95 |
|---|---|---|
| mix | {{ change(a, b, block="mix") }} | {{ change(a, b, "p95", block="mix") }} |

- {{ claim("On the mix, sized is clearly faster", faster(a, b, block="mix")) }},
  {{ claim("with a clearly lower p95", faster(a, b, "p95", block="mix")) }}.
"""


def test_sizing_v2_as_it_was_fails_and_as_it_is_passes() -> None:
    store = RunStore(ROOT / "results")  # archived runs: read, never written
    before = render("{% set a, b = 'stock', 'sized' %}" + SIZING_BEFORE,
                    {"runs": {"sizing": "2026-12-02-sizing"}},
                    path="docs/performance/sizing/v2.md", offset=4, store=store, nested=True)
    failed = {c.line: c.message for c in before.claims if not c.holds}
    assert sorted(failed) == [13, 14]
    assert failed[13].startswith("docs/performance/sizing/v2.md:13: claim \"On the mix, sized")
    assert "left out: mix, clients=1: stock → sized, p50 +4.4 % (clear loss)" in failed[13]
    assert "mix, clients=8: stock → sized, p50 +68 % (clear loss)" in failed[13]
    assert before.warnings == [c.message for c in before.claims if not c.holds]
    page = ROOT / "docs" / "performance" / "sizing" / "v2.md"
    text = page.read_text(encoding="utf-8")
    assert "everywhere" not in text and 'despite=["p50"]' in text

"""A claim on a block that is not certified (`perfpages.site.family.uncertified`) fails the
strict build unless the claim names that status, `claim(…, uncertified_ok="why")`, and the
reason is then printed beside it. Generated method v2 runs: one with an A/A pair (certified),
one without (not certified); a ranges-rule run has no certification and is not checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfpages.site.page import render
from perfpages.site.store import RunStore
from perfpages.testing import Spec, generate
from sites import Failed, build_site
from v2runs import write_v2

PAIRED = "2026-12-12-synthetic-paired"
ALONE = "2026-12-13-synthetic-alone"
RANGES = "2026-11-01-synthetic-demo"
CLAIM = "{{ claim('changed is faster', faster('base', 'changed')%s) }}\n"
REASON = ", uncertified_ok='the run has no A/A pair; the gain is ten times its spread'"


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("uncertified")
    write_v2(root, PAIRED, rounds=12)
    write_v2(root, ALONE, rounds=12, aa=False)
    generate(root, Spec(run_id=RANGES))
    return root


def claims(results: Path, run: str, body: str) -> list[tuple[bool, str, str]]:
    page = render(body, {"runs": {"r": run}}, path="docs/p.md", offset=0,
                  store=RunStore(results))
    return [(c.holds, c.message, c.condition.note) for c in page.claims]


def test_a_certified_block_needs_nothing(results: Path) -> None:
    ((holds, message, note),) = claims(results, PAIRED, CLAIM % "")
    assert holds, message
    assert note == ""  # a reason given where none is needed is not printed
    ((holds, _, note),) = claims(results, PAIRED, CLAIM % REASON)
    assert holds and note == ""


def test_an_uncertified_block_fails_unless_named(results: Path) -> None:
    ((holds, message, _),) = claims(results, ALONE, "A.\n\n" + CLAIM % "")
    assert not holds
    assert message.startswith("docs/p.md:3: claim \"changed is faster\"")
    assert "block callers of r is not certified (no A/A pair)" in message
    ((holds, message, note),) = claims(results, ALONE, CLAIM % REASON)
    assert holds, message
    assert note == "not certified: the run has no A/A pair; the gain is ten times its spread"


def test_a_ranges_rule_run_is_not_checked(results: Path) -> None:
    body = "{{ claim('v1.1 is faster', faster('v1.0', 'v1.1 + cache', block='callers')) }}\n"
    ((holds, message, note),) = claims(results, RANGES, body)
    assert holds, message
    assert note == ""


def test_the_strict_build(tmp_path: Path, results: Path) -> None:
    head = f"---\nruns:\n  r: {ALONE}\n---\n# Alone\n\n"
    with pytest.raises(Failed) as failed:
        build_site(tmp_path, {"index.md": head + CLAIM % ""}, results)
    assert any("docs/index.md:7: claim \"changed is faster\"" in m and "not certified" in m
               for m in failed.value.messages)
    site, _ = build_site(tmp_path / "ok", {"index.md": head + CLAIM % REASON}, results)
    html = (site / "index.html").read_text(encoding="utf-8")
    assert "</span> (not certified: the run has no A/A pair; the gain is ten times its " \
           "spread)" in html

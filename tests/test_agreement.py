"""One verdict per comparison across the live site: two live pages that judge the same
comparison differently fail the build, naming both pages and lines; a superseded page is not
live."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfpages.errors import PerfpagesError
from perfpages.site import agreement, versions
from perfpages.site.agreement import Stated
from perfpages.site.config import Site
from perfpages.site.render import render_site
from perfpages.testing import Spec, generate
from sites import Failed, build_site

GAIN_RUN = "2026-11-02-synthetic-gain"  # v1.1 clearly faster than v1.0
LOSS_RUN = "2026-11-03-synthetic-loss"  # the same builds, v1.1 clearly slower
AGAIN_RUN = "2026-11-04-synthetic-again"  # the same builds, the gain again
BLOCKS: dict[str, list[dict[str, str | int]]] = {"callers": [{"call": "lookup", "callers": 32}]}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("results")
    for run_id, factor, seed in ((GAIN_RUN, 1.3, 1), (LOSS_RUN, 0.7, 2), (AGAIN_RUN, 1.3, 3)):
        generate(root, Spec(run_id=run_id, labels={"v1.0": 1.0, "v1.1": factor},
                            blocks=BLOCKS, windows=1, floors=False, seed=seed, noise=0.01))
    return root


def _page(run: str, title: str, extra: str = "") -> str:
    return (f"---\nruns:\n  r: {run}\n{extra}---\n\n# {title}\n\n"
            "v1.1 against v1.0:\n"
            "{{ change('v1.0', 'v1.1', 'throughput', block='callers') }}\n")


def _stated(page: str, line: int, verdict: str, lo: float, hi: float) -> Stated:
    return Stated(page, line, ("throughput", "a", "case", "b", "case"), verdict, (lo, hi),
                  f"{lo}…{hi} ({verdict})")


def test_the_check_over_ledgers() -> None:
    """Same verdict and overlapping intervals agree; another verdict, or clear intervals apart,
    is one line naming both pages and lines; a page never disagrees with itself."""
    gain = _stated("a.md", 3, agreement.GAIN, 5.0, 12.0)
    assert agreement.check([gain, _stated("b.md", 7, agreement.GAIN, 10.0, 20.0)]) == []
    assert agreement.check([gain, _stated("a.md", 9, agreement.NOT_CLEAR, -1, 1)]) == []
    apart = agreement.check([gain, _stated("b.md", 7, agreement.GAIN, 16.0, 16.0)])
    assert len(apart) == 1 and "a.md:3" in apart[0] and "b.md:7" in apart[0]
    [other] = agreement.check([gain, _stated("b.md", 8, agreement.NOT_CLEAR, 4.5, 4.5),
                               _stated("b.md", 9, agreement.NOT_CLEAR, 4.5, 4.5)])
    assert "b.md:8" in other and "clear gain" in other and "not clear" in other
    assert "\n" not in other


def test_two_live_pages_that_disagree_fail_the_build(results: Path, tmp_path: Path) -> None:
    pages = {"index.md": "# Home\n", "perf/gain.md": _page(GAIN_RUN, "Gain"),
             "perf/loss.md": _page(LOSS_RUN, "Loss")}
    with pytest.raises(Failed) as failed:
        build_site(tmp_path, pages, results)
    lines = [m for m in failed.value.messages if "two live pages must agree" in m]
    assert len(lines) == 1
    # the macro's line in each source (front matter counted)
    assert "docs/perf/gain.md:9" in lines[0] and "docs/perf/loss.md:9" in lines[0]
    assert "clear gain" in lines[0] and "clear loss" in lines[0]
    assert "Traceback" not in lines[0]


def test_perfpages_render_runs_the_same_check(results: Path, tmp_path: Path) -> None:
    """`perfpages render` (strict) fails on the same line, once, with no page written."""
    pages = {"index.md": "# Home\n", "perf/gain.md": _page(GAIN_RUN, "Gain"),
             "perf/loss.md": _page(LOSS_RUN, "Loss")}
    with pytest.raises(Failed):
        build_site(tmp_path, pages, results)  # writes docs/ and mkdocs.yml, then fails
    done = render_site(Site.load(tmp_path / "mkdocs.yml"), tmp_path / "rendered")
    lines = [w for w in done.warnings if "two live pages must agree" in w]
    assert done.problems == [] and len(lines) == 1
    assert "docs/perf/gain.md:9" in lines[0] and "docs/perf/loss.md:9" in lines[0]
    assert not (tmp_path / "rendered").exists()


def test_pages_that_agree_or_are_superseded_pass(results: Path, tmp_path: Path) -> None:
    pages = {"index.md": "# Home\n", "perf/gain.md": _page(GAIN_RUN, "Gain"),
             "perf/again.md": _page(AGAIN_RUN, "Again")}  # another run, the same verdict
    _, logged = build_site(tmp_path, pages, results)
    assert logged == []
    why = 'superseded: {by: gain.md, why: "It read a run whose **v1.1** was misbuilt."}\n'
    pages = {"index.md": "# Home\n", "perf/gain.md": _page(GAIN_RUN, "Gain"),
             "perf/loss.md": _page(LOSS_RUN, "Loss", why)}
    site, logged = build_site(tmp_path, pages, results)
    assert logged == []
    loss = (site / "perf/loss/index.html").read_text(encoding="utf-8")
    assert '<p class="admonition-title">Superseded by gain</p>' in loss
    assert "whose <strong>v1.1</strong> was misbuilt" in loss and 'href="../gain/"' in loss
    assert "Superseded" not in (site / "perf/gain/index.html").read_text(encoding="utf-8")


def test_superseded_on_an_unversioned_page_names_its_replacement() -> None:
    """A plain paragraph must link the page replacing it; the mapping needs by and why."""
    text = versions.notice({"superseded": "It pooled the floors; see [v2](v2.md)."}, "p.md")
    assert text is not None and text.startswith('!!! warning "Superseded"')
    assert "[v2](v2.md)" in text
    assert versions.notice({}, "p.md") is None
    for bad in ("It pooled the floors.", {"by": "v2.md"}, {"why": "x"},
                {"by": "v2.md", "why": "x", "when": 1}):
        with pytest.raises(PerfpagesError) as error:
            versions.notice({"superseded": bad}, "p.md")
        assert "p.md" in str(error.value) and "superseded" in str(error.value)


def test_one_runs_twins_are_two_facts_not_two_readings() -> None:
    """An A/A twin against the base and the original against it, on two pages, from one run:
    each is a fact of that run (the pair's spread), never a disagreement; another run is."""
    from perfpages.site.agreement import Stated, check

    def said(page: str, verdict: str, cells: tuple[str, ...]) -> Stated:
        return Stated(page, 1, ("throughput", "a", "{}", "b", "{}"), verdict, (1.0, 9.0),
                      verdict, cells)

    twin = said("x.md", "not clear", ("r:0.42.0", "r:0.43.0-again"))
    original = said("y.md", "clear gain", ("r:0.42.0", "r:0.43.0"))
    assert check([twin, original]) == []
    other_run = said("z.md", "clear gain", ("s:0.42.0", "s:0.43.0"))
    assert len(check([twin, other_run])) == 1


def test_both_checks_read_one_record_of_where(results: Path) -> None:
    """Where a comparison was first judged is recorded once (`pins.Ledger.lines`, the page's
    line, front matter counted): the agreement check's verdicts and the contrary check's
    failures (`contrary.check` reads the same ledger) name that same line."""
    from perfpages.site import contrary, page
    from perfpages.site.store import RunStore

    source = _page(GAIN_RUN, "Gain") + "\nAgain: {{ change('v1.0', 'v1.1', 'throughput', " \
        "block='callers') }}\n"
    meta, body, offset = page.split(source)
    done = page.render(body, meta, path="docs/perf/gain.md", offset=offset,
                       store=RunStore(results), source=source)
    [stated] = done.stated
    assert stated.line == 9  # the first macro judging it (line 9), not the second (line 11)
    assert not hasattr(contrary, "Ledger") and not hasattr(page.Pins({}), "lines")

"""The reproduction report: a run against a second run of its suite — cells, changes, and every
claim of the pages pinning the run evaluated on the second — in the terminal, as Markdown and
JSON, through `perfpages bench replay RUN --claims-only OTHER`, on performance pages (the
`reproduction` macro, the `reproduced` condition) and on run pages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from perfpages.analysis import decision
from perfpages.analysis import reproduction as analysis
from perfpages.analysis.decision import Cell, Change
from perfpages.archive.manifest import Manifest
from perfpages.archive.reader import open_run
from perfpages.archive.writer import ArchiveWriter
from perfpages.errors import AnalysisError, PerfpagesError
from perfpages.site import page
from perfpages.site import reproduction as repro
from perfpages.site.runpages import RunPages
from perfpages.site.store import RunStore
from perfpages.testing import Spec, generate
from sites import build_site

DEMO = "2026-11-01-synthetic-demo"
AGAIN = "2026-11-02-synthetic-again"  # v1.1 no faster than v1.0: one claim fails on it
SAME = "2026-11-03-synthetic-same"  # the demo's spec, another seed: every claim holds
NO_CACHE = "2026-11-04-synthetic-nocache"  # no "v1.1 + cache" label: the page cannot render
ELSEWHERE = "2026-11-05-other-suite"
REPLAY = "2026-11-06-synthetic-replay"
PAGE = """---
runs:
  demo: 2026-11-01-synthetic-demo
---
# Demo

{{ claim("The cache is faster.", faster("v1.0", "v1.1 + cache", block="callers")) }}

{{ claim("v1.1 is faster.", faster("v1.0", "v1.1", block="callers")) }}
"""
FAILING = ('docs/perf/v1.md:9: "v1.1 is faster." — expected a clear gain of v1.1 over v1.0 '
           "in every cell (throughput); data on the original: callers, call=lookup, "
           "callers=32: +8.5 % (clear gain); callers, call=page, callers=32: +6.3 % (clear "
           f"gain) (holds); on run {AGAIN}: callers, call=lookup, callers=32: +1.1 % "
           "(overlap); callers, call=page, callers=32: −0.5 % (overlap) (does not hold)")
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "COLUMNS": "200"}
HAS_REPLAY_OF = "replay_of" in Manifest.__dataclass_fields__


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny MkDocs project: a page pinning the demo run with two claims, its runs."""
    root = tmp_path_factory.mktemp("project")
    results = root / "results"
    demo = generate(results)
    generate(results, Spec(run_id=AGAIN, seed=8, labels={"v1.0": 1.0, "v1.1": 1.0,
                                                         "v1.1 + cache": 1.25}))
    generate(results, Spec(run_id=SAME, seed=9))
    generate(results, Spec(run_id=NO_CACHE, seed=9, labels={"v1.0": 1.0, "v1.1": 1.08}))
    with ArchiveWriter.create(results, replace(demo.manifest, id=ELSEWHERE, suite="other",
                                               files={})) as writer:
        for window in demo.windows:
            writer.append(window)
        writer.finish("complete")
    (root / "docs" / "perf").mkdir(parents=True)
    (root / "docs" / "perf" / "v1.md").write_text(PAGE, encoding="utf-8")
    (root / "mkdocs.yml").write_text("site_name: t\nplugins: [perfpages]\n", encoding="utf-8")
    (root / "tasks.py").write_text("from perfpages.cli.tasks import ns\n", encoding="utf-8")
    return root


def reproduce(project: Path, second: str, original: str = DEMO) -> dict:
    return page.reproduce(RunStore(project / "results"),
                          repro.Docs.from_mkdocs(project / "mkdocs.yml"), original, second)


def cli(project: Path, *args: str, program: str = "perfpages") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", program, *args, "--results",
                           str(project / "results")], cwd=project, capture_output=True,
                          text=True, env=ENV)


# ---- the decision and the cells and changes ------------------------------------------------

def test_a_cell_reproduces_when_the_ranges_overlap_and_a_change_when_its_verdict_stays() -> None:
    assert decision.reproduces(Cell((1, 2, 3)), Cell((3, 4, 5)))  # touching ranges overlap
    assert not decision.reproduces(Cell((1, 2, 3)), Cell((3.01, 4)))
    gain = Change("throughput", Cell((1, 1, 1, 1, 1)), Cell((2, 2, 2, 2, 2)))
    assert decision.same_verdict(gain, Change("throughput", Cell((1,) * 5), Cell((3,) * 5)))
    assert not decision.same_verdict(gain, Change("throughput", Cell((1,) * 5), Cell((1,) * 5)))
    few = [Change("throughput", Cell((1,) * n), Cell((2,) * n)) for n in (3, 4)]
    assert few[0].verdict != few[1].verdict and decision.same_verdict(*few)
    assert decision.share_holds(7, 10, 0.7) and not decision.share_holds(9, 10, 0.95)
    assert not decision.share_holds(0, 0, 0.0)  # nothing to check holds nothing


def test_every_cell_and_change_of_both_runs_is_compared(project: Path) -> None:
    one, two = open_run(project / "results" / DEMO), open_run(project / "results" / AGAIN)
    data = analysis.compare(one, two)
    a, b = analysis.run_cells(one), analysis.run_cells(two)
    assert len(data["cells"]) == 24  # 3 labels × (2 × 3 metrics + 1 × 2) as the report tables
    for c in data["cells"]:
        key = (c["block"], c["parameters"], c["label"], c["metric"])
        assert c["ratio"] == pytest.approx(b[key].median / a[key].median)
        assert c["overlap"] is decision.reproduces(a[key], b[key])
    summary = data["summary"]
    assert summary["cells_overlap"] == sum(c["overlap"] for c in data["cells"]) == 20
    lookup = {(c["labels"], c["metric"], c["parameters"]): c for c in data["changes"]}
    slower = lookup["v1.1 vs v1.0", "throughput", "call=lookup, callers=32"]
    assert (slower["original"]["verdict"], slower["second"]["verdict"], slower["same"]) == (
        "clear gain", "ranges overlap", False)
    assert lookup["v1.1 + cache vs v1.0", "throughput", "call=lookup, callers=32"]["same"]
    assert summary["changes_same"] == 12 and summary["changes"] == 16
    assert data["lines"][:2] == [f"20 of 24 cells' ranges overlap on run {AGAIN}",
                                 f"12 of 16 changes keep their verdict on run {AGAIN}"]
    assert data["differences"] == [] and not data["replay"]


def test_a_run_of_one_label_has_no_change_to_compare(project: Path) -> None:
    demo = open_run(project / "results" / DEMO).manifest
    one = replace(demo, labels={"v1.0": demo.labels["v1.0"]})
    cells = {("callers", "call=lookup, callers=32", "v1.0", "throughput"): Cell((1, 2, 3))}
    data = analysis.compare_cells(one, cells, replace(one, id=SAME),
                                  {k: Cell((2, 3, 4)) for k in cells})
    assert data["lines"] == [f"1 of 1 cells' ranges overlap on run {SAME}",
                             "no change between labels to compare",
                             "median deviation of the cells' medians: 50 %"]


def test_runs_of_two_suites_or_one_run_twice_are_refused(project: Path) -> None:
    one = open_run(project / "results" / DEMO)
    with pytest.raises(AnalysisError, match=f"run {ELSEWHERE} is of suite 'other'"):
        analysis.compare(one, open_run(project / "results" / ELSEWHERE))
    with pytest.raises(AnalysisError, match="compared with itself"):
        analysis.compare(one, one)


# ---- the claims of the pages ---------------------------------------------------------------

def test_claims_are_counted_and_one_that_fails_is_named_with_both_values(project: Path) -> None:
    data = reproduce(project, AGAIN)
    claims = data["claims"]
    assert (claims["held"], claims["total"], claims["pages"]) == (1, 2, ["docs/perf/v1.md"])
    assert claims["line"] == f"1 of 2 claims hold on run {AGAIN}" == data["lines"][-1]
    held, failed = claims["items"]
    assert (held["line"], held["reproduces"], failed["line"], failed["reproduces"]) == (
        7, True, 9, False)
    assert failed["original"]["holds"] and not failed["second"]["holds"]
    assert repro.failures(data) == [FAILING]
    assert reproduce(project, SAME)["claims"]["line"] == f"2 of 2 claims hold on run {SAME}"


def test_a_page_that_cannot_render_on_the_second_run_does_not_reproduce(project: Path) -> None:
    data = reproduce(project, NO_CACHE)
    assert data["claims"]["held"] == 0 and data["claims"]["total"] == 2
    reason = data["claims"]["items"][0]["reason"]
    assert reason.startswith("the page cannot be rendered on the second run: docs/perf/v1.md:7")
    assert "no label 'v1.1 + cache'" in reason and "\n" not in reason
    assert repro.failures(data)[0].endswith(reason)


def test_a_run_no_page_pins_has_no_claims(project: Path) -> None:
    data = reproduce(project, DEMO, original=SAME)
    assert data["claims"]["line"] == f"no page pins run {SAME}: no claim to evaluate"
    assert repro.failures(data) == []


# ---- the command line ----------------------------------------------------------------------

def test_bench_replay_claims_only_prints_the_report(project: Path) -> None:
    done = cli(project, "bench", "replay", DEMO, "--claims-only", AGAIN)
    assert done.returncode == 0, done.stderr
    assert f"Reproduction of {DEMO} by {AGAIN}" in done.stdout
    assert f"- 1 of 2 claims hold on run {AGAIN}" in done.stdout
    assert f"- {FAILING}" in done.stdout
    data = json.loads(cli(project, "bench.replay", DEMO, "--claims-only", AGAIN,
                          "--format", "json").stdout)
    assert data == json.loads(json.dumps(reproduce(project, AGAIN)))
    md = cli(project, "bench.replay", DEMO, "--claims-only", AGAIN, "--format", "md").stdout
    assert md.startswith(f"# Reproduction of {DEMO} by {AGAIN}\n")
    assert f"- 1 of 2 claims hold on run {AGAIN}" in md
    assert "| docs/perf/v1.md:9 | v1.1 is faster. | holds | does not hold |" in md
    assert "| callers | call=lookup, callers=32 | v1.1 | throughput (/s) |" in md


def test_invoke_runs_the_same_task(project: Path) -> None:
    done = cli(project, "bench.replay", DEMO, "--claims-only", SAME, program="invoke")
    assert done.returncode == 0, done.stderr
    assert f"2 of 2 claims hold on run {SAME}" in done.stdout


def test_fail_on_claims_exits_1_with_a_line_per_claim_that_does_not_reproduce(
        project: Path) -> None:
    failed = cli(project, "bench.replay", DEMO, "--claims-only", AGAIN, "--fail-on", "claims")
    assert failed.returncode == 1
    assert failed.stderr == f"fail: claim does not reproduce: {FAILING}\n"
    kept = cli(project, "bench.replay", DEMO, "--claims-only", SAME, "--fail-on", "claims")
    assert (kept.returncode, kept.stderr) == (0, "")


@pytest.mark.parametrize(("args", "error"), [
    (["nosuch", "--claims-only", AGAIN], "no run 'nosuch'"),
    ([DEMO, "--claims-only", ELSEWHERE], f"run {ELSEWHERE} is of suite 'other'"),
    ([DEMO, "--claims-only", AGAIN, "--format", "html"], "--format: unknown format 'html'"),
    ([DEMO, "--claims-only", AGAIN, "--fail-on", "loss"], "--fail-on: unknown condition"),
])
def test_bad_input_is_one_line(project: Path, args: list[str], error: str) -> None:
    done = cli(project, "bench.replay", *args)
    assert done.returncode == 1
    assert error in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


# ---- pages: the macro and the condition ----------------------------------------------------

MACRO_PAGE = """---
runs:
  a: 2026-11-01-synthetic-demo
  b: 2026-11-02-synthetic-again
---
# Reproduced?

{{ reproduction("a", "b") }}

{{ claim("Half the claims reproduce.", reproduced("a", "b", at_least=0.5)) }}

{{ claim("Nine in ten claims reproduce.", reproduced("a", "b")) }}
"""


def test_the_macro_and_the_condition_read_the_other_pages(project: Path,
                                                          tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "perf").mkdir(parents=True)
    (docs / "perf" / "v1.md").write_text(PAGE)
    (docs / "perf" / "repro.md").write_text(MACRO_PAGE)
    # Another page with the macro and the condition: rendered for the reproduction, it must
    # not recurse, and its own `reproduced` claim is not counted.
    (docs / "perf" / "other.md").write_text(MACRO_PAGE)
    site = repro.Docs(tmp_path, docs)
    store = RunStore(project / "results")
    rendered = page.render_file(docs / "perf" / "repro.md", path="docs/perf/repro.md",
                                store=store, docs=site)
    text = rendered.markdown
    assert f"- 1 of 2 claims hold on run {AGAIN}" in text
    assert "### Cells whose ranges do not overlap" in text
    assert "### Changes whose verdict changed" in text
    # on a page, the claim by its page only: a line number is of no use to a reader
    assert "- " + FAILING.replace("v1.md:9:", "v1.md:").replace('"', "&#34;") in text
    assert [c.holds for c in rendered.claims] == [True, False]
    assert rendered.claims[1].condition.expected == (
        f"at least 90 % of the claims of the pages pinning {DEMO} holding on {AGAIN}")
    assert rendered.claims[1].condition.data.startswith(f"1 of 2 claims hold on run {AGAIN}; "
                                                        "not: docs/perf/v1.md: ")


def test_a_build_reproduces_a_run_once_for_all_its_pages(project: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Every page asking for the same reproduction in one build (one Docs) reads the one made
    first: each would otherwise render every page pinning the run again, twice."""
    docs = tmp_path / "docs"
    (docs / "perf").mkdir(parents=True)
    (docs / "perf" / "v1.md").write_text(PAGE)
    for name in ("repro.md", "other.md"):
        (docs / "perf" / name).write_text(MACRO_PAGE)
    made: list[tuple[str, str]] = []
    claims_on = page.claims_on
    monkeypatch.setattr(page, "claims_on", lambda d, s, a, b: made.append((a, b)) or
                        claims_on(d, s, a, b))
    site, store = repro.Docs(tmp_path, docs), RunStore(project / "results")
    texts = [page.render_file(docs / "perf" / name, path=f"docs/perf/{name}", store=store,
                              docs=site).markdown for name in ("repro.md", "other.md")]
    assert made == [(DEMO, AGAIN)]
    assert all(f"- 1 of 2 claims hold on run {AGAIN}" in text for text in texts)
    page.render_file(docs / "perf" / "repro.md", path="docs/perf/repro.md", store=store,
                     docs=repro.Docs(tmp_path, docs))  # another build: made again
    assert made == [(DEMO, AGAIN)] * 2


SELF_PAGE = f"""---
runs:
  first: {DEMO}
  replay: {AGAIN}
---
# v2

{{{{ claim("v1.1 is faster.", faster("v1.0", "v1.1", run="first", block="callers")) }}}}

{{{{ reproduction("first", "replay") }}}}
"""


def test_the_page_holding_the_macro_counts_its_own_claims(project: Path,
                                                           tmp_path: Path) -> None:
    # A v2 page pinning a run and its replay: how many of its own claims hold on the replay.
    docs = tmp_path / "docs"
    (docs / "perf").mkdir(parents=True)
    (docs / "perf" / "v2.md").write_text(SELF_PAGE)
    rendered = page.render_file(docs / "perf" / "v2.md", path="docs/perf/v2.md",
                                store=RunStore(project / "results"),
                                docs=repro.Docs(tmp_path, docs))
    assert [c.holds for c in rendered.claims] == [True]
    assert f"- 0 of 1 claims hold on run {AGAIN}" in rendered.markdown
    assert "docs/perf/v2.md: &#34;v1.1 is faster.&#34;" in rendered.markdown


def test_a_site_build_renders_the_macro(project: Path, tmp_path: Path) -> None:
    pages = {"perf/v1.md": PAGE, "perf/repro.md": MACRO_PAGE.replace(
        '{{ claim("Nine in ten claims reproduce.", reproduced("a", "b")) }}', "")}
    site, warnings = build_site(tmp_path / "site", pages, project / "results")
    assert warnings == []
    html = (site / "perf" / "repro" / "index.html").read_text()
    assert f"1 of 2 claims hold on run {AGAIN}" in html
    assert "v1.1 is faster." in html


# ---- run pages -----------------------------------------------------------------------------

@pytest.mark.skipif(not HAS_REPLAY_OF, reason="Manifest.replay_of comes with bench.replay")
def test_run_pages_show_replays_and_what_they_reproduced(project: Path,
                                                         tmp_path: Path) -> None:
    results = tmp_path / "results"
    demo = generate(results)
    cache = tmp_path / "cache"
    docs = repro.Docs(project, project / "docs")
    before = RunPages(results, cache, "", docs=docs).entries()
    assert "## Reproduction" not in before[0].markdown
    again = generate(tmp_path / "scratch", Spec(run_id=REPLAY, seed=9))
    with ArchiveWriter.create(results, replace(again.manifest, replay_of=DEMO,  # type: ignore[call-arg]
                                               files={})) as writer:
        for window in again.windows:
            writer.append(window)
        writer.finish("complete")
    original, replay = RunPages(results, cache, "", docs=docs).entries()  # the cache is warm
    assert original.markdown.startswith(before[0].markdown)
    assert f"### [{REPLAY}]({REPLAY}.md)" in original.markdown
    assert "- 24 of 24 cells&#39; ranges overlap on the replay" in original.markdown
    assert f"This run is a replay of [{DEMO}]({DEMO}.md)" in replay.markdown
    assert demo.id == DEMO


def test_a_page_pinning_a_run_and_its_replay_reads_the_run_by_default(tmp_path: Path) -> None:
    results = tmp_path / "results"
    generate(results)
    generate(results, Spec(run_id=AGAIN, seed=8))
    again = generate(tmp_path / "scratch", Spec(run_id=REPLAY, seed=9))
    with ArchiveWriter.create(results, replace(again.manifest, replay_of=DEMO,
                                               files={})) as writer:
        for window in again.windows:
            writer.append(window)
        writer.finish("complete")
    docs = tmp_path / "docs"
    (docs / "perf").mkdir(parents=True)
    body = (f"---\nruns:\n  demo: {DEMO}\n  again: {REPLAY}\n---\n# Demo\n\n"
            '{{ claim("The cache is faster.", faster("v1.0", "v1.1 + cache", '
            'block="callers")) }}\n\n'
            'v1.1: {{ change("v1.0", "v1.1", block="callers") }}\n\n'
            '{{ reproduction("demo", "again") }}\n')
    (docs / "perf" / "v2.md").write_text(body)
    rendered = page.render_file(docs / "perf" / "v2.md", path="docs/perf/v2.md",
                                store=RunStore(results), docs=repro.Docs(tmp_path, docs))
    assert [c.holds for c in rendered.claims] == [True]
    assert "1 of 1 claims hold on the replay" in rendered.markdown  # rendered on it too
    # two runs that are not one another's replay: the page names which one
    (docs / "perf" / "v2.md").write_text(body.replace(REPLAY, AGAIN).replace(
        '{{ reproduction("demo", "again") }}\n', ""))
    with pytest.raises(PerfpagesError, match=r"v2\.md:8: macro: the page pins 2 runs"):
        page.render_file(docs / "perf" / "v2.md", path="docs/perf/v2.md",
                         store=RunStore(results), docs=repro.Docs(tmp_path, docs))
    # ... or its front matter names the page's own run: macros without run= read that one
    two = body.replace(REPLAY, AGAIN).replace('{{ reproduction("demo", "again") }}\n', "")
    own = two.replace("---\n# Demo", "default_run: demo\n---\n# Demo")
    (docs / "perf" / "v2.md").write_text(own)
    named = page.render_file(docs / "perf" / "v2.md", path="docs/perf/v2.md",
                             store=RunStore(results), docs=repro.Docs(tmp_path, docs))
    assert [c.holds for c in named.claims] == [True]
    (docs / "perf" / "v2.md").write_text(own.replace("default_run: demo", "default_run: v3"))
    with pytest.raises(PerfpagesError, match=r"v2\.md: default_run: default_run names no pinned "
                                             r"run: 'v3' — use the alias of a run under runs: "
                                             r"demo, again"):
        page.render_file(docs / "perf" / "v2.md", path="docs/perf/v2.md",
                         store=RunStore(results), docs=repro.Docs(tmp_path, docs))

"""The core of performance pages without MkDocs: code left literal, lines, lint, precision."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from perfpages.analysis.decision import Change
from perfpages.analysis.format import format_percent
from perfpages.archive.reader import open_run
from perfpages.archive.writer import ArchiveWriter
from perfpages.errors import AnalysisError, ComparabilityError
from perfpages.site import lint
from perfpages.site.claims import Conditions
from perfpages.site.facts import Facts
from perfpages.site.macros import Macros
from perfpages.site.page import protect, restore, split
from perfpages.site.pins import Pins
from perfpages.site.store import RunStore
from sites import DEMO, SWEEP, make_results


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_results(tmp_path_factory.mktemp("results"))


def test_code_is_set_aside_line_for_line() -> None:
    body = "a {{ x }}\n\n````md\n```\n{{ y }}\n```\n````\n\nsee `{{ z }}` and ``{{ w }}``\n"
    protected, saved = protect(body)
    assert protected.count("\n") == body.count("\n")
    assert "{{ y }}" not in protected and "{{ z }}" not in protected
    assert "{{ x }}" in protected
    assert restore(protected, saved) == body


def test_a_code_span_in_a_macro_argument_stays_the_macro_s_text() -> None:
    """A claim's sentence may hold a code span: it reaches the macro as typed (set aside, it
    came back as a bare token number); a code span showing a macro is still set aside."""
    body = 'x {{ claim("runs `RESET ALL` now", c()) }} and `{{ table() }}` and `y`\n'
    protected, saved = protect(body)
    assert '"runs `RESET ALL` now"' in protected
    assert "{{ table() }}" not in protected and saved == ["`{{ table() }}`", "`y`"]
    assert restore(protected, saved) == body


def test_split_counts_front_matter_lines() -> None:
    meta, body, offset = split("---\nruns:\n  a: b\n---\n\n\n# Title\n")
    assert meta == {"runs": {"a": "b"}}
    assert body == "# Title\n" and offset == 6


@pytest.mark.parametrize(("text", "figures"), [
    ("A lookup takes 12 ms.", ["12 ms"]),
    ("p99 of 4.6ms, 1,012/s and +8 % and 4x and 3 × and 24 GiB", ["4.6ms", "1,012/s", "+8 %",
                                                                   "4x", "3 ×", "24 GiB"]),
    ("v1.1 on PostgreSQL 18, 1 round, 2026-10-26, 3 of 4", []),
    ("{{ figure('p50') }} and {{ given('0.5 ms') }} and `12 ms` <!-- 3 ms -->", []),
    ("[a](https://example.org/5%20ms) and <span title='7 ms'>x</span>", []),
])
def test_lint_finds_typed_figures_with_units(text: str, figures: list[str]) -> None:
    assert [f.figure for f in lint.check(text)] == figures


@pytest.mark.parametrize(("text", "found"), [
    ("the reference page's v4 measured 7.1, 4.2 and 1.0.",
     [("number", "7.1"), ("number", "4.2"), ("number", "1.0")]),
    ("a delay of 0.5 and −0.25", [("number", "0.5"), ("number", "−0.25")]),
    ("another benchmark started at 11:25:25 UTC, this one at 9:05",
     [("time", "11:25:25 UTC"), ("time", "9:05")]),
    ("it ended 2026-11-30T11:25:25Z and 2026-11-30 22:00", [("time", "2026-11-30T11:25:25Z"),
                                                           ("time", "2026-11-30 22:00")]),
    ("131,380 of them, 5,000 each", [("number", "131,380"), ("number", "5,000")]),
    ("Every one of the 5.0 million requests, 3 thousand more",
     [("number", "5.0 million"), ("number", "3 thousand")]),
    ("across ten releases, Twelve rounds, 12 windows, 1,200 requests",
     [("count", "ten releases"), ("count", "Twelve rounds"), ("count", "12 windows"),
      ("count", "1,200 requests")]),
    ("a dozen runs, two labels, 3 blocks, 2 cells, twenty samples, 40 transactions",
     [("count", "dozen runs"), ("count", "two labels"), ("count", "3 blocks"),
      ("count", "2 cells"), ("count", "twenty samples"), ("count", "40 transactions")]),
    ("hundred round trips, 2 round-trips, 7 statements, 4 verdicts, 9 claims, 3 errors, "
     "2 failures, 5 calls, 1 call",
     [("count", "hundred round trips"), ("count", "2 round-trips"), ("count", "7 statements"),
      ("count", "4 verdicts"), ("count", "9 claims"), ("count", "3 errors"),
      ("count", "2 failures"), ("count", "5 calls")]),
    # not flagged: versions, dates, "one", one in digits, settings and parameters
    ("0.42.0 and 3.11.2 and v1.1 on 2026-11-30, run 2026-12-02-sky-2", []),
    ("one caller, one round, 1 window, 8 cores, 4 workers, 8 threads, 32 clients, "
     "two callers, 100 connections, ten seconds, PostgreSQL 18", []),
    # not prose
    ("{{ figure('p50') }} and {{ given('7.1') }} and `11:25` <!-- ten releases --> "
     "[x](https://example.org/0.5/131,380) <span title='5,000'>x</span> {% set a = 2.5 %}", []),
])
def test_lint_finds_bare_numbers_times_and_counts(text: str,
                                                  found: list[tuple[str, str]]) -> None:
    assert [(f.kind, f.figure) for f in lint.check(text)] == found


def test_lint_lets_pinned_names_and_their_version_prefixes_stand(results: Path) -> None:
    text = "QueryAPIGate 0.43 is faster than 0.43.0+cache and 0.42; 1.1 beats 1.0 by 2.5\n"
    assert [f.figure for f in lint.check(text)] == ["0.43", "0.42", "1.1", "1.0", "2.5"]
    pinned = [RunStore(results).get(DEMO).manifest]  # labels v1.0, v1.1, v1.1 + cache
    names = lint.known(pinned) | {"0.43.0", "0.43"}
    assert {"1.0", "1.1"} <= lint.known(pinned)
    assert [f.figure for f in lint.check(text, names)] == ["0.42", "2.5"]


def test_lint_messages_say_what_to_do() -> None:
    number = lint.message("docs/perf/v4.md", 12, "7.1", "number")
    assert number == ('docs/perf/v4.md:12: lint: bare number "7.1" on a page that pins runs '
                      'looks measured — compute it with a macro (figure, fact, change), or mark '
                      'a number that is not from this page\'s data as {{ given("7.1") }}')
    assert 'count "ten releases"' in lint.message("p.md", 1, "ten releases", "count")
    assert 'fact("started")' in lint.message("p.md", 1, "11:25", "time")


def test_lint_skips_fenced_code_and_reports_lines() -> None:
    text = "ok\n\n```\n12 ms\n7.1 and ten releases\n```\n\nthen 7 ms\n\nnow 7.1\n~~~\n5,000\n~~~\n"
    assert [(f.line, f.figure) for f in lint.check(text)] == [(8, "7 ms"), (10, "7.1")]


def test_claims_decide_on_raw_values_not_on_printed_ones(results: Path) -> None:
    store = RunStore(results)
    pins = Pins({"d": store.get(DEMO)})
    conditions = Conditions(pins)
    (a, b), = pins.pairs("v1.0", "v1.1", metric="throughput", block="callers",
                         where={"call": "lookup"})
    change = Change("throughput", a.cell, b.cell)
    printed = float(format_percent(change.percent).replace("−", "-").strip(" %+"))
    assert printed != change.percent  # the raw change has more digits than the page shows
    lookup = {"where": {"call": "lookup"}, "block": "callers"}
    # A band whose edge the printed figure reaches but the raw change does not: it fails, and
    # the message shows the change with the decimals that tell it from the bound.
    edge = conditions.between(printed - 1, change.percent - 0.001, "v1.0", "v1.1", **lookup)
    assert not edge.holds
    shown = float(edge.data.rpartition(": +")[2].removesuffix(" %"))
    assert shown > change.percent - 0.001


def test_exact_bounds_hold_to_the_precision_printed(results: Path) -> None:
    """between(x, x) states a change as printed: within half a unit of its last decimal."""
    conditions = Conditions(Pins({"d": RunStore(results).get(DEMO)}))
    (a, b), = conditions.pins.pairs("v1.0", "v1.1", metric="throughput", block="callers",
                                    where={"call": "lookup"})
    percent = Change("throughput", a.cell, b.cell).percent  # +8.53 %: prints as +8.5 %
    lookup = {"where": {"call": "lookup"}, "block": "callers"}
    printed = round(percent, 1)
    held = conditions.between(printed, printed, "v1.0", "v1.1", **lookup)
    assert held.holds and "within ±0.05, as printed" in held.expected
    wrong = conditions.between(printed + 0.1, printed + 0.1, "v1.0", "v1.1", **lookup)
    assert not wrong.holds
    assert f"of +{printed + 0.1:.1f} %" in wrong.expected and f"+{printed:.1f} %" in wrong.data
    whole = round(percent)  # digits=0: ±0.5
    assert conditions.between(whole, whole, "v1.0", "v1.1", digits=0, **lookup).holds
    assert not conditions.between(whole + 1, whole + 1, "v1.0", "v1.1", digits=0,
                                  **lookup).holds


def test_claim_messages_print_bounds_as_typed(results: Path) -> None:
    conditions = Conditions(Pins({"d": RunStore(results).get(DEMO)}))
    band = conditions.between(12.5, 13.5, "v1.0", "v1.1 + cache", block="callers")
    assert "between +12.5 % and +13.5 %" in band.expected
    p50 = conditions.pins.select(metric="p50", block="one-caller", label="v1.1")[0].cell.median
    limit = float(f"{p50:.2f}")  # the bound as the page prints the figure
    bound = conditions.below("p50", limit, block="one-caller", label="v1.1")
    value = float(bound.data.rpartition(": ")[2].removesuffix(" ms"))
    assert (value < limit) == bound.holds and value != limit
    assert f"below {limit:.2f} ms" in bound.expected


def test_overlap_and_direction(results: Path) -> None:
    pins = Pins({"d": RunStore(results).get(DEMO)})
    c = Conditions(pins)
    assert c.faster("v1.0", "v1.1 + cache", block="callers").holds
    assert not c.slower("v1.0", "v1.1 + cache", block="callers").holds
    assert not c.overlap("v1.0", "v1.1 + cache", block="callers").holds
    assert c.faster("v1.0", "v1.1 + cache", "p50", block="one-caller").holds  # lower is better


def test_table_with_two_pinned_runs_lists_each_label_once(results: Path) -> None:
    store = RunStore(results)
    macros = Macros(Pins({"d": store.get(DEMO), "s": store.get(SWEEP)}))
    text = macros.table("throughput", rows="call", run="d", block="callers", change="v1.0")
    header = text.strip().split("\n")[0]
    assert header == ("| throughput, per second, by call | v1.0 | v1.1 | v1.1 + cache "
                      "| v1.1 vs v1.0 | v1.1 + cache vs v1.0 |")


def test_the_guide_documents_every_macro_and_condition(results: Path) -> None:
    guide = (Path(__file__).parent.parent / "docs/guide/pages.md").read_text(encoding="utf-8")
    pins = Pins({"d": RunStore(results).get(DEMO)})
    for name in {**Macros(pins).namespace(), **Facts(pins).namespace()}:
        assert f"### {name}\n" in guide, name
    for name in Conditions(pins).namespace():
        assert f"| `{name}(" in guide, name


def test_selection_by_parameter_values_and_bounds(results: Path) -> None:
    pins = Pins({"s": RunStore(results).get(SWEEP)})

    def callers(**filters: object) -> list[object]:
        return [f.params["callers"] for f in pins.select(metric="p99", label="v1.0", **filters)]

    assert callers(up_to={"callers": 4}) == [1, 2, 4]
    assert callers(from_={"callers": 8}) == [8, 16, 32]
    assert callers(where={"callers": 32}) == callers(where={"callers": "32"}) == [32]
    assert callers(where={"call": "lookup"}, up_to={"callers": 1}) == [1]


def test_changes_and_claims_across_two_pinned_runs(results: Path, tmp_path: Path) -> None:
    store = RunStore(results)
    # One run pinned under two aliases: across runs must give what within the run gives.
    twice = Pins({"a": store.get(DEMO), "b": store.get(DEMO)})
    assert Macros(twice).change("a:v1.0", "b:v1.1") == Macros(twice).change("v1.0", "v1.1",
                                                                            run="a")
    held = Conditions(twice).faster("a:v1.0", "b:v1.1")
    assert held.holds and "b:v1.1" in held.expected
    # Two runs pair on block and parameters: the sweep shares one cell with the demo.
    both = Macros(Pins({"d": store.get(DEMO), "s": store.get(SWEEP)}))
    assert both.change("d:v1.0", "s:v1.1").endswith("(clear gain)")
    with pytest.raises(AnalysisError, match="ALIAS:LABEL on both sides"):
        both.change("d:v1.0", "v1.1")
    # Another machine: refused unless the page allows it, naming what differs.
    demo = open_run(results / DEMO)
    moved = replace(demo.manifest, id="2026-11-07-synthetic-moved", files={},
                    machine={**demo.manifest.machine, "cpu": "Other CPU"})
    with ArchiveWriter.create(tmp_path, moved) as writer:
        for window in demo.windows:
            writer.append(window)
        writer.finish("complete")
    mixed = Macros(Pins({"d": store.get(DEMO),
                         "m": RunStore(tmp_path).get("2026-11-07-synthetic-moved")}))
    with pytest.raises(ComparabilityError, match=r"machine\.cpu 'Synthetic CPU"):
        mixed.change("d:v1.0", "m:v1.0")
    assert mixed.change("d:v1.0", "m:v1.0", allow_mixed=True) == \
        "±0.0 % across 3 cells (0 of 3 clear)"


def test_a_damaged_cache_is_read_again_from_the_archive(results: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = RunStore(results, cache).get(DEMO)
    (saved,) = (cache / "cells").glob(f"{DEMO}.*.json")
    for damage in ('{"cells": [', '{"cells": [{"nope": 1}], "floors": []}', "[]"):
        saved.write_text(damage)  # a build killed mid-write by an older version, a stray edit
        again = RunStore(results, cache).get(DEMO)
        assert again.cells == first.cells and again.floors == first.floors
        assert json.loads(saved.read_text())["data"]["cells"]  # rewritten whole


@pytest.mark.parametrize(("macro", "says"), [
    ('figure("throughput", block="callers", label="v1.0", where={"call": "page"}, digits=400)',
     "digits: figure(digits=400): digits is a whole number of decimals from 0 to 12"),
    ('figure("throughput", block="callers", label="v1.0", where={"call": "page"}, digits=-1)',
     "digits: figure(digits=-1)"),
    ('claim("x", between("v1.0", "v1.1", 1, 20, digits=2.5))', "digits: between(digits=2.5)"),
    ('claim("", faster("v1.0", "v1.1"))', "claim: claim() with an empty sentence"),
    ('fact("")', "fact: fact() with an empty key"),
    ('fact("  ")', "fact: fact() with an empty key"),
])
def test_macro_arguments_out_of_bounds_are_the_page_s_line(tmp_path: Path, results: Path,
                                                          macro: str, says: str) -> None:
    from perfpages.errors import PerfpagesError
    from perfpages.site.page import render_file

    page = tmp_path / "v1.md"
    page.write_text(f"---\nruns:\n  demo: {DEMO}\n---\n# x\n\n{{{{ {macro} }}}}\n")
    with pytest.raises(PerfpagesError) as caught:
        render_file(page, path="docs/x/v1.md", store=RunStore(results))
    assert str(caught.value).startswith(f"docs/x/v1.md:7: {says}")
    # within bounds, the same macro renders
    page.write_text(f"---\nruns:\n  demo: {DEMO}\n---\n# x\n\n"
                    '{{ figure("throughput", block="callers", label="v1.0", '
                    'where={"call": "page"}, digits=12) }}\n')
    assert "813.666666666667/s" in render_file(page, path="docs/x/v1.md",
                                               store=RunStore(results)).markdown


def test_a_table_names_the_parameter_its_rows_or_columns_are(results: Path,
                                                               tmp_path: Path) -> None:
    """Rows of bare values ("32") say which parameter they are; so do such columns."""
    from perfpages.site.page import render_file

    page = tmp_path / "v1.md"
    page.write_text(f"---\nruns:\n  demo: {DEMO}\n---\n# x\n\n"
                    '{{ table("throughput", rows="callers", block="callers", '
                    'where={"call": "page"}) }}\n\n'
                    '{{ table("throughput", rows="label", columns="callers", block="callers", '
                    'where={"call": "page"}) }}\n\n'
                    '{{ table("throughput", block="callers") }}\n')
    text = render_file(page, path="docs/x/v1.md", store=RunStore(results)).markdown
    heads = [line for line in text.splitlines() if line.startswith("| throughput")]
    # In words with units, never field names (analysis/metric.py's titles).
    assert heads == ["| throughput, per second, by concurrent callers | v1.0 | v1.1 "
                     "| v1.1 + cache |",
                     "| throughput, per second | concurrent callers 32 |",
                     "| throughput, per second | v1.0 | v1.1 | v1.1 + cache |"]

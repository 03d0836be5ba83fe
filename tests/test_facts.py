"""Provenance, floors and diagnostics on a page: fact, settings, floor, drift, diagnostic,
statements, plan, and the conditions saturated and drifted — over archives the real writer wrote."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from perfpages.archive.reader import open_run
from perfpages.archive.window import Window
from perfpages.archive.writer import ArchiveWriter
from perfpages.errors import AnalysisError
from perfpages.site import runpages
from perfpages.site.claims import Conditions
from perfpages.site.facts import Facts, lookup
from perfpages.site.page import render
from perfpages.site.pins import Pins
from perfpages.site.store import RunStore
from sites import DEMO, SWEEP, make_results

SIZED = "2026-11-07-synthetic-sized"
SUMMARY = {"database": {"buffer_hit_ratio": 0.987654, "blks_read": 12.0},
           "statements": {"by_total_time": [
               {"query": "SELECT * FROM t WHERE id = $1", "calls": 1200, "total_ms": 42.5,
                "mean_ms": 0.0354, "rows": 1200, "shared_blks_hit": 3600,
                "shared_blks_read": 2},
               {"query": "SELECT <b>count(*)</b> FROM t", "calls": 3, "total_ms": 9.0,
                "mean_ms": 3.0, "rows": 3, "shared_blks_hit": 30, "shared_blks_read": 0}]}}
PLAN = [{"Plan": {"Node Type": "Index Scan", "Relation Name": "t", "Index Name": "t_pkey",
                  "Plan Rows": 1, "Actual Rows": 1.0, "Actual Loops": 1,
                  "Actual Total Time": 0.021, "Shared Hit Blocks": 3, "Shared Read Blocks": 0,
                  "Index Cond": "(id = 42)"},
         "Planning Time": 0.05, "Execution Time": 0.031}]


# as archived by a run on a build machine: its directories are of no use to a reader
MACHINE_COMMAND = ("perfpages bench.run --suite demo --suites /home/ci/repo/benchmarks "
                   "--results=/home/ci/repo/results --labels v1.0 /home/ci/repo/extra.sql")


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The synthetic runs, plus one whose v1.1 label carries settings, whose floor after the
    block doubled, and which has diagnostics for (callers, v1.0)."""
    root = make_results(tmp_path_factory.mktemp("results"))
    demo = open_run(root / DEMO)
    labels = dict(demo.manifest.labels)
    labels["v1.1"] = replace(labels["v1.1"], pg_settings={"shared_buffers": "1GB",
                                                         "max_parallel_workers": "32"})
    with ArchiveWriter.create(root, replace(demo.manifest, id=SIZED, labels=labels, files={},
                                            command=MACHINE_COMMAND)) as writer:
        for w in demo.windows:
            if w.kind == "floor" and w.block == "callers" and w.params["position"] == "after":
                w = replace(w, metrics={"tps": w.metrics["tps"] * 2})
            writer.append(w)
        writer.write_file("diagnostics/callers/v1.0/summary.json", json.dumps(SUMMARY))
        writer.write_file("diagnostics/callers/v1.0/explain-lookup.json", json.dumps(PLAN))
        writer.finish("complete")
    return root


def facts(results: Path, run: str) -> Facts:
    return Facts(Pins({"r": RunStore(results).get(run)}))


def test_lookup_matches_keys_that_hold_dots() -> None:
    data = {"labels": {"v1.1": {"pin": {"kind": "git"}}},
            "s": {"pg_stat_statements.track": "top"}, "l": [{"a": 1}]}
    assert lookup(data, "labels.v1.1.pin.kind", "x") == "git"
    assert lookup(data, "s.pg_stat_statements.track", "x") == "top"
    assert lookup(data, "l.0.a", "x") == 1
    with pytest.raises(AnalysisError, match=r"no 'v2' under labels of x — use one of: v1\.1"):
        lookup(data, "labels.v2.pin", "x")


def test_fact_prints_run_json_values(results: Path) -> None:
    f = facts(results, DEMO)
    assert f.fact("machine.cores") == "2"
    assert f.fact("method.seed") == "7"
    assert f.fact("machine.memory_gib") == "24"
    assert f.fact("machine.name").endswith(", 2 cores, 24 GiB, kernel synthetic")
    assert f.fact("labels.v1.1.pin.kind") == "git"
    assert f.fact("labels.v1.1 + cache.env") == "DEMO&#95;CACHE&#95;TTL=5"
    assert f.fact("method.drift_threshold", percent=True) == "10 %"
    assert f.false_positive_rate() == "0.79 %"  # 5 rounds: 2/C(10,5)
    with pytest.raises(AnalysisError, match="no 'gpu' under machine"):
        f.fact("machine.gpu")


def test_the_command_prints_as_a_reader_types_it(results: Path) -> None:
    typed = "perfpages bench.run --suite demo --labels v1.0 extra.sql"
    assert facts(results, SIZED).fact("command") == typed
    page = runpages.render(open_run(results / SIZED), "https://x.org/")
    assert "/home/ci" not in page and page.count(typed) == 2  # the command row, the replay


def test_fact_counts_a_mapping_or_a_list(results: Path) -> None:
    f = facts(results, DEMO)
    assert f.fact("labels", count=True) == "3"  # v1.0, v1.1, v1.1 + cache
    assert f.fact("blocks", count=True) == str(len(RunStore(results).get(DEMO).manifest.blocks))
    with pytest.raises(AnalysisError, match="a single value, nothing to count"):
        f.fact("machine.cores", count=True)


def test_settings_table_shows_what_each_label_sets(results: Path) -> None:
    table = facts(results, SIZED).settings(label=["v1.0", "v1.1"]).strip().split("\n")
    assert table[0] == "| setting | v1.0 | v1.1 |"
    assert table[2] == "| <code>shared&#95;buffers</code> | default | <code>1GB</code> |"
    assert len(table) == 4
    assert "No label sets an environment variable" in facts(results, SIZED).settings(
        label="v1.0", env=True)
    with pytest.raises(AnalysisError, match="no label 'v9'"):
        facts(results, SIZED).settings(label="v9")


def test_floor_and_drift_follow_the_report(results: Path) -> None:
    steady, moved = facts(results, DEMO), facts(results, SIZED)
    assert "within the 10 % threshold" in steady.drift(block="callers")
    assert moved.drift(block="callers") == "+100 % (beyond the 10 % threshold)"
    def rate(f: Facts, position: str) -> float:
        return float(f.floor(position, block="callers").removesuffix("/s").replace(",", ""))

    assert rate(moved, "before") == rate(steady, "before")
    assert rate(moved, "after") == pytest.approx(2 * rate(steady, "after"), abs=1)
    with pytest.raises(AnalysisError, match="floors around 2 blocks"):
        moved.drift()
    cond = Conditions(Pins({"r": RunStore(results).get(SIZED)}))
    assert cond.drifted(block="callers").holds
    assert not Conditions(Pins({"r": RunStore(results).get(DEMO)})).drifted(
        block="one-caller").holds


def test_diagnostics_statements_and_plans(results: Path) -> None:
    f = facts(results, SIZED)
    assert f.diagnostic("database.buffer_hit_ratio", percent=True, digits=1) == "98.8 %"
    assert f.diagnostic("statements.by_total_time.0.calls") == "1,200"
    lines = f.statements(top=1).strip().split("\n")
    assert lines[0].startswith("| # | calls | total (ms)")
    assert lines[2] == "| 1 | 1,200 | 42.5 | 0.0354 | 1,200 | 3,600 | 2 |"
    assert lines[4:] == ["```text", "1. SELECT * FROM t WHERE id = $1", "```"]
    # A statement's text sits in a fenced block, where Markdown shows it literally.
    assert "```text\n1. SELECT * FROM t WHERE id = $1\n2. SELECT <b>count(*)</b> FROM t\n```" \
        in f.statements()
    plan = f.plan("lookup")
    assert "Index Scan on t using t_pkey: 1 rows (1 planned), 0.021 ms, buffers hit 3" in plan
    assert "Index Cond: (id = 42)" in plan and "execution 0.031 ms" in plan
    with pytest.raises(AnalysisError, match="use file= one of: explain-lookup, summary"):
        f.plan("cone")
    with pytest.raises(AnalysisError, match="no per-block diagnostics"):
        facts(results, DEMO).diagnostic("database")


def test_saturated_holds_only_past_the_knee(results: Path) -> None:
    # The sweep's throughput is flat from 2 callers while its latency grows with them.
    cond = Conditions(Pins({"s": RunStore(results).get(SWEEP)}))
    assert cond.saturated(2, 32, x="callers", label="v1.0").holds
    early = cond.saturated(1, 2, x="callers")
    assert not early.holds and early.data.startswith("callers, v1.0: throughput +")
    with pytest.raises(AnalysisError, match="no cells of 'throughput' match call=lookup, "
                                            "callers=3"):
        cond.saturated(2, 3, x="callers", label="v1.0")


def test_a_page_uses_the_new_macros_and_conditions(results: Path) -> None:
    body = ("Run on {{ fact('machine.cores') }} cores.\n\n"
            "{{ claim('the floor moved', drifted(block='callers')) }}\n")
    out = render(body, {"runs": {"r": SIZED}}, path="docs/p.md", offset=3,
                 store=RunStore(results))
    assert "Run on 2 cores." in out.markdown
    assert [(c.line, c.holds) for c in out.claims] == [(6, True)]


def test_chart_colours_follow_the_page_scheme_not_the_os() -> None:
    """Material puts the reader's scheme on <body>: the OS-dark fallback must not override a
    light page (pale dark-scheme colours on white), nor a claim stay unmarked."""
    from perfpages.site.charts import STYLE

    fallback = STYLE[STYLE.index("@media (prefers-color-scheme: dark)"):]
    assert fallback.split("{")[1].strip() == "body:not([data-md-color-scheme])"
    assert ".perfpages-claim {" in STYLE


HEALTH = "2026-11-07-synthetic-health"


def refloored(results: Path, run_id: str, floors: Callable[[Window], list[Window]]) -> None:
    """DEMO archived again as `run_id`, each floor window replaced by `floors(window)`."""
    demo = open_run(results / DEMO)
    with ArchiveWriter.create(results, replace(demo.manifest, id=run_id, files={})) as writer:
        for w in demo.windows:
            for kept in (floors(w) if w.kind == "floor" else [w]):
                writer.append(kept)
        writer.finish("complete")


@pytest.fixture(scope="module")
def two_floors(results: Path) -> Path:
    """DEMO again, its floors archived as an HTTP block's are: pgbench's as throughput, and a
    /health floor (a fifteenth of the rate) beside them, which doubles after the block."""
    def http(w: Window) -> list[Window]:
        rate, twice = w.metrics["tps"], 2 if w.params["position"] == "after" else 1
        return [replace(w, metrics={"throughput": rate}),
                replace(w, params={**w.params, "floor": "health", "callers": 8},
                        metrics={"throughput": rate / 15 * twice})]

    refloored(results, HEALTH, http)
    return results


SECONDS = "2026-11-07-synthetic-seconds"


def test_a_floors_seconds_are_its_values(results: Path) -> None:
    """A floor measured as one-second windows is a cell of its seconds: its median and range
    decide drift, as method.md states; a mean of the seconds would be one value a side, and
    +18 % between the medians would then be drift although the ranges overlap."""
    from perfpages.analysis import reading, report
    from perfpages.analysis.tidy import Tidy

    seconds = {"before": (100.0, 130.0, 90.0, 120.0), "after": (125.0, 140.0, 115.0, 135.0)}
    refloored(results, SECONDS, lambda w: [replace(w, window=i, metrics={"tps": rate})
                                          for i, rate in enumerate(seconds[w.params["position"]])])
    run = open_run(results / SECONDS)
    [d] = [d for d in reading.floors(run, Tidy.of(run)) if d["block"] == "callers"]
    assert (d["before"], d["after"], d["min"], d["max"]) == (110.0, 130.0, 90.0, 140.0)
    assert d["flagged"] is False and "drift" not in " ".join(report.build(run)["warnings"])
    assert report.drift_line(d) == "- callers: tps floor 110/s (90–130) before, 130/s " \
        "(115–140) after (+18 %)"
    found = facts(results, SECONDS)
    assert found.floor(block="callers") == "110/s (90–130)"
    assert found.drift(block="callers") == "+18 % (beyond the 10 % threshold, within the " \
        "ranges of the floors: no drift)"
    assert not Conditions(Pins({"r": RunStore(results).get(SECONDS)})).drifted(
        block="callers").holds


def test_the_pgbench_and_health_floors_are_never_pooled(two_floors: Path) -> None:
    from perfpages.analysis import reading, report
    from perfpages.analysis.tidy import Tidy

    steady, both = facts(two_floors, DEMO), facts(two_floors, HEALTH)
    # the pgbench floor reads as before; the /health floor is its own cell
    assert both.floor(block="callers") == steady.floor(block="callers")
    assert both.drift(block="callers") == steady.drift(block="callers")
    assert both.drift(block="callers", kind="health") == "+100 % (beyond the 10 % threshold)"
    health = float(both.floor(block="callers", kind="health").removesuffix("/s")
                   .replace(",", ""))
    pgbench = float(both.floor(block="callers").removesuffix("/s").replace(",", ""))
    assert health == pytest.approx(pgbench / 15, rel=0.01)
    cond = Conditions(Pins({"r": RunStore(two_floors).get(HEALTH)}))
    assert cond.drifted(block="callers", kind="health").holds
    assert cond.drifted(block="callers").holds == Conditions(
        Pins({"r": RunStore(two_floors).get(DEMO)})).drifted(block="callers").holds
    with pytest.raises(AnalysisError, match="no 'health' floor around block 'callers'"):
        steady.floor(block="callers", kind="health")
    run = open_run(two_floors / HEALTH)
    entries = [(d["block"], d["floor"])
               for d in reading.floors(run, Tidy.of(run, kinds=("floor",)))]
    assert ("callers", "pgbench") in entries and ("callers", "health") in entries
    assert entries.index(("callers", "pgbench")) < entries.index(("callers", "health"))
    lines = [report.drift_line(d) for d in reading.floors(run, Tidy.of(run, kinds=("floor",)))]
    assert any("/health floor" in line for line in lines)

"""Statement and plan differences between two labels of a block: over the archived
QueryAPIGate run (summaries of the top-10 era), over synthetic archives the real writer wrote
(bad and missing diagnostics), and over a small real run whose labels plan a lookup apart."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from perfpages.analysis import plans
from perfpages.analysis.statements import Differences, compare, differences, normalise
from perfpages.archive.reader import Run, open_run
from perfpages.archive.statements import LabelStatements, Statement, read_label, served
from perfpages.archive.writer import ArchiveWriter
from perfpages.errors import ArchiveError
from perfpages.run.collect import plannable
from perfpages.run.runner import Options, run
from perfpages.site.statements import changes_table, shorten
from sites import DEMO, make_results, quiet

ROOT = Path(__file__).resolve().parent.parent
QUERYAPIGATE = ROOT / "results" / "2026-12-02-queryapigate-2"
INFO_SCHEMA = "information_schema"


@pytest.fixture(scope="module")
def gate() -> Run:
    return open_run(QUERYAPIGATE)


def by_text(diff: Differences, needle: str) -> list:
    return [c for c in diff.changes if needle in c.query]


def test_release_change_per_call_served(gate: Run) -> None:
    d = differences(gate, "calls", "0.42.0", "0.43.0")
    # HTTP counters span the warm-up and measured windows, re-measured ones included.
    assert d.archived and d.served == (80240, 83516)
    # 0.42.0 ranked nine statements (all it ran); 0.43.0 ten: maybe not all of them.
    assert not d.complete and d.partial == ("0.43.0",) and "0.43.0" in d.coverage
    assert len(d.changes) == 12  # the union of both summaries, each statement once
    (timeout,) = by_text(d, "statement_timeout")
    assert timeout.base and timeout.head and timeout.base.statements == 1.0
    assert timeout.head.statements == 1.0  # one per request: served counts what the DB saw
    assert {c.query: c.kind for c in d.changes if c.kind in ("added", "unranked")} == {
        "SET LOCAL DateStyle = $1": "added", "RESET ALL": "added",
        "SET LOCAL search_path = $1": "added", "BEGIN": "unranked", "COMMIT": "unranked"}
    deltas = [abs(c.delta_ms) for c in d.changes]
    assert deltas == sorted(deltas, reverse=True)
    assert all(c.plan == () for c in d.changes)  # that run archived no generic plans


def test_cache_label_reads_the_metadata_less_often(gate: Run) -> None:
    d = differences(gate, "calls", "0.43.0-quiet", "0.43.0+cache")
    metadata = by_text(d, INFO_SCHEMA)
    assert len(metadata) == 2 and all(c.base and c.head for c in metadata)
    for c in metadata:
        assert c.head.statements < 0.8 * c.base.statements  # type: ignore[union-attr]
        assert c.kind == "cheaper" and c.queryids[0] == c.queryids[1]
    text = changes_table(d, top=3)
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) == 4 and rows[0].startswith("| # | statement | change | µs per call")
    assert "information&#95;schema" in text and "_" not in "".join(rows[1:]).replace("&#95;", "")
    assert "100,264 by 0.43.0-quiet and 126,889 by 0.43.0+cache" in text
    assert "0.000987 → 0.000764" in text  # three figures, even once per thousand calls
    assert "top 10 statements" in text


def test_shorten_keeps_what_tells_statements_apart() -> None:
    q = ("SELECT aid, bid, abalance, filler FROM pgbench_accounts WHERE aid >= $1 "
         "ORDER BY aid LIMIT $2")
    assert shorten(q).startswith("SELECT … FROM pgbench_accounts WHERE aid >= $1")
    assert shorten("SELECT $1") == "SELECT $1"
    cut = shorten("UPDATE t SET " + "x = 1, " * 40)
    assert len(cut) <= 72 and cut.endswith("x…")


def statements(label: str, rows: list[tuple[str, str, float, float]], served_calls: int = 100,
               complete: bool = True) -> LabelStatements:
    return LabelStatements("b", label, f"{label}/summary.json", tuple(
        Statement(qid, q, calls, ms, calls, 2 * calls, 0) for qid, q, calls, ms in rows),
        served=served_calls, complete=complete)


def test_matching_kinds_and_tolerance() -> None:
    base = statements("a", [("1", "SELECT v FROM t WHERE id = $1", 100, 10.0),
                            ("2", "SELECT x FROM u WHERE k IN ($1 /*, ... */)", 50, 5.0),
                            ("3", "BEGIN", 100, 1.0), ("4", "SELECT 1", 10, 1.0)])
    head = statements("b", [("1", "SELECT v FROM t WHERE id = $1", 100, 10.2),
                            ("9", "select x  from u where k in ($2)", 100, 2.0),
                            ("5", "SET x = $1", 200, 3.0), ("4", "SELECT 1", 10, 2.0)],
                      served_calls=200)
    kinds = {c.queryids: (c.kind, round(c.delta_ms, 4)) for c in compare(base, head)}
    assert kinds == {("1", "1"): ("cheaper", -0.049), ("2", "9"): ("cheaper", -0.04),
                     ("3", ""): ("removed", -0.01), ("", "5"): ("added", 0.015),
                     ("4", "4"): ("same", 0.0)}  # 0.01 ms per call either way
    unsure = compare(replace(base, complete=False), replace(head, complete=False))
    assert {c.kind for c in unsure if "" in c.queryids} == {"unranked"}
    assert normalise("SELECT  $12 /* x */ FROM T") == normalise("select $1 from t")


def plan(node: dict, **top: object) -> list[dict]:
    return [{"Plan": node, **top}]


def test_plan_differences_name_the_nodes() -> None:
    seq = {"Node Type": "Seq Scan", "Relation Name": "pgbench_accounts", "Total Cost": 9.0}
    idx = {"Node Type": "Index Scan", "Relation Name": "pgbench_accounts",
           "Index Name": "pgbench_accounts_pkey", "Total Cost": 1.0}
    assert plans.differences(plan(seq), plan(idx)) == [
        "Seq Scan on pgbench_accounts → Index Scan using pgbench_accounts_pkey on "
        "pgbench_accounts"]
    assert plans.differences(plan(seq), plan({**seq, "Total Cost": 3.0})) == []  # costs move
    hashed = {"Node Type": "Aggregate", "Strategy": "Hashed", "Plans": [seq]}
    sorted_ = {"Node Type": "Aggregate", "Strategy": "Sorted",
               "Plans": [{"Node Type": "Sort", "Plans": [seq]}]}
    assert plans.differences(plan(hashed), plan(sorted_)) == [
        "HashAggregate → GroupAggregate", "+ Sort"]
    join = {"Node Type": "Hash Join", "Join Type": "Left", "Plans": [seq, idx]}
    assert plans.shape(plan(join))[0] == "Hash Left Join"
    assert plans.shape({"not": "a plan"}) == []
    many = {"Node Type": "Append", "Plans": [seq] * 10}
    lines = plans.differences(plan({"Node Type": "Result"}), plan(many))
    assert len(lines) == plans.MAX_LINES and lines[-1] == "… and 6 more"


def test_plannable_statements() -> None:
    assert plannable("  with x as (select 1) select * from x") and plannable("DELETE FROM t")
    assert not any(map(plannable, ("BEGIN", "SET LOCAL a = $1", "COPY t FROM STDIN",
                                   "SELECTED", "RESET ALL")))


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The synthetic run again, with a summary for v1.0, a broken one for `v1.1 + cache`, and
    none for v1.1."""
    root = make_results(tmp_path_factory.mktemp("results"))
    source = open_run(root / DEMO)
    run_id = "2026-11-09-synthetic-statements"
    summary = {"statements": {"all": [
        {"queryid": "7", "query": "SELECT * FROM t WHERE id = $1", "calls": 30, "total_ms": 3.0,
         "rows": 30, "shared_blks_hit": 90, "shared_blks_read": 1}], "all_omitted": 0}}
    broken = {"statements": {"by_total_time": [{"query": "SELECT 1", "calls": "many"}]}}
    with ArchiveWriter.create(root, replace(source.manifest, id=run_id, files={})) as writer:
        for w in source.windows:
            writer.append(w)
        writer.write_file("diagnostics/callers/v1.0/summary.json", json.dumps(summary))
        writer.write_file("diagnostics/callers/v1.1-+-cache/summary.json", json.dumps(broken))
        writer.write_file("diagnostics/one-caller/v1.0/summary.json", "{not json")
        writer.finish("complete")
    return root / run_id


def test_missing_and_bad_diagnostics_are_one_line(demo: Path) -> None:
    r = open_run(demo)
    d = differences(r, "callers", "v1.0", "v1.1")
    assert not d.archived and "archived no statements for callers/v1.1" in d.reason
    assert changes_table(d).strip() == d.reason
    found = read_label(r, "callers", "v1.0")
    assert found and found.complete and found.served == served(r.windows, "callers", "v1.0",
                                                              http=True) > 0
    for args, needle in [(("callers", "v1.0", "v1.1 + cache"),
                          "v1.1-+-cache/summary.json: statements.by_total_time.0.calls: calls "
                          "is not a count"),
                         (("one-caller", "v1.0", "v1.1"), "one-caller/v1.0/summary.json: not JSON"),
                         (("callers", "v1.0", "v9"), "no label 'v9'"),
                         (("nope", "v1.0", "v1.1"), "no block 'nope'")]:
        with pytest.raises(ArchiveError) as err:
            differences(r, *args)
        assert needle in str(err.value) and "\n" not in str(err.value) and " — " in str(err.value)


NOTES = "SELECT count(*) FROM notes WHERE id = $1"
HIDDEN = '    conn.execute("CREATE SCHEMA hidden")\n' \
    '    conn.execute("CREATE TABLE hidden.notes (id integer PRIMARY KEY)")\n'


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny suite with label b planning without index scans, and a statement the harness
    cannot plan: it reads a table of a schema only the subject's search_path names."""
    bench = tmp_path_factory.mktemp("bench")
    shutil.copytree(ROOT / "benchmarks" / "tiny", bench / "tiny")
    with (bench / "tiny" / "lookup.sql").open("a") as fh:
        fh.write("SET search_path = hidden, public;\nSELECT count(*) FROM notes WHERE id = :id;\n")
    source = (ROOT / "benchmarks" / "tiny.py").read_text()
    source = source.replace('pg_settings={"work_mem": "8MB"}', 'pg_settings={'
                            '"enable_indexscan": "off", "enable_bitmapscan": "off"}')
    drop = '    conn.execute("DROP TABLE IF EXISTS items")\n'
    (bench / "tiny.py").write_text(source.replace(drop, HIDDEN + drop))
    return run(Options(suite="tiny", benchmarks=bench, results=tmp_path_factory.mktemp("r"),
                       seed=3, command="invoke bench.run --suite tiny"), quiet())


@pytest.mark.postgres
def test_a_real_run_archives_every_statement_and_generic_plans(planned: Path) -> None:
    r = open_run(planned)
    summary = json.loads((planned / "diagnostics/lookup/b/summary.json").read_text())
    every = {s["query"]: s for s in summary["statements"]["all"]}
    lookup = every["SELECT v FROM items WHERE id = $1"]
    assert set(lookup) == {"queryid", "query", "calls", "total_ms", "rows", "shared_blks_hit",
                           "shared_blks_read"}
    assert summary["statements"]["all_omitted"] == 0 and summary["statements"]["by_mean_time"]
    # pgbench's counters span the measured windows only (the snapshot follows the warm-up).
    assert summary["served"] == served(r.windows, "lookup", "b", http=False) > 0
    assert lookup["calls"] == every[NOTES]["calls"] == summary["served"]
    assert summary["statement_plans"] == {lookup["queryid"]: f"plan-{lookup['queryid']}.json"}
    # Not plannable (SET) is never tried; what fails to plan says why, in a line.
    assert summary["statement_plan_errors"] == {
        every[NOTES]["queryid"]: 'relation "notes" does not exist'}
    kept = json.loads((planned / "diagnostics/lookup/b" / summary["statement_plans"][
        lookup["queryid"]]).read_text())
    assert plans.shape(kept) == ["Seq Scan on items"] and "Actual Rows" not in json.dumps(kept)
    assert plans.shape(json.loads(next((planned / "diagnostics/lookup/a").glob(
        "plan-*.json")).read_text())) == ["Index Scan using items_pkey on items"]
    d = differences(r, "lookup", "a", "b", tolerance=0.0)  # every change shows its plan
    assert d.archived and d.complete and not d.coverage and len(d.changes) == 3
    (change,) = by_text(d, "FROM items")
    assert change.base and change.head and change.base.statements == 1.0
    assert change.kind in ("cheaper", "dearer")  # no tolerance: only equal times are `same`
    assert change.plan == ("Index Scan using items_pkey on items → Seq Scan on items",)
    assert "plan: Index Scan using items&#95;pkey on items → Seq Scan on items" in \
        changes_table(d)


def test_the_site_s_loaded_run_counts_the_same(gate: Run) -> None:
    """A run as the site holds it (path and manifest, no windows) gives the same answer."""
    from perfpages.site.store import RunStore

    loaded = RunStore(QUERYAPIGATE.parent).get(QUERYAPIGATE.name)
    assert not hasattr(loaded, "windows")
    d = differences(loaded, "calls", "0.43.0-quiet", "0.43.0+cache")
    assert d == differences(gate, "calls", "0.43.0-quiet", "0.43.0+cache")


def test_a_claim_on_how_often_a_statement_runs_per_call() -> None:
    """statement(): queryapigate-2's metadata queries (information_schema) run about once in a
    thousand calls; `SET LOCAL statement_timeout` once per call; bounds decide, messages say."""
    from perfpages.errors import AnalysisError
    from perfpages.site.claims import Conditions
    from perfpages.site.pins import Pins
    from perfpages.site.store import RunStore

    pins = Pins({"q": RunStore(ROOT / "results").get("2026-12-02-queryapigate-2")})
    statement = Conditions(pins).namespace()["statement"]
    rare = statement("information_schema", label="0.43.0+cache", block="calls", at_most=0.01)
    assert rare.holds and "per call (2 statements)" in rare.data, rare.data
    every = statement("set local statement_timeout", label="0.43.0", block="calls",
                      at_least=0.99, at_most=1.01)
    assert every.holds, every.data
    assert not statement("information_schema", label="0.42.0", block="calls", at_least=1).holds
    gone = statement("no_such_table", label="0.43.0-noaccess", block="calls", at_most=0)
    assert not gone.holds and "an absence proves nothing" in gone.data  # top-10 lists only
    with pytest.raises(AnalysisError, match="at_most= or at_least="):
        statement("x", label="0.42.0", block="calls")

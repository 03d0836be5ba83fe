"""Issue 37: published tables keep their verdicts. A summary imported with the rounds and rule
its source states is judged by that rule on the given ranges, said as the source's rule; the
source's builds, settings and method are recorded and shown; any table a page publishes can be
imported; claims read as the page prints them. Everything through the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sites import Failed, build_site, perfpages

SOURCE = ["--title", "QueryAPIGate performance, v4", "--unpublished",
          "the QueryAPIGate maintainers, by e-mail", "--date", "2026-10-28"]
RULE = ["--rounds", "5", "--rule", "ranges"]
# The reference page's first results table, as it prints it ("1,012" included).
CALLERS = """\
label,call,throughput median (/s),throughput min (/s),throughput max (/s)
v0.42.0,plain,786,751,829
0.43,plain,852,827,892
0.43 + cache,plain,"1,012",991,"1,043"
v0.42.0,governed,738,713,771
0.43,governed,809,803,856
0.43 + cache,governed,964,956,992
v0.42.0,page,682,661,694
0.43,page,725,710,758
0.43 + cache,page,835,833,873
v0.42.0,write,793,764,836
0.43,write,850,832,887
0.43 + cache,write,"1,002",999,"1,046"
"""


def _import(tmp_path: Path, text: str, *args: str, name: str = "callers.csv",
            ok: bool = True) -> tuple[Path, str]:
    (tmp_path / name).write_text(text, encoding="utf-8")
    results = tmp_path / "results"
    done = perfpages("import", str(tmp_path / name), *args, "--results", str(results))
    if not ok:
        assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
        assert "Traceback" not in done.stderr
        return results, done.stderr
    assert done.returncode == 0, done.stderr
    run = max((p for p in results.iterdir() if not p.name.startswith(".")),
              key=lambda p: p.stat().st_mtime)
    return run, done.stdout


def _report(run: Path) -> str:
    shown = perfpages("bench.report", "--run", run.name, "--results", str(run.parent),
                      "--format", "md")
    assert shown.returncode == 0, shown.stderr
    return shown.stdout


def test_the_source_rule_decides_on_the_given_ranges_and_says_so(tmp_path: Path) -> None:
    run, out = _import(tmp_path, CALLERS, *SOURCE, *RULE)
    assert "judged by the source's rule: ranges of 5 rounds apart" in out
    source = json.loads((run / "run.json").read_text())["source"]
    assert source["rounds"] == 5 and source["rule"] == "ranges"
    report = _report(run)
    assert "too few rounds" not in report
    # The source's verdicts: the governed lookup and the page clear, the plain lookup and the
    # write overlapping at their edges; the cache clear on every call.
    lines = [line for line in report.splitlines() if "0.43 vs v0.42.0" in line]
    verdicts = [line for line in report.splitlines() if "source's rule" in line]
    assert sum("clear gain, by the source's rule: ranges of 5 rounds apart" in v
               for v in verdicts) == 2 + 4, lines  # over the first label: 0.43 2, the cache 4
    assert sum("ranges overlap: not clear by the source's rule" in v for v in verdicts) == 2
    assert "exact" not in report.split("Method:")[1].splitlines()[0]
    assert "786 (751–829)" in report  # a summary cell prints its given range
    cited = perfpages("bench.cite", run.name, "--results", str(run.parent))
    assert cited.returncode == 0, cited.stderr
    assert "of the rounds" not in cited.stdout and "as its source gives them" in cited.stdout
    assert "unpublished, received from the QueryAPIGate maintainers" in cited.stdout


def test_rounds_without_the_rule_or_on_rounds_are_one_line(tmp_path: Path) -> None:
    _, err = _import(tmp_path, CALLERS, *SOURCE, "--rounds", "5", ok=False)
    assert err.startswith("error: --rule: rounds without the rule")
    _, err = _import(tmp_path, CALLERS, *SOURCE, "--rounds", "x", "--rule", "ranges", ok=False)
    assert err.startswith("error: --rounds: not a count of rounds")
    rounds = "label,round,throughput (/s)\na,1,10\nb,1,12\n"
    _, err = _import(tmp_path, rounds, *SOURCE, *RULE, name="r.csv", ok=False)
    assert "a table of rounds has its own rounds" in err


def test_json_keys_stand_for_the_options(tmp_path: Path) -> None:
    rows = [{"label": "v0.42.0", "call": "plain", "throughput median (/s)": 786,
             "throughput min (/s)": 751, "throughput max (/s)": 829},
            {"label": "0.43", "call": "plain", "throughput median (/s)": 852,
             "throughput min (/s)": 827, "throughput max (/s)": 892}]
    doc = {"title": "QueryAPIGate performance, v4", "unpublished": "the maintainers",
           "date": "2026-10-28", "rounds": 5, "rule": "ranges", "method": "v3's method",
           "labels": {"v0.42.0": {"build": "git commit 647ab6f"},
                      "0.43": {"build": "git commit fe603c0",
                               "env": {"QUERYAPIGATE_METADATA_CACHE_TTL": "5"}}},
           "rows": rows}
    run, _ = _import(tmp_path, json.dumps(doc), name="qag.json")
    data = json.loads((run / "run.json").read_text())
    assert data["title"] == "QueryAPIGate performance, v4 (transcribed)"  # title: as --title
    assert data["source"]["method"] == "v3's method" and data["source"]["rounds"] == 5
    assert data["labels"]["0.43"]["env"] == {"QUERYAPIGATE_METADATA_CACHE_TTL": "5"}
    assert "647ab6f" in data["labels"]["v0.42.0"]["pin"]["note"]
    doc["oops"] = 1
    _, err = _import(tmp_path, json.dumps(doc), name="bad.json", ok=False)
    assert "unknown key 'oops'" in err


def test_builds_settings_and_method_are_shown(tmp_path: Path) -> None:
    run, _ = _import(tmp_path, CALLERS, *SOURCE, *RULE,
                     "--build", "v0.42.0=git commit 647ab6f",
                     "--build", "0.43=git commit fe603c0",
                     "--build", "0.43 + cache=git commit fe603c0",
                     "--env", "0.43 + cache:QUERYAPIGATE_METADATA_CACHE_TTL=5",
                     "--setting", "0.43:max_connections=100",
                     "--method", "v3's harness and method, one laptop")
    cited = perfpages("bench.cite", run.name, "--results", str(run.parent))
    assert "as its source states it, not built here: git commit fe603c0; " \
        "QUERYAPIGATE_METADATA_CACHE_TTL=5" in cited.stdout
    assert "- the source's method: v3's harness and method" in cited.stdout
    assert "v3's harness and method" in _report(run)
    page = (f"---\nruns:\n  v4: {run.name}\n---\n# QueryAPIGate v4\n\n"
            "{{ settings(env=True) }}\n\n{{ settings() }}\n\n"
            'Cache: {{ fact("labels.0.43 + cache.env.QUERYAPIGATE_METADATA_CACHE_TTL") }}\n\n'
            'Method: {{ fact("source.method") }}\n')
    site, warnings = build_site(tmp_path / "site", {"index.md": page}, run.parent)
    html = (site / "index.html").read_text().replace("&#95;", "_")
    assert warnings == []
    assert "QUERYAPIGATE_METADATA_CACHE_TTL" in html and "max_connections" in html
    assert "Cache: 5" in html
    assert "Method: v3&#39;s harness and method" in html
    assert "build, as the source states it" in html and "git commit 647ab6f" in html
    run_page = (site / "runs" / run.name / "index.html").read_text().replace("&#95;", "_")
    assert "647ab6f" in run_page and "QUERYAPIGATE_METADATA_CACHE_TTL" in run_page
    assert "The source&#39;s method: v3&#39;s harness and method" in run_page
    _, err = _import(tmp_path, CALLERS, *SOURCE, "--build", "v9=x", "--again", ok=False)
    assert err.startswith("error: --build: no label 'v9' in the table")
    _, err = _import(tmp_path, CALLERS, *SOURCE, "--env", "0.43=5", "--again", ok=False)
    assert err.startswith("error: --env: not LABEL:NAME=VALUE")


# Rows with different metrics, empty cells, a note on a cell, as the cold-path table prints.
COLD = """\
label,key,requests,p50 (ms),p99 (ms),p99.99 (ms),p99.99 note,max (ms),max note
0.43,governed,131380,7.59,10.82,22.33,v3: 73.7,138.8,"the first call"
0.43,plain,131380,7.62,10.92,18.89,,22.0,
"""
MIXED = """\
label,call,throughput median (/s),throughput min (/s),throughput max (/s),p50 median (ms),\
p50 min (ms),p50 max (ms)
v0.42.0,one caller,153,150,156,6.58,6.47,6.64
0.43,one caller,226,220,233,4.39,4.32,4.51
v0.42.0,32 callers,826,770,832,,,
0.43,32 callers,888,829,892,,,
"""
SHARES = """\
label,part,share (%)
0.43,logging,21.2
0.43 + cache,logging,25.2
"""


def test_any_table_a_page_publishes(tmp_path: Path) -> None:
    run, _ = _import(tmp_path, COLD, *SOURCE, name="cold.csv")
    data = json.loads((run / "run.json").read_text())
    assert data["source"]["notes"] == {
        "table/0.43/key=governed/p99.99": "v3: 73.7",
        "table/0.43/key=governed/max": "the first call"}
    page = (f"---\nruns:\n  cold: {run.name}\n---\n# Cold\n\n"
            '{{ table(["p99.99", "max"], rows="metric", columns="key") }}\n')
    site, warnings = build_site(tmp_path / "site", {"index.md": page}, run.parent)
    html = (site / "index.html").read_text()
    assert warnings == [] and "22.3 (v3: 73.7)" in html and "139 (the first call)" in html
    run, _ = _import(tmp_path, MIXED, *SOURCE, *RULE, name="mixed.csv")
    report = _report(run)
    assert "6.58 (6.47–6.64)" in report and "826 (770–832)" in report
    run, _ = _import(tmp_path, SHARES, *SOURCE, name="shares.csv")
    assert "25.2" in _report(run)
    _, err = _import(tmp_path, COLD.replace(",138.8,", ",,"), *SOURCE, name="c2.csv", ok=False)
    assert "a note on max, which the row does not give" in err
    published = ["--title", "T", "--url", "https://example.org/t", "--date", "2026-10-01"]
    _, err = _import(tmp_path, SHARES, *published, "--unpublished", "me", name="s2.csv",
                     ok=False)
    assert err.startswith("error: --unpublished: a source is published (--url) or not")


def test_the_same_file_twice_is_refused_unless_again(tmp_path: Path) -> None:
    run, _ = _import(tmp_path, SHARES, *SOURCE, name="shares.csv")
    results, err = _import(tmp_path, SHARES, *SOURCE, name="shares.csv", ok=False)
    assert f"already imported, as run {run.name}" in err and "--again" in err
    assert len(list(results.iterdir())) == 1
    _import(tmp_path, SHARES, *SOURCE, "--again", name="shares.csv")
    assert len(list(results.iterdir())) == 2


def _page(run: Path, *claims: str) -> str:
    return (f"---\nruns:\n  v4: {run.name}\n---\n# QueryAPIGate v4\n\n"
            '{{ table("throughput", rows="call", run="v4") }}\n\n'
            + "\n\n".join(f"{{{{ claim({c}) }}}}" for c in claims) + "\n")


TRUE = [
    # "The governed lookup and the page are clear; the plain lookup and the write overlap."
    '"governed and page clear", faster("v0.42.0", "0.43", where={"call": "governed"})',
    '"plain overlaps", overlap("v0.42.0", "0.43", where={"call": "plain"})',
    '"write overlaps", overlap("v0.42.0", "0.43", where={"call": "write"})',
    # "The cache adds +15-19% on top of 0.43": printed, 19.16 is 19.
    '"+15-19 %", between(15, 19, "0.43", "0.43 + cache", as_printed=True)',
    '"+8 %, overlapping", all_of(between(8, 8, "v0.42.0", "0.43", as_printed=True, '
    'where={"call": "plain"}), overlap("v0.42.0", "0.43", where={"call": "plain"}))',
    '"the cache 1.3 times", times(1.3, "v0.42.0", "0.43 + cache", where={"call": "plain"})',
]
FALSE = [
    '"plain clear", faster("v0.42.0", "0.43", where={"call": "plain"})',
    '"governed overlaps", overlap("v0.42.0", "0.43", where={"call": "governed"})',
    '"+15-18 %", between(15, 18, "0.43", "0.43 + cache", as_printed=True)',
    '"+9 %, overlapping", all_of(between(9, 9, "v0.42.0", "0.43", as_printed=True, '
    'where={"call": "plain"}), overlap("v0.42.0", "0.43", where={"call": "plain"}))',
    '"the cache 2 times", times(2, "v0.42.0", "0.43 + cache", where={"call": "plain"})',
]


def test_claims_read_as_the_page_prints(tmp_path: Path) -> None:
    run, _ = _import(tmp_path, CALLERS, *SOURCE, *RULE)
    site, warnings = build_site(tmp_path / "site", {"index.md": _page(run, *TRUE)}, run.parent)
    assert warnings == []
    html = (site / "index.html").read_text()
    assert "786 (751–829)" in html
    assert "the source&#39;s rule: ranges of 5 rounds apart" in html
    for claim in FALSE:
        with pytest.raises(Failed) as failed:
            build_site(tmp_path / "site", {"index.md": _page(run, claim)}, run.parent)
        assert any("index.md:" in m and claim.split('"')[1] in m
                   for m in failed.value.messages), failed.value.messages


def test_between_is_exact_without_as_printed(tmp_path: Path) -> None:
    run, _ = _import(tmp_path, CALLERS, *SOURCE, *RULE)
    page = _page(run, '"+15-19 %", between(15, 19, "0.43", "0.43 + cache")')
    with pytest.raises(Failed) as failed:
        build_site(tmp_path / "site", {"index.md": page}, run.parent)
    assert any("+19.16 %" in m or "+19.2 %" in m for m in failed.value.messages), \
        failed.value.messages


def test_best_names_the_winner(tmp_path: Path) -> None:
    threads = ("label,threads,throughput median (/s),throughput min (/s),throughput max (/s)\n"
               "0.43,1,904,888,922\n0.43,2,\"1,012\",960,\"1,016\"\n0.43,4,928,880,939\n"
               "0.43,8,896,839,903\n")
    run, _ = _import(tmp_path, threads, *SOURCE, *RULE, name="threads.csv")
    page = _page(run, '"eight is best", best("threads", 8)').replace(
        'table("throughput", rows="call", run="v4")', 'table("throughput", rows="threads")')
    with pytest.raises(Failed) as failed:
        build_site(tmp_path / "site", {"index.md": page}, run.parent)
    assert any("best threads=2 1,010" in m or "best threads=2 1,012" in m
               for m in failed.value.messages), failed.value.messages


# The reference's round trips: p50 at +0 / 0.5 / 1 / 2 ms of delay; the added round trip
# measured by its calibration (psycopg2's one statement: 1.25 ms of p50 per ms of delay).
TRIPS = "label,delay_ms,p50 (ms),added_rtt_ms (ms)\n" + "".join(
    f"{label},{d},{p},{d * 1.25:g}\n"
    for label, p50s in (("v0.42.0", (1.38, 6.62, 10.22, 19.44)),
                        ("0.43", (1.26, 4.54, 6.86, 11.92)),
                        ("0.43 + cache", (0.98, 1.67, 2.36, 3.46)))
    for d, p in zip((0, 0.5, 1, 2), p50s, strict=True))


def test_round_trips_with_the_measured_added_delay(tmp_path: Path) -> None:
    run, _ = _import(tmp_path, TRIPS, *SOURCE, name="trips.csv")
    page = (f"---\nruns:\n  rt: {run.name}\n---\n# Round trips\n\n"
            '{{ round_trips(label="0.43 + cache") }}\n\n'
            '{{ claim("0.42 makes about 7 round trips", trips(7.1, label="v0.42.0", '
            'tolerance=0.2)) }}\n\n'
            '{{ claim("with the cache, one", trips(1, label="0.43 + cache", tolerance=0.2)) }}\n')
    _, warnings = build_site(tmp_path / "site", {"index.md": page}, run.parent)
    assert warnings == []
    # Without the added round trip, the message says which column is missing.
    bare = "label,delay_ms,p50 (ms)\na,0,1.0\na,1,2.0\n"
    run, _ = _import(tmp_path, bare, *SOURCE, name="bare.csv")
    page = (f"---\nruns:\n  rt: {run.name}\n---\n# Round trips\n\n"
            '{{ claim("one", trips(1)) }}\n')
    with pytest.raises(Failed) as failed:
        build_site(tmp_path / "site", {"index.md": page}, run.parent)
    assert any("added_rtt_ms (ms)" in m for m in failed.value.messages), failed.value.messages


def test_load_adds_nothing_the_source_never_gave(tmp_path: Path) -> None:
    from perfpages.analysis.rows import load

    run, _ = _import(tmp_path, SHARES, *SOURCE, name="shares.csv")
    assert set(load(run)["metric"]) == {"share"}


def test_equals_reads_a_figure_as_printed(tmp_path: Path) -> None:
    q13 = ("label,clients,throughput (/s),p95 (s)\nstock,8,8.31,1.83\nstock,32,7.99,4.73\n"
           "workers 16,8,8.16,1.10\nworkers 16,32,7.79,4.16\n")
    run, _ = _import(tmp_path, q13, *SOURCE, "--setting", "workers 16:max_parallel_workers=16",
                     name="q13.csv")

    def page(claim: str) -> str:
        return (f"---\nruns:\n  tap: {run.name}\n---\n# Q13\n\n"
                '{{ table("p95", rows="clients", unit="s") }}\n\n'
                f"{{{{ claim({claim}) }}}}\n")

    true = ('"p95 at 8 clients 1.83 s to 1.10 s", all_of(equals("p95", 1.83, unit="s", '
            'label="stock", where={"clients": 8}), equals("p95", 1.10, unit="s", '
            'label="workers 16", where={"clients": 8}))')
    _, warnings = build_site(tmp_path / "site", {"index.md": page(true)}, run.parent)
    assert warnings == []
    with pytest.raises(Failed) as failed:
        build_site(tmp_path / "site", {"index.md": page(true.replace("1.83", "1.84"))},
                   run.parent)
    assert any("p95 of 1.84 s as printed" in m and "1.83 s" in m
               for m in failed.value.messages), failed.value.messages


def test_a_summary_without_rounds_still_reads_its_given_ranges(tmp_path: Path) -> None:
    run, _ = _import(tmp_path, CALLERS, *SOURCE)  # no --rounds: never a verdict
    report = _report(run)
    assert "786 (751–829)" in report and "too few rounds (1 < 5)" in report
    assert "source's rule" not in report
    page = _page(run, '"plain overlaps at the edges", overlap("v0.42.0", "0.43", '
                      'where={"call": "plain"})')
    site, warnings = build_site(tmp_path / "site", {"index.md": page}, run.parent)
    assert warnings == [] and "786 (751–829)" in (site / "index.html").read_text()
    page = _page(run, '"governed overlaps", overlap("v0.42.0", "0.43", '
                      'where={"call": "governed"})')
    with pytest.raises(Failed) as failed:
        build_site(tmp_path / "site", {"index.md": page}, run.parent)
    assert any("713–771 vs 803–856" in m for m in failed.value.messages), failed.value.messages


def test_largest_share(tmp_path: Path) -> None:
    cpu = ("label,part,share (%)\n0.43,Store,22.9\n0.43 + cache,Store,4.5\n0.43,Logging,21.2\n"
           "0.43 + cache,Logging,25.2\n")
    run, _ = _import(tmp_path, cpu, *SOURCE, name="cpu.csv")

    def page(claim: str) -> str:
        return (f"---\nruns:\n  cpu: {run.name}\n---\n# CPU\n\n"
                '{{ table("share", rows="part") }}\n\n' f"{{{{ claim({claim}) }}}}\n")

    true = ('"with the cache, logging is the largest cost", best("part", "Logging", "share", '
            'label="0.43 + cache", largest=True)')
    _, warnings = build_site(tmp_path / "site", {"index.md": page(true)}, run.parent)
    assert warnings == []
    with pytest.raises(Failed) as failed:
        build_site(tmp_path / "site", {"index.md": page(true.replace('"0.43 + cache"', '"0.43"'))},
                   run.parent)
    assert any("best part=Store 22.9" in m for m in failed.value.messages), failed.value.messages

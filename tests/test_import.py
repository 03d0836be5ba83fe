"""`perfpages import`: a table published elsewhere, archived as a sealed run of scope
`transcribed` with its source, its values as given (never rounds it did not have, never a
histogram), reported, cited and pinned by a page as transcribed, not measured here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfpages.analysis import noise, tablefile, transcribed
from perfpages.analysis.report import build as report
from perfpages.analysis.rows import load
from perfpages.archive.manifest import Manifest
from perfpages.archive.reader import open_run
from perfpages.cli.importer import import_table
from perfpages.errors import ArchiveError, PerfpagesError
from sites import Failed, build_site, perfpages, quiet

SOURCE = ["--title", "Widget service benchmarks, release notes 2.0",
          "--url", "https://example.org/widgets/2.0/performance", "--date", "2026-10-01"]
# As a project's release notes print them: three runs of each setup, callers swept.
PUBLISHED = """\
label,callers,round,throughput (/s),p50 (ms),p99 (us)
1.0,8,1,1210,3.1,9500
1.0,8,2,1180,3.2,9900
1.0,8,3,1200,3.0,9100
2.0,8,1,1510,2.5,7500
2.0,8,2,1490,2.6,7900
2.0,8,3,1520,2.4,7200
"""
SUMMARY = """\
label,callers,throughput median (/s),throughput min (/s),throughput max (/s),p99 (ms)
1.0,8,1200,1100,1300,9.5
2.0,8,1500,1400,1600,7.5
"""


def _import(tmp_path: Path, text: str, name: str = "widgets.csv") -> Path:
    table = tmp_path / name
    table.write_text(text, encoding="utf-8")
    results = tmp_path / "results"
    assert import_table(results, str(table), SOURCE[1], SOURCE[3], SOURCE[5], None,
                        "perfpages import", quiet()) == 0
    return next(results.iterdir())


def test_import_verify_report_cite_and_a_page_over_it(tmp_path: Path) -> None:
    table = tmp_path / "widgets.csv"
    table.write_text(PUBLISHED, encoding="utf-8")
    results = tmp_path / "results"
    done = perfpages("import", str(table), *SOURCE, "--results", str(results))
    assert done.returncode == 0, done.stderr
    (run_dir,) = results.iterdir()
    assert run_dir.name.endswith("-widgets-transcribed")
    assert (run_dir / "seal.json").is_file()
    data = json.loads((run_dir / "run.json").read_text())
    assert data["scope"] == "transcribed" and data["status"] == "complete"
    assert len(data["source"].pop("sha256")) == 64  # the file's: the same file twice is refused
    assert data["source"] == {"title": SOURCE[1], "url": SOURCE[3], "date": "2026-10-01",
                              "values": "rounds"}

    verify = perfpages("bench.verify", "--run", run_dir.name, "--results", str(results))
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert f"ok: {run_dir.name} (complete)" in verify.stdout
    shown = perfpages("bench.report", "--run", run_dir.name, "--results", str(results),
                      "--format", "md")
    assert shown.returncode == 0, shown.stderr
    assert "transcribed, not measured here: from “Widget service benchmarks" in shown.stdout
    assert "1,200 (1,180–1,210)" in shown.stdout  # the three published rounds: a real range
    assert "9.50 (9.10–9.90)" in shown.stdout  # p99 given in µs, stored in ms as given
    cited = perfpages("bench.cite", run_dir.name, "--results", str(results))
    assert cited.returncode == 0, cited.stderr
    assert "transcribed, not measured here" in cited.stdout and "- machine:" not in cited.stdout

    page = (f"---\nruns:\n  notes: {run_dir.name}\n---\n# Widgets, as published\n\n"
            '{{ table("throughput", rows="callers", run="notes", block="table") }}\n\n'
            '{{ claim("2.0 serves over 1,400 calls a second", above("throughput", 1400, '
            'label="2.0", block="table")) }}\n')
    site, warnings = build_site(tmp_path / "site-project", {"index.md": page}, results)
    assert warnings == []
    html = (site / "index.html").read_text()
    assert html.count("Transcribed, not measured here") == 2  # the header, beside the table
    assert 'href="https://example.org/widgets/2.0/performance"' in html and "2026-10-01" in html
    assert "Measured on" not in html  # no machine of this repository's is named for it
    assert "1,510 (1,490–1,520)" in html
    run_page = (site / "runs" / run_dir.name / "index.html").read_text()
    assert "Transcribed, not measured here" in run_page

    # The claim is checked: a bound the published figures miss stops the strict build.
    false = page.replace("1400", "1600").replace("1,400", "1,600")
    with pytest.raises(Failed) as failed:
        build_site(tmp_path / "site-project", {"index.md": false}, results)
    assert any("2.0 serves over 1,600" in m for m in failed.value.messages)


def test_a_summary_is_given_values_never_rounds(tmp_path: Path) -> None:
    run = open_run(_import(tmp_path, SUMMARY))
    assert run.manifest.source is not None and run.manifest.source.values == "summary"
    assert run.manifest.method.rounds == 1
    assert all(w.round == 1 and w.latency is None for w in run.windows)  # no histogram
    frame = load(run)
    one = frame[(frame["label"] == "1.0") & (frame["kind"] == "measure")]
    values = dict(zip(one["metric"], one["value"], strict=False))
    assert values["throughput"] == 1200 and values["throughput.min"] == 1100
    assert values["throughput.max"] == 1300 and values["p99"] == 9.5
    assert len(one[one["metric"] == "throughput"]) == 1  # one given value, not three rounds
    data = report(run)
    verdicts = [row[-1] for row in data["changes"]["rows"]]
    assert verdicts and all(v.startswith("too few rounds") for v in verdicts)
    assert "never rounds" in data["method"]


def test_transcribed_labels_are_no_aa_pair(tmp_path: Path) -> None:
    run = open_run(_import(tmp_path, PUBLISHED))
    assert noise.same_builds(run.manifest) == []


def test_json_rows_read_like_csv(tmp_path: Path) -> None:
    rows = [{"label": "1.0", "callers": 8, "round": r, "throughput (/s)": v}
            for r, v in ((1, 1210), (2, 1180))]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"suite": "Widgets", "rows": rows}))
    table = tablefile.read_table(path)
    assert table.suite == "Widgets" and table.values == "rounds" and table.rounds == 2
    assert table.rows[0].params == {"callers": 8}
    assert table.rows[1].metrics == {"throughput": 1180.0}


@pytest.mark.parametrize(("text", "expected"), [
    ("", "empty: no header and no rows"),
    ("label,throughput (/s)\n", "no rows under the header"),
    ("callers,throughput (/s)\n8,1\n", ":1: missing column 'label'"),
    ("label,latency (ms)\na,1\n", ":1: latency (ms): unknown metric 'latency'"),
    ("label,p99\na,1\n", ":1: p99: p99 without its unit — write the column as `p99 (ms)`"),
    ("label,p99 (ms)\na,fast\n", ":2: p99 (ms): not a number: 'fast'"),
    ("label,p99 (ms)\na,-1\n", ":2: p99 (ms): a negative value"),
    ("label,p99 (ms)\na,1\na,2\n", ":3: duplicate row: label a is already on line 2"),
    ("label,round,p99 (ms)\na,1,1\na,3,1\n", "a (table) lacks round 2 of 3"),
    ("label,round,p99 median (ms)\na,1,1\n", "a table of rounds takes each round's value"),
    ("label,p99 max (ms)\na,1\n", "'p99 max (ms)' without the median it bounds"),
    ("label,p99 median (ms),p99 min (ms)\na,1,2\n", "the given min 2 is on the wrong side"),
    ("label,p99 (ms),p99 (us)\na,1,2\n", "column 'p99 (us)' repeats 'p99 (ms)'"),
    ("label,kind,p99 (ms)\na,x,1\n", "'kind' is reserved"),
    ("label,p99 (ms)\na,1,2\n", ":2: more values than the header has columns"),
    ("label,label,p99 (ms)\na,b,1\n", ":1: column 'label' repeats 'label'"),
    ("label,p99 (ms)\na,\"" + "9" * 200_000 + "\"\n", ":2: not readable as CSV (field larger"),
], ids=lambda v: v[:60])
def test_bad_tables_are_one_line_naming_where(tmp_path: Path, text: str,
                                              expected: str) -> None:
    path = tmp_path / "t.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PerfpagesError) as caught:
        tablefile.read_table(path)
    message = str(caught.value)
    assert expected in message and message.startswith(str(path)) and "\n" not in message
    assert " — " in message  # and what to do


@pytest.mark.parametrize(("rows", "expected"), [
    ([{"label": "a", "p99 (ms)": 1}, {"label": "b"}], "rows[1].p99 (ms): missing value"),
    ([{"label": "a", "p99 (ms)": True}], "rows[0].p99 (ms): not a number"),
    ([{"label": "a", "p99 (ms)": 1, "extra": 2}, {"label": "b", "p99 (ms)": 1, "more": 1}],
     "rows[1]: a key the first row does not have: 'more'"),
])
def test_bad_json_rows_name_their_key(tmp_path: Path, rows: list[dict[str, object]],
                                      expected: str) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(rows))
    with pytest.raises(PerfpagesError) as caught:
        tablefile.read_table(path)
    assert expected in str(caught.value)


@pytest.mark.parametrize(("title", "url", "day", "expected"), [
    (None, "https://e.org/x", "2026-10-01", "--title: a transcribed run needs its source"),
    ("T", None, "2026-10-01", "--url: a transcribed run needs its source"),
    ("T", "https://e.org/x", None, "--date: a transcribed run needs its source"),
    ("T", "ftp://e.org/x", "2026-10-01", "--url: not an http(s) address"),
    ("T", "https://e.org/a b", "2026-10-01", "--url: not an http(s) address"),
    ("T", "https://me:tok@e.org/x", "2026-10-01", "--url: the address holds a user"),
    ("T", "https://e.org/x", "2026-13-01", "--date: not a date"),
    ("T", "https://e.org/x", "2999-01-01", "--date: not a past day"),
])
def test_a_run_without_its_source_is_refused(title: str | None, url: str | None,
                                             day: str | None, expected: str) -> None:
    with pytest.raises(PerfpagesError) as caught:
        transcribed.check_source(title, url, day)
    assert str(caught.value).startswith(expected)


def test_bad_input_on_the_command_line_writes_nothing(tmp_path: Path) -> None:
    table = tmp_path / "widgets.csv"
    table.write_text(PUBLISHED.replace("9900", "n/a"), encoding="utf-8")
    results = tmp_path / "results"
    done = perfpages("import", str(table), *SOURCE, "--results", str(results))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        f"error: {table}:3: p99 (us): not a number: 'n/a' — give a plain number (1234.5), "
        "as the source printed it"]
    assert not results.exists() or not any(results.iterdir())
    table.write_text(PUBLISHED, encoding="utf-8")
    unsourced = perfpages("import", str(table), "--results", str(results))
    assert unsourced.returncode == 1 and unsourced.stderr.startswith("error: --title:")
    assert not results.exists() or not any(results.iterdir())


def test_the_manifest_holds_scope_and_source_together(tmp_path: Path) -> None:
    data = json.loads((_import(tmp_path, SUMMARY) / "run.json").read_text())
    Manifest.from_json(data, "run.json")
    without = {k: v for k, v in data.items() if k != "source"}
    with pytest.raises(ArchiveError):
        Manifest.from_json(without, "run.json")  # transcribed, but from nowhere
    with pytest.raises(ArchiveError):
        Manifest.from_json({**data, "scope": "full"}, "run.json")  # a measurement with a source


def test_a_transcribed_run_is_never_replayed(tmp_path: Path) -> None:
    from perfpages.run.replay import replay_options

    run_dir = _import(tmp_path, PUBLISHED)
    with pytest.raises(PerfpagesError, match="transcribed from its source, not measured here"):
        replay_options(run_dir.parent, run_dir.name, tmp_path / "benchmarks", "test")

"""The plugin end to end: temporary MkDocs projects built in-process over synthetic archives."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from html import unescape
from pathlib import Path

import pytest

from sites import (
    CLI_ENV,
    DEMO,
    DIAGNOSED,
    HOSTILE,
    PARTIAL,
    SCRIPT_LABEL,
    SWEEP,
    Failed,
    build_site,
    make_results,
)

GOLDEN = Path(__file__).parent / "golden"


def article(page: str) -> str:
    return page.split("<article", 1)[1].split("</article>", 1)[0]
PIN = f"---\nruns:\n  demo: {DEMO}\n---\n"


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_results(tmp_path_factory.mktemp("results"))


@pytest.fixture(scope="module")
def bad_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_results(tmp_path_factory.mktemp("bad-results"), corrupt=True)


def html(site: Path, page: str = "index.html") -> str:
    return (site / page).read_text(encoding="utf-8")


def test_table_matches_golden_html(tmp_path: Path, results: Path) -> None:
    page = PIN + ("# Demo\n\n"
                  "{{ table('throughput', rows='call', block='callers', change='v1.0') }}\n")
    site, warnings = build_site(tmp_path, {"index.md": page}, results)
    assert warnings == []
    table = re.search(r"<table>.*?</table>", html(site), re.S)
    assert table is not None
    golden = GOLDEN / "table.html"
    if os.environ.get("PERFPAGES_UPDATE_GOLDEN"):  # as the pages' snapshots are accepted
        golden.write_text(table.group(0) + "\n", encoding="utf-8")
    assert table.group(0) + "\n" == golden.read_text(encoding="utf-8")


def test_false_claim_fails_strict_build_with_page_and_line(tmp_path: Path, results: Path) -> None:
    page = (PIN + "# Demo\n\nText.\n\n"
            "{{ claim('v1.0 beats the cache', "
            "faster('v1.1 + cache', 'v1.0', block='callers')) }}\n")
    with pytest.raises(Failed) as failed:
        build_site(tmp_path, {"index.md": page}, results)
    _, warnings = build_site(tmp_path, {"index.md": page}, results, strict=False)
    assert failed.value.messages == warnings
    assert len(warnings) == 1
    assert warnings[0].startswith('docs/index.md:9: claim "v1.0 beats the cache" — expected a '
                                  "clear gain of v1.0 over v1.1 + cache in every cell")
    assert "data callers, call=lookup, callers=32: −19 % (clear loss);" in warnings[0]


def test_non_strict_build_shows_a_failed_claim_as_an_admonition(tmp_path: Path,
                                                                 results: Path) -> None:
    page = PIN + "{{ claim('p99 is below 1 ms', below('p99', 1, block='one-caller')) }}\n"
    site, warnings = build_site(tmp_path, {"index.md": page}, results, strict=False)
    assert [w.split(" — ")[0] for w in warnings] == ['docs/index.md:5: claim "p99 is below 1 ms"']
    body = html(site)
    assert 'class="admonition failure"' in body
    assert "This claim does not hold" in body


def test_true_claims_build_strictly(tmp_path: Path, results: Path) -> None:
    page = PIN + (
        "{{ claim('The cache is faster on every call', "
        "faster('v1.0', 'v1.1 + cache', block='callers')) }}\n"
        "{{ claim('v1.1 gains a little', between(5, 12, 'v1.0', 'v1.1', block='callers')) }}\n"
        "{{ claim('p99 stays low', below('p99', 5, block='one-caller')) }}\n")
    site, warnings = build_site(tmp_path, {"index.md": page}, results)
    assert warnings == []
    body = html(site)  # no failed claim; the header's box says what the run's rule is
    assert "admonition failure" not in body and "This claim does not hold" not in body


def test_lint_catches_a_hand_typed_figure(tmp_path: Path, results: Path) -> None:
    page = PIN + "# Demo\n\nA lookup takes 12 ms, with {{ given('0.5 ms') }} of delay.\n"
    with pytest.raises(Failed):
        build_site(tmp_path, {"index.md": page}, results)
    _, warnings = build_site(tmp_path, {"index.md": page}, results, strict=False)
    assert len(warnings) == 1
    assert warnings[0].startswith('docs/index.md:7: lint: hand-typed figure "12 ms"')


def test_lint_catches_a_hand_typed_count_through_the_build_and_the_command_line(
        tmp_path: Path, results: Path) -> None:
    page = PIN + ("# Demo\n\nThe plain key has not changed across ten releases.\n\n"
                  "v1.1 beats 1.0 on {{ given('two labels') }}, "
                  "in {{ fact('labels', count=True) }} labels.\n")
    with pytest.raises(Failed):
        build_site(tmp_path, {"index.md": page}, results)
    site, warnings = build_site(tmp_path, {"index.md": page}, results, strict=False)
    assert [w.split(" on a page")[0] for w in warnings] == [
        'docs/index.md:7: lint: count "ten releases"']  # "1.0" names the pinned label v1.0
    assert "in 3 labels." in html(site)
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict"], cwd=tmp_path,
                          capture_output=True, text=True, env=CLI_ENV)
    assert done.returncode != 0
    assert 'docs/index.md:7: lint: count "ten releases"' in done.stderr
    assert "Traceback" not in done.stderr


def test_pages_without_pins_are_left_alone(tmp_path: Path, results: Path) -> None:
    page = ("# Guide\n\nIt took 12 ms, 7.1 at 11:25 over ten releases. "
            "Write `{{ figure('p50') }}`.\n\n```\n{{ table() }}\n```\n")
    site, warnings = build_site(tmp_path, {"index.md": page}, results)
    assert warnings == []
    assert "{{ table() }}" in html(site)


def test_code_stays_literal_on_pinned_pages(tmp_path: Path, results: Path) -> None:
    page = PIN + ("## Setup {#setup}\n\n`{{ figure('p50') }}` is literal.\n\n"
                  "```jinja\n{{ claim('x', faster('a', 'b')) }}\n```\n")
    site, warnings = build_site(tmp_path, {"index.md": page}, results)
    assert warnings == []
    body = html(site)
    assert "{{ figure(&#39;p50&#39;) }}" in body or "{{ figure('p50') }}" in body
    assert 'id="setup"' in body


def test_everything_from_data_is_escaped(tmp_path: Path, results: Path) -> None:
    page = (f"---\nruns: {{h: {HOSTILE}}}\n---\n"
            "{{ table('throughput', rows='call', block='callers') }}\n\n"
            "{{ chart('callers', 'throughput', block='callers') }}\n\n"
            f"{{{{ figure('p50', label={SCRIPT_LABEL!r}) }}}}\n")
    site, warnings = build_site(tmp_path, {"index.md": page}, results)
    assert warnings == []
    for name in ("index.html", f"runs/{HOSTILE}/index.html", "runs/index.html"):
        body = html(site, name)
        assert "<script>alert" not in body and "<img src=x" not in body and "<b>lookup" not in body
    shown = unescape(re.sub(r"<[^>]+>", "", article(html(site))))
    assert SCRIPT_LABEL in shown and "<b>lookup</b>" in shown  # shown as text, not markup
    shown = unescape(re.sub(r"<[^>]+>", "", article(html(site, f"runs/{HOSTILE}/index.html"))))
    assert "<img src=x onerror=alert(2)> synthetic | *run*" in shown


@pytest.mark.parametrize(("run", "what"), [
    ("2026-01-01-no-such-run", "no run '2026-01-01-no-such-run'"),
    (PARTIAL, f"run '{PARTIAL}' is partial, not complete"),
])
def test_a_bad_pin_fails_the_build_with_page_and_line(tmp_path: Path, results: Path, run: str,
                                                       what: str) -> None:
    page = f"---\ntitle: T\nruns:\n  demo: {run}\n---\n# T\n"
    with pytest.raises(Failed) as failed:
        build_site(tmp_path, {"perf/v1.md": page}, results, strict=False)
    assert failed.value.messages[-1].startswith(f"docs/perf/v1.md:4: runs.demo: {what}")


def test_front_matter_that_is_not_yaml_fails_with_its_line(tmp_path: Path,
                                                         results: Path) -> None:
    """MkDocs alone would render it as text, with the pins and macros silently unread."""
    page = f"---\ntitle: T\nruns:\n  demo: {DEMO}\n   x: y\n---\n# T\n{{{{ table() }}}}\n"
    with pytest.raises(Failed) as failed:
        build_site(tmp_path, {"perf/v1.md": page}, results, strict=False)
    assert failed.value.messages[-1].startswith(
        "docs/perf/v1.md:5: front matter: not valid YAML: mapping values are not allowed here")


def test_a_corrupt_pin_fails_and_its_run_page_warns(tmp_path: Path, bad_results: Path) -> None:
    page = "---\nruns: [2026-11-05-synthetic-corrupt]\n---\n# T\n"
    with pytest.raises(Failed, match=r"docs/index.md:2: runs.2026-11-05-synthetic-corrupt: "
                                     r"run '2026-11-05-synthetic-corrupt' is corrupt"):
        build_site(tmp_path, {"index.md": page}, bad_results, strict=False)
    site, warnings = build_site(tmp_path, {"index.md": "# T\n"}, bad_results, strict=False)
    assert len(warnings) == 1 and "checksum mismatch" in warnings[0]
    assert "unreadable" in html(site, "runs/index.html")


def test_macro_errors_name_the_page_and_line(tmp_path: Path, results: Path) -> None:
    page = PIN + "# T\n\nok\n\n{{ figure('p50', label='v9') }}\n"
    with pytest.raises(Failed, match=r"docs/index.md:9: macro: no label 'v9'"):
        build_site(tmp_path, {"index.md": page}, results)
    page = PIN + "# T\n\n{{ tabel() }}\n"
    with pytest.raises(Failed, match=r"docs/index.md:7: macro: 'tabel' is undefined"):
        build_site(tmp_path, {"index.md": page}, results)
    page = PIN + "# T\n\n{{ table( }}\n"
    with pytest.raises(Failed, match=r"docs/index.md:7: macro: "):
        build_site(tmp_path, {"index.md": page}, results)


def test_chart_is_inline_svg_with_a_dot_per_round(tmp_path: Path, results: Path) -> None:
    page = (f"---\nruns: {{s: {SWEEP}}}\n---\n"
            "{{ chart('callers', 'throughput', label='v1.0') }}\n")
    site, warnings = build_site(tmp_path, {"index.md": page}, results)
    assert warnings == []
    body = html(site)
    figure = re.search(r"<figure class=\"perfpages-chart\" data-search-exclude>.*?</figure>", body,
                       re.S)
    assert figure is not None
    svg = figure.group(0)
    assert "<script" not in svg and "http://" not in svg.replace("http://www.w3.org/2000/svg", "")
    wide = re.search(r'<svg class="perfpages-wide".*?</svg>', svg, re.S)
    assert wide is not None and svg.count("<svg") == 2  # drawn wide and narrow (geometry.py)
    assert wide.group(0).count('r="2"') == 6 * 5  # 6 caller counts × 5 rounds
    assert wide.group(0).count('r="4"') == 6  # one median each
    assert svg.count('r="2"') == 2 * 6 * 5  # the narrow drawing has every round too
    assert "currentColor" in svg and "var(--perfpages-c1)" in svg
    index = json.loads((site / "search/search_index.json").read_text())
    assert not any("by callers" in doc["text"] or "v1.0: 1, median" in doc["text"]
                   for doc in index["docs"])
    assert (site / "assets/perfpages.css").is_file()


def test_run_pages_and_index(tmp_path: Path, results: Path) -> None:
    site, warnings = build_site(tmp_path, {"index.md": "# Home\n"}, results)
    assert warnings == []
    index = article(html(site, "runs/index.html"))
    for run in (DEMO, SWEEP, HOSTILE, PARTIAL):
        assert f'href="{run}/"' in index
    assert index.index(PARTIAL) < index.index(DEMO)  # newest first
    page = html(site, f"runs/{DEMO}/index.html")
    for text in ("Synthetic run", "Pins", "Method", "Machine", "Results", "Files", "Cite",
                 "Replay", "invoke bench.verify", "demo-service==1.0", "sha256"):
        assert text in page, text
    sums = json.loads((site / f"runs/{DEMO}/run.json").read_text())["files"]
    assert sums["results.jsonl"] in page
    assert (site / f"runs/{DEMO}/results.jsonl").is_file()  # downloadable
    partial = html(site, f"runs/{PARTIAL}/index.html")
    assert "Partial run" in partial and "Cite" not in partial


def test_versions_newest_first_and_old_ones_say_so(tmp_path: Path, results: Path) -> None:
    page = PIN + ("# Perf {}\n\n"
                  "{{{{ figure('throughput', label='v1.0', where={{'call': 'page'}}) }}}}\n")
    pages = {"index.md": "# Home\n", "perf/v1.md": page.format(1), "perf/v2.md": page.format(2),
             "perf/v10.md": page.format(10)}
    site, warnings = build_site(tmp_path, pages, results)
    assert warnings == []
    nav = html(site).split("<body", 1)[1]
    assert nav.index("perf/v10/") < nav.index("perf/v2/") < nav.index("perf/v1/")
    assert "kept as published" in html(site, "perf/v1/index.html")
    assert 'href="../v10/"' in html(site, "perf/v1/index.html")
    assert "kept as published" not in html(site, "perf/v10/index.html")


def test_warm_builds_read_the_cache_and_still_catch_corruption(tmp_path: Path,
                                                               results: Path) -> None:
    own = tmp_path / "results"
    shutil.copytree(results / DEMO, own / DEMO)
    page = PIN + "{{ figure('throughput', label='v1.1', where={'call': 'page'}) }}\n"
    project = tmp_path / "project"
    first, _ = build_site(project, {"index.md": page}, own)
    cold = article(html(first))
    assert list((project / ".cache/perfpages/cells").glob(f"{DEMO}.*.json"))
    code = ("import sys, logging; from mkdocs.commands.build import build; "
            "from mkdocs.config import load_config; "
            f"build(load_config(config_file={str(project / 'mkdocs.yml')!r}, strict=True)); "
            "print('pandas' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.stdout.strip() == "False"  # a warm build decodes nothing and imports no pandas
    assert article(html(project / "site")) == cold
    with (own / DEMO / "results.jsonl").open("a") as fh:
        fh.write("\n")
    with pytest.raises(Failed, match=f"runs.demo: run '{DEMO}' is corrupt"):
        build_site(project, {"index.md": page}, own)


def test_a_cold_run_page_reads_rows_not_dataframes_nor_hdrhistograms(tmp_path: Path,
                                                                    results: Path) -> None:
    """A run page's report is built from plain rows and numpy counters: no pandas import and
    no HdrHistogram per window or round (each allocated ~24k counters), which made a cold
    run page cost 150 ms. Counted, not timed."""
    code = ("import sys; from pathlib import Path; from hdrh import histogram; "
            "from perfpages.site.runpages import RunPages; made = []; "
            "init = histogram.HdrHistogram.__init__; "
            "histogram.HdrHistogram.__init__ = lambda self, *a, **k: (made.append(1), "
            "init(self, *a, **k))[1]; "
            f"entry = RunPages(Path({str(results)!r}), Path({str(tmp_path)!r}), 'https://x/')"
            f".entry(Path({str(results / DEMO)!r})); "
            "print(entry.problem, 'pandas' in sys.modules, len(made))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == ["None", "False", "1"]  # one: the shape of every histogram


def test_run_page_lists_diagnostics_with_downloads(tmp_path: Path, results: Path) -> None:
    site, warnings = build_site(tmp_path, {"index.md": "# Home\n"}, results)
    assert warnings == []
    page = article(html(site, f"runs/{DIAGNOSED}/index.html"))
    assert "Diagnostics" in page
    assert f'href="../{DIAGNOSED}/diagnostics/callers/statements.json"' in page or \
        'href="diagnostics/callers/statements.json"' in page
    copied = site / f"runs/{DIAGNOSED}/diagnostics/callers/statements.json"
    assert copied.read_text() == '{"calls": 3}\n'


def test_the_repository_site_builds_strictly(repository_site: Path) -> None:
    """The session's one strict build of the repository (tests/conftest.py: a warning fails it),
    which test_browser reads too."""
    assert (repository_site / "runs/index.html").is_file()
    assert (repository_site / "guide/pages/index.html").is_file()

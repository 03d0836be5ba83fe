"""The pytest plugin: a repository whose mkdocs.yml uses perfpages gets its claims and snapshots
checked by plain `pytest`, with no test file of its own; any other repository sees no change.

Each test writes a small MkDocs project (pytester) over the synthetic demo run and runs pytest
in it, in-process or, where processes matter, in a subprocess.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from perfpages.site.page import render_file
from perfpages.site.pytest_plugin import SITE, UPDATE, compare, snapshot_name
from perfpages.site.store import RunStore
from sites import DEMO

pytest_plugins = ["pytester"]

PAGE = f"""---
runs: {{d: {DEMO}}}
---
# Demo, v1

{{{{ table("throughput", rows="call", columns="label", block="callers") }}}}

{{{{ claim("the cache is faster", faster("v1.0", "v1.1 + cache", block="callers")) }}}}

{{{{ claim("v1.0 is faster", faster("v1.1", "v1.0", block="callers")) }}}}
"""
TRUE, FALSE = "docs/perf/v1.md:8::claim", "docs/perf/v1.md:10::claim"
SNAPSHOT = "docs/perf/v1.md::snapshot"
GOLDEN = "tests/golden/pages/perf-v1.md"  # the default `snapshots` directory, section-v<N>.md
ACCEPT = f"{UPDATE}=1 pytest docs/perf/v1.md"
UNIT = "tests/test_unit.py::test_unit"


def mkdocs_yml(results: Path, perfpages: bool = True) -> str:
    plugin = f"  - perfpages:\n      results: {results}\n" if perfpages else ""
    # !ENV is MkDocs' own tag: finding the plugin must not need it.
    return f"site_name: demo\nextra:\n  home: !ENV HOME\nplugins:\n  - search\n{plugin}"


def make_project(pytester: pytest.Pytester, results: Path, *, perfpages: bool = True,
                 mkdocs: bool = True) -> Path:
    """A repository as an adopter has it: testpaths leave docs/ out, no perfpages test file."""
    pytester.makeini("[pytest]\ntestpaths = tests\n")
    if mkdocs:
        (pytester.path / "mkdocs.yml").write_text(mkdocs_yml(results, perfpages))
    (pytester.path / "docs" / "perf").mkdir(parents=True)
    (pytester.path / "docs" / "perf" / "v1.md").write_text(PAGE)
    # A guide page: a claim in a code span is an example, not a claim.
    (pytester.path / "docs" / "index.md").write_text("# Guide\n\n`{{ claim('x', y) }}`\n")
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_unit.py").write_text("def test_unit():\n    pass\n")
    return pytester.path


@pytest.fixture(scope="module")
def expected(demo_results: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The demo page as the core renders it in this process: what its snapshot must hold.
    (Rendering here first also imports what rendering needs: in-process runs drop the modules
    they import, so each would import pandas again.)"""
    return _render(RunStore(demo_results), tmp_path_factory.mktemp("page"))


def _render(store: RunStore, directory: Path) -> str:
    file = directory / "v1.md"
    file.write_text(PAGE)
    return render_file(file, path="docs/perf/v1.md", store=store).markdown


@pytest.fixture
def project(pytester: pytest.Pytester, demo_results: Path, expected: str) -> Path:
    return make_project(pytester, demo_results)


def collected(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if "::" in line and " " not in line]


def test_collects_each_claim_and_the_snapshot(pytester: pytest.Pytester, project: Path) -> None:
    result = pytester.runpytest("--collect-only", "-q")
    assert collected(result) == [UNIT, TRUE, FALSE, SNAPSHOT]


def test_the_true_claim_passes_the_false_one_fails_naming_page_and_line(
        pytester: pytest.Pytester, project: Path) -> None:
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=2, failed=2)  # the unit test, the true claim | false, snapshot
    assert f"{TRUE} PASSED" in result.stdout.str()
    assert f"{FALSE} FAILED" in result.stdout.str()
    message = ('docs/perf/v1.md:10: claim "v1.0 is faster" — expected a clear gain of v1.0 over '
               "v1.1 in every cell (throughput), data callers, call=lookup")
    assert [line for line in result.outlines if line.startswith(message)], result.stdout.str()
    assert (f"docs/perf/v1.md: no snapshot yet ({GOLDEN}); create it with {ACCEPT}, then review "
            "and commit it") in result.outlines
    # One line each, under a heading naming the page: no traceback.
    assert "Traceback" not in result.stdout.str()
    assert not [line for line in result.outlines if line.startswith(("E ", "> "))]
    result.stdout.fnmatch_lines(["*_ docs/perf/v1.md:10 claim _*",
                                 "*_ docs/perf/v1.md snapshot _*"])


def test_accepted_snapshot_passes_and_a_changed_figure_fails(
        pytester: pytest.Pytester, project: Path, expected: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(UPDATE, "1")
    result = pytester.runpytest("-k", "snapshot")
    result.assert_outcomes(passed=1, deselected=3)
    result.stdout.fnmatch_lines(["*= perfpages =*", f"wrote {GOLDEN}: review and commit it"])
    golden = project / GOLDEN
    assert golden.read_bytes() == expected.encode()
    monkeypatch.delenv(UPDATE)

    pytester.runpytest("-k", "snapshot").assert_outcomes(passed=1, deselected=3)
    changed, line = _change_a_figure(expected)
    golden.write_bytes(changed.encode())
    result = pytester.runpytest("-k", "snapshot")
    result.assert_outcomes(failed=1, deselected=3)
    failure = next(x for x in result.outlines if x.startswith("docs/perf/v1.md no longer"))
    assert failure.startswith(f"docs/perf/v1.md no longer renders what its snapshot {GOLDEN} "
                              f"says, at line {line} column ")
    assert re.search(r": expected '.+', got '.+'; if the change is intended, accept it with "
                     + re.escape(ACCEPT), failure), failure


def test_snapshots_are_the_same_across_processes_and_hash_seeds(
        pytester: pytest.Pytester, project: Path, expected: str, demo_results: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONHASHSEED", "1")
    monkeypatch.setenv(UPDATE, "1")
    pytester.runpytest_subprocess("-k", "snapshot").assert_outcomes(passed=1, deselected=3)
    monkeypatch.setenv("PYTHONHASHSEED", "2")
    monkeypatch.delenv(UPDATE)
    pytester.runpytest_subprocess("-k", "snapshot").assert_outcomes(passed=1, deselected=3)
    text = (project / GOLDEN).read_text(encoding="utf-8")
    assert text == expected  # this process rendered it too, with its own hash seed
    assert str(project) not in text and str(demo_results) not in text, "an absolute path"


def test_the_snapshot_does_not_depend_on_the_cell_cache(demo_results: Path, expected: str,
                                                        tmp_path: Path) -> None:
    # The site renders with the cell cache, cold then warm; the snapshot without it.
    cache = tmp_path / "cache"
    assert _render(RunStore(demo_results, cache), tmp_path) == expected
    assert list(cache.rglob("*.json")), "the cache was not written"
    assert _render(RunStore(demo_results, cache), tmp_path) == expected


def test_selection_and_paths_never_collect_an_item_twice(pytester: pytest.Pytester,
                                                         project: Path) -> None:
    def ids(*args: str) -> list[str]:
        return collected(pytester.runpytest("--collect-only", "-q", *args))

    assert ids("-k", "v1.md:10") == [FALSE]
    assert ids("-k", "claim and not v1.md:10") == [TRUE]
    assert ids("docs") == [TRUE, FALSE, SNAPSHOT]
    assert ids("docs/perf/v1.md") == [TRUE, FALSE, SNAPSHOT]
    assert ids("tests/test_unit.py") == [UNIT]  # a test file named: the pages are left alone
    assert ids("--deselect", FALSE) == [UNIT, TRUE, SNAPSHOT]
    assert ids("-p", "no:perfpages") == [UNIT]
    pytester.makeini("[pytest]\ntestpaths = tests docs\n")
    assert ids() == [UNIT, TRUE, FALSE, SNAPSHOT]


def test_a_broken_page_is_one_failing_item(pytester: pytest.Pytester, project: Path) -> None:
    (project / "docs" / "perf" / "v2.md").write_text(
        f"---\nruns: {{d: {DEMO}}}\n---\n# Demo, v2\n\n"
        '{{ figure("p50", label="v9", block="one-caller") }}\n')
    result = pytester.runpytest("-k", "v2")
    result.assert_outcomes(failed=1, deselected=4)
    assert [line for line in result.outlines if line.startswith("FAILED docs/perf/v2.md::page")]
    assert [line for line in result.outlines
            if line.startswith("docs/perf/v2.md:6: macro: no label 'v9'")], result.stdout.str()
    assert "Traceback" not in result.stdout.str()


def test_hand_typed_figures_fail_as_in_the_build(pytester: pytest.Pytester,
                                                  project: Path) -> None:
    """pytest runs the build's lint: a page with a figure typed by hand is a failing item."""
    (project / "docs" / "perf" / "typed.md").write_text(
        f"---\nruns: {{d: {DEMO}}}\n---\n# Typed\n\nThe cache answers in 12 ms.\n\n"
        '{{ claim("the cache is faster", faster("v1.0", "v1.1 + cache", block="callers")) }}\n')
    result = pytester.runpytest("-k", "typed")
    result.assert_outcomes(passed=1, failed=1, deselected=4)  # the claim | the lint
    assert [line for line in result.outlines if line.startswith("FAILED docs/perf/typed.md::lint")]
    assert ('docs/perf/typed.md:6: lint: hand-typed figure "12 ms" on a page that pins runs'
            in result.stdout.str())
    assert "Traceback" not in result.stdout.str()


def test_every_snapshot_has_one_page_and_every_page_its_own_snapshot(
        pytester: pytest.Pytester, project: Path) -> None:
    golden = project / "tests" / "golden" / "pages"
    golden.mkdir(parents=True)
    (golden / "gone-v3.md").write_text("# A page since removed\n")
    (project / "docs" / "performance" / "perf").mkdir(parents=True)
    pinned = (project / "docs" / "perf" / "v1.md").read_text()  # a page without pins has none
    (project / "docs" / "performance" / "perf" / "v1.md").write_text(pinned)
    result = pytester.runpytest("-k", "snapshot or orphan")
    result.assert_outcomes(failed=3, deselected=5)  # the claims of both pages
    out = result.stdout.str()
    assert ("tests/golden/pages/gone-v3.md: a snapshot without its page: no versioned page under "
            "docs is named for it") in out
    assert (f"docs/perf/v1.md and docs/performance/perf/v1.md would share the snapshot {GOLDEN}"
            in out)


def test_a_versioned_page_without_pins_has_no_snapshot(pytester: pytest.Pytester,
                                                        project: Path) -> None:
    (project / "docs" / "perf" / "v2.md").write_text("# Not pinned yet\n\n{{ no_macro() }}\n")
    result = pytester.runpytest("--collect-only", "-q")
    assert "docs/perf/v1.md::snapshot" in result.stdout.str()
    assert "docs/perf/v2.md" not in result.stdout.str()


def test_a_project_without_perfpages_collects_nothing_more(
        pytester: pytest.Pytester, demo_results: Path) -> None:
    make_project(pytester, demo_results, perfpages=False)
    (pytester.path / "tests" / "test_imports.py").write_text(
        "import sys\n\n\ndef test_nothing_heavy_was_imported():\n"
        "    assert not {'pandas', 'jinja2', 'mkdocs', 'perfpages.site.page'} & set(sys.modules)\n")
    result = pytester.runpytest_subprocess("-v")
    result.assert_outcomes(passed=2)
    assert "docs/" not in result.stdout.str()


def test_a_project_without_mkdocs_does_not_even_read_the_settings(
        pytester: pytest.Pytester, demo_results: Path) -> None:
    make_project(pytester, demo_results, mkdocs=False)
    (pytester.path / "tests" / "test_imports.py").write_text(
        "import sys\n\n\ndef test_settings_were_not_imported():\n"
        "    assert 'perfpages.settings' not in sys.modules\n")
    pytester.runpytest_subprocess().assert_outcomes(passed=2)


def test_settings_decide_the_snapshots_and_a_bad_one_is_one_line(
        pytester: pytest.Pytester, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyprojecttoml('[tool.perfpages]\nsnapshots = "checks"\n')
    monkeypatch.setenv(UPDATE, "1")
    pytester.runpytest("-k", "snapshot").assert_outcomes(passed=1, deselected=3)
    assert (project / "checks" / "perf-v1.md").is_file()
    pytester.makepyprojecttoml('[tool.perfpages]\nsnapshot = "checks"\n')
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.errlines if line.strip()]
    assert errors == [f"ERROR: perfpages: {project / 'pyproject.toml'}: tool.perfpages.snapshot: "
                      "unknown setting 'snapshot' — use suites, results, site-url, snapshots, "
                      "mkdocs"], result.errlines


def test_snapshot_names_follow_the_section() -> None:
    assert snapshot_name("performance/sky/v1.md") == "sky-v1.md"
    assert snapshot_name("performance/sky/v2/index.md") == "sky-v2.md"
    assert snapshot_name("performance/v1.md") == "performance-v1.md"
    assert snapshot_name("perf/v4.md") == "perf-v4.md"
    assert snapshot_name("guide/pages.md") is None


def test_a_longer_snapshot_and_a_missing_one_say_so(tmp_path: Path) -> None:
    snapshot = tmp_path / "x-v1.md"
    accept = f"{UPDATE}=1 pytest docs/x/v1.md"
    assert compare("docs/x/v1.md", "# X\n", snapshot, shown="x-v1.md", accept=accept) == (
        f"docs/x/v1.md: no snapshot yet (x-v1.md); create it with {accept}, "
        "then review and commit it")
    snapshot.write_text("# X\n\n| a | 1.0 ms |\n")
    message = compare("docs/x/v1.md", "# X\n", snapshot, shown="x-v1.md", accept=accept)
    assert message is not None and "\n" not in message
    assert "at line 3 column 1: expected '| a | 1.0 ms |', got <end of page>;" in message


def test_this_repository_checks_its_own_pages(pytestconfig: pytest.Config) -> None:
    if pytestconfig.pluginmanager.is_blocked("perfpages"):
        pytest.skip("the plugin is disabled (-p no:perfpages)")
    assert pytestconfig.pluginmanager.has_plugin("perfpages"), (
        "the pytest11 entry point is not installed: pip install -e .")
    site = pytestconfig.stash[SITE]
    assert site is not None, "mkdocs.yml does not list the perfpages plugin"
    root = Path(__file__).resolve().parent.parent
    assert {site.shown(page): site.shown(snapshot) for page, snapshot in
            site.versioned().items()} == {
        f"docs/performance/{name}/v{n}.md": f"tests/golden/pages/{name}-v{n}.md"
        for name, n in (("queryapigate", 1), ("sizing", 1), ("sky", 1), ("queryapigate", 2),
                        ("sizing", 2), ("sky", 2), ("queryapigate", 3),
                        ("queryapigate-published", 1))}
    assert all(snapshot.is_file() for snapshot in site.versioned().values())
    assert site.results == root / "results"


def _change_a_figure(text: str) -> tuple[str, int]:
    """`text` with the last digit of its first table row changed, and that line's number."""
    lines = text.split("\n")
    n = next(i for i, line in enumerate(lines)
             if line.startswith("|") and not line.startswith("|-") and re.search(r"\d", line)
             and i > 0 and lines[i - 1].startswith("|-"))
    line = lines[n]
    at = max(m.start() for m in re.finditer(r"\d", line))
    lines[n] = line[:at] + str((int(line[at]) + 1) % 10) + line[at + 1:]
    return "\n".join(lines), n + 1

"""`perfpages render`: the site's pages without a generator, through the plugin's own renderer;
and the check that a built site, whatever built it, holds no unrendered macro."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mkdocs.commands.build import build
from mkdocs.config import load_config

from perfpages.site import built
from perfpages.site.config import Site
from perfpages.site.render import render_site
from sites import CLI_ENV, DEMO, build_site, make_results

PIN = f"---\nruns:\n  demo: {DEMO}\n---\n"
PAGE = PIN + """# Demo

{{ table('throughput', rows='call', block='callers', change='v1.0') }}

The cache gives {{ change('v1.0', 'v1.1 + cache', block='callers') }}.
{{ claim('The cache is faster.', faster('v1.0', 'v1.1 + cache', block='callers')) }}

{{ chart('callers', 'throughput', block='callers', where={'call': 'lookup'}) }}
"""
# Macros shown on purpose: in a fenced block, a highlighted one, a code span; and in prose as
# character references (how text from an archive is escaped).
GUIDE = """# Guide

```markdown
{{ table("throughput", rows="callers") }}
```

```python
x = "{{ figure('p50') }}"
```

Write `{{ given("0.5 ms") }}` for a setting; &#123;&#123; table() &#125;&#125; is not a macro.
"""
PAGES = {"index.md": PAGE, "perf/v1.md": PAGE.replace("# Demo", "# v1"),
         "perf/v2.md": PAGE.replace("# Demo", "# v2"), "guide.md": GUIDE}
WRAPPED = re.compile(r'<div class="perfpages-table[^"]*">(<table>.*?</table>)</div>', re.S)
LABEL = re.compile(r' data-label="[^"]*"')  # a stacked table's cell, labelled (tables.layout)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_results(tmp_path_factory.mktemp("results"))


def command(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "perfpages", *args], cwd=project,
                          capture_output=True, text=True, env=CLI_ENV)


def article(html: str) -> str:
    """A page's content; the plugin's box around tables and its cells' labels (HTML only) left
    out."""
    inner = html.split("<article", 1)[1].split("</article>", 1)[0]
    return WRAPPED.sub(lambda m: LABEL.sub("", m.group(1)), inner)


def tables(html: str) -> list[str]:
    return re.findall(r"<table>.*?</table>", html, re.S)


def test_rendered_pages_build_to_what_the_plugin_builds(tmp_path: Path, results: Path) -> None:
    """MkDocs without the plugin, on the rendered pages, builds the plugin's pages: tables,
    claims, charts, the older version's note, run pages."""
    site_dir, warnings = build_site(tmp_path, PAGES, results)
    assert warnings == []
    done = render_site(Site.load(tmp_path / "mkdocs.yml"), tmp_path / "rendered")
    assert (done.problems, done.warnings) == ([], [])
    assert done.pages == len(PAGES) + done.run_pages + 1 and done.run_pages == 5
    config = (tmp_path / "rendered" / "mkdocs.yml").read_text()
    assert "perfpages:" not in config and "assets/perfpages.css" in config
    build(load_config(config_file=str(tmp_path / "rendered" / "mkdocs.yml"), strict=True))
    again = tmp_path / "rendered" / "site"
    compared = [p.relative_to(site_dir) for p in site_dir.rglob("*.html")
                if p.name != "404.html"]
    assert len(compared) == len(PAGES) + done.run_pages + 1
    for rel in compared:
        assert article((again / rel).read_text()) == article((site_dir / rel).read_text()), rel
    v1 = (again / "perf" / "v1" / "index.html").read_text()
    assert "kept as published" in v1 and len(tables(v1)) == 1 and "<svg" in v1
    assert "perfpages-claim" in v1 and (again / "assets" / "perfpages.css").is_file()
    assert (again / "runs" / DEMO / "run.json").is_file()  # the archived files, downloadable
    assert built.check(again)[1] == [] and built.check(site_dir)[1] == []


def write_site(project: Path, results: Path, pages: dict[str, str]) -> None:
    build_site(project, {"index.md": "# Home\n"}, results)  # writes mkdocs.yml
    for name, text in pages.items():
        (project / "docs" / name).write_text(text, encoding="utf-8")


def test_strict_render_fails_with_page_and_line_one_line_each(tmp_path: Path,
                                                              results: Path) -> None:
    write_site(tmp_path, results, {
        "claim.md": PIN + "# C\n\n{{ claim('v1.0 wins', faster('v1.1 + cache', 'v1.0', "
                          "block='callers')) }}\n",
        "lint.md": PIN + "# L\n\nIt takes 12 ms.\n",
        "pin.md": "---\nruns:\n  gone: 2026-01-01-no-such-run\n---\n# P\n"})
    done = command(tmp_path, "render")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("error: docs/pin.md:3: ") and "2026-01-01-no-such-run" in lines[0]
    assert lines[1].startswith('error: docs/claim.md:7: claim "v1.0 wins" — expected')
    assert lines[2].startswith('error: docs/lint.md:7: lint: hand-typed figure "12 ms"')
    assert not (tmp_path / "rendered").exists()
    loose = command(tmp_path, "render", "--no-strict")  # a bad pin stops any build
    assert loose.returncode == 1 and loose.stderr.count("error: ") == 1
    (tmp_path / "docs" / "pin.md").unlink()
    loose = command(tmp_path, "render", "--no-strict", "--out", "out")
    assert loose.returncode == 0, loose.stderr
    assert loose.stderr.count("warning: ") == 2 and "rendered 9 pages (5 run pages)" in loose.stdout
    page = (tmp_path / "out" / "docs" / "claim.md").read_text()
    assert page.startswith(PIN) and "This claim does not hold" in page


def test_a_failed_render_leaves_nothing_to_build(tmp_path: Path, results: Path) -> None:
    write_site(tmp_path, results, {"page.md": PAGE})
    assert command(tmp_path, "render").returncode == 0
    assert (tmp_path / "rendered" / "docs" / "page.md").is_file()
    (tmp_path / "docs" / "page.md").write_text(PAGE + "\nIt takes 12 ms.\n")
    assert command(tmp_path, "render").returncode == 1
    assert not (tmp_path / "rendered").exists()
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep\n")
    refused = command(tmp_path, "render", "--no-strict", "--out", "mine")
    assert refused.returncode == 1 and refused.stderr.startswith("error: ")
    assert "not written by perfpages render" in refused.stderr
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep\n"


def test_unrendered_macros_in_html_are_found_and_examples_are_not() -> None:
    names = built.names()
    html = ('<html><head><title>t</title></head><body>\n'
            '<p>Use <code>{{ table("x") }}</code> and &#123;&#123; figure() &#125;&#125;.</p>\n'
            '<pre><code><span class="p">{{</span> <span>table</span>(<span>"x"</span>) '
            '<span class="p">}}</span>\n</code></pre>\n'
            '<div class="highlight"><pre><span></span><code>{{ chart("p50") }}\n'
            '</code></pre></div>\n'
            '<p>Vue says {{ message }} here.</p>\n'
            '<p>Throughput: {{ table("throughput", rows="call") }}</p>\n'
            '<ul><li>{% for x in y %}</li></ul>\n</body></html>\n')
    found = built.unrendered(html, "page/index.html", names)
    assert [(f.line, f.text) for f in found] == [
        (8, '{{ table("throughput", rows="call") }}'), (9, "{% for x in y %}")]
    assert found[0].message("site").startswith(
        'site/page/index.html:8: unrendered perfpages macro {{ table("throughput", rows="call") '
        "}} — built without perfpages")


def test_check_site_fails_on_an_unrendered_macro_naming_the_page(tmp_path: Path,
                                                                  results: Path) -> None:
    """A page that pins no run is rendered as written: its macro reaches the HTML."""
    pages = {"index.md": PAGE, "guide.md": GUIDE,
             "forgot.md": "# Forgot\n\nThroughput: {{ table('throughput') }}\n"}
    site_dir, _ = build_site(tmp_path, pages, results)
    done = command(tmp_path, "check-site", "site")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        f"error: site/forgot/index.html:{_line(site_dir / 'forgot' / 'index.html')}: "
        "unrendered perfpages macro {{ table('throughput') }} — built without perfpages: build "
        "it with the perfpages MkDocs plugin, or build the pages `perfpages render` writes "
        "(the guide: perfpages guide pages, its section Building without MkDocs)"]
    (tmp_path / "docs" / "forgot.md").unlink()
    build_site(tmp_path, {k: v for k, v in pages.items() if k != "forgot.md"}, results)
    done = command(tmp_path, "check-site", "site")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok: ") and "no unrendered perfpages macro" in done.stdout
    missing = command(tmp_path, "check-site", "nowhere")
    assert missing.returncode == 1 and missing.stderr.startswith("error: nowhere: no such")


def _line(page: Path) -> int:
    return next(i for i, line in enumerate(page.read_text().split("\n"), start=1)
                if "{{ table(" in line)


def test_the_pytest_plugin_checks_a_built_site(tmp_path: Path, results: Path) -> None:
    pages = {"index.md": PAGE, "guide.md": GUIDE,
             "forgot.md": "# Forgot\n\n{{ figure('p50', label='v1.0') }}\n"}
    build_site(tmp_path, pages, results)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           "site"], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert "1 failed, 9 passed" in done.stdout, done.stdout  # a page each, 404 and runs too
    assert "site/forgot/index.html::unrendered" in done.stdout
    assert "site/forgot/index.html:" in done.stdout and "{{ figure('p50', label='v1.0') }}" \
        in done.stdout and "Traceback" not in done.stdout

"""Zensical, installed from PyPI, builds the pages `perfpages render` writes: the same tables and
claims as the MkDocs build; and a Zensical build of the unrendered site is caught by the check."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from urllib.parse import urljoin

import pytest

from perfpages.site import built
from perfpages.site.config import Site
from perfpages.site.render import render_site
from perfpages.tools.venvs import tool_venv
from sites import build_site, make_results
from test_render import PAGES

pytestmark = pytest.mark.network  # Zensical from PyPI, once per machine (PERFPAGES_CACHE)
# The newest Zensical whose dependencies all install from PyPI here (later ones need zensical-ui)
ZENSICAL = "zensical==0.0.73"


def zensical(config: Path) -> subprocess.CompletedProcess[str]:
    python = tool_venv([ZENSICAL], "zensical") / "bin" / "python"
    return subprocess.run([str(python), "-m", "zensical", "build", "-f", str(config)],
                          cwd=config.parent, capture_output=True, text=True, timeout=600)


def shown(site: Path, rel: Path) -> list[str]:
    """A page's tables and claims, with what each generator writes its own way aside: white
    space between tags, how a link is spelled (`run.json` or `../RUN/run.json` from
    runs/RUN/) — each link as the address it leads to — and the MkDocs plugin's labels on a
    table's cells for a phone's stacked rows (tables.wrap works on HTML, which `perfpages
    render` does not write: another generator's tables scroll in their own box instead)."""
    html = re.sub(r' data-label="[^"]*"', "", (site / rel).read_text(encoding="utf-8"))
    here = "/" + rel.parent.as_posix() + "/"
    found = re.findall(r"<table>.*?</table>|<span class=\"perfpages-claim[^>]*>.*?</span>",
                       html, re.S)
    return [re.sub(r'href="([^"]*)"', lambda m: f'href="{urljoin(here, m.group(1))}"',
                   re.sub(r">\s+<", "><", f)) for f in found]


def test_zensical_builds_the_rendered_pages_as_mkdocs_builds_them(tmp_path: Path) -> None:
    results = make_results(tmp_path / "results")
    project = tmp_path / "project"
    project.mkdir()
    site_dir, warnings = build_site(project, PAGES, results)
    assert warnings == []
    render_site(Site.load(project / "mkdocs.yml"), project / "rendered")
    done = zensical(project / "rendered" / "mkdocs.yml")
    assert done.returncode == 0, done.stderr
    zensical_site = project / "rendered" / "site"
    pages = [p.relative_to(site_dir) for p in site_dir.rglob("*.html") if p.name != "404.html"]
    assert len(pages) == 10
    compared = 0
    for rel in pages:
        ours, theirs = (shown(s, rel) for s in (site_dir, zensical_site))
        assert theirs == ours, rel
        compared += len(ours)
    assert compared >= 20  # tables and claims of four pages and the run pages
    assert built.check(zensical_site)[1] == []
    # The site as written, built by Zensical: its macros are published as text, and caught.
    raw = zensical(project / "mkdocs.yml")
    assert raw.returncode == 0, raw.stderr
    left = {f.page for f in built.check(project / "site")[1]}
    assert left == {"index.html", "perf/v1/index.html", "perf/v2/index.html"}

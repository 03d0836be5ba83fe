"""The one renderer of a site's pages, and the render step that needs no generator.

`site_page` is what a page of the site becomes — its macros computed, claims evaluated, the
header of its runs under its title, the note of an older version — for the MkDocs plugin and for
`render_site` alike. `render_site` writes every page that way as plain Markdown, with the run
pages, the runs index, every other file of docs/ and a configuration without the plugin, so any
generator (Zensical, MkDocs without perfpages) builds the same pages; strict, it fails on what
fails `mkdocs build --strict`: a claim that does not hold, a hand-typed figure, a bad pin.
"""

from __future__ import annotations

import posixpath
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfpages.errors import PerfpagesError
from perfpages.site import charts, header, page, tables
from perfpages.site import runpages as runpage
from perfpages.site import versions as version
from perfpages.site.config import CSS, Site, rendered
from perfpages.site.reproduction import Docs
from perfpages.site.store import RunStore

MARK = ".perfpages-render"  # in a directory `render_site` wrote (and may replace)
STYLE = charts.STYLE + tables.STYLE


@dataclass
class SitePage:
    markdown: str  # the body, without front matter, as the generator renders it
    warnings: list[str] = field(default_factory=list)  # lint findings and failed claims
    wide: bool = False  # its tables scroll sideways (tables.wrap, in the HTML)


def site_page(markdown: str, meta: dict[str, Any], *, src_uri: str, shown: str, source: str,
              store: RunStore, docs: Docs | None, run_pages: bool,
              older: tuple[int, int, str] | None = None) -> SitePage:
    """One page of the site: `markdown` is its body (front matter stripped), `src_uri` its path
    under docs/, `shown` as errors name it; `older` (version, newest, newest's src_uri) for an
    older version. Raises PerfpagesError for what stops a build (a bad pin, a broken macro)."""
    done = page.render(markdown, meta, path=shown, offset=page.offset_of(source, markdown),
                       store=store, source=source, docs=docs)
    superseded = version.superseded(meta, shown)
    # Outside the page's snapshot: what is known of its runs now, and their machine
    top = header.markdown(done.runs, src_uri, runpage.PREFIX if run_pages else None)
    text = header.under_title(done.markdown, top)
    if older is not None:
        text = version.banner(*older, src_uri, superseded) + text
    return SitePage(text, done.warnings,
                    done.pins_runs or src_uri.startswith(f"{runpage.PREFIX}/"))


def results_missing(results: Path) -> str:
    # Not fatal (a new project has no runs yet), but a mistyped path would otherwise give an
    # empty runs index without a word; strict builds stop here.
    return (f"plugins.perfpages.results: {results} is not a directory — create it, or point "
            f"the option at the archived runs")


def _sections(nav: Any) -> Iterator[list[str]]:
    """The page paths directly in each section of an explicit nav (the top level included)."""
    if not isinstance(nav, list):
        return
    here: list[str] = []
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) and len(item) == 1 else item
        if isinstance(value, str) and value.endswith(".md"):
            here.append(value)
        elif isinstance(value, list):
            yield from _sections(value)
    yield here


def older_versions(site: Site, srcs: list[str]) -> dict[str, tuple[int, int, str]]:
    """Each older version's banner data, by section of mkdocs.yml's nav — or, without one, by
    directory, as MkDocs makes its nav."""
    nav = site.config.get("nav")
    if isinstance(nav, list):
        groups = list(_sections(nav))
    else:
        by_dir: dict[str, list[str]] = {}
        for src in srcs:
            by_dir.setdefault(posixpath.dirname(src), []).append(src)
        groups = list(by_dir.values())
    out: dict[str, tuple[int, int, str]] = {}
    for group in groups:
        out.update(version.older(group))
    return out


@dataclass
class Result:
    out: Path
    pages: int = 0
    run_pages: int = 0
    problems: list[str] = field(default_factory=list)  # what stops the build whatever
    warnings: list[str] = field(default_factory=list)  # what stops a strict build


def _hidden(rel: Path) -> bool:
    return any(part.startswith(".") for part in rel.parts)  # MkDocs' default exclude_docs


def _check_out(out: Path, site: Site) -> None:
    if out.exists() and not (out / MARK).is_file() and (not out.is_dir() or any(out.iterdir())):
        raise PerfpagesError("not written by perfpages render: it would be replaced",
                             where=out, key="--out", fix="choose another --out directory")
    if site.docs.resolve().is_relative_to(out.resolve()):
        raise PerfpagesError("the rendered pages would replace the pages themselves",
                             where=out, key="--out", fix="choose a directory outside docs")


def render_site(site: Site, out: Path, *, strict: bool = True) -> Result:
    """Render every page of `site` into `out/docs` with `out/mkdocs.yml` beside it. The
    directory is replaced only when the render succeeds (strict: with no warning either); a
    failed render removes it, so no page goes unchecked into a build."""
    _check_out(out, site)
    if not site.docs.is_dir():
        raise PerfpagesError("no such directory", where=site.docs, key="docs_dir",
                             fix="point --docs (or mkdocs.yml's docs_dir) at the pages")
    result = Result(out)
    staging = out.with_name(out.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    target = staging / "docs"
    target.mkdir(parents=True)
    store = RunStore(site.results, site.cache)
    docs = Docs(site.base, site.docs)
    if not site.results.is_dir():
        result.warnings.append(results_missing(site.results))
    sources: dict[str, tuple[str, str]] = {}  # src_uri -> (source, shown)
    for file in sorted(site.docs.rglob("*")):
        rel = file.relative_to(site.docs)
        if not file.is_file() or _hidden(rel):
            continue
        if file.suffix == ".md":
            sources[rel.as_posix()] = (file.read_text(encoding="utf-8-sig"), site.shown(file))
        else:
            _copy(file, target / rel)
    _write(target / CSS, STYLE)
    if site.run_pages:
        pages = runpage.RunPages(site.results, site.cache, site.site_url, store=store, docs=docs)
        entries = pages.entries()
        for entry in entries:
            if entry.problem:
                result.warnings.append(entry.problem)
            sources[f"{runpage.PREFIX}/{entry.id}.md"] = (entry.markdown, "")
            for site_path, archived in entry.files.items():
                _copy(archived, target / site_path)
            for site_path, text in entry.texts.items():
                _write(target / site_path, text)
        sources[f"{runpage.PREFIX}/index.md"] = (runpage.index(entries), "")
        result.run_pages = len(entries)
    older = older_versions(site, list(sources))
    for src, (source, shown) in sources.items():
        try:
            meta, body, _ = page.split(source, shown or f"docs/{src}")
            done = site_page(body, meta, src_uri=src, shown=shown or f"docs/{src}",
                             source=source, store=store, docs=docs, run_pages=site.run_pages,
                             older=older.get(src))
        except PerfpagesError as exc:
            result.problems.append(str(exc))
            continue
        result.warnings += done.warnings
        # The front matter stays (its title is the generator's), above the rendered body.
        _write(target / src, source[: len(source) - len(body)] + done.markdown)
        result.pages += 1
    if result.problems or (strict and result.warnings):
        shutil.rmtree(staging, ignore_errors=True)
        if (out / MARK).is_file():
            shutil.rmtree(out)
        return result
    _write(staging / "mkdocs.yml", rendered(site, out))
    _write(staging / MARK, "perfpages render: replaced whole by the next render\n")
    if out.exists():
        shutil.rmtree(out)
    staging.rename(out)
    return result


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _copy(source: Path, target: Path) -> None:
    """A copy, never a link: the archives stay immutable whatever touches the rendered tree."""
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)

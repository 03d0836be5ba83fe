"""The MkDocs plugin `perfpages`: a thin adapter over perfpages' core (page, runpage, version).

mkdocs.yml:

    plugins:
      - search
      - perfpages            # archived runs: [tool.perfpages] results in pyproject.toml
      # - perfpages:
      #     results: results  # or here, relative to mkdocs.yml (overrides pyproject.toml)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from mkdocs.config import base
from mkdocs.config import config_options as c
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin, get_plugin_logger
from mkdocs.structure.files import File, Files, InclusionLevel
from mkdocs.structure.nav import Navigation, Section
from mkdocs.structure.pages import Page

from perfpages import settings
from perfpages.errors import PerfpagesError
from perfpages.site import charts as chart
from perfpages.site import header, page, tables
from perfpages.site import runpages as runpage
from perfpages.site import versions as version
from perfpages.site.reproduction import Docs
from perfpages.site.store import RunStore

log = get_plugin_logger(__name__)
CSS = "assets/perfpages.css"


class PerfpagesConfig(base.Config):
    results = c.Optional(c.Type(str))  # default: [tool.perfpages] results
    run_pages = c.Type(bool, default=True)
    cache = c.Type(bool, default=True)


class PerfpagesPlugin(BasePlugin[PerfpagesConfig]):
    def __init__(self) -> None:
        self.store: RunStore | None = None
        self.root = Path.cwd()
        self.results_dir = self.root / "results"
        self.newest: dict[str, tuple[int, int, str]] = {}
        self.docs: Docs | None = None
        self.wide: set[str] = set()  # pages whose tables perfpages wraps (tables.py)

    def on_startup(self, *, command: Literal["build", "gh-deploy", "serve"],
                   dirty: bool) -> None:
        """Defined so MkDocs keeps this instance (and its run store) across serve rebuilds."""

    def on_config(self, config: MkDocsConfig) -> MkDocsConfig:
        if config.config_file_path:
            self.root = Path(config.config_file_path).resolve().parent
        if self.config.results is not None:
            self.results_dir = (self.root / self.config.results).resolve()
        else:
            try:
                self.results_dir = settings.load(self.root).results
            except PerfpagesError as exc:
                raise PluginError(str(exc)) from None
        if not self.results_dir.is_dir():
            # Not fatal (a new project has no runs yet), but a mistyped path would otherwise
            # give an empty runs index without a word; strict builds stop here.
            log.warning(f"plugins.perfpages.results: {self.results_dir} is not a directory — "
                        f"create it, or point the option at the archived runs")
        cache = self.root / ".cache" / "perfpages" if self.config.cache else None
        if self.store is None or self.store.results_dir != self.results_dir or \
                self.store.cache_dir != cache:
            self.store = RunStore(self.results_dir, cache)
        self.docs = Docs(self.root, Path(config.docs_dir))
        if CSS not in config.extra_css:
            config.extra_css.append(CSS)
        return config

    def on_serve(self, server: Any, /, *, config: MkDocsConfig, builder: Any) -> Any:
        if self.results_dir.is_dir():
            server.watch(str(self.results_dir))
        return server

    def on_files(self, files: Files, /, *, config: MkDocsConfig) -> Files:
        files.append(File.generated(config, CSS, content=chart.STYLE + tables.STYLE))
        if not self.config.run_pages:
            return files
        cache = self.root / ".cache" / "perfpages" if self.config.cache else None
        pages = runpage.RunPages(self.results_dir, cache, config.site_url or "",
                                 store=self.store, docs=self.docs)
        entries = pages.entries()
        for entry in entries:
            if entry.problem:
                log.warning(f"{entry.problem}")
            # Run pages stay out of the nav (the index links them): a nav of hundreds of runs
            # would be rendered into every page of the site.
            files.append(File.generated(config, f"{runpage.PREFIX}/{entry.id}.md",
                                        content=entry.markdown,
                                        inclusion=InclusionLevel.NOT_IN_NAV))
            for site_path, source in entry.files.items():
                files.append(File.generated(config, site_path, abs_src_path=str(source)))
            for site_path, text in entry.texts.items():  # compressed files, readable
                files.append(File.generated(config, site_path, content=text))
        files.append(File.generated(config, f"{runpage.PREFIX}/index.md",
                                    content=runpage.index(entries)))
        return files

    def on_nav(self, nav: Navigation, /, *, config: MkDocsConfig, files: Files) -> Navigation:
        self.newest = {}
        nav.items = self._order(nav.items)
        # Previous/next links follow the new order; pages outside the nav keep theirs.
        in_nav = {id(p) for p in nav.pages}
        nav.pages = [p for p in _walk(nav.items) if id(p) in in_nav]
        bookended = [None, *nav.pages, None]
        for before, current, after in zip(bookended, nav.pages, bookended[2:], strict=False):
            current.previous_page, current.next_page = before, after
        return nav

    def _order(self, items: list[Any]) -> list[Any]:
        for item in items:
            if isinstance(item, Section):
                item.children = self._order(item.children)
        numbers = [version.number(i.file.src_uri) if isinstance(i, Page) else None
                   for i in items]
        ordered = version.newest_first(items, numbers)
        pages = [(n, i) for n, i in zip(numbers, items, strict=True) if n is not None]
        if len(pages) > 1:
            top, newest = max(pages, key=lambda p: p[0])
            for n, item in pages:
                if n != top:
                    self.newest[item.file.src_uri] = (n, top, newest.file.src_uri)
        return ordered

    def on_page_markdown(self, markdown: str, /, *, page: Page, config: MkDocsConfig,
                         files: Files) -> str:
        assert self.store is not None
        src = page.file.abs_src_path
        shown = os.path.relpath(src, self.root) if src else f"docs/{page.file.src_uri}"
        source = page.file.content_string
        try:
            rendered = page_render(markdown, page.meta, shown, source, self.store, self.docs)
            superseded = version.superseded(page.meta, shown.replace(os.sep, "/"))
            # Outside the page's snapshot: what is known of its runs now, and their machine
            top = header.markdown(rendered.runs, page.file.src_uri,
                                  runpage.PREFIX if self.config.run_pages else None)
        except PerfpagesError as exc:
            raise PluginError(str(exc)) from None
        for warning in rendered.warnings:
            log.warning(warning)
        if rendered.pins_runs or page.file.src_uri.startswith(f"{runpage.PREFIX}/"):
            self.wide.add(page.file.src_uri)
        else:
            self.wide.discard(page.file.src_uri)
        text = header.under_title(rendered.markdown, top)
        if page.file.src_uri in self.newest:
            n, top_n, newest_src = self.newest[page.file.src_uri]
            text = version.banner(n, top_n, newest_src, page.file.src_uri, superseded) + text
        return text


    def on_page_content(self, html: str, /, *, page: Page, config: MkDocsConfig,
                        files: Files) -> str:
        """Tables of pages that pin runs, and of run pages, in a box that scrolls sideways (the
        HTML, not the Markdown: published pages' snapshots stay byte-identical)."""
        return tables.wrap(html) if page.file.src_uri in self.wide else html


def _walk(items: list[Any]) -> list[Page]:
    out: list[Page] = []
    for item in items:
        if isinstance(item, Page):
            out.append(item)
        elif isinstance(item, Section):
            out.extend(_walk(item.children))
    return out


def page_render(markdown: str, meta: dict[str, Any], shown: str, source: str,
                store: RunStore, docs: Docs | None = None) -> page.Rendered:
    return page.render(markdown, meta, path=shown.replace(os.sep, "/"),
                       offset=page.offset_of(source, markdown), store=store, source=source,
                       docs=docs)

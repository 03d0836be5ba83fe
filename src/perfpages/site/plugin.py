"""The MkDocs plugin `perfpages`: a thin adapter over perfpages' core (render.site_page, the
renderer `perfpages render` shares; runpage, version).

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
from perfpages.site import agreement, render, tables
from perfpages.site import runpages as runpage
from perfpages.site import versions as version
from perfpages.site.config import CSS
from perfpages.site.reproduction import Docs
from perfpages.site.store import RunStore

log = get_plugin_logger(__name__)


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
        self.stated: dict[str, list[agreement.Stated]] = {}  # live pages' verdicts, by page

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
            log.warning(render.results_missing(self.results_dir))
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
        files.append(File.generated(config, CSS, content=render.STYLE))
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
        self.stated = {}  # a rebuild (serve) checks the pages as they are now
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
        self.newest.update(version.older([i.file.src_uri for i in items
                                          if isinstance(i, Page)]))
        return version.newest_first(items, numbers)

    def on_page_markdown(self, markdown: str, /, *, page: Page, config: MkDocsConfig,
                         files: Files) -> str:
        assert self.store is not None
        src = page.file.abs_src_path
        shown = os.path.relpath(src, self.root) if src else f"docs/{page.file.src_uri}"
        try:
            done = render.site_page(markdown, dict(page.meta), src_uri=page.file.src_uri,
                                    shown=shown.replace(os.sep, "/"),
                                    source=page.file.content_string, store=self.store,
                                    docs=self.docs, run_pages=self.config.run_pages,
                                    older=self.newest.get(page.file.src_uri))
        except PerfpagesError as exc:
            raise PluginError(str(exc)) from None
        for warning in done.warnings:
            log.warning(warning)
        self.stated[page.file.src_uri] = done.stated
        if done.wide:
            self.wide.add(page.file.src_uri)
        else:
            self.wide.discard(page.file.src_uri)
        return done.markdown

    def on_page_content(self, html: str, /, *, page: Page, config: MkDocsConfig,
                        files: Files) -> str:
        """Tables of pages that pin runs, and of run pages, in a box that scrolls sideways (the
        HTML, not the Markdown: published pages' snapshots stay byte-identical)."""
        return tables.wrap(html) if page.file.src_uri in self.wide else html


    def on_post_build(self, *, config: MkDocsConfig) -> None:
        """Once every page is in: two live pages must not state two verdicts on one
        comparison (perfpages.site.agreement); strict, the build fails."""
        problems = agreement.check(s for page in self.stated.values() for s in page)
        if problems and config.strict:
            raise PluginError("\n".join(problems))
        for problem in problems:
            log.warning(problem)


def _walk(items: list[Any]) -> list[Page]:
    out: list[Page] = []
    for item in items:
        if isinstance(item, Page):
            out.append(item)
        elif isinstance(item, Section):
            out.extend(_walk(item.children))
    return out


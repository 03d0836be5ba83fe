"""The pytest plugin `perfpages`: a repository's own pytest checks its performance pages.

Registered as a `pytest11` entry point, so it loads in every pytest run of an environment where
perfpages is installed; it acts only where the repository's mkdocs.yml lists the perfpages
MkDocs plugin, and then collects, with no test file in the repository:

- an item per claim of every page under docs/ (`docs/perf/v1.md:14::claim`), failing with the
  build's message; a page whose pins or macros are broken is one failing item (`…::page`);
- a failing item per page with hand-typed figures (`…::lint`), the build's lint lines;
- an item per versioned page (`v<N>.md`, `v<N>/index.md`) comparing what it renders, byte for
  byte, with its snapshot (`…::snapshot`); PERFPAGES_UPDATE_GOLDEN=1 writes the snapshots;
- in a run of the whole suite, an item per snapshot whose page is gone (`…::orphan`).

Plain `pytest` gets all of them; `pytest docs` or `pytest docs/perf/v1.md` the pages named;
`pytest tests/test_x.py` none. `-p no:perfpages` disables the plugin.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # imported when a site is found: other repositories pay for none of them
    from _pytest._code.code import TerminalRepr

    from perfpages.site.claims import Claim
    from perfpages.site.store import RunStore

UPDATE = "PERFPAGES_UPDATE_GOLDEN"
RENDERED = "rendered"  # where `perfpages render` writes by default (perfpages.site.config)
SHOWN = 60  # characters of a differing line shown in a message
NEW_VERSION = "if what the data says changed, leave this version as published and start v<N+1>"


@dataclass
class Site:
    """Where a repository's pages, runs and snapshots are, and what this run did with them."""

    rootpath: Path  # pytest's rootdir: node ids and the commands in messages are relative to it
    base: Path  # mkdocs.yml's directory: pages are named relative to it, as the build names them
    docs: Path
    results: Path
    snapshots: Path
    built: tuple[Path, ...] = ()  # built sites checked for unrendered macros (site_dir, render's)
    collected: set[Path] = field(default_factory=set)  # pages collected from the paths given
    written: list[Path] = field(default_factory=list)  # snapshots written (PERFPAGES_UPDATE_…)
    _store: RunStore | None = None
    _versioned: dict[Path, Path] | None = None

    def store(self) -> RunStore:
        from perfpages.site.store import RunStore

        if self._store is None:
            # No disk cache: tests must not write into the repository's .cache/.
            self._store = RunStore(self.results)
        return self._store

    def pages(self) -> list[Path]:
        return sorted(self.docs.rglob("*.md"))

    def page_path(self, file: Path) -> str:
        return Path(os.path.relpath(file, self.base)).as_posix()

    def shown(self, file: Path) -> str:
        """A path as node ids show it: relative to the rootdir when under it."""
        return file.relative_to(self.rootpath).as_posix() if file.is_relative_to(
            self.rootpath) else str(file)

    def versioned(self) -> dict[Path, Path]:
        """Each versioned page's snapshot file, by page file."""
        if self._versioned is None:
            self._versioned = {}
            for file in self.pages():
                name = snapshot_name(file.relative_to(self.docs).as_posix())
                if name is not None:
                    self._versioned[file] = self.snapshots / name
        return self._versioned


SITE = pytest.StashKey[Site | None]()  # set at configure: None where there is no site


def snapshot_name(rel: str) -> str | None:
    """The snapshot of a page by its path under docs/: `performance/sky/v1.md` (or
    `performance/sky/v1/index.md`) is `sky-v1.md`, `perf/v4.md` is `perf-v4.md`; None for a page
    that is not versioned. `performance/` is left out: it is where the pages usually live."""
    from perfpages.site import versions

    if versions.number(rel) is None:
        return None
    parts = rel.removesuffix(".md").split("/")
    if parts[-1] in ("index", "README"):
        parts.pop()
    if parts[0] == "performance" and len(parts) > 2:
        parts.pop(0)
    return "-".join(parts) + ".md"


def _excerpt(line: str | None, column: int) -> str:
    if line is None:
        return "<end of page>"
    start = max(0, column - SHOWN // 2)
    end = start + SHOWN
    return repr(("…" if start else "") + line[start:end] + ("…" if end < len(line) else ""))


def compare(page: str, rendered: str, snapshot: Path, *, shown: str, accept: str) -> str | None:
    """None if `rendered` is the snapshot, else one line: where it first differs, what to do."""
    if not snapshot.is_file():
        return (f"{page}: no snapshot yet ({shown}); create it with {accept}, "
                f"then review and commit it")
    # Bytes, not text mode: a newline translated on some machine is a difference too.
    expected = snapshot.read_bytes().decode("utf-8", errors="replace")
    if expected == rendered:
        return None
    want, got = expected.split("\n"), rendered.split("\n")
    n = next(i for i in range(max(len(want), len(got)))
             if i >= len(want) or i >= len(got) or want[i] != got[i])
    a = want[n] if n < len(want) else None
    b = got[n] if n < len(got) else None
    column = next((i for i, (x, y) in enumerate(zip(a or "", b or "", strict=False)) if x != y),
                  min(len(a or ""), len(b or "")))
    return (f"{page} no longer renders what its snapshot {shown} says, at line {n + 1} "
            f"column {column + 1}: expected {_excerpt(a, column)}, got {_excerpt(b, column)}; "
            f"if the change is intended, accept it with {accept} ({NEW_VERSION})")


class CheckFailed(Exception):
    """A page check that does not hold: its message is the whole report."""


class Check(pytest.Item):
    """An item whose failure is one line of text, not a traceback."""

    def problem(self) -> str | None:
        raise NotImplementedError

    def runtest(self) -> None:
        problem = self.problem()
        if problem:
            raise CheckFailed(problem)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str | TerminalRepr:
        if isinstance(excinfo.value, CheckFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)  # a bug in perfpages: its traceback

    def reportinfo(self) -> tuple[Path, int | None, str]:
        # The failure's heading. Not the node id itself: pytest -v rewrites a heading that ends
        # the node id (its dots become `::`).
        return self.path, None, self.nodeid.replace("::", " ")


class ClaimCheck(Check):
    def __init__(self, *, claim: Claim, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.claim = claim

    def problem(self) -> str | None:
        return None if self.claim.holds else self.claim.message

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, self.claim.line - 1, super().reportinfo()[2]


class PageError(Check):
    def __init__(self, *, error: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error

    def problem(self) -> str | None:
        return self.error


class SnapshotCheck(Check):
    def __init__(self, *, page: str, rendered: str, snapshot: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.page = page
        self.rendered = rendered
        self.snapshot = snapshot

    def problem(self) -> str | None:
        site = _site(self.config)
        assert site is not None
        shared = [site.page_path(f) for f, s in site.versioned().items() if s == self.snapshot]
        if len(shared) > 1:
            return (f"{' and '.join(shared)} would share the snapshot "
                    f"{site.shown(self.snapshot)} — rename the directory of one of them")
        data = self.rendered.encode("utf-8")
        if os.environ.get(UPDATE) and (not self.snapshot.is_file()
                                       or self.snapshot.read_bytes() != data):
            self.snapshot.parent.mkdir(parents=True, exist_ok=True)
            self.snapshot.write_bytes(data)
            site.written.append(self.snapshot)
        accept = f"{UPDATE}=1 pytest {site.shown(self.path)}"
        return compare(self.page, self.rendered, self.snapshot, shown=site.shown(self.snapshot),
                       accept=accept)


class OrphanSnapshot(Check):
    def problem(self) -> str | None:
        site = _site(self.config)
        assert site is not None
        return (f"{site.shown(self.path)}: a snapshot without its page: no versioned page under "
                f"{site.shown(site.docs)} is named for it — a published version was removed or "
                f"renamed: restore it, or delete the snapshot")


class PageFile(pytest.File):
    """A page under docs/: an item per claim, and one for its snapshot if it is versioned."""

    def collect(self) -> Iterator[pytest.Item]:
        from perfpages.errors import PerfpagesError
        from perfpages.site.page import render_file
        from perfpages.site.reproduction import Docs

        site = _site(self.config)
        assert site is not None
        site.collected.add(self.path)
        self.extra_keyword_matches.add(self.nodeid)  # -k docs/perf/v1.md, whatever the parent
        page = site.page_path(self.path)
        try:
            rendered = render_file(self.path, path=page, store=site.store(),
                                   docs=Docs(site.base, site.docs))
        except PerfpagesError as exc:
            yield PageError.from_parent(self, name="page", error=str(exc))
            return
        except (OSError, UnicodeDecodeError) as exc:
            yield PageError.from_parent(self, name="page", error=f"{page}: cannot read it "
                                        f"({exc}) — save it as UTF-8 text, readable by you")
            return
        seen: dict[int, int] = {}
        for claim in rendered.claims:
            seen[claim.line] = seen.get(claim.line, 0) + 1
            name = "claim" if seen[claim.line] == 1 else f"claim-{seen[claim.line]}"
            where = f"{self.nodeid}:{claim.line}"
            # `page:line` in the node id, as in the message (pytest would give `page::claim`).
            item = ClaimCheck.from_parent(self, name=name, nodeid=f"{where}::{name}",
                                          claim=claim)
            item.extra_keyword_matches.add(where)
            yield item
        # The build's hand-typed-figure lint (its warnings that are no claim's): one item.
        failed = {claim.message for claim in rendered.claims}
        lint = [w for w in rendered.warnings if w not in failed]
        if lint:
            yield PageError.from_parent(self, name="lint", error="\n".join(lint))
        snapshot = site.versioned().get(self.path)
        # A page that pins no run states no data (it renders as written): nothing to guard yet.
        if snapshot is not None and rendered.pins_runs:
            yield SnapshotCheck.from_parent(self, name="snapshot", page=page,
                                            rendered=rendered.markdown, snapshot=snapshot)


class BuiltPage(Check):
    """A page of a built site, whatever built it: no perfpages macro left unrendered."""

    def problem(self) -> str | None:
        from perfpages.site import built

        site = _site(self.config)
        assert site is not None
        root = next(b for b in site.built if self.path.is_relative_to(b))
        found = built.unrendered(self.path.read_text(encoding="utf-8", errors="replace"),
                                 self.path.relative_to(root).as_posix(), built.names())
        more = f" (and {len(found) - 1} more on the page)" if len(found) > 1 else ""
        return found[0].message(site.shown(root)) + more if found else None


class BuiltFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        site = _site(self.config)
        assert site is not None
        site.collected.add(self.path)
        yield BuiltPage.from_parent(self, name="unrendered")


def _uses_perfpages(config: dict[str, Any]) -> tuple[bool, str | None]:
    """Whether mkdocs.yml's plugins include perfpages, and its `results` option."""
    from perfpages.site.config import plugin_options

    options = plugin_options(config)
    results = (options or {}).get("results")
    return options is not None, results if isinstance(results, str) else None


def _may_use_perfpages(root: Path) -> bool:
    """A necessary condition for settings.load to name a perfpages site, found without
    importing it (and PyYAML): from the rootdir up, a mkdocs.yml or a pyproject.toml that
    mentions perfpages."""
    for directory in (root, *root.parents):
        if (directory / "mkdocs.yml").is_file():
            return True
        try:
            if "perfpages" in (directory / "pyproject.toml").read_text(encoding="utf-8"):
                return True
        except (OSError, UnicodeDecodeError):
            pass
    return False


def find_site(rootpath: Path) -> Site | None:
    """The perfpages site of the repository around `rootpath`, None when it has none."""
    if not _may_use_perfpages(rootpath.resolve()):
        return None
    import yaml

    from perfpages.errors import PerfpagesError
    from perfpages.settings import TolerantLoader, load

    try:
        settings = load(start=rootpath)
    except PerfpagesError as exc:
        raise pytest.UsageError(f"perfpages: {exc}") from None
    try:
        text = settings.mkdocs.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    try:
        config = yaml.load(text, Loader=TolerantLoader) or {}
    except yaml.YAMLError as exc:
        if "perfpages" not in text:
            return None
        raise pytest.UsageError(f"perfpages: {settings.mkdocs}: not valid YAML: "
                                f"{getattr(exc, 'problem', exc)} — fix it, or disable the "
                                f"plugin with -p no:perfpages") from None
    if not isinstance(config, dict):
        return None
    used, results = _uses_perfpages(config)
    if not used:
        return None
    real = rootpath.resolve()

    def anchored(path: Path) -> Path:
        # Settings resolve symlinks; pytest's paths do not: compare paths in pytest's terms.
        return rootpath / path.relative_to(real) if path.is_relative_to(real) else path

    base = anchored(settings.mkdocs.resolve().parent)
    docs = config.get("docs_dir")
    docs = docs if isinstance(docs, str) else "docs"
    # The runs the build renders: the MkDocs plugin's own option when mkdocs.yml sets it.
    built = config.get("site_dir")
    built = built if isinstance(built, str) else "site"
    return Site(rootpath=rootpath, base=base, docs=base / docs,
                results=base / results if results else settings.results,
                snapshots=anchored(settings.snapshots),
                built=(base / built, base / RENDERED / "site"))


def _site(config: pytest.Config) -> Site | None:
    return config.stash.get(SITE, None)


def pytest_configure(config: pytest.Config) -> None:
    config.stash[SITE] = find_site(config.rootpath)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """Pages under paths given to pytest (`pytest docs`, `pytest docs/perf/v1.md`), and the
    HTML of a built site (`pytest site`)."""
    site = _site(parent.config)
    if site is not None and file_path.suffix == ".html" and any(
            file_path.is_relative_to(b) for b in site.built):
        return BuiltFile.from_parent(parent, path=file_path)
    if site is None or file_path.suffix != ".md" or not file_path.is_relative_to(site.docs):
        return None
    return PageFile.from_parent(parent, path=file_path)


@pytest.hookimpl(tryfirst=True)  # before -k, -m and --deselect select among the items
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    """Plain `pytest` (no paths given) checks every page, though testpaths leave docs/ out."""
    site = _site(config)
    if site is None or config.args_source == pytest.Config.ArgsSource.ARGS:
        return
    for file in site.pages():
        if file not in site.collected:  # testpaths may include docs/: never collect twice
            items.extend(session.genitems(PageFile.from_parent(session, path=file)))
    for file in sorted(f for b in site.built if b.is_dir() for f in b.rglob("*.html")):
        if file not in site.collected:
            items.extend(session.genitems(BuiltFile.from_parent(session, path=file)))
    names = {s.name for s in site.versioned().values()}
    for snapshot in sorted(site.snapshots.glob("*.md")):
        if snapshot.name not in names:
            orphan = OrphanSnapshot.from_parent(session, name="orphan", path=snapshot,
                                                nodeid=f"{site.shown(snapshot)}::orphan")
            items.extend(session.genitems(orphan))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    site = _site(terminalreporter.config)
    if site and site.written:
        terminalreporter.write_sep("=", "perfpages")
        for snapshot in site.written:
            terminalreporter.write_line(f"wrote {site.shown(snapshot)}: review and commit it")

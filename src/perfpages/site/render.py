"""The one renderer of a site's pages, and the render step that needs no generator.

`site_page` is what a page of the site becomes — its macros computed, claims evaluated, the
header of its runs under its title, the note of an older version — for the MkDocs plugin and for
`render_site` alike. `render_site` writes every page that way as plain Markdown, with the run
pages, the runs index, every other file of docs/ and a configuration without the plugin, so any
generator (Zensical, MkDocs without perfpages) builds the same pages; strict, it fails on what
fails `mkdocs build --strict`: a claim that does not hold, a hand-typed figure, a bad pin.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import posixpath
import secrets
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfpages.errors import PerfpagesError
from perfpages.site import agreement, cards, charts, header, page, tables
from perfpages.site import runpages as runpage
from perfpages.site import versions as version
from perfpages.site.config import CSS, Site, rendered
from perfpages.site.reproduction import Docs
from perfpages.site.store import RunStore

MARK = ".perfpages-render"  # in a directory `render_site` wrote: the files it wrote (JSON)
# What a generator makes from the rendered mkdocs.yml: its site_dir, and Zensical's cache
DERIVED = ("site", ".cache")
STYLE = charts.STYLE + tables.STYLE + cards.STYLE


@dataclass
class SitePage:
    markdown: str  # the body, without front matter, as the generator renders it
    warnings: list[str] = field(default_factory=list)  # lint findings and failed claims
    wide: bool = False  # its tables scroll sideways (tables.wrap, in the HTML)
    # The verdicts of a live page (not an older version, not superseded), for agreement.check
    stated: list[agreement.Stated] = field(default_factory=list)


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
    top = header.markdown(done.runs, src_uri, runpage.PREFIX if run_pages else None,
                          done.claims, header.sections(markdown, done.read), done.replays,
                          done.blocks)
    text = header.under_title(done.markdown, top)
    if older is not None:
        text = version.banner(*older, src_uri, superseded) + text
    elif superseded is not None:
        text = (version.notice(meta, shown) or "") + text
    live = older is None and superseded is None
    return SitePage(text, done.warnings,
                    done.pins_runs or src_uri.startswith(f"{runpage.PREFIX}/"),
                    done.stated if live else [])


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


def _inside(path: Path, other: Path) -> bool:
    return path == other or path.is_relative_to(other) or other.is_relative_to(path)


def _check_out(out: Path, site: Site) -> None:
    """Refuse an output that overlaps the archived runs or the pages, or is not a directory."""
    real = out.resolve()
    for path, what in ((site.results.resolve(), "the archived runs"),
                       (site.docs.resolve(), "the pages")):
        if _inside(real, path):
            raise PerfpagesError(f"it overlaps {what} ({path}): a render replaces its output "
                                 "whole", where=out, key="--out",
                                 fix="choose a directory outside results and docs")
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise PerfpagesError("not a directory", where=out, key="--out",
                             fix="choose another --out directory")


def _written(root: Path) -> dict[str, list[int]]:
    """Every file under `root` (the build directory and the mark left out), with its size and
    modification time: what the mark records, to tell later what render wrote."""
    found: dict[str, list[int]] = {}
    for folder, dirs, files in os.walk(root):
        rel_dir = Path(folder).relative_to(root)
        if rel_dir == Path("."):
            dirs[:] = [d for d in dirs if d not in DERIVED]
        for name in files:
            rel = (rel_dir / name).as_posix()
            if rel != MARK:
                st = os.lstat(Path(folder) / name)
                found[rel] = [st.st_size, st.st_mtime_ns]
    return found


def _owned(out: Path) -> list[str] | None:
    """The files a previous render wrote into `out` (None: `out` is missing or empty); raises
    when `out` holds anything render did not write, or that was changed since."""
    if not out.exists() or not any(out.iterdir()):
        return None
    try:
        mark = json.loads((out / MARK).read_text(encoding="utf-8"))
        files = mark["files"] if isinstance(mark, dict) else None
        if not isinstance(files, dict):
            raise ValueError
    except (OSError, ValueError, KeyError):
        older = (out / MARK).is_file()  # an older render's mark: no list of what it wrote
        raise PerfpagesError("not written by perfpages render (no list of its files in "
                             f"{MARK}): it would be replaced", where=out, key="--out",
                             fix="an older perfpages render wrote it: remove it once by hand"
                             if older else "choose another --out directory, or move that "
                             "one away") from None
    seen = []
    for folder, dirs, names in os.walk(out):
        here = Path(folder)
        rel_dir = here.relative_to(out)
        for name in sorted(dirs + names):
            path = here / name
            rel = (rel_dir / name).as_posix()
            if rel in (MARK, *DERIVED) and not path.is_symlink() and (
                    path.is_file() if rel == MARK else path.is_dir()):
                continue  # the build a generator wrote from the rendered mkdocs.yml: derived
            if path.is_dir() and not path.is_symlink():
                continue
            st = os.lstat(path)
            if not (stat.S_ISREG(st.st_mode) and files.get(rel) == [st.st_size,
                                                                      st.st_mtime_ns]):
                raise PerfpagesError("not written by perfpages render (added or changed "
                                     "since): the render would delete it", where=path,
                                     fix=f"move it out of {out}, or choose another --out")
            seen.append(rel)
        if rel_dir == Path("."):
            dirs[:] = [d for d in dirs if d not in DERIVED]
    return seen


def _remove(tree: Path, files: list[str]) -> None:
    """Delete what a render wrote into `tree` (its files, its mark, the build), then the
    directories left empty; anything else stays."""
    for rel in files:
        (tree / rel).unlink(missing_ok=True)
    for name in DERIVED:
        build = tree / name
        if build.is_dir() and not build.is_symlink():
            shutil.rmtree(build)
    (tree / MARK).unlink(missing_ok=True)
    for folder, _, _ in sorted(os.walk(tree), key=lambda w: -len(w[0])):
        with contextlib.suppress(OSError):
            os.rmdir(folder)  # only when empty: never what render did not write


def _new_dir(parent: Path, stem: str) -> Path:
    """A directory of a new name beside the target, created exclusively (never one that was
    there, never through a link)."""
    while True:
        path = parent / f".{stem[:200]}.render-{secrets.token_hex(4)}"
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue


@contextlib.contextmanager
def _locked(parent: Path, out: Path) -> Iterator[None]:
    """One render at a time into `parent` (a lock on the directory itself: nothing to leave
    behind); the other one fails at once."""
    fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise PerfpagesError("another perfpages render is writing beside it", where=out,
                                 key="--out", fix="wait for it to finish, then render "
                                 "again") from None
        yield
    finally:
        os.close(fd)


def render_site(site: Site, out: Path, *, strict: bool = True) -> Result:
    """Render every page of `site` into `out/docs` with `out/mkdocs.yml` beside it. The pages
    are written into a new directory beside `out` and swapped in by a rename only when the
    render succeeds (strict: with no warning either); a failed render removes the previous
    render, so no page goes unchecked into a build. `out` is refused unless it is missing,
    empty, or holds only what an earlier render wrote (and its build): nothing else is ever
    deleted."""
    out = Path(os.path.abspath(out))
    try:
        docs_there = site.docs.is_dir()
    except OSError:  # a name too long
        docs_there = False
    if not docs_there:
        raise PerfpagesError("no such directory", where=site.docs, key="docs_dir",
                             fix="point --docs (or mkdocs.yml's docs_dir) at the pages")
    try:
        _check_out(out, site)
        out.parent.mkdir(parents=True, exist_ok=True)
        with _locked(out.parent, out):
            previous = _owned(out)
            staging = _new_dir(out.parent, out.name)
            try:
                result = _render_into(site, out, staging, strict)
                done = not (result.problems or (strict and result.warnings))
                if done:
                    _write(staging / "mkdocs.yml", rendered(site, out))
                    _write(staging / MARK, json.dumps(
                        {"written_by": "perfpages render: replaced whole by the next render",
                         "files": _written(staging)}, indent=0) + "\n")
                    os.chmod(staging, 0o777 & ~_umask())
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)  # ours: created above
                raise
            if not done:
                shutil.rmtree(staging, ignore_errors=True)
                if previous is not None:
                    _remove(out, previous)
                return result
            old = None
            if out.exists():
                old = _new_dir(out.parent, out.name)
                os.rename(out, old)  # onto the new empty directory
            os.rename(staging, out)
            if old is not None:
                _remove(old, previous or [])
            return result
    except OSError as exc:
        raise PerfpagesError(f"cannot write the rendered pages ({exc.strerror or exc})",
                             where=out, key="--out",
                             fix="choose a writable --out with free space and a shorter "
                                 "name") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _render_into(site: Site, out: Path, staging: Path, strict: bool) -> Result:
    result = Result(out)
    target = staging / "docs"
    target.mkdir()
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
            try:
                sources[rel.as_posix()] = (file.read_text(encoding="utf-8-sig"),
                                           site.shown(file))
            except UnicodeDecodeError as exc:
                result.problems.append(f"{site.shown(file)}: not UTF-8 text (byte "
                                       f"{exc.object[exc.start]:#04x} at offset {exc.start}) "
                                       "— save the page as UTF-8")
            except OSError as exc:
                result.problems.append(f"{site.shown(file)}: cannot read it "
                                       f"({exc.strerror}) — make it readable")
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
    stated: list[agreement.Stated] = []
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
        stated += done.stated
        # The front matter stays (its title is the generator's), above the rendered body.
        _write(target / src, source[: len(source) - len(body)] + done.markdown)
        result.pages += 1
    result.warnings += agreement.check(stated)  # one verdict per comparison across the site
    return result


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _copy(source: Path, target: Path) -> None:
    """A copy, never a link: the archives stay immutable whatever touches the rendered tree."""
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)

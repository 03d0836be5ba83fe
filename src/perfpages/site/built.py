"""A built site, whatever built it, checked for perfpages macros left unrendered.

A generator that does not run the perfpages plugin (Zensical ignores plugins it does not know)
publishes `{{ table(…) }}` as text and exits 0. In the built HTML such a macro is literal text
outside code; a macro shown on purpose is not: in a code block or span it is inside `<code>`,
and text from an archive is escaped as character references (`&#123;&#123;`), which stay
references in the HTML. So the text of every page outside code, script and style, read without
decoding references, must hold no `{{ name` of a perfpages macro and no Jinja `{% … %}`.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from perfpages.errors import PerfpagesError

SKIPPED = frozenset({"code", "pre", "script", "style", "textarea", "template"})
MACRO = re.compile(r"\{\{-?\s*([A-Za-z_]\w*)[^\n]{0,80}?(?:\}\}|$)|\{%-?\s*[a-z]+[^\n]{0,80}?"
                   r"(?:%\}|$)", re.M)
FIX = ("built without perfpages: build it with the perfpages MkDocs plugin, or build the pages "
       "`perfpages render` writes (the guide: perfpages guide pages, its section Building "
       "without MkDocs)")


@dataclass(frozen=True)
class Unrendered:
    page: str  # the HTML file, relative to the site
    line: int
    text: str

    def message(self, site: str) -> str:
        return f"{site}/{self.page}:{self.line}: unrendered perfpages macro {self.text} — {FIX}"


class _Text(HTMLParser):
    """The text of a page outside code, with the line each piece starts on."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)  # `&#123;` stays a reference, not a brace
        self.inside: list[str] = []
        self.pieces: list[tuple[int, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in SKIPPED:
            self.inside.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self.inside:
            while self.inside and self.inside.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        if not self.inside:
            self.pieces.append((self.getpos()[0], data))


def unrendered(html: str, page: str, names: frozenset[str]) -> list[Unrendered]:
    """The macros of `names` (and Jinja statements) left as text in one page's HTML."""
    parser = _Text()
    parser.feed(html)
    parser.close()
    out = []
    for line, data in parser.pieces:
        for m in MACRO.finditer(data):
            if m.group(1) is None or m.group(1) in names:
                out.append(Unrendered(page, line + data.count("\n", 0, m.start()),
                                      m.group(0).strip()))
    return out


@functools.cache
def names() -> frozenset[str]:
    from perfpages.site.page import macro_names  # the macros' modules: only when needed

    return macro_names()


def pages(site: Path) -> list[Path]:
    try:
        if not site.is_dir():
            raise PerfpagesError("no such directory", where=site,
                                 fix="build the site first, or name the directory it was "
                                     "built in")
        # Regular files only: a directory named x.html, a dangling link, a FIFO (reading it
        # would wait forever) are no pages.
        return sorted(p for p in site.rglob("*.html") if p.is_file())
    except OSError as exc:  # a name too long, a directory that cannot be listed
        raise PerfpagesError(f"cannot read it ({exc.strerror or exc})", where=site,
                             fix="name the directory the site was built in") from None


MAX_PAGE = 64 << 20  # a page of a built site is at most a few MB


def check(site: Path) -> tuple[int, list[Unrendered]]:
    """How many pages the built site has, and every unrendered macro in them."""
    files = pages(site)
    found = []
    for file in files:
        try:
            with file.open("rb") as fh:
                raw = fh.read(MAX_PAGE + 1)
        except OSError as exc:
            raise PerfpagesError(f"cannot read it ({exc.strerror or exc})", where=file,
                                 fix="make the built site readable") from None
        if len(raw) > MAX_PAGE:
            raise PerfpagesError(f"larger than {MAX_PAGE >> 20} MiB: not a page", where=file,
                                 fix="check what built it")
        html = raw.decode("utf-8", errors="replace")
        found += unrendered(html, file.relative_to(site).as_posix(), names())
    return len(files), found

"""`perfpages render` and `perfpages check-site`: the site's pages without a generator, and the
check that a built site, whatever built it, holds no unrendered macro."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from rich.console import Console

from perfpages.errors import PerfpagesError
from perfpages.site import built
from perfpages.site.config import RENDERED, Site
from perfpages.site.render import render_site


def _say(console: Console, text: str) -> None:
    console.print(text, highlight=False, markup=False, emoji=False)


def render_pages(docs: str | None, out: str | None, strict: bool, console: Console) -> int:
    """Render every page into OUT/docs with OUT/mkdocs.yml; exit 1, one line per problem, on
    what fails `mkdocs build --strict` (with strict=False only on what stops any build)."""
    for flag, given in (("--out", out), ("--docs", docs)):
        if given is not None and not given.strip():  # '' is no path, not the default one
            raise PerfpagesError(f"{flag} is empty", key=flag, fix=f"give {flag} a path")
    site = Site.load(docs=docs)
    target = Path(os.path.abspath(out)) if out else site.base / RENDERED  # a link: refused
    result = render_site(site, target, strict=strict)
    for line in result.problems:
        print(f"error: {line}", file=sys.stderr)
    for line in result.warnings:
        print(f"{'error' if strict else 'warning'}: {line}", file=sys.stderr)
    if result.problems or (strict and result.warnings):
        return 1
    shown = os.path.relpath(target)
    _say(console, f"rendered {result.pages} pages ({result.run_pages} run pages) into "
                  f"{shown}/docs")
    _say(console, f"build them: zensical build -f {shown}/mkdocs.yml (the site in {shown}/site)")
    return 0


def check_site(site_dir: str, console: Console) -> int:
    """Exit 1 with a line per unrendered perfpages macro in the built site's HTML."""
    root = Path(site_dir)
    count, found = built.check(root)
    shown = os.path.relpath(root)
    for item in found:
        print(f"error: {item.message(shown)}", file=sys.stderr)
    if found:
        return 1
    _say(console, f"ok: {count} pages in {shown}, no unrendered perfpages macro")
    return 0

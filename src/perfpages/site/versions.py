"""Versioned performance pages: `…/v1.md`, `…/v2.md` (or `…/v2/index.md`), each pinned to its
own runs. The newest comes first in the nav; older ones say which is newest and stay as they were.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from perfpages.errors import PerfpagesError

VERSION = re.compile(r"^v(\d+)$")
T = TypeVar("T")


def number(src_uri: str) -> int | None:
    """The version of a page from its path: docs' `perf/v3.md` or `perf/v3/index.md` is 3."""
    parts = posixpath.splitext(src_uri)[0].split("/")
    name = parts[-2] if parts[-1] in ("index", "README") and len(parts) > 1 else parts[-1]
    m = VERSION.match(name)
    return int(m.group(1)) if m else None


def newest_first(items: Sequence[T], versions: Sequence[int | None]) -> list[T]:
    """Versioned items sorted newest first, in the place of the first of them; others kept."""
    versioned = sorted((v, i) for i, v in enumerate(versions) if v is not None)
    if len(versioned) < 2:
        return list(items)
    order = [items[i] for _, i in reversed(versioned)]
    out: list[T] = []
    for i, item in enumerate(items):
        if versions[i] is None:
            out.append(item)
        elif order:
            out.extend(order)
            order = []
    return out


def older(srcs: Sequence[str]) -> dict[str, tuple[int, int, str]]:
    """Among the pages of one nav section (by path under docs/), each older version's number,
    the newest number and the newest page: what its banner says."""
    pages = [(n, src) for src in srcs if (n := number(src)) is not None]
    if len(pages) < 2:
        return {}
    top, newest = max(pages, key=lambda p: p[0])
    return {src: (n, top, newest) for n, src in pages if n != top}


LINK = re.compile(r"\[[^\]]+\]\([^)\s]+\)")


def superseded(meta: Mapping[str, Any], where: str) -> str | None:
    """A page's `superseded:` paragraph (what it got wrong), or None: one paragraph of text,
    or `{by: PAGE.md, why: PARAGRAPH}`."""
    value = meta.get("superseded")
    if value is None:
        return None
    if isinstance(value, Mapping):
        why = value.get("why")
        if set(value) - {"by", "why"} or not isinstance(why, str) or not why.strip() or \
                not isinstance(value.get("by"), str) or not value["by"].strip():
            raise PerfpagesError(f"superseded needs `by:` (the page that replaces it) and "
                                 f"`why:` (what it got wrong), not {dict(value)!r}",
                                 where=where, key="superseded",
                                 fix='write it as `superseded: {by: v3.md, why: "…"}`')
        return why.strip()
    if not isinstance(value, str) or not value.strip():
        raise PerfpagesError(f"superseded must be one paragraph of text, not {value!r}",
                             where=where, key="superseded",
                             fix='write it as `superseded: "v1 pooled the floors …"`')
    return value.strip()


def replacement(meta: Mapping[str, Any]) -> str | None:
    """The page `superseded: {by: …}` names (a path relative to the page), or None."""
    value = meta.get("superseded")
    return str(value["by"]).strip() if isinstance(value, Mapping) else None


def notice(meta: Mapping[str, Any], where: str) -> str | None:
    """The warning at the top of a page that is not an older version but `superseded:`
    (None: not superseded); the plain-paragraph form must link the page replacing it."""
    why = superseded(meta, where)
    if why is None:
        return None
    by = replacement(meta)
    if by is None and not LINK.search(why):
        raise PerfpagesError("superseded on a page that is not an older version needs the "
                             "page replacing it", where=where, key="superseded",
                             fix='write it as `superseded: {by: v3.md, why: "…"}`, or link '
                                 "the page in the paragraph")
    stem = posixpath.splitext(by)[0] if by else ""
    title = f"Superseded by {stem}" if by else "Superseded"
    if by is None:  # the link to what replaces it is in the paragraph: not folded
        said = "\n".join(f"    {line}".rstrip() for line in why.split("\n"))
        return (f'!!! warning "{title}"\n\n    No longer current: this page renders exactly '
                f"what it said, from its own pinned runs. What it got wrong:\n\n{said}\n\n")
    return (f'!!! warning "{title}"\n\n'
            + _folded(f"No longer current: read [{stem}]({by}); what this page got wrong",
                      "This page renders exactly what it said, from its own pinned runs.", why))


def _folded(summary: str, said: str, why: str) -> str:
    """A superseded page's warning body: one fold whose summary links the page that replaces
    it, and inside, what the page says of itself and what it got wrong. The warning stays two
    lines high, so the page's short answer is still on the first screen."""
    body = "\n".join(f"        {line}".rstrip() for line in why.split("\n"))
    return f'    ??? note "{summary}"\n\n        {said} What it got wrong:\n\n{body}\n\n'


def banner(version: int, newest: int, newest_src: str, page_src: str,
           superseded: str | None = None) -> str:
    """The note at the top of an older version, linking the newest; with `superseded` (what
    the version got wrong), a warning that carries it, folded."""
    link = posixpath.relpath(newest_src, posixpath.dirname(page_src) or ".")
    if superseded is not None:
        return (f'!!! warning "Superseded by v{newest}"\n\n'
                + _folded(f"Read the newest, [v{newest}]({link}); what v{version} got wrong",
                          f"This version v{version} renders exactly what it said, from its own "
                          "pinned runs.", superseded))
    return (f'!!! note "Version v{version} — kept as published"\n\n'
            f"    This version renders exactly what it said, from its own pinned runs. "
            f"The newest is [v{newest}]({link}).\n\n")

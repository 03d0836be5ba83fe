"""Text from archives placed into Markdown: never markup, whatever a label or title contains.

The helpers live in `perfpages.analysis.text`, shared with `bench report --format md` and
`bench cite` (analysis may not import the site)."""

from __future__ import annotations

from perfpages.analysis.text import code, fence, md, prose, span, table, typed

__all__ = ["code", "fence", "md", "prose", "span", "table", "typed"]

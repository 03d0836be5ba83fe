"""Text from archives placed into Markdown: never markup, whatever a label or title contains."""

from __future__ import annotations

import re

# HTML's special characters and those Markdown (and its tables) act on, as character references
# that render literally; one pass, so no reference is escaped twice.
_SPECIAL = {c: f"&#{ord(c)};" for c in "\\`*_[]{}|#!~^<>&\"'"}
_SPECIAL["\n"] = " "


def md(text: object) -> str:
    """Escape for Markdown prose or a table cell: the text shows as is, never as markup."""
    return "".join(_SPECIAL.get(c, c) for c in str(text))


def code(text: object) -> str:
    """Inline code that cannot be broken out of (a backtick span could, by its content)."""
    return f"<code>{md(text)}</code>"


def fence(text: str, info: str = "text") -> str:
    """A fenced block longer than any backtick run inside it (content stays literal)."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{text.rstrip()}\n{ticks}"


def table(columns: list[str], rows: list[list[str]]) -> str:
    """A Markdown table of already-escaped cells."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)

"""Text from archives placed into Markdown: shown as is, never read as markup, whatever a label
or title contains. Shared by the site (`perfpages.site.escape`) and by `bench report --format md`
and `bench cite`, which may not import the site."""

from __future__ import annotations

import re

# HTML's special characters and those Markdown (and its tables) act on, as character references
# that render literally; one pass, so no reference is escaped twice.
_SPECIAL = {c: f"&#{ord(c)};" for c in "\\`*_[]{}|#!~^<>&\"'"}
_SPECIAL["\n"] = " "
# Markdown people also read raw (pasted into a pull request) escapes only what could act:
# quotes matter only inside an HTML attribute; an underscore between letters or digits is never
# emphasis (CommonMark, Python-Markdown); `<` only before a tag's first character, `&` only
# before an entity's, `>` only where it starts a line (a quote). So `work_mem`, "the suite's"
# and "(5 < 6)" stay as typed.
_PROSE = re.compile(r"[\\`*\[\]{}|#!~^\n]|(?<![^\W_])_|_(?![^\W_])|<(?=[A-Za-z/!?])"
                    r"|&(?=[#A-Za-z])|\A>")


def md(text: object) -> str:
    """Escape for Markdown prose or a table cell: the text shows as is, never as markup."""
    return "".join(_SPECIAL.get(c, c) for c in str(text))


def prose(text: object) -> str:
    """Like md(), for Markdown that is also read raw: characters that cannot act where they
    stand are left as typed."""
    return _PROSE.sub(lambda m: _SPECIAL[m.group(0)], str(text))


def code(text: object) -> str:
    """Inline code that cannot be broken out of (a backtick span could, by its content)."""
    return f"<code>{md(text)}</code>"


def span(text: object) -> str:
    """A backtick code span longer than any backtick run inside it: literal and readable raw."""
    flat = str(text).replace("\n", " ")
    ticks = "`" * (max((len(m) for m in re.findall(r"`+", flat)), default=0) + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{ticks}{pad}{flat}{pad}{ticks}"


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


# Options whose archived value is a directory of the machine that ran the suite: from the
# repository a reader types the command without them (the configured directories apply).
_MACHINE_DIRS = ("--suites", "--results")


def typed(command: str) -> str:
    """An archived command line as a reader types it in their checkout: no option naming the
    build machine's directories, any other absolute path by its name only."""
    words, out = command.split(" "), []
    while words:
        word = words.pop(0)
        option, eq, value = word.partition("=")
        if not eq and words:
            value = words[0]
        if option in _MACHINE_DIRS and value.startswith("/"):
            if not eq:
                words.pop(0)
            continue
        out.append(word.rsplit("/", 1)[1] or word if word.startswith("/") else word)
    return " ".join(out)

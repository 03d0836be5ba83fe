"""The lint: a figure with a unit typed by hand on a page that pins runs.

Such a figure was not computed from the archives, so it can go stale without any test noticing.
Macro calls, code and comments are not prose and are skipped; a figure that is not a measurement
(a setting, a size) is written as {{ given("0.5 ms") }}, the explicit marker.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

UNITS = (r"%|‰|ms|µs|μs|us|ns|s|sec|seconds?|milliseconds?|microseconds?|min|minutes?|h|"
         r"/s|/min|req/s|rps|qps|tps|ops/s|calls/s|requests/s|×|"
         r"[kKMGT]i?B|B|[kMG]Hz|[kMG]bps")
FIGURE = re.compile(
    r"(?<![\w.,/#-])[-+−±]?\d(?:[\d,]*\d)?(?:\.\d+)?(?:\s?(?:" + UNITS + r")(?![\w/])|x(?!\w))")
# Spans that are not prose: macro calls and statements, HTML comments, inline code, link targets.
SKIP = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{##.*?##\}|<!--.*?-->|(`+).+?\1|\]\([^)]*\)|"
                  r"<[^>]+>|https?://\S+", re.S)
FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")


@dataclass(frozen=True)
class Finding:
    line: int  # in the text given to check()
    figure: str


def _blank(match: re.Match[str]) -> str:
    """Keep newlines so line numbers survive the removal."""
    return re.sub(r"[^\n]", " ", match.group(0))


def fenced(lines: list[str]) -> list[bool]:
    """For each line, whether it belongs to a fenced code block (its fences included); a fence
    closes on a bare run of its own character at least as long as the opening one."""
    out: list[bool] = []
    fence: str | None = None
    for line in lines:
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            out.append(True)
        elif fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and \
                    line.strip() == m.group(1):
                fence = None
            out.append(True)
        else:
            out.append(False)
    return out


def prose(text: str) -> str:
    """The text with fenced code, macros, comments, code spans and URLs blanked out."""
    lines = text.split("\n")
    kept = ["" if code else line for line, code in zip(lines, fenced(lines), strict=True)]
    return SKIP.sub(_blank, "\n".join(kept))


def check(text: str) -> list[Finding]:
    """Every hand-typed figure with a unit, with its line (1-based) in `text`."""
    found = []
    for number, line in enumerate(prose(text).split("\n"), start=1):
        for m in FIGURE.finditer(line):
            found.append(Finding(number, m.group(0).strip()))
    return found


def message(path: str, line: int, figure: str) -> str:
    return (f"{path}:{line}: lint: hand-typed figure \"{figure}\" on a page that pins runs — "
            f"compute it with a macro (figure, change, table), or mark a figure that is not a "
            f"measurement as {{{{ given(\"{figure}\") }}}}")

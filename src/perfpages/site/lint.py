"""The lint: a number typed by hand on a page that pins runs.

Such a number was not computed from the archives, so it can go stale without any test noticing.
Flagged: a figure with a unit (`12 ms`), a bare decimal (`7.1`), a clock time or a date with a
time (`11:25:25 UTC`), a grouped or magnified number (`131,380`, `5.0 million`) and a count of
what the archive counts (`ten releases`, `12 rounds`). Not flagged: dotted versions (`0.42.0`),
numbers that name the pinned data (a label `0.43.0` and its prefix `0.43`), plain dates, "one",
and counts of settings (cores, threads, callers …). Macro calls, code and comments are not prose
and are skipped; a number that is not this page's data (a setting, another page's figure) is
written as {{ given("0.5 ms") }}, the explicit marker.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from perfpages.archive.manifest import Manifest

UNITS = (r"%|‰|ms|µs|μs|us|ns|s|sec|seconds?|milliseconds?|microseconds?|min|minutes?|h|"
         r"/s|/min|req/s|rps|qps|tps|ops/s|calls/s|requests/s|×|"
         r"[kKMGT]i?B|B|[kMG]Hz|[kMG]bps")
FIGURE = re.compile(
    r"(?<![\w.,/#-])[-+−±]?\d(?:[\d,]*\d)?(?:\.\d+)?(?:\s?(?:" + UNITS + r")(?![\w/])|x(?!\w))")
# Where a bare number starts: not inside a word, a dotted or grouped number, a path or an id
# (`sky-2`); a sign after a space is the number's.
START = r"(?<![\w.,/#:])(?<!\w-)"
END = r"(?![\w]|[.,:]\d)"
CLOCK = r"(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d+)?)?(?:\s?UTC|Z)?"
DATETIME = re.compile(START + r"\d{4}-\d{2}-\d{2}(?:T|\s)" + CLOCK +
                      r"(?:[+-]\d{2}:?\d{2})?" + END)
TIME = re.compile(START + CLOCK + END)
WORDS = ("two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|"
         "sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|"
         "ninety|hundred|thousand|dozen")
AMOUNT = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
MAGNITUDE = re.compile(START + r"(?:" + AMOUNT + r")\s+(?:thousand|million|billion|trillion)\b",
                       re.I)
# What the archive counts; not settings (cores, workers, threads, clients, callers, seconds).
NOUNS = (r"releases?|round[- ]trips?|rounds?|windows?|requests?|calls?|runs?|labels?|blocks?|"
         r"cells?|samples?|transactions?|statements?|verdicts?|claims?|errors?|failures?")
COUNT = re.compile(START + r"(\d{1,3}(?:,\d{3})+|\d+|(?i:" + WORDS + r"))\s+(?:" + NOUNS + r")\b")
GROUPED = re.compile(START + r"[-−]?\d{1,3}(?:,\d{3})+(?:\.\d+)?" + END)
DECIMAL = re.compile(START + r"[-−]?\d+(?:\.\d+)+" + END)
# Spans that are not prose: macro calls and statements, HTML comments, inline code, link targets.
SKIP = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{##.*?##\}|<!--.*?-->|(`+).+?\1|\]\([^)]*\)|"
                  r"<[^>]+>|https?://\S+", re.S)
FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
VERSION = re.compile(r"\d+(?:\.\d+)+")

Kind = Literal["figure", "number", "time", "count"]
# In the order they claim text: a later pattern never reports part of an earlier one's match.
PATTERNS: tuple[tuple[Kind, re.Pattern[str]], ...] = (
    ("figure", FIGURE), ("time", DATETIME), ("number", MAGNITUDE), ("count", COUNT),
    ("time", TIME), ("number", GROUPED), ("number", DECIMAL))


@dataclass(frozen=True)
class Finding:
    line: int  # in the text given to check()
    figure: str
    kind: Kind = "figure"


def known(manifests: Iterable[Manifest]) -> frozenset[str]:
    """The numbers a page may type because they name its pinned data: every dotted version in a
    label, block or run id (`0.43.0+cache` → `0.43.0`) and its prefixes (`0.43`)."""
    out: set[str] = set()
    for manifest in manifests:
        for name in (manifest.id, *manifest.labels, *manifest.blocks):
            for version in VERSION.findall(name):
                parts = version.split(".")
                out.update(".".join(parts[:n]) for n in range(2, len(parts) + 1))
    return frozenset(out)


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


def _exempt(kind: Kind, match: re.Match[str], names: frozenset[str]) -> bool:
    token = match.group(0).lstrip("-−")
    if kind == "count":
        amount = match.group(1).replace(",", "")
        return amount.isdigit() and int(amount) < 2  # "1 round", like "one round"
    if kind == "number" and match.re is DECIMAL:
        return token.count(".") > 1 or token in names  # a dotted version, a pinned name
    return False


def _line(line: str, names: frozenset[str]) -> list[tuple[int, Kind, str]]:
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, Kind, str]] = []
    for kind, pattern in PATTERNS:
        for m in pattern.finditer(line):
            if any(m.start() < end and start < m.end() for start, end in taken):
                continue
            taken.append(m.span())
            if not _exempt(kind, m, names):
                found.append((m.start(), kind, m.group(0).strip()))
    return sorted(found)


def check(text: str, names: Iterable[str] = ()) -> list[Finding]:
    """Every hand-typed number the lint flags, with its line (1-based) in `text`, in reading
    order; `names`: the numbers that name the page's pinned data (see `known`)."""
    exempt = frozenset(names)
    return [Finding(number, figure, kind)
            for number, line in enumerate(prose(text).split("\n"), start=1)
            for _, kind, figure in _line(line, exempt)]


def message(path: str, line: int, figure: str, kind: Kind = "figure") -> str:
    if kind == "figure":
        return (f"{path}:{line}: lint: hand-typed figure \"{figure}\" on a page that pins runs "
                f"— compute it with a macro (figure, change, table), or mark a figure that is "
                f"not a measurement as {{{{ given(\"{figure}\") }}}}")
    what = {"number": "bare number", "time": "clock time", "count": "count"}[kind]
    how = {"number": "a macro (figure, fact, change)",
           "time": "fact(\"started\") (a run's time)",
           "count": "fact(…, count=True) (a count of the run's labels, blocks …)"}[kind]
    return (f"{path}:{line}: lint: {what} \"{figure}\" on a page that pins runs looks measured "
            f"— compute it with {how}, or mark a number that is not from this page's data as "
            f"{{{{ given(\"{figure}\") }}}}")

"""No quantitative prose that is not computed, on the live performance pages (issue 34).

The build's lint (`perfpages.site.lint`) flags a figure typed in prose, but three things pass it:
a figure wrapped in `given(…)` (the marker for what is not this page's data), a sentence that
states a direction or a comparison in words ("throughput grows", "sized holds all of it"), and
the reason a claim prints beside itself (`uncertified_ok="… six to fourteen times …"`). Over
every live page (no `superseded:`) under docs/performance/:

- every `given(…)` is one reviewed here as not a result (a setting, a method parameter,
  another page's figure);
- every sentence of prose with a word of direction or comparison holds a macro (a claim, a
  figure, a change …) or is reviewed here as not a result (design, reasoning, advice);
- no `uncertified_ok=` reason states a number, a figure or a comparison.

A review names the sentence by its first words; edit the sentence and the test asks again.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from perfpages.site import lint

ROOT = Path(__file__).resolve().parent.parent
PAGES = ROOT / "docs" / "performance"

# Words that state a direction, a comparison or a threshold.
DIRECTION = re.compile(
    r"\b(?:faster|slower|quicker|grows?|grew|falls?|fell|rises?|rose|raises?|lowers?|higher|"
    r"lower|more|less|fewer|larger|smaller|drift(?:s|ed)?|climbs?|drops?|gains?|loses|losses|"
    r"doubles?|halves|half|tenth|quarter|twice|times|best|worst|cheaper|dearer|vanish(?:es)?|"
    r"longer|shorter|exceeds?|beyond)\b", re.I)
NUMBER_WORDS = re.compile(r"\b(?:" + lint.WORDS + r"|half|tenth|quarter|twice)\b", re.I)
GIVEN = re.compile(r"""given\(\s*(["'])(.*?)\1\s*\)""")
REASON = re.compile(r"""uncertified_ok\s*=\s*(["'])(.*?)\1""")
MACRO = "\u2063"  # stands where a macro was, so a sentence knows it holds one

# page → the given() texts that are not results, and why.
GIVEN_OK: dict[str, dict[str, str]] = {
    "sky/v2.md": {"1,000,000": "the catalogue's size, a setting of the suite",
                  "5 ms": "a delay the block sets"},
    "sky/network.md": {"5 ms": "a delay the block sets"},
    "sizing/v2.md": {"128MB": "PostgreSQL's default shared_buffers, a setting"},
    "queryapigate-published/v1.md": {
        "5": "the source's rounds, its method",
        "150 s": "the source's window, its method",
        "1.25 ms": "the source's calibration of the delay, its method",
        "1.25": "the source's calibration of the delay, its method"},
    "queryapigate/v3.md": {"three runs": "v2's pins, another page",
                           "21 s": "v2's method, another page",
                           "0.5 ms": "a delay the block sets"},
}

# page → the first words of sentences with a word of direction that state no result, and why.
PROSE_OK: dict[str, dict[str, str]] = {
    "sky/v2.md": {
        "v1 measured the quick catalogue": "v1's run, checked by v1's own claim (linked)",
        "On a larger machine it moves": "a limit: reasoning, no figure",
    },
    "sizing/v2.md": {
        "This page measures it where v1 could not": "the design: the run's notes give the sizes",
        "**One label changes everything": "a limit: what the design cannot separate",
        "Up to four clients": "a limit: the settings' arithmetic",
        "**Two cores shared with pgbench**": "a limit: reasoning, no figure",
    },
    "queryapigate/v3.md": {
        "The other blocks run fewer labels": "the design (labels per block)",
        "The release's own gain": "what the section reads, no figure",
        "Plan at half of capacity": "advice drawn from the two claims before it",
    },
}


def live_pages() -> list[Path]:
    out = []
    for path in sorted(PAGES.rglob("*.md")):
        meta = front_matter(path.read_text(encoding="utf-8"))
        if meta.get("runs") and not meta.get("superseded"):
            out.append(path)
    return out


def front_matter(text: str) -> dict[str, object]:
    if not text.startswith("---\n"):
        return {}
    loaded = yaml.safe_load(text[4:text.index("\n---", 4)])
    return loaded if isinstance(loaded, dict) else {}


def key(path: Path) -> str:
    return path.relative_to(PAGES).as_posix()


def marked(text: str) -> str:
    """The page's prose: front matter, fenced code, code spans, comments, tags and link targets
    blanked (lines kept); each macro blanked behind a mark saying one stood there."""
    if text.startswith("---\n"):
        end = text.index("\n---", 4) + 4
        text = re.sub(r"[^\n]", " ", text[:end]) + text[end:]
    lines = text.split("\n")
    kept = ["" if code else line for line, code in zip(lines, lint.fenced(lines), strict=True)]

    def blank(m: re.Match[str]) -> str:
        body = re.sub(r"[^\n]", " ", m.group(0))
        return MACRO + body[1:] if m.group(0).startswith("{{") else body
    return lint.SKIP.sub(blank, "\n".join(kept))


def sentences(text: str) -> list[tuple[int, str]]:
    """(line, sentence) of every sentence of prose: paragraphs and list items split at a full
    stop before a capital; headings and tables are not prose."""
    prose = marked(text)
    out: list[tuple[int, str]] = []
    block: list[tuple[int, str]] = []

    def flush() -> None:
        joined = " ".join(part for _, part in block)
        if block and not joined.startswith(("#", "|")):
            offsets, at = [], 0
            for number, part in block:
                offsets.append((at, number))
                at += len(part) + 1
            start = 0
            for piece in re.split(r"(?<=[.!?])\s+(?=[A-Z(*\[" + MACRO + "])", joined):
                start = joined.index(piece, start)
                line = max(n for o, n in offsets if o <= start)
                out.append((line, " ".join(piece.split())))
                start += len(piece)
        block.clear()

    for number, line in enumerate(prose.split("\n"), start=1):
        stripped = line.strip()
        if not stripped or re.match(r"[-*] |\d+\. |#|\|", stripped):
            flush()
        if stripped:
            block.append((number, re.sub(r"^(?:[-*]|\d+\.) ", "", stripped)))
    flush()
    return out


def uncomputed(page: str, text: str, reviewed: bool = True) -> list[str]:
    """Every statement of the page's prose that no macro computes and no review excuses
    (reviewed=False: and those a review excuses)."""
    found = []
    allowed = PROSE_OK.get(page, {}) if reviewed else {}
    for line, sentence in sentences(text):
        if DIRECTION.search(sentence) and MACRO not in sentence and \
                not any(sentence.startswith(first) for first in allowed):
            found.append(f"{page}:{line}: {sentence}")
    for m in GIVEN.finditer(text):
        if not reviewed or m.group(2) not in GIVEN_OK.get(page, {}):
            found.append(f"{page}:{text.count(chr(10), 0, m.start()) + 1}: given({m.group(2)!r})")
    for m in REASON.finditer(text):
        reason = m.group(2)
        if lint.check(reason) or NUMBER_WORDS.search(reason) or DIRECTION.search(reason):
            found.append(f"{page}:{text.count(chr(10), 0, m.start()) + 1}: reason {reason!r}")
    return found


def test_the_live_pages_are_the_ones_reviewed() -> None:
    # A page that goes live or is superseded changes what the reviews cover: say so here.
    assert sorted(key(p) for p in live_pages()) == [
        "queryapigate-published/v1.md", "queryapigate/v3.md", "sizing/v2.md",
        "sky/network.md", "sky/v2.md"]


@pytest.mark.parametrize("path", live_pages(), ids=key)
def test_no_quantitative_prose_is_left_uncomputed(path: Path) -> None:
    assert uncomputed(key(path), path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("path", live_pages(), ids=key)
def test_every_review_excuses_a_statement_of_its_page(path: Path) -> None:
    # A review left behind by an edit would excuse the next sentence that starts alike.
    unexcused = [f.split(": ", 1)[1] for f in
                 uncomputed(key(path), path.read_text(encoding="utf-8"), reviewed=False)]
    for first in PROSE_OK.get(key(path), {}):
        assert any(s.startswith(first) for s in unexcused), f"{key(path)}: nothing {first!r}"
    for given in GIVEN_OK.get(key(path), {}):
        assert f"given({given!r})" in unexcused, f"{key(path)}: no given({given!r})"


def test_the_check_finds_what_it_is_for() -> None:
    text = (PAGES / "sky" / "v2.md").read_text(encoding="utf-8")
    planted = text.replace(
        "## Limits\n",
        "## Limits\n\nFrom 8 to 32 clients throughput grows by less than a tenth.\n\n"
        "The catalogue takes {{ given(\"489 MB\") }} on disk.\n\n"
        "{{ claim(\"x\", quiet(), uncertified_ok=\"the changes are six times what it "
        "resolves\") }}\n\n", 1)
    assert planted != text
    found = uncomputed("sky/v2.md", planted)
    assert [f.split(": ", 1)[1] for f in found] == [
        "From 8 to 32 clients throughput grows by less than a tenth.",
        "given('489 MB')",
        "reason 'the changes are six times what it resolves'"]
    assert uncomputed("sky/v2.md", text) == []  # the same page without them passes

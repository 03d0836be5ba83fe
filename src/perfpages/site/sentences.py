"""A page's claims as the reader meets them: each sentence underlined and numbered, its number
linking to what the build checked, listed at the end of its section (a `<details>` before the
next heading), so a tap, a keyboard or a printout reaches a condition a mouse's hover title
alone kept from a phone; a failed claim's paragraph is followed by an admonition saying why."""

from __future__ import annotations

import re

from perfpages.site import escape
from perfpages.site.condition import Claim

HEADING = re.compile(r"#{1,6}\s")  # an ATX heading: a section's claims are listed before it


def _sentence(claim: Claim, number: int) -> str:
    """The claim's sentence, and its number linking to its condition in the section's list
    (a tap reaches it; the hover title stays for a mouse)."""
    css = "perfpages-claim" + ("" if claim.holds else " perfpages-claim-failed")
    title = escape.md(f"checked: {claim.condition.expected}")
    # A code span typed in the sentence stays one (the rest is plain text, escaped).
    text = re.sub("&#96;(.+?)&#96;", r"<code>\1</code>", escape.md(claim.sentence))
    # What the claim concedes (despite=…, uncertified_ok=…) is printed beside it, for every reader.
    note = f" ({escape.md(claim.condition.note)})" if claim.condition.note else ""
    return (f'<span class="{css}" id="claim-{number}" title="{title}">{text}</span>{note}'
            f'<sup class="perfpages-claim-ref"><a href="#claim-{number}-checked">'
            f"{number}</a></sup>")


def _conditions(shown: list[tuple[int, Claim]]) -> list[str]:
    """What the claims of one section check, numbered as their sentences: one HTML block."""
    items = "".join(
        f'<li id="claim-{n}-checked" value="{n}">{escape.md(c.condition.expected)}'
        + ("" if c.holds else " (does not hold)")
        + f' <a href="#claim-{n}" aria-label="back to claim {n}">↩</a></li>'
        for n, c in shown)
    return ["", f'<details class="perfpages-conditions"><summary>What the claims above check '
                f"({len(shown)})</summary><ol>{items}</ol></details>", ""]


def annotate(text: str, claims: list[Claim], mark: re.Pattern[str]) -> str:
    """Drop claim marks for the sentences, numbered in page order; after the paragraph of each
    failed claim, an admonition says why; before each heading (and at the end) the conditions
    of the section's claims, so a phone or a printout shows them too."""
    lines = text.split("\n")
    pending: list[tuple[int, list[str]]] = []
    numbers: dict[int, int] = {}
    section: list[tuple[int, Claim]] = []
    fenced = False
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        if not fenced and HEADING.match(line) and section:
            pending.append((i, _conditions(section)))
            section = []
        for m in mark.finditer(line):
            claim = claims[int(m.group(1))]
            numbers[int(m.group(1))] = number = len(numbers) + 1
            section.append((number, claim))
            if not claim.holds:
                end = next((j for j in range(i, len(lines)) if not lines[j].strip()), len(lines))
                pending.append((end, ["", '!!! failure "This claim does not hold"', "",
                                      f"    {escape.md(claim.message)}", ""]))
        lines[i] = mark.sub(
            lambda m: _sentence(claims[int(m.group(1))], numbers[int(m.group(1))]), line)
    if section:
        pending.append((len(lines), _conditions(section)))
    for at, block in sorted(pending, key=lambda p: p[0], reverse=True):
        lines[at:at] = block
    return "\n".join(lines)

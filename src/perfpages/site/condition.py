"""A claim's condition and the claim itself (`perfpages.site.claims` builds them): the pieces
every condition is made of, apart so the conditions can live in more than one module."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from perfpages.analysis.format import format_resolution, typed_places
from perfpages.errors import AnalysisError
from perfpages.site.pins import Found, Side
from perfpages.site.verdicts import Judged

MAX_ITEMS = 6  # cells listed in a failure message before "… and N more"


@dataclass(frozen=True)
class Condition:
    holds: bool
    expected: str
    data: str
    # The comparisons it rests on (for the page's certification and Holm's correction)
    judged: tuple[Judged, ...] = ()
    # A condition over the whole page (certified): settled once every claim is in
    settle: Callable[[list[Claim]], Condition] | None = field(default=None, compare=False)
    # What the page prints beside the sentence (an acknowledgement: despite=, uncertified_ok=)
    note: str = ""

    def __bool__(self) -> bool:
        return self.holds


@dataclass(frozen=True)
class Claim:
    path: str  # as shown to the user: docs/PATH.md
    line: int
    sentence: str
    condition: Condition
    # claim(…, uncertified_ok="why"): why the claim stands on a block that is not certified
    uncertified_ok: str = ""

    @property
    def holds(self) -> bool:
        return self.condition.holds

    @property
    def message(self) -> str:
        return (f"{self.path}:{self.line}: claim \"{self.sentence}\" — expected "
                f"{self.condition.expected}, data {self.condition.data}")


def bounded(ok: bool, expected: str, items: list[str], judged: list[Judged],
            bounds: str) -> Condition:
    """A condition with bounds on changes: under an exact rule it fails when the bounds are
    finer than the comparisons resolve (`verdicts.Judged.finer`), saying so."""
    coarse = [j for j in judged if j.finer]
    data = listing(items)
    if coarse:
        worst = max(j.resolution for j in coarse)
        many = len(judged) > 1
        data += (f"; {bounds} {'is' if bounds.startswith('bound ') else 'are'} finer than "
                 f"{'these comparisons resolve' if many else 'this comparison resolves'} "
                 f"({format_resolution(worst)}{', worst cell' if many else ''})")
    return Condition(ok and not coarse, expected, data, tuple(judged))


def printed_tolerance(bound: float, digits: int | None = None) -> float:
    """The tolerance rule of a figure as printed (guide/pages.md#tolerance): half a unit of its
    last decimal — as typed (19 → ±0.5, 4.1 → ±0.05), or `digits=` decimals."""
    return 0.5 * 10.0 ** -(digits if digits is not None else typed_places(bound))


def all_of(*conditions: Condition) -> Condition:
    """One claim joining conditions: it holds when every one does ("printed +8 %, and ranges
    overlap"); its message lists each one's expectation and data."""
    if not conditions or not all(isinstance(c, Condition) for c in conditions):
        raise AnalysisError("all_of() joins conditions: all_of(between(…), overlap(…))")
    if any(c.settle is not None for c in conditions):
        raise AnalysisError("certified() is settled over the whole page: claim it on its own")
    return Condition(all(c.holds for c in conditions),
                     "; and ".join(c.expected for c in conditions),
                     " | ".join(c.data for c in conditions),
                     tuple(j for c in conditions for j in c.judged),
                     note="; ".join(c.note for c in conditions if c.note))


def listing(items: list[str]) -> str:
    head = "; ".join(items[:MAX_ITEMS])
    more = len(items) - MAX_ITEMS
    return head + (f"; … and {more} more" if more > 0 else "")


def where_of(f: Found, base: Side | str = "") -> str:
    """Where a pair's cell is: its block and parameters for two labels; with its label for
    two parameter values (a `where` of the other side's values names them)."""
    return (f.describe("label") if isinstance(base, str) else f.describe()) or f.block

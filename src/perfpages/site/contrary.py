"""Nothing clear left out: every clear change a page claims or prints, checked against the
other metrics the run measured for the same cells.

A page that headlines "sized is clearly faster" while the same cells' p50 is clearly worse
misleads as a whole, even when each sentence is true. After rendering, every comparison in the
page's ledger (`Pins.judged`: what its claims rest on and what `change()` and tables print)
whose verdict is clear is compared, by the one rule (`analysis.decision`), on every metric with
a better direction measured for both of its cells. A clear change in the other direction must
be in the ledger too — printed by a macro, or acknowledged by a claim's `despite=` (which
prints it) — or the claims resting on that comparison fail; a printed change no claim rests on
fails as a check of its own at the line that printed it. Both fail the strict build.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass, replace

from perfpages.analysis.decision import Change
from perfpages.analysis.format import format_percent
from perfpages.analysis.metric import info
from perfpages.errors import AnalysisError
from perfpages.site.condition import Claim, Condition, listing
from perfpages.site.pins import Found, Key, Pins
from perfpages.site.verdicts import judge

# The load generator's own timing (how late it sent, how late its event loop woke): its
# health, checked by the run's warnings, not a result of what is measured.
GENERATOR = ("lag_", "loop_lag_", "dispatch_lag_")

@dataclass(frozen=True)
class Contrary:
    """A clear change of a comparison's cells opposite to the verdict the page states."""

    key: Key  # the comparison as stated (its metric included)
    change: Change  # the contrary metric's change

    def describe(self) -> str:
        run, block, params, base, orun, oparams, other, _ = self.key
        where = ", ".join(str(p) for p in (block, params) if p)
        side = (f"{base} → {other}" if (run, params) == (orun, oparams) else
                f"{run}:{params or base} → {orun}:{oparams or other}")
        word = "loss" if self.change.better is False else "gain"
        return (f"{where}: {side}, {self.change.metric} {format_percent(self.change.percent)} "
                f"(clear {word})")


def _cell(pins: Pins, run: str, block: str, params: str, label: str,
          metric: str) -> Found | None:
    try:
        found = pins.select(metric=metric, run=run, block=block, label=label)
    except AnalysisError:
        return None
    return next((f for f in found if f.parameters == params), None)


def _metrics(pins: Pins, run: str, block: str) -> list[str]:
    """The metrics with a better direction measured in a run's block, in archive order."""
    return [m for m in dict.fromkeys(r.metric for r in pins.runs[run].cells if r.block == block)
            if info(m).higher_is_better is not None and not m.startswith(GENERATOR)]


def contrary(pins: Pins, losses: Set[Key] = frozenset()) -> dict[Key, list[Contrary]]:
    """Per clear gain of the ledger (and clear loss in `losses`: what slower() claims), the
    clear changes of its cells in the other direction that the ledger does not hold (nothing
    printed or acknowledged shows them)."""
    shown = set(pins.judged)
    # The same comparison printed from another pinned run (a section reading a later run of
    # the suite), clear the same way, shows it too.
    elsewhere = {(k[1:4] + k[5:], c.better) for k, c in pins.judged.items()
                 if len(k) == 8 and c.clear}
    out: dict[Key, list[Contrary]] = {}
    for key, change in list(pins.judged.items()):
        if len(key) != 8 or not change.clear or not (change.better or key in losses):
            continue
        run, block, params, base, orun, oparams, other, metric = key
        assert isinstance(run, str) and isinstance(orun, str)
        for m in _metrics(pins, run, str(block)):
            if m == metric or (*key[:-1], m) in shown:
                continue
            a = _cell(pins, run, str(block), str(params), str(base), m)
            b = _cell(pins, orun, str(block), str(oparams), str(other), m)
            if a is None or b is None:
                continue
            c = Change(m, a.cell, b.cell, pins.rule(run))
            if c.clear and c.better is not change.better and (
                    key[1:4] + key[5:7] + (m,), c.better) not in elsewhere:
                out.setdefault(key, []).append(Contrary(key, c))
    return out


def check(pins: Pins, claims: list[Claim], path: str, offset: int) -> list[Claim]:
    """The page's claims, those resting on a comparison with a contrary clear change left out
    failed; and a failed check per line that printed such a comparison no claim rests on."""
    ids = pins.judged.by_id
    losses = {key for claim in claims for j in claim.condition.judged
              if j.asserted and j.change.better is False and (key := ids.get(id(j.change)))}
    found = contrary(pins, losses)
    if not found:
        return claims
    claimed: set[Key] = set()
    out = []
    for claim in claims:
        mine = [c for j in claim.condition.judged
                if (key := ids.get(id(j.change))) is not None for c in found.get(key, [])]
        claimed |= {c.key for c in mine}
        out.append(replace(claim, condition=_failed(claim, mine)) if mine else claim)
    lines = pins.judged.lines
    by_line: dict[int, list[Contrary]] = {}
    for key, items in found.items():
        if key not in claimed:
            by_line.setdefault(lines.get(key, offset), []).extend(items)
    for line, items in sorted(by_line.items()):
        out.append(Claim(path, line, "the clear changes printed here", _failed(
            None, items)))
    return out


EXPECTED = ("every clear change of the same cells in the other direction shown on the page "
            "(by a macro, or a claim's despite=[…])")


def _failed(claim: Claim | None, items: list[Contrary]) -> Condition:
    data = "left out: " + listing([c.describe() for c in items])
    if claim is None:
        return Condition(False, EXPECTED, data)
    cond = claim.condition
    return replace(cond, holds=False, expected=f"{cond.expected}; and {EXPECTED}",
                   data=f"{cond.data}; {data}")


def despite(pins: Pins, pairs: list[tuple[Found, Found]], metric: str,
            gain: bool) -> tuple[list[Change], str]:
    """A claim's acknowledgement of a contrary metric: the changes of the claim's pairs of
    cells on `metric` (judged: the page prints them) that go clearly the other way, and the
    words the reader sees, "despite a clearly higher p50 latency: +4.4 % to +68 %, 4 of 4
    clear" beside a claimed gain."""
    higher = info(metric).higher_is_better
    if higher is None or metric.startswith(GENERATOR):
        raise AnalysisError(f"despite={metric!r}: the check does not judge it (no better "
                            "direction, or the load generator's own timing)",
                            fix="name metrics with a better direction (p50, throughput, …)")
    changes = []
    for a, b in pairs:
        x = _cell(pins, a.run, a.block, a.parameters, a.label, metric)
        y = _cell(pins, b.run, b.block, b.parameters, b.label, metric)
        if x is not None and y is not None:
            changes.append(judge(pins, x, y, metric))
    if not changes:
        raise AnalysisError(f"despite={metric!r}: not measured for these cells",
                            fix="name a metric the run measured for them (bench.report)")
    against = [c for c in changes if c.clear and c.better is not gain]
    low, high = min(c.percent for c in changes), max(c.percent for c in changes)
    span = format_percent(low) if low == high else \
        f"{format_percent(low)} to {format_percent(high)}"
    word = "higher" if higher is not gain else "lower"
    return against, (f"despite a clearly {word} {info(metric).title}: {span}, {len(against)} "
                     f"of {len(changes)} clear")

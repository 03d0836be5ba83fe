"""What a reader must know about a run before any of its figures, decided once on raw values.

Per run: blocks whose preflight found the machine busy, windows the machine was busy during
(method v2 measures them again: `archive.frame.counted`), blocks whose pgbench floor (the
machine's check) drifted beyond the run's threshold, and blocks that are not certified (no A/A
pair, or clear A/A cells — method 2.1: clear after Holm, or a resolution that is infinite or
coarser than the suite's target; a run decided by the v1 ranges rule certifies none). A page's
warning box and the runs index display these items; neither decides anything of its own.
Without pandas: the site uses it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from math import nan
from typing import Any

from perfpages.analysis.certification import Certificate
from perfpages.analysis.decision import percent_change
from perfpages.analysis.method import drifted, format_percent
from perfpages.analysis.metric import format_number, info
from perfpages.archive.preflight import line

BUSY, WINDOWS, DRIFT, UNCERTIFIED = "busy", "windows", "drift", "uncertified"


@dataclass(frozen=True)
class Item:
    """One warning: its kind, the block (None: the whole run) and what to say."""

    kind: str
    block: str | None
    text: str
    percent: float | None = None  # a drift's change of the floor's median

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Item:
        return cls(str(data["kind"]), data.get("block"), str(data["text"]), data.get("percent"))


@dataclass(frozen=True)
class Windows:
    """A block's measured windows: first attempts, those measured again, and how many of the
    windows the analysis counts ran on a busy machine (recorded by the window's sampler)."""

    block: str
    measured: int
    again: int = 0
    busy: int = 0


@dataclass(frozen=True)
class Floor:
    """A block's pgbench floor before and after it, as `site.facts.floor_drift` decides it."""

    block: str
    metric: str
    before: float  # medians
    after: float
    flagged: bool  # beyond the run's threshold (`decision.drifted`)

    @property
    def percent(self) -> float:
        return percent_change(self.before, self.after)


@dataclass(frozen=True)
class Pair:
    """A block's A/A cells and how many are clear (cells 0: the block ran no A/A pair); under
    method 2.1 the block's certificate from those cells (Holm over their p-values, the
    resolution of its first metric), which decides instead."""

    block: str
    cells: int
    clear: int
    certificate: Certificate | None = None


def _windows(w: Windows) -> str:
    if w.again:
        still = f"; {w.busy} busy again" if w.busy else ""
        return f"{w.again} of {w.measured} windows busy, measured again{still}"
    return f"{w.busy} of {w.measured} windows measured on a busy machine"


def decide(*, exact: bool, blocks: Iterable[str], preflights: Iterable[dict[str, Any]] = (),
           windows: Iterable[Windows] = (), floors: Iterable[Floor] = (),
           pairs: Iterable[Pair] = ()) -> list[Item]:
    """Every warning of one run: `exact` (method v2's rule, else the v1 ranges rule), its
    measured `blocks`, its preflight records, per block its windows, pgbench floors and A/A
    cells. In the run's block order, busy before drift before certification."""
    out = [Item(BUSY, str(r["block"]), "preflight before it: " + line(r).partition(": ")[2])
           for r in preflights if r["busy"]]
    out += [Item(WINDOWS, w.block, _windows(w)) for w in windows if w.again or w.busy]
    for f in floors:
        if f.flagged:
            unit = info(f.metric).unit
            out.append(Item(DRIFT, f.block, f"floor {drifted(f.before, f.percent)} "
                            f"({format_number(f.before)} → {format_number(f.after)}{unit})"
                            + " over the block" * (f.before > 0), f.percent))
    blocks = list(blocks)
    if not exact:
        return _in_order(out, blocks) + [
            Item(UNCERTIFIED, None, "decided by the v1 ranges rule: no block is certified")
        ] * bool(blocks)
    by_block = {p.block: p for p in pairs}
    if blocks and not any(p.cells for p in by_block.values()):
        return [*_in_order(out, blocks),
                Item(UNCERTIFIED, None, "no A/A pair: no block is certified")]
    for block in blocks:
        p = by_block.get(block, Pair(block, 0, 0))
        c = p.certificate or Certificate(block, p.cells, p.clear, nan, "")
        if not c.certified:
            out.append(Item(UNCERTIFIED, block, f"not certified: {c.why}"))
    return _in_order(out, blocks)


def _in_order(items: list[Item], blocks: list[str]) -> list[Item]:
    """A block's items together, in the run's block order (a stable sort keeps the kinds')."""
    order = {b: i for i, b in enumerate(blocks)}
    return sorted(items, key=lambda i: order.get(i.block or "", len(order)))


def summary(items: list[Item], blocks: int | None = None) -> str:
    """A short count per kind for the runs index: "drift −65 %; 3 busy blocks; 2 not
    certified", or "—"."""
    parts = []
    drifts = [i.percent for i in items if i.kind == DRIFT and i.percent is not None]
    if drifts:
        parts.append(f"drift {format_percent(max(drifts, key=abs))}")
    busy = {i.block for i in items if i.kind in (BUSY, WINDOWS)}
    if busy:
        parts.append(f"{len(busy)} busy block{'s' * (len(busy) != 1)}")
    loose = [i for i in items if i.kind == UNCERTIFIED]
    if any(i.block is None for i in loose):
        parts.append("none certified" if "no A/A" in loose[0].text else "v1 rule")
    elif loose:
        parts.append(f"{len(loose)} not certified")
    return "; ".join(parts) or "—"

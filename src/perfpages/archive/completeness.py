"""What a complete run must hold, derived from its manifest and its own windows.

run.json does not record how a block narrowed the run (an HTTP block may run fewer rounds or
fewer labels), so the expectation is built in two layers: across the run, every label and every
round of `method.rounds` has measure windows; inside each block, every label × round (1 to the
block's last) × parameter set its windows show has one, with window indices 0, 1, … without a
gap. Floors come in pairs: a block's floor before has its floor after.
"""

from __future__ import annotations

from pathlib import Path

from perfpages.archive.manifest import Manifest
from perfpages.archive.schema import one_line
from perfpages.archive.window import Window, params_key
from perfpages.errors import ArchiveError

_FIX = "the run stopped early or was cut by hand: resume a partial run, or archive a new run"


def problems(manifest: Manifest, windows: list[Window], where: Path) -> list[ArchiveError]:
    """Everything a run marked complete lacks; empty when it holds what it declares."""
    measured = [w for w in windows if w.kind == "measure"]
    if not measured:
        return [ArchiveError("empty run: no measurement windows", where=where,
                             fix="archive a new run; a complete run must hold data")]
    out: list[ArchiveError] = []
    by_block: dict[str, list[Window]] = {}
    for w in measured:
        by_block.setdefault(w.block, []).append(w)
    labels = {w.label for w in measured}
    for name in manifest.labels:
        if name not in labels:
            out.append(ArchiveError(f"label {name!r} has no measure window in any block",
                                    where=where, fix=_FIX))
    last, rounds = max(w.round for w in measured), manifest.method.rounds
    if last < rounds:
        which = f"round {rounds} of {rounds} has" if last + 1 == rounds else \
            f"rounds {last + 1}–{rounds} of {rounds} have"
        out.append(ArchiveError(f"{which} no measure window in any block (method.rounds)",
                                where=where, fix=_FIX))
    for name in manifest.blocks:
        if name not in by_block:
            out.append(ArchiveError(f"block {name!r} is declared but has no measure window",
                                    where=where, fix=_FIX))
    for name, block_windows in by_block.items():
        out += _block(name, block_windows, list(manifest.labels), where)
    return out + _floors(windows, where)


def _block(block: str, windows: list[Window], order: list[str],
           where: Path) -> list[ArchiveError]:
    out: list[ArchiveError] = []
    if any(w.round < 1 for w in windows):
        out.append(ArchiveError(f"block {block!r}: a measure window in round 0 (rounds count "
                                "from 1)", where=where, key="round", fix="archive a new run"))
    cells: dict[tuple[str, int, str], list[int]] = {}
    for w in windows:
        cells.setdefault((w.label, w.round, params_key(w.params)), []).append(w.window)
    labels = [name for name in order if any(c[0] == name for c in cells)]
    last = max(c[1] for c in cells)
    sets = sorted({c[2] for c in cells})
    expected = len(labels) * max(last, 0) * len(sets)
    present = sum(1 for c in cells if c[1] >= 1)
    if present < expected:
        rounds: dict[tuple[str, str], set[int]] = {}
        for label, rnd, pset in cells:
            rounds.setdefault((label, pset), set()).add(rnd)
        label, rnd, pset = next((label, _first_gap(rounds.get((label, pset), set()), 1), pset)
                                for label in labels for pset in sets
                                if _first_gap(rounds.get((label, pset), set()), 1) <= last)
        out.append(ArchiveError(
            f"block {block!r}: {expected - present} of {expected} cells (label × round × "
            f"parameters) have no measure window, the first: label {label!r}, round {rnd}, "
            f"{one_line(pset) or 'no parameters'}", where=where, fix=_FIX))
    for (label, rnd, pset), indices in cells.items():
        gap = _first_gap(set(indices), 0)
        if gap < max(indices):
            where_in = f"label {label!r}, round {rnd}, {one_line(pset) or 'no parameters'}"
            out.append(ArchiveError(
                f"block {block!r}: {where_in}: window {gap} of {max(indices) + 1} is missing",
                where=where, fix=_FIX))
            break  # one cell says it; the others would repeat it
    return out


def _first_gap(values: set[int], start: int) -> int:
    """The smallest integer from `start` up that is not in `values`."""
    n = start
    for v in sorted(values):
        if v == n:
            n += 1
        elif v > n:
            break
    return n


def _floors(windows: list[Window], where: Path) -> list[ArchiveError]:
    sides: dict[str, dict[str, set[str]]] = {}
    for w in windows:
        position = w.params.get("position")
        if w.kind == "floor" and position in ("before", "after"):
            rest = params_key({k: v for k, v in w.params.items() if k != "position"})
            sides.setdefault(w.block, {"before": set(), "after": set()})[str(position)].add(rest)
    out = []
    for block, side in sides.items():
        for have, lack in (("before", "after"), ("after", "before")):
            alone = sorted(side[have] - side[lack])
            if alone:
                out.append(ArchiveError(
                    f"block {block!r}: the floor {have} ({one_line(alone[0])}) has no floor "
                    f"{lack}", where=where, fix=_FIX))
    return out

"""Reproduction: one suite measured twice — a run and its replay (or any second run of the
suite) — compared cell by cell and change by change.

Up to method v2 a cell reproduces when the two runs' ranges overlap, a change when its verdict
is the same on both. A second run whose rule is method v2.1 or later is judged by how far apart
the runs are in units of their noise (`criterion`): a change reproduces when its shifts on the
two runs are compatible given both exact intervals; a cell shows how many standard errors of
its window noise its medians lie apart — a figure, not a verdict (`analysis.compatibility`).
All of it is decided in `perfpages.analysis.decision`; pages pinned to runs archived before
keep what they said. A replay is compared on purpose, so what differs between the runs
(machine, harness) is shown, never refused. The result is plain data (the json of `bench
replay`); `to_markdown` and the terminal print only that.

Cells are read without pandas when the caller has them (`compare_cells`, the site's cached
cells), so a site build that shows a reproduction imports no pandas.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from math import isfinite
from statistics import median
from typing import Any

from perfpages.analysis import compatibility, decision, noise
from perfpages.analysis.changes import cell_text
from perfpages.analysis.comparable import fingerprint_differences
from perfpages.analysis.decision import Cell, Change, Rule
from perfpages.analysis.format import format_change, format_percent
from perfpages.analysis.metric import block_metrics, format_number, info
from perfpages.analysis.text import prose, table
from perfpages.analysis.tidy import Tidy
from perfpages.archive.manifest import Manifest
from perfpages.archive.reader import Run
from perfpages.errors import AnalysisError

Key = tuple[str, str, str, str]  # block, parameters, label, metric


def run_cells(run: Run) -> dict[Key, Cell]:
    """Every measured cell of a run, as `bench report` reads them."""
    return Tidy.of(run, kinds=("measure",)).cells


def label_pairs(manifest: Manifest) -> list[tuple[str, str, bool]]:
    """(base, other, A/A) as `bench report` pairs labels: every label against the first, then
    the pairs of labels that ran the same build (noise.same_builds)."""
    names = list(manifest.labels)
    same = noise.same_builds(manifest)
    return [(names[0], other, False) for other in names[1:] if (names[0], other) not in same] + [
        (a, b, True) for a, b in same]


def _stats(cell: Cell) -> dict[str, Any]:
    return {"median": cell.median, "min": cell.min, "max": cell.max, "n": cell.n,
            "text": cell_text(cell)}


def _side(m: Manifest) -> dict[str, Any]:
    return {"id": m.id, "title": m.title, "suite": m.suite, "scope": m.scope,
            "status": m.status, "started": m.started, "replay_of": m.replay_of}


def _change(c: Change) -> dict[str, Any]:
    out = {"percent": c.percent if isfinite(c.percent) else None,
           "text": format_percent(c.percent) if isfinite(c.percent) else "n/a",
           "verdict": c.verdict}
    # An exact rule's shift with its interval, as reports print it; a change its rounds cannot
    # decide has no interval worth printing (its ends are the shift itself).
    if c.interval is not None and c.enough_rounds:
        low, high = c.interval
        out.update(low=low if isfinite(low) else None, high=high if isfinite(high) else None,
                   interval_text=format_change(c, verdict=c.verdict))
    return out


SHIFT = (2, 1)  # the method version from which a replay is judged by shift compatibility


def version(m: Manifest) -> tuple[int, ...]:
    """The method version a run recorded: `method.rule.version` ("2.1"); a rule without one is
    method v2, no rule the ranges rule of v1."""
    if not m.method.rule:
        return (1,)
    text = str(m.method.rule.get("version") or "2").strip().lstrip("vV")
    try:
        return tuple(int(part) for part in text.split("."))
    except ValueError:
        return (2,)


def criterion(second: Manifest) -> str:
    """How a second run is judged against its original: "shift" (method v2.1 and later: a
    change's shifts compatible, a cell's medians within their noise) or "ranges" (before:
    ranges overlap, verdict kept), so that what a reproduction said never changes."""
    return "shift" if version(second) >= SHIFT else "ranges"


def _finite(value: float | None) -> float | None:
    return value if value is not None and isfinite(value) else None


def _pair(m: Manifest, cells: Mapping[Key, Cell], base: Key, other: str) -> Change | None:
    """The change `other` over `base` in one run, judged with that run's own min_rounds."""
    a, b = cells.get(base), cells.get((base[0], base[1], other, base[3]))
    return Change(base[3], a, b, Rule.of(m.method)) if a and b else None


def _table_order(cells: Mapping[Key, Cell], m: Manifest,
                 shown: Mapping[str, list[str]]) -> list[Key]:
    """The cells the report tables, as its tables read: block, parameters, then each label's
    metrics."""
    blocks = list(dict.fromkeys(k[0] for k in cells))
    params = list(dict.fromkeys(k[1] for k in cells))
    labels = list(m.labels)  # measured windows have declared labels only (archive.reader)

    def rank(k: Key) -> tuple[int, int, int, int]:
        return (blocks.index(k[0]), params.index(k[1]), labels.index(k[2]),
                shown[k[0]].index(k[3]))

    return sorted((k for k in cells if k[3] in shown[k[0]]), key=rank)


def check_pair(original: Manifest, second: Manifest) -> None:
    """Two runs a reproduction compares: two runs of one suite (machines may differ)."""
    if original.suite != second.suite:
        raise AnalysisError(f"run {second.id} is of suite {second.suite!r}, run {original.id} "
                            f"of {original.suite!r}",
                            fix="compare a run with a replay or another run of its own suite")
    if original.id == second.id:
        raise AnalysisError(f"run {original.id} compared with itself",
                            fix="name a second run of its suite, or let bench.replay make one")


def compare(original: Run, second: Run) -> dict[str, Any]:
    """`compare_cells` over two opened runs."""
    return compare_cells(original.manifest, run_cells(original), second.manifest,
                         run_cells(second))


def compare_cells(original: Manifest, a: Mapping[Key, Cell], second: Manifest,
                  b: Mapping[Key, Cell]) -> dict[str, Any]:
    """Every cell both runs have (the metrics the report tables) and every change the report
    computes, on both runs, with the summary figures; raises for runs of two suites."""
    check_pair(original, second)
    judged = criterion(second)
    alpha = Rule.of(second.method).alpha
    is_replay = second.replay_of == original.id
    name = "the replay" if is_replay else f"run {second.id}"
    present: dict[str, set[str]] = {}
    for block, _, _, metric in a:
        present.setdefault(block, set()).add(metric)
    shown = {block: block_metrics(original, block, metrics) for block, metrics in present.items()}
    cells: list[dict[str, Any]] = []
    for key in _table_order(a, original, shown):
        cell, other = a[key], b.get(key)
        if other is None:
            continue
        ratio = Change(key[3], cell, other).ratio
        overlap = decision.reproduces(cell, other)
        cells.append({"block": key[0], "parameters": key[1], "label": key[2], "metric": key[3],
                      "unit": info(key[3]).unit, "original": _stats(cell),
                      "second": _stats(other), "ratio": ratio if isfinite(ratio) else None,
                      "overlap": overlap,
                      "apart": _finite(compatibility.cell_distance(cell.values, other.values)),
                      "criterion": judged,
                      "within": decision.reproduces(cell, other, alpha),
                      # Under method v2.1 a cell is a figure, not a verdict: two runs minutes
                      # apart differ by the machine's level, which no window's noise holds.
                      "reproduces": overlap if judged == "ranges" else True})
    changes: list[dict[str, Any]] = []
    pairs = label_pairs(original)
    for block in dict.fromkeys(k[0] for k in a):
        params = list(dict.fromkeys(k[1] for k in a if k[0] == block))
        metrics = [m for m in shown[block] if info(m).higher_is_better is not None]
        for pkey in params:
            for metric in metrics:
                for base, other_label, aa in pairs:
                    one = _pair(original, a, (block, pkey, base, metric), other_label)
                    two = _pair(second, b, (block, pkey, base, metric), other_label)
                    if one is None or two is None:
                        continue
                    same, fits = decision.same_verdict(one, two), decision.compatible(one, two)
                    changes.append({"block": block, "parameters": pkey, "metric": metric,
                                    "unit": info(metric).unit,
                                    "labels": f"{other_label} vs {base}", "aa": aa,
                                    "original": _change(one), "second": _change(two),
                                    "same": same, "apart": _finite(_shift_z(one, two)),
                                    "compatible": fits, "criterion": judged,
                                    "reproduces": same if judged == "ranges" or fits is None
                                    else fits})
    deviations = [abs(c["ratio"] - 1) * 100 for c in cells if c["ratio"] is not None]
    apart = [abs(c["apart"]) for c in cells if c["apart"] is not None]
    summary = {"cells": len(cells), "cells_overlap": sum(c["overlap"] for c in cells),
               "changes": len(changes), "changes_same": sum(c["same"] for c in changes),
               "median_deviation": median(deviations) if deviations else None,
               "criterion": judged, "alpha": alpha,
               "cells_within": sum(c["within"] for c in cells),
               "changes_judged": sum(c["compatible"] is not None for c in changes),
               "changes_compatible": sum(c["compatible"] is True for c in changes),
               "changes_reproduce": sum(c["reproduces"] for c in changes),
               "median_apart": median(apart) if apart else None}
    wanted = {k for k in a if k[3] in shown[k[0]]}
    return {
        "original": _side(original), "second": _side(second), "replay": is_replay,
        "name": name, "criterion": judged,
        "differences": fingerprint_differences(original, second),
        "cells": cells, "changes": changes, "summary": summary,
        "missing": {"original_only": len(wanted - set(b)),
                    "second_only": len({k for k in b if k[3] in shown.get(k[0], ())} - set(a))},
        "lines": summary_lines(summary, name),
    }


def _shift_z(one: Change, two: Change) -> float | None:
    """The figure `decision.compatible` judges: (second − original) shift over its standard
    error, where both changes were decided by an exact test with enough rounds."""
    if one.test is None or two.test is None or not (one.enough_rounds and two.enough_rounds):
        return None
    return compatibility.shift_z((one.test.shift_pct, one.test.low_pct, one.test.high_pct),
                                 one.rule.alpha,
                                 (two.test.shift_pct, two.test.low_pct, two.test.high_pct),
                                 two.rule.alpha)


def summary_lines(summary: Mapping[str, Any], name: str) -> list[str]:
    """The summary figures as sentences: "40 of 42 cells' ranges overlap on the replay"; the
    deviation is the median over the cells of |ratio − 1|, in percent. Under method v2.1
    (`criterion` "shift"): how many changes' shifts are compatible, and how far apart the
    cells' medians lie in standard errors of their window noise."""
    if summary.get("criterion") == "shift":
        return shift_lines(summary, name)
    deviation = summary["median_deviation"]
    return [f"{summary['cells_overlap']} of {summary['cells']} cells' ranges overlap on {name}"
            if summary["cells"] else f"no cell of the original is in {name}",
            f"{summary['changes_same']} of {summary['changes']} changes keep their verdict on "
            f"{name}" if summary["changes"] else "no change between labels to compare",
            "median deviation of the cells' medians: "
            + ("n/a" if deviation is None else f"{format_number(deviation)} %")]


def shift_lines(summary: Mapping[str, Any], name: str) -> list[str]:
    """The summary of a replay judged by shift compatibility (method v2.1)."""
    z = compatibility.z_of(summary["alpha"])
    alpha = f"α = {summary['alpha'] * 100:g} %"
    apart, deviation = summary["median_apart"], summary["median_deviation"]
    judged = summary["changes_judged"]
    return [f"{summary['changes_compatible']} of {judged} changes' shifts are compatible on "
            f"{name} (their difference within {z:.2f} standard errors, {alpha})"
            if judged else "no change decided by an exact test on both runs to compare",
            f"{summary['changes_same']} of {summary['changes']} changes keep their verdict on "
            f"{name}" if summary["changes"] else "no change between labels to compare",
            f"the cells' medians on {name}: "
            + ("n/a" if apart is None else f"{apart:.2f}")
            + " standard errors of their window noise apart at the median"
            + ("" if deviation is None else f" (median deviation {format_number(deviation)} %)")
            + f"; {summary['cells'] - summary['cells_within']} of {summary['cells']} cells "
            f"beyond {z:.2f}" if summary["cells"] else f"no cell of the original is in {name}"]


def ratio_text(ratio: float | None) -> str:
    return "n/a" if ratio is None else f"{ratio:.3f}"


def apart_text(apart: float | None) -> str:
    """A distance in standard errors, signed: "+1.3"."""
    return "n/a" if apart is None else f"{apart:+.1f}".replace("-", "−")


def cell_rows(cells: list[dict[str, Any]]) -> list[list[str]]:
    """A row per cell: block, parameters, label, metric, original, second, ratio, overlap;
    under method v2.1 the medians' distance in standard errors instead of the overlap."""
    return [[c["block"], c["parameters"] or "—", c["label"],
             f"{c['metric']} ({c['unit']})" if c["unit"] else c["metric"],
             c["original"]["text"], c["second"]["text"], ratio_text(c["ratio"]),
             apart_text(c["apart"]) if c.get("criterion") == "shift" else
             "yes" if c["overlap"] else "no"]
            for c in cells]


def change_rows(changes: list[dict[str, Any]]) -> list[list[str]]:
    """A row per change: block, parameters, metric, labels, on the original, on the second,
    verdict kept; under method v2.1 each side's shift with its interval, the distance in
    standard errors and whether the shifts are compatible."""
    def side(c: dict[str, Any]) -> str:
        return c.get("interval_text") or f"{c['text']} ({c['verdict']})"

    def fits(c: dict[str, Any]) -> str:
        return "—" if c["compatible"] is None else "yes" if c["compatible"] else "no"

    return [[c["block"], c["parameters"] or "—",
             f"{c['metric']} ({c['unit']})" if c["unit"] else c["metric"],
             c["labels"] + (" (A/A)" if c["aa"] else ""),
             *([side(c["original"]), side(c["second"]), apart_text(c["apart"]), fits(c),
                "yes" if c["same"] else "no"] if c.get("criterion") == "shift" else
               [f"{c['original']['text']} ({c['original']['verdict']})",
                f"{c['second']['text']} ({c['second']['verdict']})",
                "yes" if c["same"] else "no"])] for c in changes]


def second_column(data: Mapping[str, Any]) -> str:
    """How the second run is headed in a table: "replay", or "second" (the title names it)."""
    return "replay" if data["replay"] else "second"


def columns(data: Mapping[str, Any], kind: str) -> list[str]:
    second = second_column(data)
    shift = data.get("criterion") == "shift"
    if kind == "cells":
        return ["block", "parameters", "label", "metric", "original", second, "ratio",
                "apart (SE)" if shift else "ranges overlap"]
    return ["block", "parameters", "metric", "labels", "original", second,
            *(["apart (SE)", "compatible", "verdict kept"] if shift else ["verdict kept"])]


def notes(data: Mapping[str, Any]) -> list[str]:
    """What qualifies the comparison: the runs' differences, cells only one run has."""
    out = [f"the runs differ: {d}" for d in data["differences"]]
    missing = data["missing"]
    if missing["original_only"]:
        out.append(f"{missing['original_only']} cells of the original are not in "
                   f"{data['name']}")
    if missing["second_only"]:
        out.append(f"{missing['second_only']} cells of {data['name']} are not in the original")
    return out


# The heading of what did not reproduce, by criterion (shift: method v2.1).
WHICH = {(False, "cells"): "Cells whose ranges do not overlap",
         (False, "changes"): "Changes whose verdict changed",
         (True, "cells"): "",  # a figure, not a verdict: none is listed as not reproduced
         (True, "changes"): "Changes that do not reproduce"}


def to_markdown(data: Mapping[str, Any], *, level: int = 2, full: bool = True,
                esc: Callable[[object], str] = prose) -> list[str]:
    """The cells and changes as Markdown lines under `level` headings; `full=False` keeps only
    the cells and changes that do not reproduce (ranges apart, a verdict changed; under method
    v2.1 medians beyond their noise, shifts not compatible)."""
    head = "#" * level
    shift = data.get("criterion") == "shift"
    out = [f"- {esc(line)}" for line in data["lines"]]
    out += [f"- {esc(note)}" for note in notes(data)] + [""]
    cells = data["cells"] if full else [c for c in data["cells"] if not c["reproduces"]]
    changes = data["changes"] if full else [c for c in data["changes"] if not c["reproduces"]]
    if cells:
        out += [f"{head} {'Cells' if full else WHICH[shift, 'cells']}", "",
                table([esc(c) for c in columns(data, "cells")],
                      [[esc(c) for c in row] for row in cell_rows(cells)]), ""]
    if changes:
        out += [f"{head} {'Changes' if full else WHICH[shift, 'changes']}", "",
                table([esc(c) for c in columns(data, "changes")],
                      [[esc(c) for c in row] for row in change_rows(changes)]), ""]
    return out

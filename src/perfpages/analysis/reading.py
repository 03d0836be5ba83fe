"""One reading of a run: everything `bench report`, `bench cite`, the run's page, a page's header
and the runs index say about it, gathered and decided once.

`read` opens nothing: it reads a `Run` already open (validated) and returns a `Reading` of plain
data — the cells as tables, the changes with their resolutions and the blocks' certification,
the floors of each block and kind with their drift decision, the A/A pairs, the saturation knees,
where the machine was busy, the pairing facts, the scope and the machine, and the one ranked
list of what a reader must know (`perfpages.analysis.warnings`). Everything else renders it: the
report's formats (`report`), the citation (`cite`), the site (`site.runpages`, `site.header`,
`site.facts`), which caches a complete run's reading as its one derived product
(`site.store.reading`). A reading's JSON (`to_json`) is the report's JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from perfpages.analysis import (
    certification,
    consistency,
    crossrun,
    decision,
    machine_load,
    noise,
    pairing,
    saturation,
    transcribed,
)
from perfpages.analysis import changes as changes_table
from perfpages.analysis import warnings as said
from perfpages.analysis.changes import cell_text, changes, metric_header
from perfpages.analysis.crossrun import Cross
from perfpages.analysis.decision import Cell, Change, Rule, false_positive_rate
from perfpages.analysis.format import format_change, format_range
from perfpages.analysis.metric import COST_METRICS, INSTRUCTIONS_NOTE, block_metrics, info
from perfpages.analysis.reproduction import label_pairs
from perfpages.analysis.tidy import Tidy, median
from perfpages.analysis.warnings import WARN, Item
from perfpages.archive import diagnostics, preflight
from perfpages.archive.manifest import Manifest
from perfpages.archive.reader import Run
from perfpages.archive.vocabulary import FAULT_METRICS, FLOOR_METRICS, PGBENCH
from perfpages.archive.window import floor_kind
from perfpages.errors import AnalysisError


@dataclass(frozen=True)
class Reading:
    """One run as every place reads it (or labels of several runs: `runs`). Its fields are
    plain data, in the report's JSON order; `items` is the ranked list of what a reader must
    know, whose texts are the report's "warnings"."""

    run: str
    title: str
    suite: str
    scope: str
    status: str
    started: str
    ended: str | None
    labels: list[str]
    method: str
    tables: list[dict[str, Any]]
    changes: dict[str, Any]
    drift: list[dict[str, Any]]  # the floors of each block and kind, with the drift decision
    saturation: list[dict[str, Any]]
    diagnostics: list[str]
    noise_floor: list[dict[str, Any]]  # the A/A pairs, by block, metric and pair
    preflight: list[dict[str, Any]]
    machine_load: list[dict[str, Any]]
    generator: list[dict[str, Any]]
    notes: list[str]
    items: list[Item]
    losses: list[dict[str, Any]]
    machine: dict[str, Any] = field(default_factory=dict)
    runs: list[dict[str, Any]] | None = None  # labels of several runs: each run's line
    certification: list[dict[str, Any]] | None = None  # exact rules only
    pairing: list[dict[str, Any]] | None = None  # exact rules only, when any
    # Every A/A cell as `aa_changes` found it (its rounds, `aa_json`): what the site's A/A
    # verdicts are made of. Kept in the site's cache (`to_cache`), not in the report's JSON.
    aa: list[dict[str, Any]] = field(default_factory=list)
    # Blocks that measured the same configuration, side by side (`analysis.consistency`)
    consistency: list[dict[str, Any]] = field(default_factory=list)

    @property
    def warnings(self) -> list[str]:
        return [i.text for i in self.items]

    def to_json(self) -> dict[str, Any]:
        """The report's data (`bench report --format json`): the fields, "warnings" the items'
        texts and "items" the items with their kind, block, rank and severity."""
        out: dict[str, Any] = {
            "run": self.run, "title": self.title, "suite": self.suite, "scope": self.scope,
            "status": self.status, "started": self.started, "ended": self.ended,
            "labels": self.labels, **({"runs": self.runs} if self.runs is not None else {}),
            "method": self.method, "tables": self.tables, "changes": self.changes,
            **({"certification": self.certification}
               if self.certification is not None else {}),
            **({"pairing": self.pairing} if self.pairing else {}),
            "drift": self.drift, "saturation": self.saturation,
            "diagnostics": self.diagnostics, "noise_floor": self.noise_floor,
            "preflight": self.preflight, "machine_load": self.machine_load,
            "generator": self.generator, "notes": self.notes, "warnings": self.warnings,
            "items": [i.to_json() for i in self.items], "losses": self.losses,
            "machine": self.machine, "consistency": self.consistency}
        return out

    def to_cache(self) -> dict[str, Any]:
        """`to_json` with the A/A cells' rounds: a cache entry."""
        return {**self.to_json(), "aa": self.aa}

    def aa_changes(self, rule: Rule) -> list[changes_table.Found]:
        """The A/A changes `aa_changes` found, each decided again by `rule` on its rounds."""
        return [(a["block"], a["parameters"], a["pair"],
                 Change(a["metric"], _cell(a["base"]), _cell(a["other"]), rule))
                for a in self.aa]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Reading:
        """A reading as `to_json` or `to_cache` wrote it (a cache entry)."""
        names = {f.name for f in fields(cls)} - {"items"}
        return cls(items=[Item.from_json(i) for i in data["items"]],
                   **{k: v for k, v in data.items() if k in names})


def tables(run: Run, tidy: Tidy, labels: list[str]) -> list[dict[str, Any]]:
    """The cells of each block as a table ("median (min–max)" per label), and what a call cost
    in it."""
    cells = tidy.cells
    out = []
    for block, (params, present) in tidy.blocks.items():
        metrics = block_metrics(run.manifest, block, present)
        title = run.manifest.block(block).title or block
        rows = []
        for pkey in params:
            for metric in metrics:
                row = [pkey or "—", metric_header(metric)]
                for label in labels:
                    c = cells.get((block, pkey, label, metric))
                    text = cell_text(c) if c else "—"
                    bad = [cells.get((block, pkey, label, m)) for m in FAULT_METRICS]
                    if c and any(b and b.max > 0 for b in bad):
                        text += f" {WARN}"
                    row.append(text)
                rows.append(row)
        notes = [f"{WARN} the cell's rounds include errors, non-2xx responses or failed "
                 "windows"] if any(WARN in text for row in rows for text in row) else []
        if "instructions" in metrics:
            notes.append(INSTRUCTIONS_NOTE)
        out.append(_table(title, ["parameters", "metric", *labels], rows, notes))
        costs = [m for m in COST_METRICS if m in present and m not in metrics]
        if costs:
            out.append(_cost_table(title, params, cells, block, costs, labels))
    return out


def _table(title: str, columns: list[str], rows: list[list[str]],
           notes: list[str]) -> dict[str, Any]:
    return {"title": title, "columns": columns, "rows": rows, "notes": notes}


def _cost_table(title: str, params: list[str], cells: dict[Any, Any], block: str,
                metrics: list[str], labels: list[str]) -> dict[str, Any]:
    """What a call cost in the block, per label: the work behind its rates."""
    rows = []
    for pkey in params:
        for metric in metrics:
            found = [cells.get((block, pkey, label, metric)) for label in labels]
            if any(found):
                rows.append([pkey or "—", f"{metric_header(metric)}: {info(metric).title}",
                             *[cell_text(c) if c else "—" for c in found]])
    return _table(f"{title}: cost per call", ["parameters", "metric", *labels], rows, [
        "Per call, each window's counters over its completed calls: CPU of the subject's "
        "process tree and of PostgreSQL's processes, statements and shared buffers from "
        "pg_stat_statements, bytes on the HTTP connection."])


def aa_metrics(manifest: Manifest, block: str, present: set[str]) -> list[str]:
    """The metrics a block's A/A pairs are compared on: every one it holds, its declared ones
    first (the report keeps `block_metrics`', a page's noise floor `noise_metrics`' or the
    one it names)."""
    return [m for m in dict.fromkeys([*manifest.block(block).metrics, *sorted(present)])
            if m in present]


def noise_metrics(manifest: Manifest, block: str, present: set[str]) -> list[str]:
    """The metrics a page's noise floor shows of a block unless it names one: the declared
    ones it holds, else all it holds."""
    return [m for m in manifest.block(block).metrics or sorted(present) if m in present]


def aa_changes(run: Run, tidy: Tidy, rule: Rule) -> list[changes_table.Found]:
    """What each A/A pair measured, cell by cell: the differences this machine and method show
    between two identical builds, against which every other change is read. The one place
    A/A pairs are found: the report keeps those of its tables' metrics (`shown`), the site
    filters the reading's by block and metric."""
    pairs = noise.same_builds(run.manifest)
    if not pairs:
        return []  # the usual case: no second pass over the cells
    return changes(run, tidy, pairs, rule, aa_metrics)


def shown(run: Run, tidy: Tidy, found: list[changes_table.Found]) -> list[changes_table.Found]:
    """Of `found`, the cells of the metrics the report's tables show (`block_metrics`), in the
    order `changes` lists them: block, parameters, metric, pair."""
    order: dict[tuple[str, str, str], tuple[int, int, int]] = {}
    for i, (block, (params, present)) in enumerate(tidy.blocks.items()):
        metrics = block_metrics(run.manifest, block, present)
        order.update({(block, pkey, m): (i, j, k) for j, pkey in enumerate(params)
                      for k, m in enumerate(metrics)})
    kept = [f for f in found if (f[0], f[1], f[3].metric) in order]
    return sorted(kept, key=lambda f: order[(f[0], f[1], f[3].metric)])  # stable: pairs


def aa_json(f: changes_table.Found) -> dict[str, Any]:
    """An A/A cell as a cache keeps it: where it is and both sides' rounds."""
    block, pkey, pair, c = f
    return {"block": block, "parameters": pkey, "pair": pair, "metric": c.metric,
            "base": _cell_json(c.base), "other": _cell_json(c.other)}


def _cell_json(cell: Cell) -> dict[str, Any]:
    return {"values": list(cell.values), "rounds": list(cell.rounds),
            **({"given": list(cell.given)} if cell.given else {})}


def _cell(data: dict[str, Any]) -> Cell:
    given = data.get("given")
    return Cell(tuple(data["values"]), tuple(data["rounds"]),
                (float(given[0]), float(given[1]), int(given[2])) if given else None)


def floors(run: Run, tidy: Tidy) -> list[dict[str, Any]]:
    """Floors before and after each block, per kind of floor (pgbench first), and whether the
    machine drifted in between: each kind decided on its own windows, never pooled."""
    blocks: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for r in tidy.floors:
        kind = floor_kind({"floor": r.get("floor")})
        blocks.setdefault(r["block"], {}).setdefault(kind, []).append(r)
    out = []
    threshold = run.manifest.method.drift_threshold
    for block, kinds in blocks.items():
        for kind in sorted(kinds, key=lambda k: (k != PGBENCH, k)):
            present = {r["metric"] for r in kinds[kind]}
            metric = next((m for m in FLOOR_METRICS if m in present), None)
            rows_m = [r for r in kinds[kind] if r["metric"] == metric]
            before = [float(r["value"]) for r in rows_m if r.get("position") == "before"]
            after = [float(r["value"]) for r in rows_m if r.get("position") == "after"]
            low, high = median(before), median(after)
            if low is None or high is None:
                continue
            values = [float(r["value"]) for r in rows_m]
            out.append({"block": block, "floor": kind, "metric": metric,
                        "before": low, "after": high, "min": min(values), "max": max(values),
                        "before_seconds": before, "after_seconds": after,
                        "drift_percent": decision.percent_change(low, high),
                        "flagged": decision.drifted(Cell(tuple(before)), Cell(tuple(after)),
                                                    threshold)})
    return out


def method_text(rounds: int, order: str, rule: Rule) -> str:
    """How the report states the method: the rule a run recorded, with its rounds."""
    if rule.exact:
        return (f"{rounds} interleaved rounds ({order}); a cell is the median of the windows "
                f"with its min–max range; a change is decided by the {rule.text()}; expected "
                f"false positives {rule.alpha:.0%} of the comparisons of identical builds")
    return (f"{rounds} interleaved rounds ({order}); a cell is the median of the "
            f"rounds with its min–max range; a change is clear only when the ranges do not "
            f"overlap, false-positive rate 2/C({2 * rounds},{rounds}) = "
            f"{false_positive_rate(rounds):.1%}; at least {rule.min_rounds} rounds required")


def loss(block: str, pkey: str, base: str, other: str, c: Change) -> dict[str, Any]:
    """A clear loss (the method's verdict) as data, for `bench report --fail-on loss`; under an
    exact rule with its interval (`change`) and p-value."""
    out = {"block": block, "parameters": pkey or "—", "metric": metric_header(c.metric),
           "base": base, "other": other, "percent": c.percent, "base_cell": cell_text(c.base),
           "other_cell": cell_text(c.other)}
    if c.rule.exact:
        out.update(change=format_change(c), p=c.p)
    return out


def _pairs(run: Run, compare: tuple[str, str] | None, cross: Cross | None,
           labels: list[str]) -> list[tuple[str, str]]:
    if compare and not cross:
        for label in compare:
            if label not in run.manifest.labels:
                raise AnalysisError(f"no label {label!r} in run {run.manifest.id}",
                                    fix=f"choose among: {', '.join(labels)}")
        return [compare]
    return [(labels[0], other) for other in labels[1:]]


def read(run: Run, compare: tuple[str, str] | None = None, min_rounds: int | None = None,
         cross: Cross | None = None) -> Reading:
    """The reading of `run` (its labels' first against each other, or the pair `compare`;
    `min_rounds`: the reader's own minimum). `cross` (from crossrun.cross_run) replaces the
    run's own labels with labels of several runs: each run is then shown with its machine and
    floors, and every verdict with the caveat that their rounds were not interleaved."""
    m = run.manifest
    differences: list[str] = []
    if cross:
        tidy, labels, differences = cross.tidy, cross.labels, cross.differences
    else:
        tidy, labels = Tidy.of(run), list(m.labels)
    pairs = _pairs(run, compare, cross, labels)
    rule = Rule.of(m.method)
    if min_rounds:
        rule = replace(rule, min_rounds=min_rounds)
    if not tidy.measured:
        raise AnalysisError(f"run {m.id} has no measurement windows", fix="archive a new run")
    found = changes(run, tidy, pairs, rule)
    knees = saturation.knees(tidy)
    per_run: dict[str, list[dict[str, Any]]] = {}
    if cross:  # each run's floors from its own windows (the rows hold one label of each)
        per_run = {r.id: floors(r, Tidy.of(r)) for r in cross.runs}
        drift = [{**d, "run": run_id} for run_id, ds in per_run.items() for d in ds]
    else:
        drift = floors(run, tidy)
    sides = {f"{other} vs {base}": (base, other) for base, other in pairs}
    # An A/A pair's clear difference is the machine's noise, flagged in the noise floor: never a
    # loss that fails CI (with 3 rounds, 1 comparison in 10 would).
    twins = {f"{b} vs {a}" for a, b in noise.same_builds(m)} if not cross else set()
    aa_all = aa_changes(run, tidy, rule) if not cross else []
    aa_found = shown(run, tidy, aa_all)
    aa = noise.rows(aa_found)
    certified = certification.certificates(found, aa_found) if rule.exact and not cross else []
    checks, shared = preflight.read(run.path), machine_load.windows(run)
    generator = machine_load.generator_cpu(tidy) if not cross else []
    # Notes that are warnings too: an oddity of the archive, a noisy A/A pair, mixed runs.
    notes = list(run.notes) if not cross else crossrun.warnings(cross)
    # Pairing by round is what the exact rule's paired test removes noise with: how far apart
    # the paired windows sat, what their correlation removed, what idle time moved.
    paired = pairing.facts(m, run.windows, tidy.cells,
                           [(a, b) for a, b, _ in label_pairs(m)]) if rule.exact and not cross \
        else []
    items = said.ranked(
        (said.scope(m.scope, m.source.note() if m.source is not None else None)
         if not cross else [])
        + said.faults(tidy.cells) + said.few_rounds(found)
        + said.drift(drift, m.method.drift_threshold, rule.exact) + said.saturated(knees)
        + said.notes(notes) + said.noisy(aa, rule.exact) + said.mixed(differences)
        + said.busy(checks, shared)
        + said.generator(generator)
        + (said.uncertified(rule.exact, bool(found), certified) if not cross else []))
    return Reading(
        run=m.id, title=crossrun.title(cross) if cross else m.title, suite=m.suite,
        scope=m.scope, status=m.status, started=m.started, ended=m.ended, labels=labels,
        runs=crossrun.runs(cross, per_run) if cross else None,
        method=(crossrun.method_text(cross, rule) if cross
                else transcribed.method_text(m.source, m.method.rounds, rule.min_rounds)
                if m.source is not None
                else method_text(m.method.rounds, m.method.order, rule)),
        tables=tables(run, tidy, labels),
        changes=changes_table.table(found, rule, aa_found),
        certification=[c.to_json() for c in certified] if rule.exact else None,
        pairing=[f.to_json() for f in paired],
        drift=drift, saturation=knees, diagnostics=diagnostics.summary_lines(run.path),
        noise_floor=[{"block": r.block, "metric": r.metric, "pair": r.pair,
                      "changes": format_range(r.changes), "clear": r.clear,
                      "cells": len(r.changes), "spread_percent": r.spread * 100,
                      "steady": r.steady} for r in aa],
        preflight=checks, machine_load=shared, generator=generator,
        notes=notes + [line for f in paired for line in f.lines()]
        + [said.noise_line(r, rule.exact) for r in aa]
        + [f"mixed runs allowed: {d}" for d in differences]
        + [f"preflight {machine_load.line(r)}" for r in checks],
        items=items, aa=[aa_json(f) for f in aa_all],
        losses=[loss(block, pkey, *sides[pair], c) for block, pkey, pair, c in found
                if c.clear and c.better is False and pair not in twins],
        machine=dict(m.machine),
        consistency=consistency.rows(m, tidy.cells, tidy.blocks) if not cross else [])

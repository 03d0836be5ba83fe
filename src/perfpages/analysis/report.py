"""`bench report`: one table per block ("median (min–max)") and a changes table with verdicts."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from perfpages.analysis import (
    certification,
    crossrun,
    decision,
    machine_load,
    noise,
    pairing,
    saturation,
    transcribed,
)
from perfpages.analysis import changes as changes_table
from perfpages.analysis.changes import cell_text, changes, metric_header
from perfpages.analysis.crossrun import Cross
from perfpages.analysis.decision import Cell, Change, Rule, false_positive_rate
from perfpages.analysis.method import (
    block_metrics,
    drifted,
    format_change,
    format_percent,
    format_range,
)
from perfpages.analysis.metric import COST_METRICS, format_number, info
from perfpages.analysis.reproduction import label_pairs
from perfpages.analysis.text import fence, prose
from perfpages.analysis.tidy import Tidy, median
from perfpages.archive import diagnostics, preflight
from perfpages.archive.reader import Run
from perfpages.archive.window import floor_kind
from perfpages.errors import AnalysisError

WARN = "⚠"


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"title": self.title, "columns": self.columns, "rows": self.rows,
                "notes": self.notes}


def block_tables(run: Run, tidy: Tidy, labels: list[str]) -> list[Table]:
    cells = tidy.cells
    tables = []
    for block, (params, present) in tidy.blocks.items():
        metrics = block_metrics(run.manifest, block, present)
        table = Table(run.manifest.block(block).title or block,
                      ["parameters", "metric", *labels], [])
        for pkey in params:
            for metric in metrics:
                row = [pkey or "—", metric_header(metric)]
                for label in labels:
                    c = cells.get((block, pkey, label, metric))
                    text = cell_text(c) if c else "—"
                    bad = [cells.get((block, pkey, label, m)) for m in
                           ("errors", "non_2xx", "failed_windows")]
                    if c and any(b and b.max > 0 for b in bad):
                        text += f" {WARN}"
                    row.append(text)
                table.rows.append(row)
        if any(WARN in text for row in table.rows for text in row):
            table.notes.append(f"{WARN} the cell's rounds include errors, non-2xx responses "
                               "or failed windows")
        tables.append(table)
        costs = [m for m in COST_METRICS if m in present and m not in metrics]
        if costs:
            tables.append(_cost_table(table.title, params, cells, block, costs, labels))
    return tables


def _cost_table(title: str, params: list[str], cells: dict[Any, Any], block: str,
                metrics: list[str], labels: list[str]) -> Table:
    """What a call cost in the block, per label: the work behind its rates."""
    table = Table(f"{title}: cost per call", ["parameters", "metric", *labels], [])
    for pkey in params:
        for metric in metrics:
            found = [cells.get((block, pkey, label, metric)) for label in labels]
            if any(found):
                table.rows.append([pkey or "—", f"{metric_header(metric)}: {info(metric).title}",
                                   *[cell_text(c) if c else "—" for c in found]])
    table.notes.append("Per call, each window's counters over its completed calls: CPU of the "
                       "subject's process tree and of PostgreSQL's processes, statements and "
                       "shared buffers from pg_stat_statements, bytes on the HTTP connection.")
    return table


def aa_changes(run: Run, tidy: Tidy, rule: Rule) -> list[changes_table.Found]:
    """What each A/A pair measured, cell by cell: the differences this machine and method show
    between two identical builds, against which every other change is read."""
    pairs = noise.same_builds(run.manifest)
    if not pairs:
        return []  # the usual case: no second pass over the cells
    return changes(run, tidy, pairs, rule)


def noise_floor(run: Run, tidy: Tidy, rule: Rule) -> list[noise.Row]:
    """The A/A pairs' cells grouped by block, metric and pair (the noise floor)."""
    return noise.rows(aa_changes(run, tidy, rule))


def noise_line(row: noise.Row) -> str:
    """A/A row as a note (with a warning when identical builds differ clearly)."""
    flag = (f" {WARN} identical builds differ clearly: the machine or the method is not stable"
            if row.clear else "")
    return (f"A/A (same build) {row.block}: {row.pair}, {row.metric}: {row.text} — the noise "
            f"floor{flag}")


def drift(run: Run, tidy: Tidy) -> list[dict[str, Any]]:
    """Floors before and after each block, per kind of floor (pgbench first), and whether the
    machine drifted in between: each kind decided on its own windows, never pooled."""
    blocks: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for r in tidy.floors:
        kind = floor_kind({"floor": r.get("floor")})
        blocks.setdefault(r["block"], {}).setdefault(kind, []).append(r)
    out = []
    threshold = run.manifest.method.drift_threshold
    for block, kinds in blocks.items():
        for kind in sorted(kinds, key=lambda k: (k != "pgbench", k)):
            present = {r["metric"] for r in kinds[kind]}
            metric = next((m for m in ("tps", "throughput") if m in present), None)
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


def build(run: Run, compare: tuple[str, str] | None = None, min_rounds: int | None = None,
          cross: Cross | None = None) -> dict[str, Any]:
    """Everything `bench report` prints, as plain data (the json format is exactly this).

    `cross` (from crossrun.cross_run) replaces the run's own labels with labels of several
    runs: each run is then shown with its machine and floors, and every verdict with the
    caveat that their rounds were not interleaved."""
    m = run.manifest
    differences: list[str] = []
    if cross:
        tidy, labels, differences = cross.tidy, cross.labels, cross.differences
        pairs = [(labels[0], other) for other in labels[1:]]
    else:
        tidy = Tidy.of(run)
        labels = list(m.labels)
        if compare:
            for label in compare:
                if label not in m.labels:
                    raise AnalysisError(f"no label {label!r} in run {m.id}",
                                        fix=f"choose among: {', '.join(labels)}")
            pairs = [compare]
        else:
            pairs = [(labels[0], other) for other in labels[1:]]
    rule = Rule.of(m.method)
    if min_rounds:
        rule = replace(rule, min_rounds=min_rounds)
    if not tidy.measured:
        raise AnalysisError(f"run {m.id} has no measurement windows", fix="archive a new run")
    found = changes(run, tidy, pairs, rule)
    knees = saturation.knees(tidy)
    if cross:  # each run's floors from its own windows (the rows hold one label of each)
        per_run = {r.id: drift(r, Tidy.of(r)) for r in cross.runs}
        floors = [{**d, "run": run_id} for run_id, ds in per_run.items() for d in ds]
    else:
        floors = drift(run, tidy)
    sides = {f"{other} vs {base}": (base, other) for base, other in pairs}
    # An A/A pair's clear difference is the machine's noise, flagged in the noise floor: never a
    # loss that fails CI (with 3 rounds, 1 comparison in 10 would).
    twins = {f"{b} vs {a}" for a, b in noise.same_builds(m)} if not cross else set()
    aa_found = aa_changes(run, tidy, rule) if not cross else []
    aa = noise.rows(aa_found)
    table = changes_table.table(found, rule, aa_found)
    certified = certification.certificates(found, aa_found) if rule.exact and not cross else []
    checks, shared = preflight.read(run.path), machine_load.windows(run)
    generator = machine_load.generator_cpu(tidy) if not cross else []
    busy = machine_load.warnings(checks, shared) + [
        machine_load.generator_line(x) for x in generator if x["busy"]]
    # Notes that are warnings too: an oddity of the archive, a noisy A/A pair, mixed runs.
    notes = list(run.notes) if not cross else crossrun.warnings(cross)
    # Pairing by round is what the exact rule's paired test removes noise with: how far apart
    # the paired windows sat, what their correlation removed, what idle time moved.
    paired = pairing.facts(m, run.windows, tidy.cells,
                           [(a, b) for a, b, _ in label_pairs(m)]) if rule.exact and not cross \
        else []
    flagged = notes + [noise_line(r) for r in aa if r.clear] + [
        f"mixed runs allowed: {d}" for d in differences] + busy
    return {
        "run": m.id, "title": crossrun.title(cross) if cross else m.title, "suite": m.suite,
        "scope": m.scope, "status": m.status, "started": m.started, "ended": m.ended,
        "labels": labels,
        **({"runs": crossrun.runs(cross, per_run)} if cross else {}),
        "method": (crossrun.method_text(cross, rule) if cross
                   else transcribed.method_text(m.source, m.method.rounds, rule.min_rounds)
                   if m.source is not None
                   else method_text(m.method.rounds, m.method.order, rule)),
        "tables": [t.to_json() for t in block_tables(run, tidy, labels)],
        "changes": table,
        **({"certification": [c.to_json() for c in certified]} if rule.exact else {}),
        **({"pairing": [f.to_json() for f in paired]} if paired else {}),
        "drift": floors,
        "saturation": knees,
        "diagnostics": diagnostics.summary_lines(run.path),
        "noise_floor": [{"block": r.block, "metric": r.metric, "pair": r.pair,
                         "changes": format_range(r.changes), "clear": r.clear,
                         "cells": len(r.changes), "spread_percent": r.spread * 100,
                         "steady": r.steady} for r in aa],
        "preflight": checks,
        "machine_load": shared,
        "generator": generator,
        "notes": notes + [line for f in paired for line in f.lines()]
        + [noise_line(r) for r in aa]
        + [f"mixed runs allowed: {d}" for d in differences]
        + [f"preflight {preflight.line(r)}" for r in checks],
        "warnings": warnings(run, tidy, found, [] if rule.exact else floors, knees,
                             scope=not cross) + flagged,
        "losses": [loss(block, pkey, *sides[pair], c) for block, pkey, pair, c in found
                   if c.clear and c.better is False and pair not in twins],
    }


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


SCOPE_WARNINGS = {"quick": "quick run: the suite's reduced sizes, not its full measurement",
                  "test": "test run: a tiny run made by tests, not a measurement"}
BAD = {"failed_windows": "failed windows", "errors": "errors", "non_2xx": "non-2xx responses"}


def warnings(run: Run, tidy: Tidy, found: list[tuple[str, str, str, Change]],
             floors: list[dict[str, Any]], knees: list[dict[str, Any]],
             scope: bool = True) -> list[str]:
    """Everything the report flags, a line each, from the data rather than from the printed
    text: `bench report` ends with them and `bench cite` carries them into a pull request.
    (`scope=False`: the runs' scopes are stated elsewhere, per run.)"""
    out = ([SCOPE_WARNINGS[run.manifest.scope]]
           if scope and run.manifest.scope in SCOPE_WARNINGS else [])
    if scope and run.manifest.source is not None:
        out.append(run.manifest.source.note())
    bad: dict[tuple[str, str], dict[str, Any]] = {}  # (block, label) -> totals, parameter sets
    for (block, pkey, label, metric), c in tidy.cells_of(*BAD).items():
        if c.max > 0:
            entry = bad.setdefault((block, label), {"params": {}, "totals": dict.fromkeys(BAD, 0)})
            entry["params"][pkey or "—"] = None
            entry["totals"][metric] += sum(c.values)
    for (block, label), entry in bad.items():
        totals = ", ".join(f"{int(n):,} {BAD[k]}" for k, n in entry["totals"].items() if n)
        out.append(f"{block} / {label}: {totals} in the rounds of "
                   f"{'; '.join(entry['params'])}")
    few: dict[tuple[str, str], list[Change]] = {}
    total = Counter((block, pair) for block, _, pair, _ in found)
    for block, _, pair, change in found:
        if not change.enough_rounds:
            few.setdefault((block, pair), []).append(change)
    for (block, pair), group in few.items():
        have = min(c.rounds for c in group)
        out.append(f"{block}: {pair}: {len(group)} of {total[block, pair]} changes have too "
                   f"few rounds for a verdict ({have} < {group[0].min_rounds})")
    threshold = run.manifest.method.drift_threshold
    out += [f"{_of_run(d)}{d['block']}: the {floor_name(d)} floor "
            f"{drifted(d['before'], d['drift_percent'])} "
            f"({format_number(d['before'])}/s before the block, {format_number(d['after'])}/s "
            f"after), beyond the ±{threshold * 100:.0f} % threshold"
            for d in floors if d["flagged"]]
    out += [f"{k['block']} / {k['label']}: saturated from {k['from']} to {k['to']} clients "
            f"(throughput {format_percent(k['throughput_change'])}, p95 "
            f"{format_percent(k['p95_change'])})" for k in knees if k["flagged"]]
    return out


def loss(block: str, pkey: str, base: str, other: str, c: Change) -> dict[str, Any]:
    """A clear loss (the method's verdict) as data, for `bench report --fail-on loss`; under an
    exact rule with its interval (`change`) and p-value."""
    out = {"block": block, "parameters": pkey or "—", "metric": metric_header(c.metric),
           "base": base, "other": other, "percent": c.percent, "base_cell": cell_text(c.base),
           "other_cell": cell_text(c.other)}
    if c.rule.exact:
        out.update(change=format_change(c), p=c.p)
    return out


def _md_table(columns: list[str], rows: list[list[str]]) -> list[str]:
    esc = [[prose(c) for c in row] for row in [columns, *rows]]
    lines = ["| " + " | ".join(esc[0]) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in esc[1:]]
    return lines


def to_markdown(data: dict[str, Any]) -> str:
    """The report as Markdown; every text from the archive is escaped (text.prose), so a
    title or label reads as typed, never as markup."""
    out = [f"# {prose(data['title'])}", ""]
    if data.get("runs"):
        out += ["Runs:", "", *[f"- {prose(crossrun.run_line(r))}" for r in data["runs"]], ""]
    else:
        out += [f"Run `{data['run']}` ({data['scope']}, {data['status']}), started "
                f"{prose(data['started'])}.", ""]
    out += [f"Method: {prose(data['method'])}.", ""]
    for table in data["tables"]:
        out += [f"## {prose(table['title'])}", "", *_md_table(table["columns"], table["rows"]),
                ""]
        out += [prose(note) for note in table["notes"]] + ([""] if table["notes"] else [])
    if data["changes"]["rows"]:
        out += ["## Changes", "", *_md_table(data["changes"]["columns"], data["changes"]["rows"]),
                ""]
        out += [f"- {prose(line)}" for line in data["changes"]["summary"]] + [""]
    if data.get("certification"):
        out += ["## Certification", "", CERTIFICATION, "",
                *[f"- {prose(c['line'])}" for c in data["certification"]], ""]
    pairs = [line for f in data.get("pairing", []) for line in f["lines"]]
    if pairs:
        out += ["## Pairing", "", PAIRING, "", *[f"- {prose(line)}" for line in pairs], ""]
    if data["drift"]:
        out += ["## Floors", ""]
        out += [f"- {prose(drift_line(d)[2:])}" for d in data["drift"]] + [""]
    if data.get("saturation"):
        out += ["## Saturation", ""]
        out += [f"- {prose(saturation.line(k))}" for k in data["saturation"]] + [""]
    if data.get("diagnostics"):
        out += ["## Diagnostics", "", fence("\n".join(data["diagnostics"])), ""]
    warned = data.get("warnings", [])
    if warned:
        out += [f"## {WARN} Warnings", "", *[f"- {prose(w)}" for w in warned], ""]
    out += [f"Note: {prose(note)}" for note in data["notes"]
            if note not in warned and note not in pairs]
    return "\n".join(out).rstrip() + "\n"


PAIRING = ("The windows a comparison pairs by round: how far apart they sat (middle to middle), "
           "the correlation of the two labels' rounds that pairing removes (Pearson, of the "
           "logs, the median over the block's cells)")
CERTIFICATION = ("A block is certified when its A/A pair (the same build under two labels) has "
                 "no clear cell; it resolves what its worst comparison resolves")


def floor_name(d: dict[str, Any]) -> str:
    """"tps"/"throughput" for the pgbench floor (as reports always named it), "/health" for an
    HTTP subject's own floor."""
    kind = d.get("floor", "pgbench")
    return d["metric"] if kind == "pgbench" else f"/{kind}"


def drift_line(d: dict[str, Any]) -> str:
    """A block's floors, each the median of its seconds with their range (the drift decision
    reads both): `- mix: tps floor 12,882/s (12,310–13,046) before, …`."""
    flag = f" {WARN} drift beyond the threshold" if d["flagged"] else ""
    return (f"- {_of_run(d)}{d['block']}: {floor_name(d)} floor "
            f"{_rate(d, 'before')} before, {_rate(d, 'after')} after "
            f"({format_percent(d['drift_percent'])}){flag}")


def _rate(d: dict[str, Any], side: str) -> str:
    seconds = d.get(f"{side}_seconds")  # a report's JSON from before they were kept: none
    text = cell_text(Cell(tuple(seconds))) if seconds else format_number(d[side])
    median, _, spread = text.partition(" ")
    return f"{median}/s" + (f" {spread}" if spread else "")


def _of_run(d: dict[str, Any]) -> str:
    """A floor of one run among several is named by its run."""
    return f"{d['run']} / " if d.get("run") else ""


def to_json(data: dict[str, Any]) -> str:
    """Strict JSON: a number with no finite value (a change from 0) is null, never NaN."""
    return json.dumps(_finite(data), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return certification.finite(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value

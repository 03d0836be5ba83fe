"""Macros over what a run recorded besides its measured cells: provenance, floors, diagnostics.

- `fact`: one value of run.json (machine, method, a label's pin, settings or environment);
- `settings`: a table of the labels' PostgreSQL settings (or environment variables);
- `floor`, `drift`: the floors before and after a block and their drift, as `bench report` flags it;
- `diagnostic`, `statements`, `plan`: a value of diagnostics/BLOCK/LABEL/*.json, the top
  statements of pg_stat_statements, an EXPLAIN plan as an indented tree.

So a page states the machine, the settings and where the time went from the archive, never by
hand. Everything is escaped; a key that does not exist is one error naming those that do.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from perfpages.analysis import decision
from perfpages.analysis.comparable import machine_name
from perfpages.analysis.decision import Cell, false_positive_rate
from perfpages.analysis.format import format_percent
from perfpages.analysis.metric import format_number, info
from perfpages.analysis.transcribed import BUILD_NOTE
from perfpages.archive import files
from perfpages.archive.vocabulary import PGBENCH
from perfpages.archive.window import floor_kind
from perfpages.errors import AnalysisError
from perfpages.site import escape
from perfpages.site.macros import cell_text
from perfpages.site.pins import Pins
from perfpages.site.store import Loaded, reading


def lookup(data: Any, key: str, where: str) -> Any:
    """The value at a dotted path. A key holding dots (a label `v1.1`, a setting
    `pg_stat_statements.track`) is matched whole first; list items by their index."""
    parts = key.split(".") if key else []
    value, i, seen = data, 0, "the top"
    while i < len(parts):
        for j in range(len(parts), i, -1):
            name = ".".join(parts[i:j])
            if isinstance(value, dict) and name in value:
                value = value[name]
                break
            if isinstance(value, list) and name.isdigit() and int(name) < len(value):
                value = value[int(name)]
                break
        else:
            if isinstance(value, dict):
                fix = "use one of: " + ", ".join(map(str, list(value)[:24]))
            elif isinstance(value, list):
                fix = f"use an index from 0 to {len(value) - 1}" if value else "it is empty"
            else:
                fix = f"{seen} is a single value: stop the key there"
            raise AnalysisError(f"no {parts[i]!r} under {seen} of {where}", fix=fix)
        seen = ".".join(parts[:j])
        i = j
    return value


def text(value: Any, digits: int | None = None, percent: bool = False,
         group: bool = True) -> str:
    """A value as a page prints it (not yet escaped): numbers grouped (not with group=False:
    a seed or a port is no quantity), mappings as k=v."""
    if isinstance(value, dict):
        return ", ".join(f"{k}={text(v, digits, group=group)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(text(v, digits, group=group) for v in value)
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        if percent:
            return f"{format_number(value * 100, digits)} %"
        if digits is not None:
            return format_number(value, digits)
        if float(value).is_integer():
            return f"{int(value):,}" if group else str(int(value))
        return f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


@dataclass(frozen=True)
class Drift:
    """The floors of one block and kind, as the run's reading has them: before and after it,
    the change between their medians, and whether the machine drifted."""

    block: str
    metric: str
    before: Cell
    after: Cell
    threshold: float  # a fraction, from the run's method
    flagged: bool  # as the run's reading decided it (`decision.drifted`)

    @property
    def percent(self) -> float:
        return decision.percent_change(self.before.median, self.after.median)

    def describe(self) -> str:
        unit = info(self.metric).unit
        return (f"{self.block}: {cell_text(self.before, unit)} before, "
                f"{cell_text(self.after, unit)} after ({format_percent(self.percent)})")


def floor_drift(loaded: Loaded, block: str | None, kind: str = PGBENCH) -> Drift:
    """The floors of `block` (the only block with floors when None) of one kind: "pgbench"
    straight to PostgreSQL (the machine's check) or an HTTP subject's "health" floor, never
    pooled (their rates differ by an order of magnitude)."""
    blocks = list(dict.fromkeys(r.block for r in loaded.floors))
    if not blocks:
        raise AnalysisError(f"run {loaded.manifest.id} has no floors",
                            fix="floors are measured before and after each block by bench.run")
    if block is None and len(blocks) > 1:
        raise AnalysisError(f"the run has floors around {len(blocks)} blocks",
                            fix=f"name one with block=… ({', '.join(blocks)})")
    block = block or blocks[0]
    if block not in blocks:
        raise AnalysisError(f"no floors around block {block!r}",
                            fix=f"use one of: {', '.join(blocks)}")
    rows = [r for r in loaded.floors if r.block == block]
    kinds = list(dict.fromkeys(floor_kind(r.params) for r in rows))
    if kind not in kinds:
        raise AnalysisError(f"no {kind!r} floor around block {block!r}",
                            fix=f"use kind= one of: {', '.join(kinds)}")
    d = next((d for d in reading(loaded).drift if d["block"] == block and d["floor"] == kind),
             None)
    if d is None or d["metric"] is None:
        raise AnalysisError(f"block {block!r} lacks a floor before or after it",
                            fix="floors need both positions; the run may have been cut short")
    return Drift(block, d["metric"], Cell(tuple(d["before_seconds"])),
                 Cell(tuple(d["after_seconds"])), loaded.manifest.method.drift_threshold,
                 d["flagged"])


CONDITION_CHARS = 90  # a plan's conditions are cut here: the whole plan is in the archive


def _node(node: dict[str, Any], depth: int) -> list[str]:
    """One plan node per line (type, relation, index: rows, time, buffers), then its conditions."""
    what = str(node.get("Node Type", "?"))
    if node.get("Relation Name"):
        what += f" on {node['Relation Name']}"
    if node.get("Index Name"):
        what += f" using {node['Index Name']}"
    parts = [f"{text(node.get('Actual Rows'))} rows ({text(node.get('Plan Rows'))} planned)",
             f"{text(node.get('Actual Total Time'))} ms"]
    if (node.get("Actual Loops") or 1) > 1:
        parts.append(f"{text(node['Actual Loops'])} loops")
    parts.append(f"buffers hit {text(node.get('Shared Hit Blocks', 0))} "
                 f"read {text(node.get('Shared Read Blocks', 0))}")
    indent = "   " * depth
    lines = [indent + ("-> " if depth else "") + what + ": " + ", ".join(parts)]
    for key in ("Index Cond", "Recheck Cond", "Filter"):
        cond = str(node.get(key) or "")
        if cond:
            cut = cond if len(cond) <= CONDITION_CHARS else cond[:CONDITION_CHARS] + " …"
            lines.append(indent + ("   " if depth else "") + f"   {key}: {cut}")
    for child in node.get("Plans", []):
        lines += _node(child, depth + 1)
    return lines


class Facts:
    """Bound to one page's pins, like Macros; `namespace()` is what its template sees."""

    def __init__(self, pins: Pins) -> None:
        self.pins = pins

    def namespace(self) -> dict[str, Callable[..., str]]:
        return {"fact": self.fact, "settings": self.settings, "floor": self.floor,
                "drift": self.drift, "diagnostic": self.diagnostic,
                "statements": self.statements, "plan": self.plan,
                "false_positive_rate": self.false_positive_rate}

    def _run(self, run: str | None) -> Loaded:
        return self.pins.runs[self.pins.aliases(run)[0]]

    def fact(self, key: str, *, run: str | None = None, digits: int | None = None,
             percent: bool = False, count: bool = False) -> str:
        """A value of run.json by dotted path: "machine.cores", "labels.sized.pg_settings";
        count=True: how many entries it holds ("labels": the run's labels)."""
        loaded = self._run(run)
        if key == "machine.name" and not count:  # as every page names it, VM builds apart
            return escape.md(machine_name(loaded.manifest.machine))
        value = lookup(loaded.manifest.to_json(), key, f"run.json of {loaded.manifest.id}")
        if count:
            if not isinstance(value, dict | list):
                raise AnalysisError(f"{key!r} of run.json is a single value, nothing to count",
                                    fix="count a mapping or a list: labels, blocks …")
            return escape.md(text(len(value)))
        label = loaded.manifest.labels.get(key.removeprefix("labels.").removesuffix(".pin"))
        if label is not None and key == f"labels.{label.name}.pin":
            return escape.md(label.pin.describe())  # a pin reads as everywhere else
        if key == "command":  # as a reader types it, not the build machine's directories
            value = escape.typed(str(value))
        return escape.md(text(value, digits, percent, group=False))

    def false_positive_rate(self, *, run: str | None = None) -> str:
        """The chance that two equal labels' ranges do not overlap, for the run's rounds; for a
        method v2 run, its exact test's α."""
        rule = self.pins.rule(self.pins.aliases(run)[0])
        if rule.exact:
            return f"{rule.alpha * 100:g} %"
        rounds = self._run(run).manifest.method.rounds
        return f"{format_number(false_positive_rate(rounds) * 100)} %"

    def settings(self, *, run: str | None = None, label: str | list[str] | None = None,
                 env: bool = False) -> str:
        """A table: a row per setting any label sets, a column per label ("default" if unset)."""
        m = self._run(run).manifest
        labels = list(m.labels) if label is None else [label] if isinstance(label, str) \
            else list(label)
        for name in labels:
            if name not in m.labels:
                raise AnalysisError(f"no label {name!r} in run {m.id}",
                                    fix=f"use one of: {', '.join(m.labels)}")
        kind = "env" if env else "pg_settings"
        values = {name: dict(getattr(m.labels[name], kind)) for name in labels}
        names = list(dict.fromkeys(k for v in values.values() for k in v))
        # A transcribed run's builds, as its source states them, head its settings.
        builds = [[escape.md("build, as the source states it"),
                   *[escape.md(m.labels[lab].pin.describe().removeprefix(BUILD_NOTE))
                     for lab in labels]]] if m.source is not None and any(
            m.labels[lab].pin.note.startswith(BUILD_NOTE) for lab in labels) else []
        if not names and not builds:
            what = "an environment variable" if env else "a PostgreSQL setting"
            return f"\n\nNo label sets {what}: all run with the defaults.\n\n"
        header = ["variable" if env else "setting", *[escape.md(n) for n in labels]]
        rows = [[escape.code(n), *[escape.code(values[lab][n]) if n in values[lab] else "default"
                                   for lab in labels]] for n in names]
        return "\n\n" + escape.table(header, builds + rows) + "\n\n"

    def floor(self, position: str = "before", *, block: str | None = None,
              run: str | None = None, digits: int | None = None, kind: str = PGBENCH) -> str:
        """The floor's rate before (or after) a block: "11,951/s"; kind="health": the HTTP
        subject's own floor."""
        d = floor_drift(self._run(run), block, kind)
        if position not in ("before", "after"):
            raise AnalysisError(f"position must be 'before' or 'after', not {position!r}")
        cell = d.before if position == "before" else d.after
        return escape.md(cell_text(cell, info(d.metric).unit, digits))

    def drift(self, *, block: str | None = None, run: str | None = None,
              show_verdict: bool = True, kind: str = PGBENCH) -> str:
        """The floor after a block against the one before: "+207 % (beyond the 10 % threshold)"."""
        d = floor_drift(self._run(run), block, kind)
        limit = f"{format_number(d.threshold * 100)} %"
        if d.flagged:
            note = f"beyond the {limit} threshold"
        elif abs(d.percent) > d.threshold * 100:  # the ranges rule: within the floor's noise
            note = f"beyond the {limit} threshold, within the ranges of the floors: no drift"
        else:
            note = f"within the {limit} threshold"
        return escape.md(f"{format_percent(d.percent)} ({note})" if show_verdict
                         else format_percent(d.percent))

    def _diagnostics(self, file: str, block: str | None, label: str | None,
                     run: str | None) -> tuple[Any, str]:
        loaded = self._run(run)
        root = loaded.path / "diagnostics"
        stored = [n.split("/") for n in files.names(loaded.path, "diagnostics/*/*/*.json")]
        blocks = sorted({parts[1] for parts in stored})
        if not blocks:
            raise AnalysisError(f"run {loaded.manifest.id} has no per-block diagnostics",
                                fix="bench.run writes them under diagnostics/BLOCK/LABEL/")
        block = block or (blocks[0] if len(blocks) == 1 else None)
        if block not in blocks:
            raise AnalysisError(f"name a block with diagnostics, not {block!r}",
                                fix=f"use block= one of: {', '.join(blocks)}")
        labels = sorted(p.name for p in (root / block).iterdir() if p.is_dir())
        label = label or (labels[0] if len(labels) == 1 else None)
        if label not in labels:
            raise AnalysisError(f"name a label with diagnostics, not {label!r}",
                                fix=f"use label= one of: {', '.join(labels)}")
        rel = f"diagnostics/{block}/{label}/{file}.json"
        if files.locate(loaded.path, rel) is None:
            names = sorted(p[3].removesuffix(".json") for p in stored if p[1:3] == [block, label])
            raise AnalysisError(f"no diagnostics file {file!r} for {block}/{label}",
                                fix=f"use file= one of: {', '.join(names)}")
        return json.loads(files.read_text(loaded.path, rel)), f"{loaded.manifest.id}/{rel}"

    def diagnostic(self, key: str, *, block: str | None = None, label: str | None = None,
                   run: str | None = None, file: str = "summary", digits: int | None = None,
                   percent: bool = False) -> str:
        """A value of diagnostics/BLOCK/LABEL/FILE.json: "database.buffer_hit_ratio"."""
        data, where = self._diagnostics(file, block, label, run)
        return escape.md(text(lookup(data, key, where), digits, percent))

    def statements(self, *, block: str | None = None, label: str | None = None,
                   run: str | None = None, by: str = "total", top: int = 5) -> str:
        """The top statements of pg_stat_statements during the block, by total or mean time:
        a numbered table of their figures, then their text in a code block."""
        if by not in ("total", "mean"):
            raise AnalysisError(f"by must be 'total' or 'mean', not {by!r}")
        data, where = self._diagnostics("summary", block, label, run)
        ranked = lookup(data, f"statements.by_{by}_time", where)[:top]
        header = ["#", "calls", "total (ms)", "mean (ms)", "rows", "buffers hit", "read"]
        rows = [[str(i), *[escape.md(text(s.get(k))) for k in (
            "calls", "total_ms", "mean_ms", "rows", "shared_blks_hit", "shared_blks_read")]]
                for i, s in enumerate(ranked, 1)]
        # The statements' text below the table, numbered: long SQL wraps badly in a cell.
        listing = "\n".join(f"{i}. {s['query']}" for i, s in enumerate(ranked, 1))
        return ("\n\n" + escape.table(header, rows) + "\n\n" + escape.fence(listing)
                + "\n\n")

    def plan(self, name: str, *, block: str | None = None, label: str | None = None,
             run: str | None = None) -> str:
        """The EXPLAIN (ANALYZE, BUFFERS) plan `name` of a block, as an indented tree."""
        data, where = self._diagnostics(f"explain-{name}", block, label, run)
        top = data[0] if isinstance(data, list) and data else data
        if not isinstance(top, dict) or "Plan" not in top:
            raise AnalysisError(f"{where} is not an EXPLAIN (FORMAT JSON) plan")
        lines = _node(top["Plan"], 0)
        lines.append(f"Planning {text(top.get('Planning Time'))} ms, execution "
                     f"{text(top.get('Execution Time'))} ms")
        return "\n\n" + escape.fence("\n".join(lines)) + "\n\n"

"""The runs one page pins (front matter `runs: {alias: run-id}`) and the cells macros select."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from perfpages.analysis.comparable import check_comparable
from perfpages.analysis.decision import Cell, Change, Rule
from perfpages.analysis.transcribed import given_cells
from perfpages.archive.window import params_key
from perfpages.errors import AnalysisError, PerfpagesError
from perfpages.site.agreement import in_template, template_line
from perfpages.site.store import Loaded, RunStore

# Dimensions a table can lay out besides the run's own parameters.
FIXED_DIMENSIONS = ("run", "block", "label", "metric", "parameters")


@dataclass(frozen=True)
class Found:
    """One cell: the rounds of (run, block, parameters, label, metric)."""

    run: str  # the page's alias
    block: str
    parameters: str
    label: str
    metric: str
    params: Mapping[str, Any]
    cell: Cell

    def value(self, dimension: str) -> Any:
        if dimension in FIXED_DIMENSIONS:
            return getattr(self, dimension)
        if dimension not in self.params:
            raise AnalysisError(f"no dimension {dimension!r} in block {self.block!r}",
                                fix="use run, block, label, metric, parameters or a parameter "
                                    f"of the block ({', '.join(self.params) or 'none'})")
        return self.params[dimension]

    def describe(self, *skip: str) -> str:
        """Where the cell is, for a claim's data: 'callers: call=lookup, callers=32, v1.1'."""
        parts = [getattr(self, d) for d in ("block", "parameters", "label") if d not in skip]
        return ", ".join(p for p in parts if p)


# One side of a comparison: a label (`ALIAS:LABEL` across runs) or parameter values.
Side = str | Mapping[str, Any]


def side_text(side: Side) -> str:
    """A side as a claim's message names it: `0.43.0`, `threads=2`."""
    if isinstance(side, Mapping):
        return ", ".join(f"{k}={v}" for k, v in side.items())
    return str(side)


class Aliases(dict[str, str]):
    """`runs:` by alias, with the aliases whose run may be `failed` (`allow_failed:`) and the
    run a macro reads when it names none (`default_run:`)."""

    allow_failed: frozenset[str] = frozenset()
    default: str | None = None


def parse_front_matter(meta: Mapping[str, Any], where: str) -> dict[str, str]:
    """`runs:` as {alias: id} or [id, …] (the id is then its own alias); {} when absent.
    `allow_failed: [alias, …]` opts those runs in when they ended `failed`; `default_run:
    alias` is the run macros without run=… read on a page that pins several."""
    raw = meta.get("runs")
    if raw is None:
        return {}
    allowed = meta.get("allow_failed") or []
    if not isinstance(allowed, list) or not all(isinstance(a, str) for a in allowed):
        raise PerfpagesError("allow_failed must list run aliases", where=where,
                             key="allow_failed", fix="write it as `allow_failed: [old]`")
    if isinstance(raw, list) and all(isinstance(r, str) for r in raw):
        out = Aliases({r: r for r in raw})
    elif isinstance(raw, dict) and all(isinstance(k, str) for k in raw):
        out = Aliases({k: str(v) for k, v in raw.items()})
    else:
        out = None
    if out is not None:
        unknown = [a for a in allowed if a not in out]
        if unknown:
            raise PerfpagesError(f"allow_failed names no pinned run: {', '.join(unknown)}",
                                 where=where, key="allow_failed",
                                 fix=f"use aliases of runs: {', '.join(out)}")
        out.allow_failed = frozenset(allowed)
        default = meta.get("default_run")
        if default is not None and (not isinstance(default, str) or default not in out):
            raise PerfpagesError(f"default_run names no pinned run: {default!r}", where=where,
                                 key="default_run",
                                 fix=f"use the alias of a run under runs: {', '.join(out)}")
        out.default = default
        return out
    raise PerfpagesError("runs must map aliases to run ids", where=where, key="runs",
                         fix="write it as `runs: {new: 2026-11-01-suite}` or a list of ids")


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def same_value(actual: Any, wanted: Any) -> bool:
    """A parameter equals a filter value: numbers as numbers (32 == 32.0), else as text."""
    if isinstance(wanted, int | float) and not isinstance(wanted, bool):
        return _float(actual) == float(wanted)
    return actual is not None and str(actual) == str(wanted)


def _number_at_most(actual: Any, limit: float) -> bool:
    return _float(actual) <= float(limit)  # NaN (absent, not a number) is never within


# A ledger key of a comparison: (run, block, parameters, label, run, parameters, label, metric);
# an A/A pair's: (run, block, parameters, pair, metric)
Key = tuple[object, ...]


class Ledger(dict[Key, Change]):
    """Every comparison a page prints or claims, judged once (`Pins.judged`), with the one
    record of the page line where each was first judged (`lines`): what the agreement check
    (`site.agreement`) and the contrary check (`site.contrary`) both name."""

    def __init__(self, line: Callable[[], int] = template_line) -> None:
        super().__init__()
        self.line = line  # the page's line now (the template's, plus the front matter's)
        self.lines: dict[Key, int] = {}
        # Every change ever judged, by identity: a claim's change may have been judged again
        # (a table below it) and replaced in the ledger; the list keeps each id unique.
        self.by_id: dict[int, Key] = {}
        self.every: list[Change] = []

    def __setitem__(self, key: Key, value: Change) -> None:
        self.lines.setdefault(key, self.line())
        self.by_id[id(value)] = key
        self.every.append(value)
        super().__setitem__(key, value)


class Pins:
    """A page's pinned runs, by alias, with the selection every macro and claim uses."""

    def __init__(self, runs: dict[str, Loaded], default: str | None = None) -> None:
        self.runs = runs
        self.default = default  # the run macros without run=… read (front matter default_run)
        # Every comparison the page prints or claims, judged once (perfpages.site.verdicts),
        # and where (a rendered page's ledger counts its front matter: `page`)
        self.judged = Ledger()
        # (template line, alias) of every run a macro reads: the header's runs by section
        self.read: list[tuple[int, str]] = []
        # (alias, block) of every block a macro reads cells of (`header.across_blocks`)
        self.blocks: set[tuple[str, str]] = set()

    @classmethod
    def load(cls, store: RunStore, aliases: dict[str, str], where: str,
             lines: Mapping[str, int]) -> Pins:
        allowed: frozenset[str] = getattr(aliases, "allow_failed", frozenset())
        return cls({alias: store.pin(run_id, where=where, line=lines.get(alias), alias=alias,
                                     allow_failed=alias in allowed)
                    for alias, run_id in aliases.items()}, getattr(aliases, "default", None))

    def aliases(self, run: str | Iterable[str] | None) -> list[str]:
        """The pinned runs `run` names (a macro's run=…), noted with the template line reading
        them."""
        names = self._aliases(run)
        line = in_template()
        if line is not None:
            self.read += [(line, name) for name in names]
        return names

    def _aliases(self, run: str | Iterable[str] | None) -> list[str]:
        if run is None and self.default is not None:
            return [self.default]
        if run is None:
            # A run pinned beside its replays is the page's run: its reproduction section pins
            # the replays without every macro having to name the original.
            ids = {loaded.manifest.id for loaded in self.runs.values()}
            originals = [a for a, loaded in self.runs.items()
                         if loaded.manifest.replay_of not in ids]
            # (rendered on its replay, both pins name the replay: still one run)
            if originals and len({self.runs[a].manifest.id for a in originals}) == 1:
                return originals[:1]
            raise AnalysisError(f"the page pins {len(self.runs)} runs",
                                fix=f"name one with run=… ({', '.join(self.runs)}), or the "
                                    "page's own with default_run: in its front matter")
        names = [run] if isinstance(run, str) else list(run)
        for name in names:
            if name not in self.runs:
                raise AnalysisError(f"no pinned run {name!r}",
                                    fix=f"pin it in the front matter, or use one of: "
                                        f"{', '.join(self.runs) or 'none'}")
        if len(names) > 1:
            check_comparable([self.runs[n].manifest for n in names])
        return names

    def labels(self, alias: str) -> list[str]:
        return list(self.runs[alias].manifest.labels)

    def select(self, *, metric: str, run: str | Iterable[str] | None = None,
               block: str | None = None, label: str | Iterable[str] | None = None,
               where: Mapping[str, Any] | None = None,
               up_to: Mapping[str, float] | None = None,
               from_: Mapping[str, float] | None = None) -> list[Found]:
        """Every measured cell of `metric` matching the filters, in archive order."""
        found: list[Found] = []
        for alias in self.aliases(run):
            wanted = None
            if label is not None:
                wanted = {label} if isinstance(label, str) else set(label)
                unknown = sorted(wanted - set(self.labels(alias)))
                if unknown:
                    raise AnalysisError(f"no label {unknown[0]!r} in run {alias!r}",
                                        fix=f"use one of: {', '.join(self.labels(alias))}")
            for name in [*(where or {}), *(up_to or {}), *(from_ or {})]:
                self._has(alias, name)
            for f in self._cells(alias):
                if f.metric != metric or (block is not None and f.block != block) or (
                        wanted is not None and f.label not in wanted):
                    continue
                if all(same_value(f.params.get(k), v) for k, v in (where or {}).items()) and \
                        all(_number_at_most(f.params.get(k), v) for k, v in (up_to or {}).items()) \
                        and all(_number_at_most(-_float(f.params.get(k)), -float(v))
                                for k, v in (from_ or {}).items()):
                    found.append(f)
        if not found:
            self._explain(metric, run, block, label, where)
        self.blocks |= {(f.run, f.block) for f in found}
        return found

    def _cells(self, alias: str) -> list[Found]:
        """Every measured cell of a run under this page's alias (made once per loaded run)."""
        loaded = self.runs[alias]
        key = ("found", alias)
        if key not in loaded.memo:
            given = given_cells(loaded.manifest.source, {
                (r.block, r.parameters, r.label, r.metric): Cell(r.values, r.rounds)
                for r in loaded.cells})
            loaded.memo[key] = [Found(alias, r.block, r.parameters, r.label, r.metric, r.params,
                                      given[(r.block, r.parameters, r.label, r.metric)])
                                for r in loaded.cells]
        found: list[Found] = loaded.memo[key]
        return found

    def _has(self, alias: str, name: str) -> None:
        params = sorted({p for r in self.runs[alias].cells for p in r.params})
        if name not in params:
            raise AnalysisError(f"no parameter {name!r} in run {alias!r}",
                                fix=f"use one of: {', '.join(params) or 'none'}")

    def _explain(self, metric: str, run: Any, block: str | None, label: Any,
                 where: Mapping[str, Any] | None) -> None:
        cells = [r for a in self.aliases(run) for r in self.runs[a].cells]
        metrics = sorted({r.metric for r in cells})
        if metric not in metrics:
            raise AnalysisError(f"no metric {metric!r} in the data",
                                fix=f"use one of: {', '.join(metrics)}")
        blocks = sorted({r.block for r in cells})
        if block is not None and block not in blocks:
            raise AnalysisError(f"no block {block!r} in the data",
                                fix=f"use one of: {', '.join(blocks)}")
        filters = ", ".join(f"{k}={v}" for k, v in (where or {}).items())
        raise AnalysisError(f"no cells of {metric!r} match" + (f" {filters}" if filters else "")
                            + (f" for label {label!r}" if label else ""),
                            fix="check the names against `invoke bench.report`")

    def side(self, label: str) -> tuple[str | None, str]:
        """`ALIAS:LABEL` names a label of one pinned run; a plain label (even one with a colon)
        stays as it is."""
        alias, sep, rest = label.partition(":")
        if sep and alias in self.runs and not any(label in self.labels(a) for a in self.runs):
            return alias, rest
        return None, label

    def pairs(self, base: Side, other: Side, *, metric: str, allow_mixed: bool = False,
              **filters: Any) -> list[tuple[Found, Found]]:
        """(base, other) cells that differ only in their label, in archive order. Written as
        `ALIAS:LABEL`, the two sides may come from two pinned runs (cells then pair on block and
        parameters), which must be comparable unless `allow_mixed`. Written as parameter
        values, `{"threads": 2}`, the cells differ only in those parameters (`by_values`)."""
        if base == other and isinstance(base, str):  # every change 0, said of nothing
            raise AnalysisError(f"{base!r} compared with itself",
                                fix="compare two labels (an A/A pair is two labels too), or "
                                    "ALIAS:LABEL of two runs")
        if not (isinstance(base, str) and isinstance(other, str)):
            return self.by_values(base, other, metric=metric, **filters)
        (run_a, label_a), (run_b, label_b) = self.side(base), self.side(other)
        if run_a or run_b:
            if not (run_a and run_b) or "run" in filters:
                raise AnalysisError(f"compare {base!r} with {other!r} across runs as "
                                    f"ALIAS:LABEL on both sides, without run=",
                                    fix=f"pinned aliases: {', '.join(self.runs)}")
            check_comparable([self.runs[run_a].manifest, self.runs[run_b].manifest],
                             allow=allow_mixed)
            others = {(f.block, f.parameters): f
                      for f in self.select(metric=metric, run=run_b, label=label_b, **filters)}
            out = [(f, others[(f.block, f.parameters)])
                   for f in self.select(metric=metric, run=run_a, label=label_a, **filters)
                   if (f.block, f.parameters) in others]
            if not out:
                raise AnalysisError(f"no cells of {metric!r} in both {base!r} and {other!r}",
                                    fix="the two runs need a block with the same parameters")
            return out
        found = self.select(metric=metric, label=[base, other], **filters)
        by_key: dict[tuple[str, str, str], dict[str, Found]] = {}
        for f in found:
            by_key.setdefault((f.run, f.block, f.parameters), {})[f.label] = f
        out = [(pair[base], pair[other]) for pair in by_key.values()
               if base in pair and other in pair]
        if not out:
            raise AnalysisError(f"no cells of {metric!r} hold both {base!r} and {other!r}",
                                fix="check the labels and filters against `invoke bench.report`")
        return out

    def by_values(self, base: Side, other: Side, *, metric: str,
                  **filters: Any) -> list[tuple[Found, Found]]:
        """(base, other) cells of one run, block and label whose parameters differ only in the
        ones the two sides set: `{"threads": 8}` against `{"threads": 2}`."""
        if not (isinstance(base, Mapping) and isinstance(other, Mapping)) or not (base and other):
            raise AnalysisError(f"compare {side_text(base)} with {side_text(other)}: two labels, "
                                "or two sets of parameter values such as {\"threads\": 2}",
                                fix="write both sides alike")
        keys = set(base) | set(other)
        where = dict(filters.pop("where", None) or {})
        clash = sorted(keys & set(where))
        if clash:
            raise AnalysisError(f"where= sets {', '.join(clash)}, which the two sides compare",
                                fix="set a compared parameter in the two sides only")

        def rest(f: Found) -> tuple[Any, ...]:
            return (f.run, f.block, f.label,
                    tuple(sorted((k, str(v)) for k, v in f.params.items() if k not in keys)))

        a = self.select(metric=metric, where={**where, **base}, **filters)
        b = {rest(f): f for f in self.select(metric=metric, where={**where, **other}, **filters)}
        out = [(f, b[rest(f)]) for f in a if rest(f) in b and b[rest(f)] is not f]
        if not out:
            raise AnalysisError(f"no cells of {metric!r} at both {side_text(base)} and "
                                f"{side_text(other)} that differ in nothing else",
                                fix="check the parameter values against `invoke bench.report`")
        return out

    def releases(self, *, metric: str, run: str | None = None,
                 **filters: Any) -> tuple[str, list[list[Found]]]:
        """A history: the selected cells of one run grouped into series (block and
        parameters), each series' cells in the run's label order — the release order of a
        history suite. Returns the run's alias and the series."""
        alias = self.aliases(run)
        if len(alias) != 1:
            raise AnalysisError("a history reads one run", fix="name it with run=…")
        order = {label: i for i, label in enumerate(self.labels(alias[0]))}
        series: dict[tuple[str, str], list[Found]] = {}
        for f in self.select(metric=metric, run=alias[0], **filters):
            series.setdefault((f.block, f.parameters), []).append(f)
        return alias[0], [sorted(cells, key=lambda f: order[f.label])
                          for cells in series.values()]

    def delays(self, *, metric: str = "p50",
               **filters: Any) -> list[list[tuple[float, Found, Found]]]:
        """Cases measured across `delay_ms`: per series (run, block, label and the other
        parameters), (delay, the metric's cell, the measured added round trip's cell) by
        delay."""
        filters = dict(filters)
        if "delay_ms" in (filters.get("where") or {}):
            raise AnalysisError("where= sets delay_ms, the dimension round trips are read along",
                                fix="leave delay_ms out of where=")
        cells = self.select(metric=metric, **filters)  # a bad selection says so first
        try:
            measured = self.select(metric="added_rtt_ms", **filters)
        except AnalysisError:  # no delay proxy anywhere in the selection: said below
            measured = []
        added = {(f.run, f.block, f.label, f.parameters): f for f in measured}
        series: dict[tuple[str, ...], list[tuple[float, Found, Found]]] = {}
        for f in cells:
            other = added.get((f.run, f.block, f.label, f.parameters))
            if other is None or "delay_ms" not in f.params:
                continue
            rest = params_key({k: v for k, v in f.params.items() if k != "delay_ms"})
            series.setdefault((f.run, f.block, f.label, rest), []).append(
                (float(f.params["delay_ms"]), f, other))
        if not series and any("delay_ms" in f.params for f in cells) and not measured:
            raise AnalysisError(f"the cells of {metric!r} across delay_ms have no measured "
                                "added round trip (added_rtt_ms) beside them",
                                fix="a transcribed table gives it as a column `added_rtt_ms "
                                    "(ms)`: the round-trip time the delay added")
        if not series:
            raise AnalysisError(f"no cells of {metric!r} measured across delays",
                                fix="select a block whose cases set delay_ms")
        return [sorted(points, key=lambda p: p[0]) for points in series.values()]

    def rule(self, alias: str) -> Rule:
        """How the run's changes are decided (its recorded `method.rule`)."""
        return Rule.of(self.runs[alias].manifest.method)

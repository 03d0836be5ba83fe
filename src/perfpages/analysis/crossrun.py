"""Labels of several runs in one report (`bench report --compare RUN:a,RUN2:b`): their windows
side by side, and first what a reader must know — the rounds were never interleaved, and each run
has its own machine, floors and warnings, all shown."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from perfpages.analysis.comparable import check_comparable, machine_name
from perfpages.analysis.decision import Rule
from perfpages.analysis.tidy import Tidy
from perfpages.analysis.warnings import scope
from perfpages.archive.reader import Run
from perfpages.errors import AnalysisError


@dataclass(frozen=True)
class Cross:
    """The rows of one label of each run, named RUN:LABEL; the runs in order of first
    mention; how their fingerprints differ (allowed by --allow-mixed)."""

    tidy: Tidy
    labels: list[str]
    differences: list[str]
    runs: list[Run]


def cross_run(sides: list[tuple[Run, str]], allow_mixed: bool = False) -> Cross:
    """The labels `sides` names, after the comparability check."""
    runs = list({run.id: run for run, _ in sides}.values())
    differences = check_comparable([r.manifest for r in runs], allow=allow_mixed)
    parts: list[dict[str, Any]] = []
    names = []
    for run, label in sides:
        if label not in run.manifest.labels:
            raise AnalysisError(f"no label {label!r} in run {run.id}",
                                fix=f"choose among: {', '.join(run.manifest.labels)}")
        name = f"{run.id}:{label}"
        parts += [{**row, "label": name} for row in Tidy.of(run).rows if row["label"] == label]
        names.append(name)
    return Cross(Tidy(parts), names, differences, runs)


def interleaved(cross: Cross) -> bool:
    """Whether the labels' rounds were interleaved: only when they all come from one run."""
    return len(cross.runs) == 1


def title(cross: Cross) -> str:
    titles = list(dict.fromkeys(r.manifest.title for r in cross.runs))
    return " · ".join(titles)


def method_text(cross: Cross, rule: Rule) -> str:
    """The method as it applies across runs: each run's own rounds, never interleaved."""
    if interleaved(cross):
        m = cross.runs[0].manifest.method
        return (f"labels of one run, {m.rounds} interleaved rounds ({m.order}); a change is "
                f"decided by the {rule.text()}")
    each = " and ".join(f"{r.id} ({r.manifest.method.rounds} rounds, started "
                        f"{r.manifest.started})" for r in cross.runs)
    return (f"labels of {len(cross.runs)} runs whose rounds were never interleaved: {each}; a "
            f"cell is the median of its own run's windows with its min–max range; a change is "
            f"decided by the {rule.text()}, as if the rounds had been interleaved")


def caveat(cross: Cross) -> list[str]:
    """The warning every cross-run verdict carries (none for labels of one run)."""
    if interleaved(cross):
        return []
    return [f"not interleaved: the rounds of {', '.join(r.id for r in cross.runs)} ran at "
            f"different times, so a verdict also carries whatever changed between the runs (the "
            f"machine's speed, its load), not only the builds; interleave them in one run to "
            f"decide (bench.run with both labels)"]


def warnings(cross: Cross) -> list[str]:
    """Each run's own scope and notes, named by run: the report's warnings for the first run
    alone would hide the others'."""
    out = caveat(cross)
    for run in cross.runs:
        m = run.manifest
        source = m.source.note() if m.source is not None else None
        out += [f"{run.id}: {item.text}" for item in scope(m.scope, source)]
        out += [f"{run.id}: {note}" for note in run.notes]
    return out


def runs(cross: Cross, floors: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """A line's worth per run: what, when, where, and its floors (`floors` by run id)."""
    return [{"run": r.id, "title": r.manifest.title, "scope": r.manifest.scope,
             "status": r.manifest.status, "started": r.manifest.started,
             "rounds": r.manifest.method.rounds, "machine": machine_name(r.manifest.machine),
             "floors": floors.get(r.id, [])} for r in cross.runs]


def run_line(entry: dict[str, Any]) -> str:
    return (f"{entry['run']}: {entry['title']} ({entry['scope']}, {entry['status']}), started "
            f"{entry['started']}, {entry['rounds']} rounds, on {entry['machine']}")

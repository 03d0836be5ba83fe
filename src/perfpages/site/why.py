"""`{{ why(base, head, block=…) }}`: why a change happened, beside the change it explains.

One section from the pinned run: what a call cost under each label (CPU of the subject and of
PostgreSQL, statements, buffers — perfpages.run.cost) with the one rule's verdict on each; the
statements whose time per call changed most, with their plan differences (analysis.statements);
the functions whose instructions per call changed most, own and inclusive, in an instructions
block (archive.calltree, from round 1's callgrind profiles); and the differential flame graph of
the two labels' py-spy stacks with the functions that gained or lost most (site.flamediff). What
the run did not archive is said, not hidden.
"""

from __future__ import annotations

from pathlib import Path

from perfpages.analysis import statements
from perfpages.analysis.format import format_range
from perfpages.analysis.metric import COST_METRICS, format_value, info
from perfpages.archive import calltree
from perfpages.archive.stacks import read_stacks
from perfpages.errors import AnalysisError
from perfpages.site import escape
from perfpages.site.flamediff import diff_svg, frame_changes
from perfpages.site.pins import Pins
from perfpages.site.statements import changes_table
from perfpages.site.store import Loaded
from perfpages.site.verdicts import judge


def why(pins: Pins, base: str, head: str, *, block: str, run: str | None = None,
        top: int = 5, profile: str | None = "profile") -> str:
    """The cost table, the top statement changes and the flame graph difference of `head`
    against `base` in `block` (`profile`: the block whose stacks to compare; None: none)."""
    if not isinstance(top, int) or isinstance(top, bool) or not 1 <= top <= 50:
        raise AnalysisError(f"top={top!r} is not a count from 1 to 50",
                            fix="write top=5 (the default) or another small count")
    alias = pins.aliases(run)[0]
    loaded = pins.runs[alias]
    manifest = loaded.manifest
    for name in (base, head):
        if name not in manifest.labels:
            raise AnalysisError(f"why(): no label {name!r} in run {alias!r}",
                                fix=f"choose among: {', '.join(manifest.labels)}")
    if base == head:
        raise AnalysisError(f"why(): {base!r} compared with itself",
                            fix="name the label before and the label after the change")
    # The default profile block may be absent (its flame section then says so); one named
    # otherwise must exist.
    for given, what in ((block, "block"), (profile if profile != "profile" else None,
                                            "profile block")):
        if given is not None and given not in manifest.blocks:
            raise AnalysisError(f"why(): no {what} {given!r} in run {alias!r}",
                                fix=f"choose among: {', '.join(manifest.blocks)}"
                                    + ("; profile=None compares no stacks"
                                       if what == "profile block" else ""))
    out = [_costs(pins, alias, base, head, block)]
    diff = statements.differences(loaded, block, base, head)
    out.append(f"**Statements whose time per call changed most** ({escape.md(base)} → "
               f"{escape.md(head)}):" + changes_table(diff, top))
    if "instructions" in manifest.blocks[block].metrics:
        out.append(_functions(loaded, alias, block, base, head, top))
    if "pg_instructions" in manifest.blocks[block].metrics:
        out.append(_functions(loaded, alias, block, base, head, min(top, 5), "pg"))
    if profile is not None:
        out.append(_flames(loaded.path, alias, profile, base, head, top))
    return "\n\n" + "\n\n".join(part.strip("\n") for part in out) + "\n\n"


def _costs(pins: Pins, alias: str, base: str, head: str, block: str) -> str:
    """Per cost metric: the two labels' medians (their range across the block's cells) and the
    change with how many cells are clear — the verdicts the one rule made."""
    rows = []
    for metric in COST_METRICS:
        try:
            pairs = pins.pairs(base, head, metric=metric, run=alias, block=block)
        except AnalysisError:
            continue  # not archived for this block (runs before it, or not measurable)
        if not pairs:
            continue
        changes = [judge(pins, a, b, metric) for a, b in pairs]
        unit = info(metric).unit
        rows.append([escape.md(info(metric).title),
                     escape.md(_span([a.cell.median for a, _ in pairs], unit)),
                     escape.md(_span([b.cell.median for _, b in pairs], unit)),
                     escape.md(f"{format_range(changes)} "
                               f"({sum(c.clear for c in changes)} of {len(changes)} clear)")])
    if not rows:
        return (f"**Cost per call**: run {escape.md(alias)} archived none for block "
                f"{escape.md(block)} (runs before perfpages measured it, or a block it cannot "
                "measure: duets, Locust).")
    cells = len(pins.pairs(base, head, metric="throughput", run=alias, block=block)
                or [None])
    return (f"**Cost per call** ({escape.md(base)} → {escape.md(head)}, median per label, "
            f"across the block's {cells} cells; the change is the shift of each cell's paired "
            "rounds, not the ratio of the medians beside it):\n\n"
            + escape.table(["cost per call", escape.md(base), escape.md(head),
                            "change (paired shift)"], rows))


def _span(values: list[float], unit: str) -> str:
    """Medians over the block's cells: "2.21–2.71 ms across cells", so the range is not read
    as one cell's rounds."""
    low, high = min(values), max(values)
    if format_value(low, unit) == format_value(high, unit):
        return format_value(low, unit)
    return f"{format_value(low)}–{format_value(high, unit)} across cells"


def _flames(run_dir: Path, alias: str, block: str, base: str, head: str, top: int) -> str:
    stacks = {name: read_stacks(run_dir, block, name) for name in (base, head)}
    missing = [name for name, s in stacks.items() if not s]
    if missing:
        return (f"**Flame graph difference**: run {escape.md(alias)} kept no raw py-spy stacks "
                f"for {escape.md(', '.join(missing))} in block {escape.md(block)} (runs before "
                "perfpages archived them, or a block without `flamegraph=True`).")
    a, b = stacks[base], stacks[head]
    assert a is not None and b is not None
    graph = diff_svg(a, b, f"{base} → {head}: where the time went")
    moved = frame_changes(a, b, top=top)
    lines = [f"**Flame graph difference** ({escape.md(base)} → {escape.md(head)}, block "
             f"{escape.md(block)}): red, more of the samples; blue, fewer.", "", graph]
    if moved:  # where the time went, function by function (its own samples)
        lines += ["", escape.table(
            ["function (own samples)", escape.md(base), escape.md(head), "step", "change"],
            [[escape.code(c.frame), *(escape.md(x) for x in c.text())] for c in moved])]
    return "\n".join(lines)


def _per_call(loaded: Loaded, block: str, label: str,
              part: str = "") -> tuple[calltree.Profile, int] | None:
    """A label's round-1 profiles over the block's cases, summed, and the calls they counted
    (`part` "pg": its PostgreSQL server's)."""
    merged, calls = calltree.Profile(), 0
    for rec in loaded.cells:
        if rec.block == block and rec.label == label and rec.metric == "instructions":
            found = calltree.window_profile(loaded.path, block, label, rec.parameters, part)
            if found is not None:
                merged.add(found)
                calls += int(rec.params.get("calls", 0))
    return (merged, calls) if calls else None


def _functions(loaded: Loaded, alias: str, block: str, base: str, head: str, top: int,
               part: str = "") -> str:
    """The functions whose own and inclusive instructions per call changed most (`part` "pg":
    PostgreSQL's, every server process summed)."""
    profiles = {name: _per_call(loaded, block, name, part) for name in (base, head)}
    missing = [name for name, p in profiles.items() if p is None]
    title = "PostgreSQL's instructions by function" if part else "Instructions by function"
    if missing:
        return (f"**{title}**: run {escape.md(alias)} kept no callgrind "
                f"profiles for {escape.md(', '.join(missing))} in block {escape.md(block)}.")
    (a, na), (b, nb) = (p for p in profiles.values() if p is not None)
    what = ("every server process summed (postmaster, backends, background workers), "
            "PostgreSQL's own C functions." if part else
            "callgrind counts machine instructions, so Python code shows as the interpreter's "
            "C functions (`_PyEval_EvalFrameDefault` and the like); the flame graph difference "
            "stays the view for Python functions.")
    parts = [f"**{title}** ({escape.md(base)} → {escape.md(head)}, round 1's callgrind "
             f"profiles, per call over the block's cases): {what}"]
    for kind, title in (("own", "own instructions per call"),
                        ("inclusive", "inclusive instructions per call")):
        before, after = getattr(a, kind), getattr(b, kind)
        moved = sorted(set(before) | set(after), key=lambda n: -abs(
            after.get(n, 0) / nb - before.get(n, 0) / na))[:top]
        rows = []
        for name in moved:
            x, y = before.get(name, 0) / na, after.get(name, 0) / nb
            change = f"{y - x:+,.0f}" + (f" ({(y - x) / x:+.1%})" if x else "")
            rows.append([escape.code(calltree.short(name)), escape.md(f"{x:,.0f}"),
                         escape.md(f"{y:,.0f}"), escape.md(change)])
        parts.append(escape.table([f"function ({title})", escape.md(base), escape.md(head),
                                   "change"], rows))
    return "\n\n".join(parts)

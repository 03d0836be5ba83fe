"""Which statements changed between two labels of a block, per call served, and how their
plans changed: the "where did the time go" half of `why()`.

Everything is per call the label served while pg_stat_statements counted (requests of an HTTP
block, transactions of a pgbench one; `perfpages.archive.statements.served`), so a label that
served more calls does not look dearer for it. Statements are matched by queryid, then by their
normalised text (a queryid depends on the relations' OIDs: two clusters give one statement two
ids). A statement's kind:

- `added` / `removed`: it ran under one label only;
- `cheaper` / `dearer`: its execution time per call moved by more than `tolerance` (5 %);
- `same`: within it;
- `unranked`: absent from the other label's summary, which kept only its top-10 lists (runs
  archived before summaries kept every statement): added, removed or merely below the other's
  top 10, nobody can tell. `Differences.complete` is False whenever a side kept only its top
  lists, and `Differences.coverage` says it in a sentence a page can print.

Plans are compared where both labels archived a generic plan of a changed statement
(`perfpages.analysis.plans`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from perfpages.analysis import plans
from perfpages.archive.statements import (
    Archived,
    LabelStatements,
    Statement,
    read_label,
    read_plan,
)

Kind = Literal["added", "removed", "cheaper", "dearer", "same", "unranked"]
TOLERANCE = 0.05  # a change of time per call within 5 % is `same`
_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
_PARAM = re.compile(r"\$\d+")
_PUNCT = re.compile(r"\s*([(),])\s*")


def normalise(query: str) -> str:
    """A statement's text as matched across labels: comments out (pg_stat_statements writes
    `IN ($1 /*, ... */)`), parameters unnumbered, whitespace collapsed (and dropped around
    brackets and commas), case folded."""
    flat = " ".join(_PARAM.sub("$", _COMMENT.sub(" ", query)).split())
    return _PUNCT.sub(r"\1", flat).casefold()


@dataclass(frozen=True)
class PerCall:
    """One statement's figures under one label, per call the label served."""
    ms: float  # execution time
    statements: float  # times it ran
    rows: float
    hit: float  # shared buffers hit
    read: float  # shared buffers read
    calls: int  # times it ran over the whole block (not per call)

    @classmethod
    def of(cls, s: Statement, served: int) -> PerCall:
        return cls(ms=s.total_ms / served, statements=s.calls / served, rows=s.rows / served,
                   hit=s.shared_blks_hit / served, read=s.shared_blks_read / served,
                   calls=int(s.calls))


@dataclass(frozen=True)
class Change:
    """One statement, base against head; `base` or `head` is None where it did not run (or,
    for `unranked`, was not kept)."""
    query: str
    kind: Kind
    base: PerCall | None
    head: PerCall | None
    queryids: tuple[str, str]  # base's and head's ("" where absent)
    plan: tuple[str, ...] = ()  # plan differences (`plans.differences`), changed ones only

    @property
    def delta_ms(self) -> float:
        """Execution time per call, head minus base (negative: cheaper)."""
        return (self.head.ms if self.head else 0.0) - (self.base.ms if self.base else 0.0)


@dataclass(frozen=True)
class Differences:
    """The statement changes of a block from `base` to `head`, largest |Δ ms per call| first.
    `archived` False (with `reason`) when the run kept no statements for either label."""
    run: str
    block: str
    base: str
    head: str
    archived: bool
    reason: str = ""
    complete: bool = True
    served: tuple[int, int] = (0, 0)  # calls each label served while the counters ran
    changes: tuple[Change, ...] = field(default_factory=tuple)

    partial: tuple[str, ...] = ()  # the labels whose summary kept only its top lists

    def top(self, n: int = 5, *, changed: bool = True) -> list[Change]:
        """The `n` largest changes (`changed`: `same` left out)."""
        return [c for c in self.changes if not (changed and c.kind == "same")][:n]

    @property
    def coverage(self) -> str:
        """A sentence for the page when the comparison is partial; "" when it is complete."""
        if not self.archived or self.complete:
            return ""
        return (f"Run {self.run} kept only the top 10 statements by total and by mean time "
                f"for {' and '.join(self.partial)}: the comparison covers only those ranked "
                "statements.")


def _merge(rows: list[Statement]) -> Statement:
    """Statements sharing a normalised text, as one."""
    if len(rows) == 1:
        return rows[0]
    sums = {f: sum(getattr(r, f) for r in rows) for f in (
        "calls", "total_ms", "rows", "shared_blks_hit", "shared_blks_read")}
    return Statement(queryid=rows[0].queryid, query=rows[0].query, **sums)


def _pairs(base: LabelStatements, head: LabelStatements
           ) -> list[tuple[Statement | None, Statement | None]]:
    """Base and head statements paired: by queryid, then by normalised text."""
    by_id = {s.queryid: s for s in head.statements if s.queryid}
    out: list[tuple[Statement | None, Statement | None]] = []
    left: dict[str, list[Statement]] = {}
    for s in base.statements:
        other = by_id.pop(s.queryid, None) if s.queryid else None
        if other is not None:
            out.append((s, other))
        else:
            left.setdefault(normalise(s.query), []).append(s)
    right: dict[str, list[Statement]] = {}
    for s in head.statements:
        if not s.queryid or s.queryid in by_id:
            right.setdefault(normalise(s.query), []).append(s)
    for text in left.keys() | right.keys():
        a, b = left.get(text), right.get(text)
        out.append((_merge(a) if a else None, _merge(b) if b else None))
    return out


def _kind(base: PerCall | None, head: PerCall | None, complete: tuple[bool, bool],
          tolerance: float) -> Kind:
    if base is None or head is None:
        if not complete[0 if base is None else 1]:
            return "unranked"
        return "added" if base is None else "removed"
    if abs(head.ms - base.ms) <= tolerance * base.ms:
        return "same"
    return "cheaper" if head.ms < base.ms else "dearer"


PlanOf = Callable[[LabelStatements, str], Any]


def compare(base: LabelStatements, head: LabelStatements, *, tolerance: float = TOLERANCE,
            plan_of: PlanOf | None = None) -> tuple[Change, ...]:
    """The pure core of `differences`: two labels' statements (each with calls served > 0)
    paired, classified and ranked; `plan_of(label, queryid)` gives an archived plan or None."""
    complete = (base.complete, head.complete)
    out = []
    for a, b in _pairs(base, head):
        pa = PerCall.of(a, base.served) if a else None
        pb = PerCall.of(b, head.served) if b else None
        kind = _kind(pa, pb, complete, tolerance)
        ids = (a.queryid if a else "", b.queryid if b else "")
        lines: list[str] = []
        if plan_of is not None and kind in ("cheaper", "dearer"):
            plan_a, plan_b = plan_of(base, ids[0]), plan_of(head, ids[1])
            if plan_a is not None and plan_b is not None:
                lines = plans.differences(plan_a, plan_b)
        either = b or a
        out.append(Change(query=either.query if either else "", kind=kind, base=pa,
                          head=pb, queryids=ids, plan=tuple(lines)))
    return tuple(sorted(out, key=lambda c: (-abs(c.delta_ms), c.query)))


def differences(run: Archived, block: str, base: str, head: str, *,
                tolerance: float = TOLERANCE) -> Differences:
    """The statement differences of `block` from label `base` to label `head` of `run` (a
    `reader.Run`, or the site's `store.Loaded`: both have `path` and `manifest`).
    Never raises for what a run did not archive (an older harness, a duet block): the result
    says `archived` False and why. A malformed summary is one ArchiveError naming its file."""
    sides = [read_label(run, block, label) for label in (base, head)]
    missing = [label for label, s in zip((base, head), sides, strict=True) if s is None]
    if missing:
        return Differences(run.manifest.id, block, base, head, archived=False,
                           reason=f"run {run.manifest.id} archived no statements for {block}/"
                                  f"{' and '.join(missing)}")
    a, b = sides
    assert a is not None and b is not None
    idle = [s.label for s in (a, b) if s.served <= 0]
    if idle:
        return Differences(run.manifest.id, block, base, head, archived=False,
                           reason=f"no calls counted for {block}/{' and '.join(idle)} while "
                                  "its statements were counted: nothing to divide by")
    return Differences(run.manifest.id, block, base, head, archived=True,
                       complete=a.complete and b.complete, served=(a.served, b.served),
                       partial=tuple(s.label for s in (a, b) if not s.complete),
                       changes=compare(a, b, tolerance=tolerance,
                                       plan_of=lambda side, qid: read_plan(run.path, side, qid)))


@dataclass(frozen=True)
class Matching:
    """The statements of one label whose text contains a fragment, per call served."""
    label: str
    per_call: float  # times they ran, per call
    queries: tuple[str, ...]
    complete: bool  # False: the summary kept only its top lists (a missing match proves nothing)


def matching(run: Archived, block: str, label: str, fragment: str) -> Matching | None:
    """How often statements containing `fragment` (case- and whitespace-insensitive) ran per
    call `label` served in `block`; None when the run archived no statements for it."""
    side = read_label(run, block, label)
    if side is None or side.served <= 0:
        return None
    wanted = " ".join(fragment.split()).casefold()
    found = [s for s in side.statements if wanted in normalise(s.query)]
    return Matching(label, sum(s.calls for s in found) / side.served,
                    tuple(s.query for s in found), side.complete)

"""What a reader must know about a run before any of its figures: one item per fact, worded and
ranked here, decided by `perfpages.analysis.reading` from the run's one reading.

`bench report` ends with these items, `bench cite` carries them into a pull request, a page's
warning box lists its pinned runs' items and the runs index counts them (`summary`): the same
list everywhere. Ranked by kind, most fundamental first: what the run is (its scope), whether
its rounds hold faults or are too few, whether the machine moved, then where the machine was
busy and which blocks the A/A pair does not certify.

Drift is a fact, not a gate under method v2 (docs/guide/method.md, "Floors and drift"): a v2
run's floors stay on its page and in its report's floors, and its certification says whether
its comparisons can be trusted; a drift is an item of runs decided by the v1 ranges rule only,
of every kind of floor (pgbench's and an HTTP subject's own), each decided on its own windows.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

from perfpages.analysis import decision
from perfpages.analysis.certification import Certificate
from perfpages.analysis.decision import Change
from perfpages.analysis.format import format_drift, format_percent
from perfpages.analysis.machine_load import line
from perfpages.analysis.metric import format_number
from perfpages.archive import vocabulary
from perfpages.archive.vocabulary import (
    FAULT_METRICS,
    PGBENCH,
    SCOPE_TEXTS,
    WARNED_SCOPES,
)

# The kinds, in rank order (an item's rank is its kind's place here).
# REPLAY is a page's, not a run's: its claims that did not hold on a replay of its run
# (`replayed`) come before anything a run's reading says.
REPLAY, SCOPE, FAULTS, ROUNDS, DRIFT, SATURATED, NOTE, NOISY, MIXED, BUSY, WINDOWS, GENERATOR, \
    UNCERTIFIED = ("replay", "scope", "faults", "rounds", "drift", "saturated", "note", "noisy",
                   "mixed", "busy", "windows", "generator", "uncertified")
KINDS = (REPLAY, SCOPE, FAULTS, ROUNDS, DRIFT, SATURATED, NOTE, NOISY, MIXED, BUSY, WINDOWS,
         GENERATOR, UNCERTIFIED)
# "warning": the figures may be wrong; "caution": the figures stand, read them knowing this.
SEVERITY = {REPLAY: "warning", SCOPE: "caution", FAULTS: "warning", ROUNDS: "warning",
            DRIFT: "caution",
            SATURATED: "caution", NOTE: "caution", NOISY: "warning", MIXED: "caution",
            BUSY: "warning", WINDOWS: "warning", GENERATOR: "warning", UNCERTIFIED: "warning"}
WARN = "⚠"


@dataclass(frozen=True)
class Item:
    """One thing a reader must know: its kind, the block it is about (None: the whole run),
    the line every place prints, and a drift's change of the floor's median."""

    kind: str
    text: str
    block: str | None = None
    percent: float | None = None

    @property
    def rank(self) -> int:
        return KINDS.index(self.kind)

    @property
    def severity(self) -> str:
        return SEVERITY[self.kind]

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "rank": self.rank, "severity": self.severity}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Item:
        return cls(str(data["kind"]), str(data["text"]), data.get("block"), data.get("percent"))


def ranked(items: list[Item]) -> list[Item]:
    """Most fundamental first; within a kind, in the order the run states them."""
    return sorted(items, key=lambda i: i.rank)


def scope(scope_name: str, source_note: str | None) -> list[Item]:
    """A quick or test run is no measurement of the suite; a transcribed one was not measured
    here (its source's note)."""
    out = [Item(SCOPE, SCOPE_TEXTS[scope_name])] if scope_name in WARNED_SCOPES else []
    return out + ([Item(SCOPE, source_note)] if source_note is not None else [])


def faults(cells: dict[tuple[str, str, str, str], Any]) -> list[Item]:
    """Per block and label: the errors, non-2xx responses and failed windows in its rounds."""
    bad: dict[tuple[str, str], dict[str, Any]] = {}  # (block, label) -> totals, parameter sets
    for (block, pkey, label, metric), c in cells.items():
        if metric in FAULT_METRICS and c.max > 0:
            entry = bad.setdefault((block, label), {"params": {},
                                                    "totals": dict.fromkeys(FAULT_METRICS, 0)})
            entry["params"][pkey or "—"] = None
            entry["totals"][metric] += sum(c.values)
    out = []
    for (block, label), entry in bad.items():
        totals = ", ".join(f"{int(n):,} {FAULT_METRICS[k]}" for k, n in entry["totals"].items()
                           if n)
        out.append(Item(FAULTS, f"{block} / {label}: {totals} in the rounds of "
                                f"{'; '.join(entry['params'])}", block))
    return out


def few_rounds(found: list[tuple[str, str, str, Change]]) -> list[Item]:
    """Per block and pair: the changes withheld for too few rounds."""
    few: dict[tuple[str, str], list[Change]] = {}
    total = Counter((block, pair) for block, _, pair, _ in found)
    for block, _, pair, c in found:
        if not c.enough_rounds:
            few.setdefault((block, pair), []).append(c)
    return [Item(ROUNDS, f"{block}: {pair}: {len(group)} of {total[block, pair]} changes have "
                         f"too few rounds for a verdict ({min(c.rounds for c in group)} < "
                         f"{group[0].min_rounds})", block)
            for (block, pair), group in few.items()]


def floor_name(d: dict[str, Any]) -> str:
    """"tps"/"throughput" for the pgbench floor (as reports always named it), "/health" for an
    HTTP subject's own floor."""
    kind = d.get("floor", PGBENCH)
    return d["metric"] if kind == PGBENCH else f"/{kind}"


def of_run(d: dict[str, Any]) -> str:
    """A floor of one run among several is named by its run."""
    return f"{d['run']} / " if d.get("run") else ""


def drift(floors: list[dict[str, Any]], threshold: float, exact: bool) -> list[Item]:
    """The floors that drifted beyond the threshold; none under method v2 (a fact, not a
    gate: its certification says whether the comparisons can be trusted)."""
    if exact:
        return []
    return [Item(DRIFT, f"{of_run(d)}{d['block']}: the {floor_name(d)} floor "
                        f"{format_drift(d['before'], d['drift_percent'])} "
                        f"({format_number(d['before'])}/s before the block, "
                        f"{format_number(d['after'])}/s after), beyond the "
                        f"±{threshold * 100:.0f} % threshold", d["block"], d["drift_percent"])
            for d in floors if d["flagged"]]


def saturated(knees: list[dict[str, Any]]) -> list[Item]:
    return [Item(SATURATED, f"{k['block']} / {k['label']}: saturated from {k['from']} to "
                            f"{k['to']} clients (throughput "
                            f"{format_percent(k['throughput_change'])}, p95 "
                            f"{format_percent(k['p95_change'])})", k["block"])
            for k in knees if k["flagged"]]


def notes(lines: list[str]) -> list[Item]:
    """The archive's own notes (a torn line, a lifecycle oddity), or other runs' scopes and
    notes in a report across runs."""
    return [Item(NOTE, line) for line in lines]


def noise_line(row: Any, exact: bool = False) -> str:
    """A/A row as a note. Under the ranges rule a clear cell is a warning; under the exact rule
    a cell clear at α on its own is expected now and then, and the block's certification
    (Holm's correction over all its A/A cells) is what says whether to trust it."""
    flag = ("" if not row.clear else
            " (a cell clear at α on its own; whether the block is certified is decided over "
            "all its A/A cells with Holm's correction: see its certification)" if exact else
            f" {WARN} identical builds differ clearly: the machine or the method is not stable")
    return (f"A/A (same build) {row.block}: {row.pair}, {row.metric}: {row.text} — the noise "
            f"floor{flag}")


def noisy(rows: list[Any], exact: bool) -> list[Item]:
    """A/A rows with clear cells, under the v1 ranges rule; under method v2 the A/A pair's
    verdict is the block's certification (`uncertified`), stated once."""
    return [] if exact else [Item(NOISY, noise_line(r), r.block) for r in rows if r.clear]


def mixed(differences: list[str]) -> list[Item]:
    return [Item(MIXED, f"mixed runs allowed: {d}") for d in differences]


def busy(records: list[dict[str, Any]], load: list[dict[str, Any]]) -> list[Item]:
    """A busy preflight; every block with windows on a busy machine, in one line from
    `machine_load.windows`' counts: busy windows of the rounds, and those measured again
    (method v2 measures a cell again when the machine was busy during it)."""
    out = [Item(BUSY, f"preflight {line(r)}", str(r["block"]))
           for r in records if r["busy"]]
    blocks: dict[str, list[dict[str, Any]]] = {}
    for x in load:
        blocks.setdefault(x["block"], []).append(x)
    for block, xs in blocks.items():
        again, still = (sum(x.get(k, 0) for x in xs) for k in ("again", "busy_again"))
        if not (again or any(x["busy"] for x in xs)):
            continue
        labels = ", ".join(f"{x['label']} {x['busy']}" for x in xs if x["busy"])
        out.append(Item(
            WINDOWS, f"{block}: the machine was busy in {sum(x['busy'] for x in xs)} of "
            f"{sum(x['windows'] for x in xs)} windows (" + (f"{labels}; " if labels else "")
            + f"other processes up to {max(x['others_max'] for x in xs):.0f} % of a core, "
            f"steal up to {max(x['steal_max'] for x in xs):.1f} %; busy: above "
            f"{vocabulary.BUSY_OTHERS_PCT:g} % or {vocabulary.BUSY_STEAL_PCT:g} %)"
            + (f"; {again} measured again" + (f", {still} of them busy again" if still else "")
               if again else ""), block))
    return out


def generator(cells: list[dict[str, Any]]) -> list[Item]:
    return [Item(GENERATOR, f"{x['block']} / {x['label']} ({x['parameters'] or '—'}): the load "
                            f"generator's busiest process used up to {x['max']:.0f} % of a core "
                            f"(above {decision.GENERATOR_BUSY_PCT:g} %): it may have set the "
                            "pace, not the subject", x["block"])
            for x in cells if x["busy"]]


def uncertified(exact: bool, compared: bool, certificates: list[Certificate]) -> list[Item]:
    """Blocks the A/A pair does not certify: every block of a run decided by the v1 ranges
    rule, of a v2 run without a pair, or the blocks whose pair does not certify them."""
    if not compared:
        return []
    if not exact:
        return [Item(UNCERTIFIED, "decided by the v1 ranges rule: no block is certified")]
    if not any(c.aa_cells for c in certificates):
        return [Item(UNCERTIFIED, "no A/A pair: no block is certified")]
    return [Item(UNCERTIFIED, f"{c.block}: not certified: {c.why}", c.block)
            for c in certificates if not c.certified]


def replayed(second: str, lines: list[int | None]) -> list[Item]:
    """A page's claims (their lines; None: the page as a whole) that did not hold on
    `second`, a replay of the run they rest on: a conclusion the replay did not confirm."""
    if not lines:
        return []
    known = sorted({n for n in lines if n is not None})
    many = len(lines) > 1
    at = f" (line{'s' * (len(known) > 1)} {', '.join(map(str, known))})" if known else ""
    return [Item(REPLAY, f"{len(lines)} claim{'s' * many}{at} did not hold on its replay "
                         f"{second}: read {'them' if many else 'it'} as unconfirmed")]


def summary(items: list[Item]) -> str:
    """A short count per kind for the runs index: "drift −65 %; 3 busy blocks; 2 not
    certified", or "—"."""
    parts = []
    drifts = [i.percent for i in items if i.kind == DRIFT and i.percent is not None]
    if drifts:
        parts.append(f"drift {format_percent(max(drifts, key=abs))}")
    faulty = {i.block for i in items if i.kind == FAULTS}
    if faulty:
        parts.append(f"faults in {len(faulty)} block{'s' * (len(faulty) != 1)}")
    busy_blocks = {i.block for i in items if i.kind in (BUSY, WINDOWS, GENERATOR)}
    if busy_blocks:
        parts.append(f"{len(busy_blocks)} busy block{'s' * (len(busy_blocks) != 1)}")
    loose = [i for i in items if i.kind == UNCERTIFIED]
    if any(i.block is None for i in loose):
        parts.append("none certified" if "no A/A" in loose[0].text else "v1 rule")
    elif loose:
        parts.append(f"{len(loose)} not certified")
    return "; ".join(parts) or "—"

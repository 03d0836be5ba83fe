"""The verdicts a page makes: every change it prints or claims, judged once by its run's rule.

`judge` makes a comparison's `Change` (by `perfpages.analysis.decision`, the run's recorded
rule) and notes it in the page's ledger (`Pins.judged`), which `{{ verdicts() }}` counts.
`resolution` is what a comparison resolves with its run's A/A pair (method v2 runs; see
`perfpages.analysis.certification`). `Judged` is what a claim rests on: the comparisons, their
resolutions, the bound the claim puts on each, and whether it needs each verdict clear — what
`perfpages.site.family` checks over the whole page (certification, Holm's correction).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import inf, nan
from typing import Any

from perfpages.analysis import certification, decision, noise
from perfpages.analysis.decision import Change
from perfpages.analysis.metric import parameter
from perfpages.analysis.reading import noise_metrics
from perfpages.errors import AnalysisError
from perfpages.site import store
from perfpages.site.pins import Found, Pins


def judge(pins: Pins, a: Found, b: Found, metric: str) -> Change:
    """The change of cell `b` over cell `a`, by the rule of `a`'s run, noted in the page's
    ledger."""
    change = Change(metric, a.cell, b.cell, pins.rule(a.run))
    key = (a.run, a.block, a.parameters, a.label, b.run, b.parameters, b.label, metric)
    pins.judged[key] = change  # the ledger notes the page line (`pins.Ledger.lines`)
    return change


def across(pairs: list[tuple[Found, Found]]) -> str:
    """What a range over several comparisons spans, said where it is printed: "across calls"
    (one parameter varies and its name is a plural noun), else "across N cells"."""
    cells = [a for a, _ in pairs]
    varies = [k for k in dict.fromkeys(k for f in cells for k in f.params)
              if len({str(f.params.get(k)) for f in cells}) > 1]
    one_block = len({(f.run, f.block) for f in cells}) == 1
    if len(varies) == 1 and one_block:  # "call" → "across calls", "clients" → "across clients"
        name = varies[0] if "_" not in varies[0] else parameter(varies[0])[0]
        if " " not in name:
            return f"across {name if name.endswith('s') else name + 's'}"
    return f"across {len(pairs)} cells"


def note(pins: Pins, alias: str, found: list[certification.Found]) -> None:
    """Note A/A comparisons a page prints or claims (noise_floor, quiet) in its ledger."""
    for block, pkey, pair, c in found:
        pins.judged[(alias, block, pkey, pair, c.metric)] = c


def aa_found(pins: Pins, alias: str, block: str | None = None,
             metric: str | None = None) -> list[certification.Found]:
    """The cells of one pinned run's A/A pairs as (block, parameters, pair, change); [] for a
    run without a pair. Found by the run's reading (`reading.aa_changes`, the one place A/A
    pairs are found), decided by the run's rule and kept here in the order the site lists them:
    block, metric, pair, parameters. Without `metric`, each block's `noise_metrics`."""
    loaded = pins.runs[alias]
    pairs = [f"{other} vs {base}" for base, other in noise.same_builds(loaded.manifest)]
    if not pairs or not loaded.cells:
        return []
    key = ("aa-found",)
    if key not in loaded.memo:
        groups: dict[tuple[str, str, str], list[certification.Found]] = {}
        for f in store.reading(loaded).aa_changes(pins.rule(alias)):
            groups.setdefault((f[0], f[3].metric, f[2]), []).append(f)
        loaded.memo[key] = groups
    found: dict[tuple[str, str, str], list[certification.Found]] = loaded.memo[key]
    out = []
    for b in [block] if block else list(dict.fromkeys(r.block for r in loaded.cells)):
        present = {r.metric for r in loaded.cells if r.block == b}
        for m in [metric] if metric else noise_metrics(loaded.manifest, b, present):
            for pair in pairs:
                out += found.get((b, m, pair), [])
    return out


def noise_rows(pins: Pins, alias: str, block: str | None, metric: str | None) -> list[noise.Row]:
    """The A/A rows of one pinned run (a run without an A/A pair: one error saying how to get
    one), noted in the page's ledger."""
    if not noise.same_builds(pins.runs[alias].manifest):
        raise AnalysisError(f"run {alias!r} has no A/A pair (two labels with the same build)",
                            fix="declare one with LabelSpec.again(NAME) and archive a new run")
    found = aa_found(pins, alias, block, metric)
    if not found:
        raise AnalysisError(f"no cells of run {alias!r} hold both labels of an A/A pair",
                            fix="check block= and metric= (one with a better direction) against "
                                "`invoke bench.report`")
    note(pins, alias, found)
    return noise.rows(found)


def aa_index(pins: Pins, alias: str) -> certification.AAIndex:
    """The resolution of a method v2 run's A/A pairs per (block, parameters, metric), made
    once per loaded run; {} under the ranges rule or without a pair."""
    loaded = pins.runs[alias]
    key = ("aa-index",)
    if key not in loaded.memo:
        exact = pins.rule(alias).exact
        loaded.memo[key] = certification.aa_index(aa_found(pins, alias) if exact else [])
    index: certification.AAIndex = loaded.memo[key]
    return index


def resolution(pins: Pins, a: Found, b: Found, change: Change) -> float:
    """The smallest change the comparison of `a` and `b` resolves, with the A/A pairs of
    their runs (percent; nan under the ranges rule)."""
    if not change.rule.exact:
        return change.resolution
    aa = [aa_index(pins, run).get((f.block, f.parameters, change.metric))
          for run, f in ((a.run, a), (b.run, b))]
    known = [r for r in aa if r is not None]
    return decision.resolves(change.resolution, max(known) if known else None)


def block_resolution(pins: Pins, alias: str, block: str) -> tuple[float, str, float, str] | None:
    """What a run states its block resolves — (worst cell, its metric, 2.1's headline, its
    metric) in percent, inf where none is reachable — from the run's one reading (every
    comparison of the block, with its A/A pair), as the run's page states it; None when the
    reading certifies no such block (ranges rule, or a block without comparisons)."""
    for c in store.reading(pins.runs[alias]).certification or []:
        if c["block"] == block:
            return (_percent(c, "resolution_percent", "resolves none"),
                    str(c.get("metric") or ""),
                    _percent(c, "headline_percent", "resolves none at"),
                    str(c.get("headline_metric") or ""))
    return None


def _percent(entry: dict[str, Any], key: str, none: str) -> float:
    """A resolution of a reading's certificate: JSON holds None for both "none reachable"
    (inf, which its line states) and "no comparison" (nan)."""
    value = entry.get(key)
    if value is not None:
        return float(value)
    return inf if none in str(entry.get("line", "")) else nan


@dataclass(frozen=True)
class Judged:
    """One comparison a claim rests on: its run and block, the change, what it resolves, the
    bound the claim puts on it (`step`, in percent of the base: a one-sided bound, or a
    band's width; None: no bound), and whether the claim needs its verdict clear."""

    run: str
    block: str
    change: Change
    resolution: float
    step: float | None = None
    asserted: bool = False

    @property
    def finer(self) -> bool:
        return self.step is not None and decision.finer(self.step, self.resolution)

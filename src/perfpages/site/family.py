"""What a page says as a whole: how many verdicts it makes, Holm's correction over its claims,
and the certification of the blocks it claims on.

These read every claim of the page, so they are settled after the page is rendered: the
`verdicts()` and `certification()` macros and the `certified()` condition may stand anywhere on
it. The rules are `perfpages.analysis.decision`'s (`expected_false`, `holm`, `certified`).

- **Verdicts**: every change the page prints with a verdict or claims (`Pins.judged`) is a
  verdict; at α each one is a false positive with chance α when nothing changed.
- **Holm** (front matter `perfpages: {holm: true}`): the family is the p-values of every
  verdict a claim needs clear (faster, slower, best with clear=True); a claim holds only if each
  of its verdicts stays clear under Holm's step-down correction at the runs' α.
- **Certification** of a pinned run's block: its A/A pair has no clear cell, and it resolves
  the smallest change the page claims on it (`analysis.certification`); method 2.1: no A/A
  cell clear after Holm's correction at the rule's `certify_alpha`, and a finite resolution of
  the block's first metric within the suite's target.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from math import isnan
from typing import Any

from perfpages.analysis import certification, decision
from perfpages.analysis.certification import Certificate
from perfpages.analysis.format import format_p, format_resolution
from perfpages.errors import AnalysisError, PerfpagesError
from perfpages.site import escape
from perfpages.site.claims import Claim, Condition
from perfpages.site.pins import Pins
from perfpages.site.verdicts import Judged, aa_found, block_resolution

OPTIONS = ("holm",)


@dataclass(frozen=True)
class Options:
    """A page's `perfpages:` front matter."""

    holm: bool = False


def options(meta: Mapping[str, Any], where: str) -> Options:
    """`perfpages: {holm: true}`; absent: the defaults."""
    raw = meta.get("perfpages")
    if raw is None:
        return Options()
    if not isinstance(raw, Mapping):
        raise PerfpagesError("perfpages must map options to values", where=where,
                             key="perfpages", fix="write it as `perfpages: {holm: true}`")
    unknown = [str(k) for k in raw if k not in OPTIONS]
    if unknown:
        raise PerfpagesError(f"unknown option {unknown[0]!r}", where=where,
                             key="perfpages", fix=f"use one of: {', '.join(OPTIONS)}")
    if not isinstance(raw.get("holm", False), bool):
        raise PerfpagesError(f"holm must be true or false, not {raw['holm']!r}", where=where,
                             key="perfpages.holm", fix="write `perfpages: {holm: true}`")
    return Options(holm=raw.get("holm", False))


def _percent(fraction: float) -> str:
    return f"{fraction * 100:.2g} %"


def verdicts_text(pins: Pins, holm: bool) -> str:
    """"This page makes 12 verdicts at α = 1 % (5 clear): about 0.12 false ones expected."."""
    changes = list(pins.judged.values())
    rates = {c.fpr for c in changes}
    exact = all(c.rule.exact for c in changes)
    at = ("" if not changes else f" at α = {_percent(rates.pop())}" if len(rates) == 1 and exact
          else f" at a false-positive rate of {_percent(rates.pop())}" if len(rates) == 1
          else " at its runs' rates")
    expected = sum(decision.expected_false(1, c.fpr) for c in changes)
    clear = sum(c.clear for c in changes)
    text = (f"This page makes {len(changes)} verdict{'s' * (len(changes) != 1)}{at} "
            f"({clear} clear): about {expected:.2g} false ones expected.")
    if holm:
        text += (" Its claims hold only where their verdicts stay clear under Holm's correction "
                 "over the page's claims.")
    return escape.md(text)


def settle(claims: list[Claim]) -> list[Claim]:
    """Claims whose condition reads the whole page (certified), decided now."""
    return [replace(c, condition=c.condition.settle(claims)) if c.condition.settle else c
            for c in claims]


def holm(claims: list[Claim], where: str) -> list[Claim]:
    """Each claim resting on clear verdicts holds only if they all stay clear under Holm's
    correction over the page's family (every verdict its claims need clear)."""
    family = [(i, j) for i, c in enumerate(claims) for j in c.condition.judged if j.asserted]
    if not family:
        return claims
    v1 = next((j for _, j in family if j.change.p is None), None)
    if v1 is not None:
        raise PerfpagesError(f"Holm's correction needs p-values, and run {v1.run!r} decides by "
                             "ranges apart (a run archived before method v2)", where=where,
                             key="perfpages.holm", fix="remove `holm: true`, or pin method v2 "
                             "runs")
    alpha = min(j.change.rule.alpha for _, j in family)
    p_values = [p for _, j in family if (p := j.change.p) is not None]
    assert len(p_values) == len(family)  # every verdict has one: ranges apart is refused above
    keep = decision.holm(p_values, alpha)
    lost: dict[int, list[float]] = {}
    for (i, j), p, kept in zip(family, p_values, keep, strict=True):
        if not kept and j.change.clear:
            lost.setdefault(i, []).append(p)
    out = list(claims)
    for i, ps in lost.items():
        cond = claims[i].condition
        data = (f"{cond.data}; Holm's correction over the page's {len(family)} verdicts at "
                f"α = {_percent(alpha)}: {len(ps)} of this claim's clear verdicts do not stay "
                f"clear (p up to {format_p(max(ps))})")
        out[i] = replace(claims[i], condition=replace(cond, holds=False, data=data))
    return out


def certificates(pins: Pins, claims: list[Claim], run: str | None = None,
                 block: str | None = None) -> list[tuple[str, Certificate]]:
    """(alias, certificate) per block of the pinned runs (or of `run`, `block`): the A/A
    cells, what the page's claims there resolve (at worst; the A/A pair's without claims) and
    the smallest change they claim."""
    judged = [j for c in claims for j in c.condition.judged]
    out = []
    for alias in pins.aliases(run) if run is not None or block is not None else list(pins.runs):
        blocks = list(dict.fromkeys(r.block for r in pins.runs[alias].cells))
        if block is not None and block not in blocks:
            raise AnalysisError(f"no block {block!r} in run {alias!r}",
                                fix=f"use one of: {', '.join(blocks)}")
        for b in [block] if block else blocks:
            aa = aa_found(pins, alias, b)
            mine = [j for j in judged if j.run == alias and j.block == b]
            # Without claims there: what the page's other comparisons on it resolve, at worst
            shown = [(b, str(key[2]), "", c) for key, c in pins.judged.items()
                     if key[:2] == (alias, b)]
            index = certification.aa_index(aa)
            res, metric = _worst(mine) if mine else certification.worst(index, aa + shown)
            steps = [j.step for j in mine if j.step is not None]
            rule = pins.rule(alias)
            extra: dict[str, Any] = {}
            if rule.holm:  # 2.1: Holm over the A/A cells; the block's first metric resolves
                top, first, rounds = certification.headline(index, aa + shown)
                extra = {"rule": rule, "aa_p": certification.aa_cells(aa), "headline": top,
                         "headline_metric": first, "rounds": rounds}
            out.append((alias, Certificate(b, len(aa), sum(f[3].clear for f in aa), res, metric,
                                           min(steps) if steps else None,
                                           **extra)))
    return out


def _worst(judged: list[Judged]) -> tuple[float, str]:
    known = [j for j in judged if not isnan(j.resolution)]
    if not known:
        return float("nan"), ""
    top = max(known, key=lambda j: j.resolution)
    return top.resolution, top.change.metric


def certification_table(pins: Pins, claims: list[Claim], run: str | None,
                        block: str | None) -> str:
    """`{{ certification() }}`: a row per pinned run's block."""
    found = certificates(pins, claims, run, block)
    several = len(pins.runs) > 1
    header = ["run"] * several + ["block", "A/A pair", "resolves", "smallest change claimed",
                                  "certified"]
    body = []
    for alias, c in found:
        exact = pins.rule(alias).exact
        certified = ("yes" if c.certified else "no") + f" ({c.why})" if exact else \
            "no (a run archived before method v2 states no resolution)"
        # What the block resolves, as its run's page states it (every comparison of the
        # block): one figure per block wherever it is shown
        stated = block_resolution(pins, alias, c.block)
        if stated is not None:
            c = replace(c, resolution=stated[0], metric=stated[1])
            if c.holm:
                c = replace(c, headline=stated[2], headline_metric=stated[3])
        body.append([escape.md(alias)] * several + [
            escape.md(c.block), escape.md(c.aa_text),
            escape.md(c.resolution_text.removeprefix("resolves ")),
            escape.md(format_resolution(c.claimed) if c.claimed is not None else "—"),
            escape.md(certified)])
    return "\n\n" + escape.table(header, body) + "\n\n"


def certified(pins: Pins, block: str, run: str | None) -> Condition:
    """`certified(block=…)`: settled once the page's claims are all in."""
    alias = pins.aliases(run)[0]
    certificates(pins, [], alias, block)  # a wrong block or run stops the build here

    def decide(claims: list[Claim]) -> Condition:
        (_, c), = certificates(pins, claims, alias, block)
        holds = c.certified and pins.rule(alias).exact
        claimed = (f"; smallest change claimed {format_resolution(c.claimed)}"
                   if c.claimed is not None else "")
        what = (f"certified at {c.level}: no A/A cell clear after Holm's correction, and "
                "resolving a finite change within the suite's target and the smallest change "
                "the page claims on it" if c.holm else "certified: its A/A pair never clear, "
                "and resolving the smallest change the page claims on it")
        return Condition(holds, f"block {block} of {alias} {what}",
                         f"{c.line()}{claimed}" if pins.rule(alias).exact else
                         f"{block}: a run archived before method v2 states no resolution")

    return Condition(True, f"block {block} of {alias} certified", "", settle=decide)


def uncertified(pins: Pins, claims: list[Claim]) -> list[Claim]:
    """A claim resting on a block that is not certified (by its A/A pair; 2.1: and the suite's
    target) fails unless it names that status
    (`claim(…, uncertified_ok="why")`), and the reason is then printed beside it. Runs under
    the ranges rule (before method v2) have no certification: their claims are not checked
    (the page's warnings say the run states no resolution)."""
    found: dict[tuple[str, str], Certificate] = {}
    out = []
    for claim in claims:
        why = []
        for run, block in dict.fromkeys((j.run, j.block) for j in claim.condition.judged):
            if not pins.rule(run).exact:
                continue
            # The A/A part (and 2.1's target) only: a bound finer than the block resolves
            # fails its own claim already (`condition.bounded`), not every claim on the block.
            if (run, block) not in found:
                ((_, found[run, block]),) = certificates(pins, [], run, block)
            c = found[run, block]
            if not c.certified:
                why.append(f"block {block} of {run} is not certified ({c.why})")
        cond = claim.condition
        if not why:
            out.append(claim)
        elif claim.uncertified_ok:
            note = f"not certified: {claim.uncertified_ok}"
            out.append(replace(claim, condition=replace(
                cond, note=f"{cond.note}; {note}" if cond.note else note)))
        else:
            out.append(replace(claim, condition=replace(
                cond, holds=False, expected=f"{cond.expected}; and certified blocks, or "
                "uncertified_ok=\"why\" on the claim", data=f"{cond.data}; {'; '.join(why)}")))
    return out

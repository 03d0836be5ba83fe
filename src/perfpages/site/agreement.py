"""One verdict per comparison across the live site.

Each rendered page keeps a ledger of the verdicts it prints or claims (`Pins.judged`). A
comparison is the same on two pages when the builds and settings of both labels (pin, env, server
settings — never a label's name or description, nor what every label of its run shares), the
block's case (its parameters) and the metric agree; the runs, suites and block names may differ
(a history suite measures the same releases as the main one). `stated` turns a page's ledger
into `Stated` verdicts; `check`, a pure function over every live page's verdicts, returns one
line per disagreement naming both pages and lines. Older versions and `superseded:` pages are
not live and are not checked.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from math import isnan
from types import FrameType

from perfpages.analysis.decision import Change
from perfpages.analysis.format import format_percent
from perfpages.archive.manifest import Manifest

GAIN, LOSS, NOT_CLEAR = "clear gain", "clear loss", "not clear"
FLIP = {GAIN: LOSS, LOSS: GAIN, NOT_CLEAR: NOT_CLEAR}


def template_line() -> int:
    """The template line of the innermost Jinja frame calling us (Jinja maps Python lines)."""
    return in_template() or 1


def in_template() -> int | None:
    """The template line of the innermost Jinja frame calling us; None outside a template (a
    check after the page is rendered)."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        template = frame.f_globals.get("__jinja_template__")
        if template is not None:
            return int(template.get_corresponding_lineno(frame.f_lineno))
        frame = frame.f_back
    return None


@dataclass(frozen=True)
class Stated:
    """One verdict a page states: where, on what comparison, and what it says. `interval` is
    the change in percent of the base: the exact interval, or under the ranges rule (which
    states none) the changes its rounds allow."""

    page: str
    line: int
    comparison: tuple[str, ...]
    verdict: str
    interval: tuple[float, float]
    text: str  # the verdict as the page states it, the way round it states it
    # The cells it reads: within one run, two labels of one build (an A/A pair) are two
    # measurements, each verdict a fact of the run, not two readings of one.
    cells: tuple[str, ...] = ()


def _shared(items: Iterable[Mapping[str, object]]) -> dict[str, object]:
    """What every one of `items` holds alike: a run's settings, not what tells labels apart."""
    found = [dict(i) for i in items]
    return {k: v for k, v in found[0].items() if all(f.get(k) == v for f in found)} \
        if found else {}


def _build(manifest: Manifest, label: str) -> str:
    """A label's build and the settings that tell it apart from its run's other labels (pin,
    env, server settings; what every label of the run shares is the run's, like its machine),
    the same whatever the label is called."""
    spec = manifest.labels.get(label)
    if spec is None:  # a transcribed table's label: its name is all there is
        return json.dumps({"label": label})
    labels = manifest.labels.values()
    env, pg = _shared(x.env for x in labels), _shared(x.pg_settings for x in labels)
    return json.dumps({"pin": spec.pin.to_json(),
                       "env": {k: v for k, v in spec.env.items() if env.get(k, k) != v},
                       "pg_settings": {k: v for k, v in spec.pg_settings.items()
                                       if pg.get(k, k) != v}}, sort_keys=True, default=str)


def _verdict(change: Change) -> str | None:
    if not change.clear:
        return NOT_CLEAR
    return {True: GAIN, False: LOSS}.get(change.better)  # type: ignore[arg-type]


def _ranges(change: Change) -> tuple[float, float]:
    """The changes the rounds allow under the ranges rule (which states no interval): from the
    other's lowest round over the base's highest to its highest over the base's lowest."""
    base, other = change.base, change.other
    if base.min <= 0 or base.max <= 0:
        return (change.percent, change.percent)
    return (100.0 * (other.min / base.max - 1.0), 100.0 * (other.max / base.min - 1.0))


def _flip(pct: float) -> float:
    return (100.0 / (1.0 + pct / 100.0) - 100.0) if pct > -100.0 else float("inf")


def stated(page: str, judged: Mapping[tuple[object, ...], Change],
           lines: Mapping[tuple[object, ...], int],
           manifests: Mapping[str, Manifest]) -> list[Stated]:
    """A page's ledger as verdicts on comparisons, each side ordered so that a comparison
    stated either way round is one (the other way round flips the verdict and interval).
    `lines`: the page line where each was first judged (`pins.Ledger.lines`)."""
    out = []
    for key, change in judged.items():
        if len(key) != 8:
            continue  # an A/A pair's comparison: a run's own noise, not a comparison of builds
        run_a, _block, params_a, label_a, run_b, params_b, label_b, metric = map(str, key)
        verdict = _verdict(change)
        if verdict is None:
            continue  # a metric without a better direction states no gain or loss
        ma, mb = manifests[run_a], manifests[run_b]
        a = (_build(ma, label_a), params_a)
        b = (_build(mb, label_b), params_b)
        interval = change.interval or _ranges(change)
        if isnan(interval[0]):
            continue
        lo, hi = interval
        shown = format_percent(change.percent) if change.interval is None else \
            f"{format_percent(lo)}…{format_percent(hi)}"
        text = f"{label_a} → {label_b} {shown} ({verdict}, run {ma.id})"
        if b < a:
            a, b = b, a
            verdict = FLIP[verdict]
            interval = (_flip(interval[1]), _flip(interval[0]))
        comparison = (metric, *a, *b)
        out.append(Stated(page, lines.get(key, 1), comparison, verdict, interval,
                          text, tuple(sorted([f"{ma.id}:{label_a}", f"{mb.id}:{label_b}"]))))
    return out


def _agree(x: Stated, y: Stated) -> bool:
    if x.verdict != y.verdict:
        return False
    if x.verdict == NOT_CLEAR:
        return True
    return x.interval[0] <= y.interval[1] and y.interval[0] <= x.interval[1]


def _twins(x: Stated, y: Stated) -> bool:
    """Verdicts of one run on different labels of the same builds (the A/A twin against the
    base, the original against it): both are facts of that run."""
    runs = {c.split(":", 1)[0] for c in (*x.cells, *y.cells)}
    return len(runs) == 1 and x.cells != y.cells


def check(pages: Iterable[Stated]) -> list[str]:
    """One line per comparison two live pages state differently: both pages:lines and both
    verdicts (the first disagreement of each pair of pages on a comparison)."""
    by: dict[tuple[str, ...], list[Stated]] = {}
    for s in pages:
        by.setdefault(s.comparison, []).append(s)
    problems: list[str] = []
    seen: set[tuple[str, str, tuple[str, ...]]] = set()
    for comparison, items in by.items():
        for i, x in enumerate(items):
            for y in items[i + 1:]:
                if x.page == y.page or _agree(x, y) or (x.page, y.page, comparison) in seen \
                        or _twins(x, y):
                    continue
                seen.add((x.page, y.page, comparison))
                what = f"{comparison[2]}, {comparison[0]}"
                problems.append(
                    f"{x.page}:{x.line}: says {x.text} where {y.page}:{y.line} says {y.text} "
                    f"on the same comparison ({what}) — two live pages must agree: mark one "
                    f"`superseded:` (see the guide: perfpages guide pages)")
    return problems

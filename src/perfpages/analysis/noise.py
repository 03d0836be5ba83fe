"""The noise floor: what an A/A pair (the same build under two labels) measured in a run.

A pair is two labels of a run with the same pin, environment and PostgreSQL settings (names
and descriptions may differ). Per block, metric and pair the noise floor is the range of the
changes between the two, how many are clear (on a quiet machine: none) and how far the rounds
spread around the pair's median. The rule is `perfpages.analysis.decision`'s; this module only
finds the pairs and groups their cells, without pandas (the site uses it too).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from perfpages.analysis import decision
from perfpages.analysis.decision import AA_SPREAD, Change
from perfpages.analysis.format import format_range
from perfpages.archive.manifest import Manifest


def same_builds(manifest: Manifest) -> list[tuple[str, str]]:
    """Label pairs that ran the same build (pin, environment, settings): A/A pairs."""
    def build(label: str) -> str:
        spec = manifest.labels[label].to_json()
        spec.pop("description", None)
        if spec["pin"]["kind"] == "none":
            spec["pin"].pop("note", None)  # a label that installs nothing notes its description
        return json.dumps(spec, sort_keys=True)

    if manifest.scope == "transcribed":  # nothing was built here: no pin says two are one
        return []
    names = list(manifest.labels)
    return [(a, b) for i, a in enumerate(names) for b in names[i + 1:] if build(a) == build(b)]


@dataclass(frozen=True)
class Row:
    """One block, metric and A/A pair: the changes of all its cells (parameter sets)."""

    block: str
    metric: str
    pair: str  # "a-again vs a"
    changes: tuple[Change, ...]

    @property
    def clear(self) -> int:
        return sum(c.clear for c in self.changes)

    @property
    def spread(self) -> float:
        """The farthest round from its pair's median, over the cells (a fraction)."""
        return max(decision.spread(c.base, c.other) for c in self.changes)

    @property
    def steady(self) -> int:
        return sum(decision.steady(c.base, c.other) for c in self.changes)

    def quiet(self, within_pct: float) -> bool:
        return all(decision.quiet(c, within_pct) for c in self.changes)

    @property
    def text(self) -> str:
        """"−1.2 to +0.4 % (0 of 3 clear); rounds within ±2.1 % of the pair's median"."""
        far = f"±{self.spread * 100:.1f} %"
        n = len(self.changes)
        within = (f"rounds within {far} of the pair's median" if self.steady == n else
                  f"rounds up to {far} from the pair's median, beyond ±{AA_SPREAD * 100:g} % "
                  f"in {n - self.steady} of {n} cells")
        return f"{format_range(self.changes)} ({self.clear} of {n} clear); {within}"


def rows(found: list[tuple[str, str, str, Change]]) -> list[Row]:
    """(block, parameters, pair, change) of A/A cells, grouped by block, pair and metric."""
    groups: dict[tuple[str, str, str], list[Change]] = {}
    for block, _, pair, c in found:
        groups.setdefault((block, c.metric, pair), []).append(c)
    return [Row(block, metric, pair, tuple(cs)) for (block, metric, pair), cs in groups.items()]

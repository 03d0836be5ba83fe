"""How a run's changes are decided: the rule it recorded (`method.rule` in run.json).

Runs archived before method v2 record none and keep "ranges apart"; method v2 runs record an
exact rank test and, from method 2.1, the version that says how its resolution is computed and
its blocks certified. `perfpages.analysis.decision` decides with it; its defaults are the
vocabulary's (`archive.vocabulary`).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import inf
from typing import Any, Literal, cast

from perfpages.archive import vocabulary
from perfpages.archive.manifest import Method
from perfpages.errors import AnalysisError


@dataclass(frozen=True)
class Rule:
    """How a run's changes are decided. `ranges`: runs archived before method v2 (no
    `method.rule` in run.json): clear when the ranges are apart with `min_rounds` rounds a side.
    `wilcoxon` (paired by round) and `mann-whitney` (the windows unpaired): method v2, clear
    when the exact two-sided test's p-value is below `alpha`.

    `version` is the exact rule's revision: "2.0" (runs whose `method.rule` names none: the
    resolution by Noether's formula, a block certified when no A/A cell is clear at `alpha`)
    or "2.1" (the resolution by simulation of the exact test, a block certified by Holm's
    correction over its A/A cells at `certify_alpha`, and resolving `target_pct` when the
    suite states one)."""

    test: vocabulary.Test = "ranges"
    alpha: float = vocabulary.ALPHA
    min_rounds: int = vocabulary.MIN_ROUNDS
    power: float = vocabulary.POWER  # for the resolution
    version: vocabulary.RuleVersion = "2.0"
    certify_alpha: float = vocabulary.CERTIFY_ALPHA
    target_pct: float | None = None  # the resolution the suite aims at (2.1), in percent

    def __post_init__(self) -> None:
        if self.test not in TESTS:
            raise AnalysisError(f"unknown decision rule {self.test!r}",
                                fix=f"use one of: {', '.join(TESTS)}")
        if not 0 < self.alpha < 0.5 or not 0 < self.power < 1:
            raise AnalysisError("a rule's alpha must be in (0, 0.5) and its power in (0, 1)")
        if self.version not in VERSIONS:
            raise AnalysisError(f"unknown rule version {self.version!r}",
                                fix=f"use one of: {', '.join(VERSIONS)}")
        if not 0 < self.certify_alpha < 0.5:
            raise AnalysisError("a rule's certify_alpha must be in (0, 0.5)")
        if self.target_pct is not None and not 0 < self.target_pct < inf:
            raise AnalysisError(f"a rule's target_pct must be a positive percentage, not "
                                f"{self.target_pct!r}")

    @property
    def exact(self) -> bool:
        return self.test != "ranges"

    @property
    def holm(self) -> bool:
        """Method 2.1: a block is certified by Holm's correction over its A/A cells."""
        return self.exact and self.version != "2.0"

    @staticmethod
    def of(method: Method) -> Rule:
        """The rule a run recorded (`method.rule`); none recorded: ranges apart; no version
        recorded: 2.0."""
        rule = method.rule
        if not rule:
            return Rule(min_rounds=method.min_rounds)
        target = rule.get("target_pct")
        return Rule(test=rule["test"], alpha=float(rule.get("alpha", vocabulary.ALPHA)),
                    min_rounds=method.min_rounds, version=_version(rule.get("version", "2.0")),
                    certify_alpha=float(rule.get("certify_alpha", vocabulary.CERTIFY_ALPHA)),
                    target_pct=float(target) if target is not None else None)

    def to_json(self) -> dict[str, Any]:
        if self.version == "2.0":
            return {"test": self.test, "alpha": self.alpha}
        return {"test": self.test, "alpha": self.alpha, "version": self.version,
                "certify_alpha": self.certify_alpha,
                **({"target_pct": self.target_pct} if self.target_pct is not None else {})}

    def text(self) -> str:
        """How a report states the rule."""
        if not self.exact:
            return (f"ranges apart, at least {self.min_rounds} rounds a side")
        name = ("Wilcoxon signed-rank test paired by round" if self.test == "wilcoxon"
                else "Mann–Whitney U test on the windows")
        text = (f"exact {name}, two-sided α = {self.alpha:g}; change: Hodges–Lehmann median "
                f"shift with its exact {1 - self.alpha:.0%} interval")
        if self.version == "2.0":
            return text
        target = (f", resolving at most {self.target_pct:g} %" if self.target_pct is not None
                  else "")
        return (f"{text} (method {self.version}: resolution at {self.power * 100:g} % power by "
                f"simulation of the test; a block certified at {self.certify_alpha * 100:g} % "
                f"by Holm's correction over its A/A cells{target})")


VERSIONS, TESTS = vocabulary.RULE_VERSIONS, vocabulary.TESTS
RANGES = Rule()
V2 = Rule("wilcoxon")  # method v2's default (chosen by benchmarks/bench_method.py)
V21 = Rule("wilcoxon", version="2.1")  # what a suite records now (`Suite.rule_json`)


def _version(value: object) -> Literal["2.0", "2.1"]:
    """A recorded rule version, as Rule's field is typed: Rule.__post_init__ refuses (and names)
    any other value, so the cast only states what that check then holds."""
    return cast(Literal["2.0", "2.1"], str(value))

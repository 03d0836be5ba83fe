"""The words a run is read in, declared once: its scopes and what a reader is told of each, the
decision rules and the method's design defaults (a busy machine's thresholds among them), the
metrics a run's health is read from and the kinds of floor. Every module that names one of them
imports it from here.
"""

from __future__ import annotations

from typing import Literal

# Scopes: what a run measured. Only "full" is a measurement of the suite as written.
Scope = Literal["full", "quick", "test", "synthetic", "transcribed"]
SCOPE_TEXTS: dict[str, str] = {
    "quick": "quick run: the suite's reduced sizes, not its full measurement",
    "test": "test run: a tiny run made by tests, not a measurement",
    "synthetic": "synthetic run: generated values written by the real archive writer, not a "
                 "measurement",
    "transcribed": "transcribed, not measured here",
}
# The scopes a report lists among a run's warnings (a synthetic run's title and page say it;
# a transcribed run's warning names its source: `manifest.Source.note`).
WARNED_SCOPES = ("quick", "test")
SCOPE_TITLES = {"synthetic": "Synthetic run", "transcribed": "Transcribed, not measured here"}

# Decision rules: "ranges" (method v1: ranges apart) or an exact rank test (method v2), and the
# revisions of the exact rule (`perfpages.analysis.decision.Rule`).
Test = Literal["ranges", "wilcoxon", "mann-whitney"]
TESTS: tuple[Test, ...] = ("ranges", "wilcoxon", "mann-whitney")
RuleVersion = Literal["2.0", "2.1"]
RULE_VERSIONS: tuple[RuleVersion, ...] = ("2.0", "2.1")

# The method's design defaults (a suite's, a recorded run's and a rule's when none is given).
ALPHA = 0.01  # an exact test's two-sided level
CERTIFY_ALPHA = 0.01  # method 2.1: the family-wise level of a block's A/A cells (Holm)
POWER = 0.80  # the power a resolution is stated at
# Method 2.1: the resolution (percent of a block's first metric, worst cell) an exact rule's block
# must reach to be certified when its suite states none: a block that cannot tell 20 % apart
# supports none of the changes pages state (a few percent to a few tens), however quiet its A/A.
TARGET_PCT = 20.0
MIN_ROUNDS = 5  # rounds a side for a verdict
DRIFT_THRESHOLD = 0.10  # a floor's change beyond which the machine drifted (a fraction)

# A busy machine: the run applies these before each block and to each window as it measures
# (`perfpages.run.preflight`), the analysis to the windows it counts (`analysis.machine_load`).
# CPU in percent of one core (100 = one core busy all the time); steal in percent of the
# machine's CPU time, as `top` shows it.
# Other processes' CPU above a tenth of a core: a neighbour that size moves a 1-2 % noise floor.
BUSY_OTHERS_PCT = 10.0
# Steal above 2 % of the machine: the hypervisor gives the cores to other guests, unseen here.
BUSY_STEAL_PCT = 2.0
# Any other PostgreSQL server, pgbench, perfpages run or test suite counts however idle it looks
# now: it wakes up (autovacuum, checkpoints, its next test) in the middle of a window.
COMPETING = ("PostgreSQL", "pgbench", "perfpages", "pytest", "invoke")

# Metrics: a floor's rate (pgbench's transactions, an HTTP floor's requests), in order of
# preference, and the counts that make a cell's rounds suspect.
FLOOR_METRICS = ("tps", "throughput")
# Counts per call read exactly, from an idle-bounded batch after a case (`perfpages.run.counts`),
# not differenced at window boundaries; `connections` is PostgreSQL's session counter.
EXACT_COUNTS = ("statements", "buffers_hit", "buffers_read", "connections")
FAULT_METRICS = {"failed_windows": "failed windows", "errors": "errors",
                 "non_2xx": "non-2xx responses"}

# Floors: "pgbench" straight to PostgreSQL (the machine's check), or an HTTP subject's own
# floor named by its `params.floor` ("health"); each decided on its own windows, never pooled.
PGBENCH = "pgbench"
FLOOR_KINDS = (PGBENCH, "health")

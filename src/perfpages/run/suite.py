"""The suite API: what a `benchmarks/<name>.py` module declares, and how it is loaded.

A suite module defines `suite(quick: bool) -> Suite`. A Suite names its labels (pinned builds),
its data set (a seeded, deterministic generator), its blocks (pgbench scripts, client sweep,
named queries to EXPLAIN) and its method defaults. See docs/guide/suites.md.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import re
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import psycopg

from perfpages.archive import vocabulary
from perfpages.errors import PerfpagesError
from perfpages.run.delay import as_param

# The HTTP parts of the API, re-exported: a suite module imports them from here.
from perfpages.run.httpspec import NAME
from perfpages.run.httpspec import HttpBlockSpec as HttpBlockSpec
from perfpages.run.httpspec import HttpCase as HttpCase
from perfpages.run.httpspec import HttpTurn as HttpTurn
from perfpages.run.httpspec import Instructions as Instructions
from perfpages.run.httpspec import Service as Service
from perfpages.run.pgbench import Script
from perfpages.run.placement import Placement

# The design each rule defaults to (a field left None takes its rule's value): v1's few long
# windows, or v2.1's many short ones, every label's window of a cell back to back (run/design).
DESIGNS: dict[str, dict[str, Any]] = {
    "ranges": {"rounds": 5, "order": "rotate", "warmup_s": 5.0, "window_s": 30.0},
    "exact": {"rounds": 20, "order": "pairs", "warmup_s": 0.5, "window_s": 2.0},
}


@dataclass(frozen=True)
class LabelSpec:
    """A build to measure: `package="name==1.2.3"`, or `git=REPO` at `ref`, or nothing.

    `env` is added to the environment of everything the label runs (pgbench, hooks);
    `pg_settings` are the server's settings while the label is measured."""

    name: str
    package: str = ""
    git: str = ""
    ref: str = "HEAD"
    subdirectory: str = ""
    env: dict[str, str] = field(default_factory=dict)
    pg_settings: dict[str, Any] = field(default_factory=dict)
    description: str = ""

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[\w.+-]+", self.name):
            raise PerfpagesError(f"bad label name {self.name!r}", key="labels",
                                 fix="use letters, digits, '.', '-', '_' or '+'")
        if self.package and self.git:
            raise PerfpagesError(f"label {self.name!r} pins both a package and a git repository",
                                 key=f"labels.{self.name}", fix="pin one of them")

    def again(self, name: str, description: str = "") -> LabelSpec:
        """The same build (pin, env, settings) under another name: an A/A pair, whose
        differences are the machine's and the method's noise floor."""
        return replace(self, name=name, description=description or
                       f"{self.name} again: the same build (A/A)")


@dataclass(frozen=True)
class DataSet:
    """Rows to load once per server: `load(conn, rows, seed)` must be deterministic."""

    name: str
    rows: int
    load: Callable[[psycopg.Connection, int, int], None]
    seed: int = 42
    extensions: tuple[str, ...] = ()

    def fingerprint(self) -> str:
        """What the loaded data depends on, the loader's whole module included ('' if unknown)."""
        try:
            source = Path(inspect.getsourcefile(self.load) or "").read_bytes()
        except (OSError, TypeError):
            return ""
        parts = [self.name, self.rows, self.seed, list(self.extensions),
                 hashlib.sha256(source).hexdigest()]
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


@dataclass(frozen=True)
class BlockSpec:
    """One table of the report: pgbench scripts run at each client count of the sweep.

    `delays_ms` runs each client count at each delay each way between pgbench and PostgreSQL
    (the parameter `delay_ms`; see `perfpages.run.delay`); `window_s` replaces the suite's."""

    name: str
    scripts: tuple[Script, ...]
    clients: tuple[int, ...] = (1,)
    title: str = ""
    description: str = ""
    prepared: bool = True
    defines: dict[str, str] = field(default_factory=dict)
    metrics: tuple[str, ...] = ("throughput", "p50", "p95", "p99")
    explain: dict[str, str] = field(default_factory=dict)  # name -> SQL, planned with ANALYZE
    log_sampling: float = 1.0  # fraction of transactions logged for the latency histograms
    delays_ms: tuple[float, ...] = ()  # pgbench through the delay proxy, at each delay
    window_s: float | None = None  # this block's windows, instead of the suite's
    rounds: int | None = None  # this block's rounds, at most the suite's

    def __post_init__(self) -> None:
        if not NAME.match(self.name):
            raise PerfpagesError(f"bad block name {self.name!r}", key="blocks",
                                 fix="use lower-case letters, digits, '-' or '_'")
        if self.rounds is not None and self.rounds < 1:
            raise PerfpagesError(f"block {self.name!r}: rounds must be at least 1",
                                 key=f"blocks.{self.name}.rounds")
        if not 0 < self.log_sampling <= 1:
            raise PerfpagesError(f"block {self.name!r}: log_sampling must be in (0, 1]",
                                 key=f"blocks.{self.name}.log_sampling")
        if any(not 0 <= d <= 1000 for d in self.delays_ms):
            raise PerfpagesError(f"block {self.name!r}: delays_ms must be between 0 and 1000",
                                 key=f"blocks.{self.name}.delays_ms",
                                 fix="give delays in milliseconds")
        if self.window_s is not None and self.window_s < 1:
            raise PerfpagesError(f"block {self.name!r}: window_s must be at least 1 second",
                                 key=f"blocks.{self.name}.window_s")
        if not self.scripts or not self.clients or min(self.clients) < 1:
            raise PerfpagesError(f"block {self.name!r} needs scripts and client counts >= 1",
                                 key=f"blocks.{self.name}")

    @property
    def parameters(self) -> tuple[str, ...]:
        """The parameters of its cells, as run.json records them."""
        return ("clients", "delay_ms") if self.delays_ms else ("clients",)

    def cells(self) -> list[dict[str, Any]]:
        """Its cells' parameters in the order a turn runs them (runner, replay, estimate)."""
        return [{"clients": c} if d is None else {"clients": c, "delay_ms": as_param(d)}
                for c in self.clients for d in (self.delays_ms or (None,))]


@dataclass(frozen=True)
class Suite:
    """What a suite declares. `rule` chooses how changes are decided (see
    `perfpages.analysis.decision.Rule`): "ranges" (method v1) or an exact rank test at `alpha`
    (method v2). `rounds`, `order`, `warmup_s` and `window_s` left None take the rule's design
    (`DESIGNS`): 5 rounds of 30 s after 5 s rotated for ranges; 20 rounds of 2 s after 0.5 s
    each, cell by cell ("pairs"), for an exact rule. A value given explicitly always wins."""

    name: str
    title: str
    labels: tuple[LabelSpec, ...]
    blocks: tuple[BlockSpec | HttpBlockSpec, ...]
    dataset: DataSet
    service: Service | None = None
    # None: the rule's design, resolved on creation (never None afterwards)
    rounds: int | None = None
    order: Literal["rotate", "shuffle", "fixed", "pairs"] | None = None
    warmup_s: float | None = None
    window_s: float | None = None
    floor_s: float = 3.0
    min_rounds: int = vocabulary.MIN_ROUNDS
    drift_threshold: float = vocabulary.DRIFT_THRESHOLD
    scope: Literal["full", "quick", "test"] = "full"
    database: str = "bench"
    notes: str = ""
    placement: Placement = field(default_factory=Placement)
    rule: Literal["ranges", "wilcoxon", "mann-whitney"] = "ranges"  # vocabulary.TESTS
    alpha: float = vocabulary.ALPHA
    # The resolution a block must reach to be certified (percent; exact rules only), e.g. 10;
    # None: vocabulary.TARGET_PCT under an exact rule
    resolution_target: float | None = None

    def __post_init__(self) -> None:
        if self.rule not in vocabulary.TESTS:
            raise PerfpagesError(f"unknown rule {self.rule!r}", key="rule",
                                 fix=f"use one of: {', '.join(vocabulary.TESTS)}")
        if not 0 < self.alpha < 0.5:
            raise PerfpagesError(f"alpha={self.alpha!r} is not between 0 and 0.5", key="alpha",
                                 fix="use a two-sided level such as 0.01")
        if self.resolution_target is not None:
            if self.rule == "ranges":
                raise PerfpagesError("resolution_target needs an exact rule: the ranges rule "
                                     "states no resolution", key="resolution_target",
                                     fix='pass rule="wilcoxon", or drop resolution_target')
            target = self.resolution_target
            if (isinstance(target, bool) or not isinstance(target, int | float)
                    or not 0 < target < 1000):
                raise PerfpagesError(f"resolution_target={target!r} is not a percentage "
                                     "between 0 and 1000", key="resolution_target",
                                     fix="give the change in percent a block must resolve, "
                                         "e.g. resolution_target=10")
        if self.rule != "ranges" and self.resolution_target is None:
            object.__setattr__(self, "resolution_target", vocabulary.TARGET_PCT)
        design = DESIGNS["ranges" if self.rule == "ranges" else "exact"]
        for name, value in design.items():
            if getattr(self, name) is None:  # frozen: set once, here
                object.__setattr__(self, name, value)
        if self.order not in ("rotate", "shuffle", "fixed", "pairs"):
            raise PerfpagesError(f"unknown order {self.order!r}", key="order",
                                 fix='use "pairs", "shuffle", "rotate" or "fixed"')
        if (self.rounds or 0) < 1:
            raise PerfpagesError("rounds must be at least 1", key="rounds")
        for kind, names in (("label", [x.name for x in self.labels]),
                            ("block", [x.name for x in self.blocks])):
            if not names or len(set(names)) != len(names):
                raise PerfpagesError(f"suite {self.name!r} needs distinct {kind} names",
                                     key=f"{kind}s")
        http = [b.name for b in self.blocks if isinstance(b, HttpBlockSpec)]
        if http and self.service is None:
            raise PerfpagesError(f"HTTP blocks {', '.join(http)} need the suite's service",
                                 key="service", fix="pass service=Service(spec=…)")

    def label(self, name: str) -> LabelSpec:
        return next(x for x in self.labels if x.name == name)

    @property
    def rule_json(self) -> dict[str, Any] | None:
        """`method.rule` of the run.json this suite makes: None for ranges (method v1); an
        exact rule at method 2.1 (its resolution by simulation, blocks certified by Holm over
        their A/A cells at 1 %, and resolving `resolution_target` where given)."""
        if self.rule == "ranges":
            return None
        return {"test": self.rule, "alpha": self.alpha, "version": vocabulary.RULE_VERSIONS[-1],
                "certify_alpha": vocabulary.CERTIFY_ALPHA,
                **({"target_pct": float(self.resolution_target)}
                   if self.resolution_target is not None else {})}

    def select(self, labels: list[str] | None, blocks: list[str] | None) -> Suite:
        """The same suite restricted to some labels and blocks (unknown names: one line)."""
        def pick(kind: str, wanted: list[str] | None, items: tuple[Any, ...]) -> tuple[Any, ...]:
            if not wanted:
                return items
            known = {x.name: x for x in items}
            for name in wanted:
                if name not in known:
                    raise PerfpagesError(f"suite {self.name!r} has no {kind} {name!r}",
                                         key=f"--{kind}s",
                                         fix=f"choose among: {', '.join(known)}")
            return tuple(known[n] for n in wanted)

        chosen = pick("label", labels, self.labels)
        names = {x.name for x in chosen}
        kept = []
        for b in pick("block", blocks, self.blocks):
            only = getattr(b, "labels", ())  # an HTTP block may run some labels only
            if only and not names & set(only):
                if blocks:
                    raise PerfpagesError(f"block {b.name!r} runs only {', '.join(only)}, and "
                                         "--labels leaves none of them", key="--labels",
                                         fix=f"add one of {', '.join(only)} to --labels")
                continue  # not asked for by name: a block with nothing to run is left out
            kept.append(b)
        if not kept:
            raise PerfpagesError("no block runs any of the chosen labels", key="--labels",
                                 fix="choose other labels or blocks")
        # A label no kept block runs would leave the run without its windows, failing it only
        # at the end: one chosen by --blocks alone is left out; one named, or any in the whole
        # suite, is a mistake said before anything starts.
        used = {n for b in kept for n in (getattr(b, "labels", ()) or names)}
        idle = [x.name for x in chosen if x.name not in used]
        if idle and (labels or not blocks):
            raise PerfpagesError(
                f"label {idle[0]!r} runs in none of the "
                + ("chosen blocks" if blocks else "suite's blocks"),
                key="--labels" if labels else f"labels.{idle[0]}",
                fix=("leave it out of --labels, or add a block that runs it to --blocks"
                     if labels else "name it in a block's labels, or remove it"))
        return replace(self, labels=tuple(x for x in chosen if x.name in used),
                       blocks=tuple(kept))

    def check_block_labels(self) -> None:
        """Every label an HTTP block names is one of the suite's (a typo would run nothing)."""
        names = {x.name for x in self.labels}
        for b in self.blocks:
            unknown = [n for n in getattr(b, "labels", ()) if n not in names]
            if unknown:
                raise PerfpagesError(f"block {b.name!r} names unknown labels: "
                                     f"{', '.join(unknown)}", key=f"blocks.{b.name}.labels",
                                     fix=f"use the suite's labels: {', '.join(names)}")


def available(directory: Path) -> list[str]:
    """Suite modules: those defining `suite(quick)` (benchmark scripts beside them are not)."""
    return sorted(p.stem for p in directory.glob("*.py")
                  if NAME.match(p.stem) and not p.stem.startswith("bench_")
                  and "\ndef suite(" in p.read_text(errors="replace"))


def _line_in(path: Path, exc: BaseException) -> int | None:
    """The line of the suite module nearest to where `exc` was raised."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if Path(f.filename).resolve() == path.resolve()]
    return frames[-1].lineno if frames else None


def load(name: str, directory: Path, quick: bool = False) -> Suite:
    """Import `directory/<name>.py` and call its `suite(quick)`."""
    path = directory / f"{name}.py"
    if not NAME.match(name) or not path.is_file():
        names = ", ".join(available(directory)) or "none"
        raise PerfpagesError(f"no suite {name!r}", where=directory, key="--suite",
                             fix=f"choose among: {names}")
    module_name = f"perfpages_suite_{name.replace('-', '_')}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
        factory = getattr(module, "suite", None)
        if not callable(factory):
            raise PerfpagesError("defines no suite(quick) function", where=path, key="suite",
                                 fix="see the guide: perfpages guide suites")
        result = factory(quick)
    except PerfpagesError as exc:
        if exc.where:
            raise
        raise PerfpagesError(exc.what, where=path, line=_line_in(path, exc), key=exc.key,
                             fix=exc.fix) from None
    except SyntaxError as exc:
        raise PerfpagesError(f"syntax error: {exc.msg}", where=path, line=exc.lineno,
                             fix="fix the suite module") from None
    except Exception as exc:  # a suite is user code: its bug is one line, not a traceback
        raise PerfpagesError(f"{type(exc).__name__}: {exc}", where=path,
                             line=_line_in(path, exc),
                             fix="fix the suite module (perfpages guide suites)") from None
    if not isinstance(result, Suite):
        raise PerfpagesError("suite(quick) did not return a perfpages.Suite", where=path,
                             key="suite", fix="see the guide: perfpages guide suites")
    try:
        result.check_block_labels()
    except PerfpagesError as exc:
        raise PerfpagesError(exc.what, where=path, key=exc.key, fix=exc.fix) from None
    return result

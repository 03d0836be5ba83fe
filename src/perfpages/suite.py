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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import psycopg

from perfpages.errors import PerfpagesError
from perfpages.pgbench import Script

NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


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
    """One table of the report: pgbench scripts run at each client count of the sweep."""

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

    def __post_init__(self) -> None:
        if not NAME.match(self.name):
            raise PerfpagesError(f"bad block name {self.name!r}", key="blocks",
                                 fix="use lower-case letters, digits, '-' or '_'")
        if not 0 < self.log_sampling <= 1:
            raise PerfpagesError(f"block {self.name!r}: log_sampling must be in (0, 1]",
                                 key=f"blocks.{self.name}.log_sampling")
        if not self.scripts or not self.clients or min(self.clients) < 1:
            raise PerfpagesError(f"block {self.name!r} needs scripts and client counts >= 1",
                                 key=f"blocks.{self.name}")


@dataclass(frozen=True)
class Suite:
    name: str
    title: str
    labels: tuple[LabelSpec, ...]
    blocks: tuple[BlockSpec, ...]
    dataset: DataSet
    rounds: int = 5
    order: Literal["rotate", "shuffle", "fixed"] = "rotate"
    warmup_s: float = 5.0
    window_s: float = 30.0
    floor_s: float = 3.0
    min_rounds: int = 5
    drift_threshold: float = 0.10
    scope: Literal["full", "quick", "test"] = "full"
    database: str = "bench"
    notes: str = ""

    def __post_init__(self) -> None:
        for kind, names in (("label", [x.name for x in self.labels]),
                            ("block", [x.name for x in self.blocks])):
            if not names or len(set(names)) != len(names):
                raise PerfpagesError(f"suite {self.name!r} needs distinct {kind} names",
                                     key=f"{kind}s")

    def label(self, name: str) -> LabelSpec:
        return next(x for x in self.labels if x.name == name)

    def select(self, labels: list[str] | None, blocks: list[str] | None) -> Suite:
        """The same suite restricted to some labels and blocks (unknown names: one line)."""
        from dataclasses import replace

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

        return replace(self, labels=pick("label", labels, self.labels),
                       blocks=pick("block", blocks, self.blocks))


def available(directory: Path) -> list[str]:
    return sorted(p.stem for p in directory.glob("*.py")
                  if NAME.match(p.stem) and not p.stem.startswith("bench_"))


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
    spec.loader.exec_module(module)
    factory = getattr(module, "suite", None)
    if not callable(factory):
        raise PerfpagesError("defines no suite(quick) function", where=path, key="suite",
                             fix="see docs/guide/suites.md")
    result = factory(quick)
    if not isinstance(result, Suite):
        raise PerfpagesError("suite(quick) did not return a perfpages.suite.Suite", where=path,
                             key="suite", fix="see docs/guide/suites.md")
    return result

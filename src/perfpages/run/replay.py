"""`invoke bench.replay`: a new run of an archived run's suite, with everything the run recorded.

The replay reuses the record: the same suite and scope, exactly the recorded labels and blocks,
the recorded pins (a git label at its recorded commit, a package label with the recorded
artifact's sha256 checked), the recorded method (rounds, order, warm-up, windows, minimum
rounds, drift threshold) but a seed of its own, so its order is drawn afresh (a replay that
repeated the original's order would repeat whatever that order did to it); it records
`replay_of` and the original's seed as `replay_of_seed`. What a suite declares but a run only
records (labels' pins, env and settings; blocks' metrics, parameters and measured cells) is
checked against the suite as it is now: a difference is one line naming the label or block and
the key.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import replace
from itertools import pairwise
from pathlib import Path
from typing import Any

from perfpages.archive.manifest import Manifest, Pin, shown_repository
from perfpages.archive.reader import incomplete, open_run, read_manifest, resolve
from perfpages.archive.secrets import masked_env
from perfpages.archive.window import Window, params_key
from perfpages.errors import PerfpagesError
from perfpages.run.builds import pinned_repository, same_repository
from perfpages.run.runner import Options
from perfpages.run.suite import BlockSpec, HttpBlockSpec, LabelSpec, Suite, load


def replay_options(results: Path, run_ref: str, benchmarks: Path, command: str) -> Options:
    """The Options that replay run `run_ref` (of `results`) with the suites of `benchmarks`;
    a run that is not complete, or a suite that no longer declares what it recorded: one line."""
    run_dir = resolve(results, run_ref)
    m = read_manifest(run_dir)
    _replayable(run_dir, m)
    run = open_run(run_dir)  # validated: the cells it measured are compared with the suite's
    suite = load(m.suite, benchmarks, m.scope == "quick")
    repinned = _repinned(m.command)
    Check(m, suite, benchmarks / f"{m.suite}.py").run(run.measured, repinned)
    seed = fresh_seed(m.method.seed)
    blocks: list[str] | None = list(m.blocks) or list(dict.fromkeys(
        w.block for w in run.measured))
    if set(blocks or ()) == {b.name for b in suite.blocks}:
        blocks = None  # the whole suite: the replay's id names no blocks, as the original's
    return Options(
        suite=m.suite, benchmarks=benchmarks, results=results, labels=list(m.labels),
        blocks=blocks, rounds=m.method.rounds, quick=m.scope == "quick", seed=seed,
        command=command, method=replace(m.method, notes="", seed=seed),
        recorded_pins={n: label.pin for n, label in m.labels.items()}, replay_of=m.id,
        replay_of_seed=m.method.seed)


def fresh_seed(other: int | None) -> int:
    """A seed of the replay's own, never the original's (`other`)."""
    while (seed := random.SystemRandom().randrange(2**31)) == other:
        pass
    return seed


def _replayable(run_dir: Path, m: Manifest) -> None:
    """Only a complete measurement is replayed."""
    if m.scope == "synthetic":
        raise PerfpagesError(f"run {m.id} holds generated values, not a measurement",
                             key="bench.replay", fix="replay a measured run")
    if m.scope == "transcribed":
        raise PerfpagesError(f"run {m.id} is transcribed from its source, not measured here: "
                             "there is no suite to replay", key="bench.replay",
                             fix="measure it with a suite of yours (`invoke bench.run`)")
    why = incomplete(run_dir, m)
    if why is not None:
        raise PerfpagesError(f"run {m.id} {why[0]}", key="bench.replay", fix=why[1])


def _repinned(command: str) -> set[str]:
    """Labels whose pin the run's command line replaced (`--pin LABEL=SPEC`, `-p`): their
    recorded pin is not the suite's; it is replayed all the same (as every recorded pin)."""
    words = command.split()
    values = [v for flag, v in pairwise(words) if flag in ("--pin", "-p")]
    values += [w.removeprefix("--pin=") for w in words if w.startswith("--pin=")]
    return {v.partition("=")[0] for v in values if "=" in v}


def _shown(value: Any) -> str:
    return "nothing" if value is None else repr(value)


class Check:
    """The suite as it is now against what run `m` recorded; the first difference raises."""

    def __init__(self, m: Manifest, suite: Suite, path: Path) -> None:
        self.m, self.suite, self.path = m, suite, path
        commit = (m.suite_repository or {}).get("commit")
        dirty = " (it had uncommitted changes)" if (m.suite_repository or {}).get("dirty") else ""
        self.fix = (f"check out the suites at commit {commit[:12]}, as run {m.id} recorded"
                    f"{dirty}, then replay" if commit else
                    f"restore the suite as run {m.id} ran it (it recorded no suite commit)")

    def differ(self, key: str, what: str) -> PerfpagesError:
        return PerfpagesError(what, where=self.path, key=key, fix=self.fix)

    def run(self, measured: list[Window], repinned: set[str]) -> None:
        if self.suite.scope != self.m.scope:
            raise self.differ("scope", f"the suite's scope is {self.suite.scope!r}, run "
                                       f"{self.m.id} recorded {self.m.scope!r}")
        specs = {x.name: x for x in self.suite.labels}
        for name, label in self.m.labels.items():
            if name not in specs:
                raise self.differ(f"labels.{name}", f"the suite has no label {name!r}")
            if name not in repinned:
                self.pin(specs[name], label.pin)
            self.values(f"labels.{name}.env", masked_env(specs[name].env), label.env)
            self.values(f"labels.{name}.pg_settings", specs[name].pg_settings,
                        label.pg_settings)
        blocks = {b.name: b for b in self.suite.blocks}
        for name in self.m.blocks or dict.fromkeys(w.block for w in measured):
            if name not in blocks:
                raise self.differ(f"blocks.{name}", f"the suite has no block {name!r}")
            self.block(blocks[name], [w for w in measured if w.block == name])

    def pin(self, spec: LabelSpec, pin: Pin) -> None:
        key = f"labels.{spec.name}"
        now = (("package", spec.package.strip()) if spec.package else
               ("git", pinned_repository(spec.git)) if spec.git else ("none", ""))
        then = {"package": ("package", pin.requirement), "git": ("git", pin.repository),
                "none": ("none", "")}[pin.kind]
        if now != then and not (pin.kind == "git" and spec.git
                                and same_repository(spec.git, pin.repository)):
            def say(kind: str, value: str) -> str:
                return {"package": f"package {value!r}", "none": "nothing",
                        "git": f"git {shown_repository(value)!r}"}[kind]
            field = now[0] if now[0] != "none" else then[0]  # the key the suite would set
            raise self.differ(f"{key}.{field}", f"the suite pins {say(*now)}, run "
                                                f"{self.m.id} recorded {say(*then)}")
        if pin.kind == "git" and spec.subdirectory != pin.subdirectory:
            raise self.differ(f"{key}.subdirectory", f"the suite installs "
                              f"{spec.subdirectory or '.'!r}, run {self.m.id} recorded "
                              f"{pin.subdirectory or '.'!r}")

    def values(self, key: str, now: Mapping[str, Any], then: Mapping[str, Any]) -> None:
        for name in sorted(set(now) | set(then)):
            if now.get(name) != then.get(name):
                raise self.differ(f"{key}.{name}", f"the suite sets {_shown(now.get(name))}, "
                                  f"run {self.m.id} recorded {_shown(then.get(name))}")

    def block(self, spec: BlockSpec | HttpBlockSpec, windows: list[Window]) -> None:
        key, rec = f"blocks.{spec.name}", self.m.block(spec.name)
        parameters = spec.parameters
        for field, now, then in (("metrics", tuple(spec.metrics), rec.metrics),
                                 ("parameters", parameters, rec.parameters)):
            if then and now != then:
                raise self.differ(f"{key}.{field}", f"the suite declares {', '.join(now)}, "
                                  f"run {self.m.id} recorded {', '.join(then)}")
        if not windows:
            return  # declared, never measured: nothing to compare
        cells = spec.cells() if isinstance(spec, BlockSpec) else [case.params
                                                                   for case in spec.cases]
        planned = {params_key(p) for p in cells}
        ran = {params_key(w.params) for w in windows}
        if planned != ran:
            plain = isinstance(spec, BlockSpec) and spec.parameters == ("clients",)
            self.cells(key, "clients" if plain else "cases", planned, ran)
        rounds = min(getattr(spec, "rounds", None) or self.m.method.rounds, self.m.method.rounds)
        if rounds != max(w.round for w in windows):
            raise self.differ(f"{key}.rounds", f"the suite runs it for {rounds} rounds, run "
                              f"{self.m.id} measured {max(w.round for w in windows)}")
        only = getattr(spec, "labels", ())
        labels = [n for n in self.m.labels if not only or n in only]
        if sorted(labels) != sorted({w.label for w in windows}):
            raise self.differ(f"{key}.labels", f"the suite runs it for {', '.join(labels)}, "
                              f"run {self.m.id} measured "
                              f"{', '.join(sorted({w.label for w in windows}))}")

    def cells(self, key: str, field: str, planned: set[str], ran: set[str]) -> None:
        def shown(cells: set[str]) -> str:
            if field == "clients":  # 'clients=8' each: the counts, in order
                return ", ".join(sorted((c.removeprefix("clients=") for c in cells), key=int))
            return "; ".join(sorted(cells))
        raise self.differ(f"{key}.{field}", f"the suite runs {field} {shown(planned)}, run "
                          f"{self.m.id} measured {shown(ran)}")

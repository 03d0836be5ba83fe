"""Synthetic archives: generated values written by the real writer, for tests and benchmarks.

Their scope is "synthetic" and their titles say so: they are never measurements.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from perfpages.archive.histogram import Latency
from perfpages.archive.manifest import Block, Label, Manifest, Method, Pin
from perfpages.archive.reader import FLOOR_LABEL, Run
from perfpages.archive.window import Window

EPOCH = datetime(2026, 11, 1, 10, 0, 0)
MACHINE = {"cpu": "Synthetic CPU (generated values)", "cores": 2, "memory_gib": 24.0,
           "kernel": "synthetic", "python": "3.11.7", "postgresql": "18.6",
           "pg_settings": {"shared_buffers": "128MB"}}


BLOCKS = {"callers": Block("callers", title="32 callers", metrics=("throughput", "p50", "p99")),
          "one-caller": Block("one-caller", title="One caller", metrics=("p50", "p99"))}


@dataclass
class Spec:
    """What to generate: per label a speed factor; per block its parameter sets."""

    run_id: str = "2026-11-01-synthetic-demo"
    title: str = "Synthetic demo run (generated values, not a measurement)"
    labels: dict[str, float] = field(default_factory=lambda: {"v1.0": 1.0, "v1.1": 1.08,
                                                              "v1.1 + cache": 1.25})
    blocks: dict[str, list[dict[str, str | int]]] = field(default_factory=lambda: {
        "callers": [{"call": "lookup", "callers": 32}, {"call": "page", "callers": 32}],
        "one-caller": [{"call": "lookup", "callers": 1}],
    })
    rounds: int = 5
    windows: int = 3  # 1 s windows per round and cell
    rate: float = 800.0  # requests a second for factor 1.0 (scaled by callers)
    noise: float = 0.03
    distinct: int = 200  # distinct latency values recorded per window (with counts)
    seed: int = 7
    floors: bool = True
    same: dict[str, str] = field(default_factory=dict)  # label -> the label it repeats (A/A)
    machine: dict[str, float] | None = None  # every measured window's `machine` figures
    preflight: str = ""  # "quiet" or "busy": a preflight record before each block


def _latency(rng: random.Random, requests: int, median_ms: float, distinct: int) -> Latency:
    """A lognormal distribution recorded as up to `distinct` values with counts."""
    lat = Latency()
    buckets = min(requests, distinct)
    if not buckets:
        return lat
    per, extra = divmod(requests, buckets)
    for i in range(buckets):
        value = median_ms * rng.lognormvariate(0.0, 0.35)
        lat.record_ms(value, per + (1 if i < extra else 0))
    return lat


def _pin(name: str, index: int) -> Pin:
    if index % 2 == 0:
        digest = f"{index:02d}" * 32
        return Pin("package", requirement=f"demo-service=={name.split()[0].lstrip('v')}",
                   version=name.split()[0].lstrip("v"),
                   artifacts={f"demo_service-{name.split()[0]}-py3-none-any.whl": digest})
    return Pin("git", repository="https://example.org/demo-service.git", ref=name.split()[0],
               commit=f"{index:x}" * 40)


def generate(results_dir: Path, spec: Spec | None = None) -> Run:
    """Write a complete synthetic run with the archive writer and return it."""
    from perfpages.archive.writer import (
        ArchiveWriter,  # the writer imports the reader: keep one direction
    )

    spec = spec or Spec()
    rng = random.Random(spec.seed)
    labels = {name: Label(name, _pin(name, i),
                          env={"DEMO_CACHE_TTL": "5"} if "cache" in name else {})
              for i, name in enumerate(spec.labels)}
    for name, original in spec.same.items():  # the same build under another name
        labels[name] = replace(labels[original], name=name, description=f"{original} again")
    manifest = Manifest(
        id=spec.run_id, suite="synthetic", title=spec.title, scope="synthetic",
        status="running", started=EPOCH.strftime("%Y-%m-%dT%H:%M:%SZ"),
        command="perfpages.testing.generate()",
        harness={"version": "synthetic", "commit": None}, labels=labels,
        method=Method(rounds=spec.rounds, order="rotate", seed=spec.seed, warmup_s=1,
                      window_s=1, min_rounds=min(spec.rounds, 5)),
        machine=MACHINE,
        blocks={name: BLOCKS.get(name, Block(name, title=name)) for name in spec.blocks},
    )
    clock = EPOCH
    names = list(spec.labels)
    with ArchiveWriter.create(results_dir, manifest) as writer:
        for block, param_sets in spec.blocks.items():
            if spec.preflight:
                _preflight(writer, block, clock, spec.preflight == "busy")
            for rnd in range(1, spec.rounds + 1):
                if spec.floors and rnd == 1:
                    clock = _floor(writer, rng, block, "before", clock)
                shift = (rnd - 1) % len(names)
                for label in names[shift:] + names[:shift]:
                    factor = spec.labels[label]
                    for params in param_sets:
                        callers = int(params.get("callers", 1))
                        for index in range(spec.windows):
                            speed = factor * (1 + rng.gauss(0, spec.noise))
                            rate = spec.rate * speed * (1 if callers > 1 else 0.25)
                            requests = max(int(rate), 0)
                            median_ms = 1000.0 * callers / max(rate, 1) if callers > 1 \
                                else 1.3 / speed
                            writer.append(Window(
                                block=block, label=label, round=rnd, window=index,
                                params=dict(params), start=clock.isoformat() + "Z",
                                duration_s=1.0, requests=requests, codes={"200": requests},
                                latency=_latency(rng, requests, median_ms, spec.distinct),
                                machine=dict(spec.machine) if spec.machine else None))
                            clock += timedelta(seconds=1)
            if spec.floors:
                clock = _floor(writer, rng, block, "after", clock)
        writer.finish("complete", ended=clock.isoformat() + "Z")
    from perfpages.archive.reader import open_run

    return open_run(results_dir / spec.run_id)


def _floor(writer: object, rng: random.Random, block: str, position: str,
           clock: datetime) -> datetime:
    tps = 40_000 * (1 + rng.gauss(0, 0.01))
    writer.append(Window(block=block, label=FLOOR_LABEL, round=0, kind="floor",  # type: ignore[attr-defined]
                         params={"position": position, "clients": 1},
                         start=clock.isoformat() + "Z", duration_s=1.0,
                         metrics={"tps": round(tps, 1)}))
    return clock + timedelta(seconds=1)


def _preflight(writer: Any, block: str, clock: datetime, busy: bool) -> None:
    """A preflight record as the runner writes it: quiet, or busy with a competing server."""
    from perfpages.archive import preflight
    from perfpages.run.preflight import reasons  # the runner's own rule

    found = [{"pid": 4242, "name": "postgres", "cpu_pct": 35.0, "why": "PostgreSQL"}] * busy
    record = {"time": clock.isoformat() + "Z", "block": block, "seconds": 2.0, "cores": 2,
              "load1": 1.9 if busy else 0.1, "busy_pct": 42.0 if busy else 3.0,
              "own_pct": 2.0, "others_pct": 40.0 if busy else 1.0, "steal_pct": 0.0,
              "processes": found, "waited_s": 60.0 if busy else 0.0, "checks": 13 if busy else 1}
    record["reasons"] = reasons(record, found)
    record["busy"] = bool(record["reasons"])
    path = writer.run_dir / preflight.PREFLIGHT_FILE
    old = path.read_text() if path.is_file() else ""
    writer.write_file(preflight.PREFLIGHT_FILE, old + preflight.dumps(record) + "\n")

"""Archived runs with NaN-prone values, written by the real archive writer: every metric of an
HTTP block including `errors`, which stays 0 → 0 in one call and goes 0 → 4 in another, a call
whose every round answered nothing (throughput 0 → 0, no latency), a round whose windows all
failed, a custom metric never measured, a pgbench floor of 0 tps. One run under the ranges rule
(archived before method v2) and one under the exact rule (method v2)."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from perfpages.archive.histogram import Latency
from perfpages.archive.manifest import Block, Label, Manifest, Method, Pin
from perfpages.archive.reader import FLOOR_LABEL
from perfpages.archive.window import Window
from perfpages.archive.writer import ArchiveWriter
from perfpages.testing import MACHINE

RANGES_RUN = "2026-11-20-synthetic-zeros"
EXACT_RUN = "2026-12-20-synthetic-zeros-v2"
METRICS = ("throughput", "p50", "p99", "max", "errors", "error_rate", "non_2xx",
           "failed_windows", "drops")
CALLS = ("lookup", "page", "stall")
EPOCH = datetime(2026, 11, 20, 10, 0, 0)


def _label(name: str, version: str) -> Label:
    return Label(name, Pin("package", requirement=f"demo=={version}", version=version,
                           artifacts={f"demo-{version}-py3-none-any.whl": "ef" * 32}))


def _window(label: str, rnd: int, call: str, clock: datetime) -> Window:
    """lookup: errors 0 everywhere; page: errors 0 → 4 in `changed`; stall: nothing answered."""
    start = clock.isoformat() + "Z"
    params = {"call": call, "callers": 8}
    if call == "stall":
        return Window(block="calls", label=label, round=rnd, params=params, start=start,
                      duration_s=1.0, requests=0, codes={}, metrics={"drops": None})
    if label == "changed" and rnd == 2 and call == "lookup":  # a round that failed outright
        return Window(block="calls", label=label, round=rnd, params=params, start=start,
                      duration_s=1.0, status="failed", error="subject exited (code 1)")
    requests = 400 + 10 * rnd
    errors = 4 if label == "changed" and call == "page" else 0
    latency = Latency()
    for i in range(requests - errors):
        latency.record_ms(2.0 + (i % 7) * 0.5, 1)
    return Window(block="calls", label=label, round=rnd, params=params, start=start,
                  duration_s=1.0, requests=requests, errors=errors,
                  codes={"200": requests - errors}, latency=latency, metrics={"drops": 0.0})


def write_zeros(results: Path, run_id: str = RANGES_RUN, *, exact: bool = False,
                rounds: int = 6) -> str:
    labels = {"base": _label("base", "1.0"), "changed": _label("changed", "1.1")}
    labels["base-again"] = Label("base-again", labels["base"].pin, description="base again")
    manifest = Manifest(
        id=run_id, suite="synthetic", title="Synthetic run of zeros (generated values)",
        scope="synthetic", status="running", started=EPOCH.strftime("%Y-%m-%dT%H:%M:%SZ"),
        command="tests/oddruns.py", harness={"version": "synthetic", "commit": None},
        labels=labels,
        method=Method(rounds=rounds, order="rotate", seed=3, warmup_s=1, window_s=1,
                      min_rounds=5, rule={"test": "wilcoxon", "alpha": 0.05} if exact else None),
        machine=MACHINE, blocks={"calls": Block("calls", title="calls", metrics=METRICS)})
    clock = EPOCH
    with ArchiveWriter.create(results, manifest) as writer:
        for position in ("before", "after") if not exact else ():
            writer.append(Window(block="calls", label=FLOOR_LABEL, round=0, kind="floor",
                                 window=0, start=clock.isoformat() + "Z",
                                 params={"position": position, "clients": 1},
                                 duration_s=1.0, metrics={"tps": 0.0}))
        for rnd in range(1, rounds + 1):
            for label in labels:
                for call in CALLS:
                    writer.append(_window(label, rnd, call, clock))
                    clock += timedelta(seconds=1)
        writer.finish("complete", ended=clock.isoformat() + "Z")
    return run_id


def write_all(results: Path) -> list[str]:
    return [write_zeros(results), write_zeros(results, EXACT_RUN, exact=True)]

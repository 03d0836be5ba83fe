"""An instructions block's case (`HttpBlockSpec(instructions=...)`): one window of a fixed number
of calls counted under callgrind (`perfpages.run.callgrind`), archived with its `instructions`
per call; round 1's profiles are kept under diagnostics/ (compressed when large, sealed with
the run) for `why()`'s functions that changed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from perfpages.archive.reader import path_part as slug
from perfpages.archive.window import Window, params_key
from perfpages.archive.writer import ArchiveWriter, utc_now
from perfpages.errors import PerfpagesError, clip
from perfpages.loadgen.spec import Load
from perfpages.run import callgrind
from perfpages.run.blocks import Session
from perfpages.run.service import Service
from perfpages.run.suite import HttpBlockSpec, HttpCase, HttpTurn

PROFILE = "callgrind"  # diagnostics/BLOCK/LABEL/r1-PARAMS.callgrind.N: one per process


def profile_path(block: str, label: str, params: str, index: int) -> str:
    return f"diagnostics/{block}/{slug(label)}/r1-{slug(params)}.{PROFILE}.{index}"


def case(session: Session, writer: ArchiveWriter, block: HttpBlockSpec, label: str, rnd: int,
         case: HttpCase, turn: HttpTurn, service: Service,
         load_of: Callable[[HttpCase, HttpTurn], Load], record: bool = True,
         attempt: int = 1) -> None:
    """Count one window of the case's calls and archive it (failed, with its reason, if a
    call failed or callgrind did not answer); nothing to count when not `record`."""
    spec = block.instructions
    if not record:
        return
    assert spec is not None and service.process is not None
    start = utc_now()
    try:
        load = load_of(case, turn)
        count = callgrind.window(callgrind.pgid_of(service.process.pid), _dir(service), load,
                                 spec, turn.seed)
        if count.failed:
            raise PerfpagesError(f"{count.failed} of {count.calls} calls failed",
                                 key=f"case {params_key(case.params)}",
                                 fix="read the subject's log")
    except PerfpagesError as exc:
        session.append(writer, Window(block.name, label, rnd, dict(case.params), start, 0.0,
                                      status="failed", error=clip(str(exc), 300), errors=1,
                                      attempt=attempt))
        return
    session.append(writer, Window(
        block.name, label, rnd, dict(case.params), start, count.duration_s,
        requests=count.calls, codes={"200": count.calls}, throughput=None,
        metrics={"instructions": round(count.per_call, 3),
                 "idle_instructions": round(count.idle_per_s, 1)}, attempt=attempt))
    if rnd == 1 and attempt == 1:
        for index, path in enumerate(count.files, 1):
            writer.write_file(profile_path(block.name, label, params_key(case.params), index),
                              path.read_bytes())
    for path in count.files:  # kept only in the archive: a long run would fill the disk
        path.unlink(missing_ok=True)


def _dir(service: Service) -> Path:
    """Where the subject's callgrind writes: the directory its command names."""
    for arg in service.spec.command:
        if arg.startswith("--callgrind-out-file="):
            return Path(arg.partition("=")[2]).parent
    raise PerfpagesError("the subject does not run under callgrind", key="instructions",
                         fix="report this: an instructions block's subject starts under it")

"""An instructions block's case (`HttpBlockSpec(instructions=...)`): one window of a fixed number
of calls counted under callgrind (`perfpages.run.callgrind`), archived with its `instructions`
per call; round 1's profiles are kept under diagnostics/ (compressed when large, sealed with
the run) for `why()`'s functions that changed. With `Instructions(postgres=True)` the label's
PostgreSQL server runs under callgrind too (`server_wrap`): `pg_instructions` per call beside,
its round-1 profiles kept as r1-PARAMS.pg.callgrind.N."""

from __future__ import annotations

import os
import pwd
import tempfile
from collections.abc import Callable
from pathlib import Path

from perfpages.archive.reader import path_part as slug
from perfpages.archive.window import Window, params_key
from perfpages.archive.writer import ArchiveWriter, utc_now
from perfpages.errors import PerfpagesError, clip
from perfpages.loadgen.spec import Load
from perfpages.run import callgrind
from perfpages.run.blocks import Session
from perfpages.run.postgres import EmbeddedServer, server_user
from perfpages.run.service import Service
from perfpages.run.suite import HttpBlockSpec, HttpCase, HttpTurn

PROFILE = "callgrind"  # diagnostics/BLOCK/LABEL/r1-PARAMS.callgrind.N: one per process


def profile_path(block: str, label: str, params: str, index: int, part: str = "") -> str:
    """`part`: "pg" for the PostgreSQL server's profiles, "" for the subject's."""
    kind = f"{part}.{PROFILE}" if part else PROFILE
    return f"diagnostics/{block}/{slug(label)}/r1-{slug(params)}.{kind}.{index}"


def server_wrap(session: Session, block: HttpBlockSpec) -> tuple[str, ...]:
    """What the block's PostgreSQL server runs under: callgrind when its instructions count
    the server too, writing to a directory of its own the server's user owns; else nothing."""
    if block.instructions is None or not block.instructions.postgres:
        return ()
    if session.clusters.dsn:
        raise PerfpagesError("Instructions(postgres=True) needs the run's own PostgreSQL "
                             "server, not --dsn's", key=f"blocks.{block.name}.instructions",
                             fix="drop postgres=True or --dsn")
    out = Path(tempfile.mkdtemp(prefix="perfpages-pgcg-"))
    session.clusters.owned.add(out)  # reaped if the run is killed
    out.chmod(0o755)
    user = server_user()
    if user:
        entry = pwd.getpwnam(user)
        os.chown(out, entry.pw_uid, entry.pw_gid)
    return callgrind.server_command(out)


def _server(session: Session) -> callgrind.Traced:
    """The running server started under callgrind (one server runs at a time)."""
    for srv in session.clusters.servers.values():
        if isinstance(srv, EmbeddedServer) and srv.wrap and srv.pid is not None:
            return callgrind.server(srv.pid, _dir(srv.wrap), srv.user)
    raise PerfpagesError("PostgreSQL does not run under callgrind", key="instructions",
                         fix="read the server log")


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
        pg = _server(session) if spec.postgres else None
        count = callgrind.window(callgrind.pgid_of(service.process.pid),
                                 _dir(service.spec.command), load, spec, turn.seed, pg)
        if count.failed:
            raise PerfpagesError(f"{count.failed} of {count.calls} calls failed",
                                 key=f"case {params_key(case.params)}",
                                 fix="read the subject's log")
    except PerfpagesError as exc:
        session.append(writer, Window(block.name, label, rnd, dict(case.params), start, 0.0,
                                      status="failed", error=clip(str(exc), 300), errors=1,
                                      attempt=attempt))
        return
    metrics: dict[str, float | None] = {"instructions": round(count.per_call, 3),
                                        "idle_instructions": round(count.idle_per_s, 1)}
    if count.pg is not None:
        metrics |= {"pg_instructions": round(count.pg.per_call, 3),
                    "pg_idle_instructions": round(count.pg.idle_per_s, 1)}
    session.append(writer, Window(
        block.name, label, rnd, dict(case.params), start, count.duration_s,
        requests=count.calls, codes={"200": count.calls}, throughput=None,
        metrics=metrics, attempt=attempt))
    for part, files in (("", count.files), ("pg", count.pg.files if count.pg else ())):
        if rnd == 1 and attempt == 1:
            for index, path in enumerate(files, 1):
                writer.write_file(profile_path(block.name, label, params_key(case.params),
                                               index, part), path.read_bytes())
        for path in files:  # kept only in the archive: a long run would fill the disk
            path.unlink(missing_ok=True)


def _dir(command: tuple[str, ...]) -> Path:
    """Where a command run under callgrind writes: the directory it names."""
    for arg in command:
        if arg.startswith("--callgrind-out-file="):
            return Path(arg.partition("=")[2]).parent
    raise PerfpagesError("the subject does not run under callgrind", key="instructions",
                         fix="report this: an instructions block's subject starts under it")

"""Sealing a complete run so that no instant shows "complete" without its seal; finishing the
seal of a run whose writer was killed while sealing it; the search for secrets before it.

The order, each step on disk (fsynced) before the next:

1. the final run.json (status complete, every other file's sha256) is staged beside run.json
   as `.run.json.*.tmp`;
2. seal.json is written (a temporary file, then a rename), covering the staged run.json;
3. the staged run.json replaces run.json (a rename), and the directory is fsynced;

then the writer removes its lock. run.json says `complete` only from step 3 on, when the seal
is already there. A kill after step 1 leaves a `running` run whose final run.json is staged
(and perhaps sealed): `bench.run --resume` re-checks every file against the staged checksums
and finishes steps 2 and 3 (`interrupted`, `recover`), without starting anything. A kill
before step 1 leaves an ordinary `running` run, which resume completes. Writers before this
order wrote run.json `complete` first and seal.json after: one killed in between left a
complete run without a seal and its lock file; resume re-checks its files against run.json's
checksums and seals it.

Before step 1 the writer searches every byte it wrote, a .gz's plain bytes included, for every
secret value it knows (`scan`): a run that holds one is never sealed.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from perfpages.archive import files, schema, seal
from perfpages.archive.manifest import Manifest
from perfpages.archive.secrets import Redactor
from perfpages.errors import ArchiveError

STAGED = f".{seal.RUN_FILE}.*.tmp"  # step 1's file (write_bytes_atomic's too, when killed)
STALE = ".*.tmp"  # any temporary file a killed writer left beside run.json


def _temporary(path: Path, data: bytes, durable: bool = True) -> Path:
    """`data` in a hidden file beside `path`, fsynced unless not `durable` (0644: archives are
    meant to be shared)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), 0o644)
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def write_bytes_atomic(path: Path, data: bytes, durable: bool = True) -> None:
    """Write next to the destination, fsync, then rename: readers never see half a file.
    `durable=False` skips the fsync, for what is rebuilt when lost (a checksummed cache)."""
    tmp = _temporary(path, data, durable)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, text: str, durable: bool = True) -> None:
    write_bytes_atomic(path, text.encode("utf-8"), durable)


def write_json_atomic(path: Path, data: Any) -> None:
    write_text_atomic(path, json_text(data))


def json_text(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def fsync_dir(folder: Path) -> None:
    """Make a rename durable: the directory entry, not only the file, must reach the disk."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # not every platform opens directories
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_json_durable(path: Path, data: Any) -> None:
    """write_json_atomic, then fsync the directory: the rename, too, survives a power cut."""
    write_json_atomic(path, data)
    fsync_dir(path.parent)


def scan(run_dir: Path, redactor: Redactor, final: dict[str, bytes]) -> str | None:
    """The first file (relative path) holding a secret value, a .gz searched in its plain bytes;
    `final` gives files by their bytes still to be written (run.json). None: no secret."""
    if not redactor.values:
        return None
    names, _ = seal.walk(run_dir)
    for name in [*final, *(n for n in names if n not in final)]:
        data = final[name] if name in final else b"".join(files.chunks(run_dir / name))
        if redactor.found(data):
            return name
    return None


def stage(run_dir: Path, manifest: Manifest) -> Path:
    """Step 1: the final run.json, whole and fsynced, beside the run.json it will replace."""
    return _temporary(run_dir / seal.RUN_FILE, json_text(manifest.to_json()).encode("utf-8"))


def complete(run_dir: Path, staged: Path, others: dict[str, str], sealed: bool = False) -> None:
    """Steps 2 and 3: seal the run with the staged run.json (unless `sealed` already), then put
    that run.json in place. `others`: the sha256 of every other file (the staged `files`)."""
    if not sealed:
        document = seal.document({**others, seal.RUN_FILE: seal.sha256_file(staged)})
        write_json_durable(run_dir / seal.SEAL_FILE, document)
    os.replace(staged, run_dir / seal.RUN_FILE)
    fsync_dir(run_dir)


def _staged_final(run_dir: Path) -> list[tuple[Path, Manifest]]:
    """Staged run.json files that are whole and say complete (a kill inside step 1 leaves a
    torn one, which is not)."""
    out = []
    for path in sorted(run_dir.glob(STAGED)):
        try:
            manifest = Manifest.from_json(schema.loads(seal.read_bounded(path), where=path), path)
        except (ArchiveError, ValueError, TypeError, OSError):
            continue
        if manifest.status == "complete" and manifest.id == run_dir.name:
            out.append((path, manifest))
    return out


def interrupted(run_dir: Path, manifest: Manifest) -> bool:
    """Whether the run's writer was killed while sealing it (see the module's docstring)."""
    if manifest.status == "complete":
        return (manifest.format_version >= seal.SEALED_SINCE and not
                (run_dir / seal.SEAL_FILE).exists() and (run_dir / seal.LOCK_FILE).exists())
    return manifest.status == "running" and bool(_staged_final(run_dir))


def _present(run_dir: Path) -> dict[str, str]:
    """sha256 of every file but run.json, seal.json and a killed writer's temporary ones."""
    staged = {p.name for p in run_dir.glob(STALE)}
    return {k: v for k, v in seal.archived_files(run_dir).items() if k not in staged}


def recover(run_dir: Path, manifest: Manifest) -> None:
    """Finish the seal of an `interrupted` run (the caller holds its lock): its files must be
    exactly those its final run.json lists (and its seal, if written, covers), else one line."""
    present = _present(run_dir)
    fix = (f"the run changed after its writer was killed: restore it from git, or archive a "
           f"new run (remove {seal.SEAL_FILE} to resume it as a running run)")
    if manifest.status == "complete":  # an older writer's order: run.json first
        if present != manifest.files:
            raise ArchiveError("its files differ from run.json's checksums", where=run_dir,
                               fix=fix)
        write_json_durable(run_dir / seal.SEAL_FILE, seal.contents(run_dir))
        return
    sealed = seal.read(run_dir) if (run_dir / seal.SEAL_FILE).exists() else None
    for path, final in _staged_final(run_dir):
        if final.files != present:
            continue
        if sealed is not None and sealed != {**present,
                                             seal.RUN_FILE: seal.sha256_file(path)}:
            continue
        complete(run_dir, path, present, sealed=sealed is not None)
        for stale in run_dir.glob(STALE):
            stale.unlink()
        return
    raise ArchiveError("its files differ from the checksums it was being sealed with",
                       where=run_dir, fix=fix)

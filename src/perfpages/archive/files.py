"""A run's files read back, plain or gzip-compressed, always bounded; the gzip the writer writes.

The writer stores large files under diagnostics/ and samples/ as `NAME.gz` (see
`perfpages.archive.writer.COMPRESS_ABOVE`); a reader asks for `NAME` and gets its bytes either
way. A .gz is read as a hostile file may be: its plain size is bounded, so a decompression bomb
is one ArchiveError naming the file (never a MemoryError), and a corrupt one is one line too.
"""

from __future__ import annotations

import os
import re
import struct
import zlib
from collections import deque
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from perfpages.archive import seal
from perfpages.archive.schema import one_line
from perfpages.errors import ArchiveError

GZ = ".gz"
# A run lives in git for good: level 9 stores the queryapigate run's 22 MB server log in 1.38 MB
# (16x) in 0.6 s; level 6 takes 0.24 s for 1.46 MB. Written once, cloned by everyone.
LEVEL = 9
# What a .gz may decompress to: the largest file of a real run is a 22 MB server log, ten times
# that is still a plausible log, while a bomb (1 GB of zeros is 1 MB compressed) stops here.
MAX_PLAIN_BYTES = 256 << 20
# What a reader loads whole (a summary, a samples CSV: a few MB); streamed reads (verify, a
# page's excerpt of a log) go to MAX_PLAIN_BYTES in constant memory.
MAX_READ_BYTES = 64 << 20
CHUNK = 1 << 20
# gzip magic, deflate, no flags (so no file name), mtime 0, XFL 2 (slowest), OS 255 (unknown):
# the same bytes in give the same .gz out, whatever the file was called and whenever written.
_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
_FIX = "restore it from git: a complete run is immutable"


def gzip_bytes(data: bytes) -> bytes:
    """`data` as one gzip member whose bytes depend on nothing but `data` (and zlib's deflate)."""
    deflate = zlib.compressobj(LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = deflate.compress(data) + deflate.flush()
    return _HEADER + body + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)


def path_part(text: str) -> str:
    """A label or parameter set as one safe path segment (diagnostics/BLOCK/<this>/…)."""
    return re.sub(r"[^A-Za-z0-9_.+-]+", "-", text).strip("-") or "x"


def plain_name(name: str) -> str:
    """The name a reader asks for: `server.log` for `server.log.gz`."""
    return name[: -len(GZ)] if name.endswith(GZ) else name


def locate(run_dir: Path, relative: str) -> Path | None:
    """Where `relative` is stored: as itself, or compressed as `relative.gz`; None if neither."""
    for path in (run_dir / relative, run_dir / (relative + GZ)):
        if path.is_file() or path.is_symlink():  # a link is refused when it is read
            return path
    return None


def names(run_dir: Path, pattern: str) -> list[str]:
    """The plain names (relative POSIX paths) of the files matching a glob `pattern`, stored
    plain or compressed: `names(run, "diagnostics/*/*/summary.json")`."""
    found = {p for glob in (pattern, pattern + GZ) for p in run_dir.glob(glob) if p.is_file()}
    return sorted({plain_name(p.relative_to(run_dir).as_posix()) for p in found})


def _too_large(path: Path, limit: int) -> ArchiveError:
    what = "decompresses to" if path.name.endswith(GZ) else "is"
    # Past MAX_PLAIN_BYTES no run of perfpages' wrote it; below, it is only too big to load whole.
    fix = ("this is not a file perfpages wrote: " + _FIX if limit >= MAX_PLAIN_BYTES else
           "too large to load whole: read it with `zcat`, or from the run page's excerpt")
    return ArchiveError(f"{what} more than {limit >> 20} MiB", where=one_line(str(path)),
                        fix=fix)


def _corrupt(path: Path, why: str) -> ArchiveError:
    return ArchiveError(f"not a readable gzip file ({why})", where=one_line(str(path)), fix=_FIX)


def _inflate(fh: BinaryIO, path: Path, limit: int) -> Iterator[bytes]:
    """The plain bytes of a gzip stream (one member or several, as `zcat` reads them), in
    pieces of at most CHUNK: memory stays bounded whatever the ratio."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    pending, total, exhausted, started = b"", 0, False, False
    while True:
        if not pending and not exhausted:
            pending = fh.read(CHUNK)
            exhausted = not pending
        if exhausted and not pending and (inflater.eof or not started):
            break
        if inflater.eof:  # another member follows
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out = inflater.decompress(pending, CHUNK)
        except zlib.error as exc:
            raise _corrupt(path, str(exc).removeprefix("Error -3 while decompressing data: ")
                           ) from None
        started = True
        pending = inflater.unused_data if inflater.eof else inflater.unconsumed_tail
        total += len(out)
        if total > limit:
            raise _too_large(path, limit)
        if out:
            yield out
        elif exhausted and not pending and not inflater.eof:
            raise _corrupt(path, "cut short")
    if not started:
        raise _corrupt(path, "empty")


def chunks(path: Path, limit: int = MAX_PLAIN_BYTES) -> Iterator[bytes]:
    """The plain bytes of a stored file in pieces, a .gz inflated as it is read; at most
    `limit` bytes, or one ArchiveError naming the file. FileNotFoundError as is."""
    with seal.open_regular(path) as fh:
        if path.name.endswith(GZ):
            yield from _inflate(fh, path, limit)
            return
        total = 0
        for piece in iter(lambda: fh.read(CHUNK), b""):
            total += len(piece)
            if total > limit:
                raise _too_large(path, limit)
            yield piece


def read_bytes(run_dir: Path, relative: str, limit: int = MAX_READ_BYTES) -> bytes:
    """The plain bytes of `relative` (stored as itself or as `relative.gz`); FileNotFoundError
    when it is neither."""
    path = locate(run_dir, relative)
    if path is None:
        raise FileNotFoundError(run_dir / relative)
    data = bytearray()
    for piece in chunks(path, limit):
        data += piece
    return bytes(data)


def read_text(run_dir: Path, relative: str, limit: int = MAX_READ_BYTES) -> str:
    """`read_bytes` as UTF-8 text (a stray byte shows as U+FFFD rather than failing a read)."""
    return read_bytes(run_dir, relative, limit).decode("utf-8", errors="replace")


def size_text(n: float) -> str:
    """A size as pages and commands show it: 812 B, 4.2 KiB, 21.3 MiB."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{int(n)} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


@dataclass
class Size:
    """What a run holds: its files, their bytes on disk and once every .gz is decompressed."""

    files: int = 0
    stored: int = 0
    plain: int = 0
    compressed: int = 0  # how many files are .gz

    def __add__(self, other: Size) -> Size:
        return Size(self.files + other.files, self.stored + other.stored,
                    self.plain + other.plain, self.compressed + other.compressed)

    def text(self) -> str:
        """`48 files · 46.3 MiB`, and `(31.5 MiB uncompressed)` when some are compressed."""
        shown = f"{self.files} files · {size_text(self.stored)}"
        return shown + (f" ({size_text(self.plain)} uncompressed)" if self.compressed else "")


def check(run_dir: Path, skip: Collection[str] = ()) -> tuple[Size, list[ArchiveError]]:
    """The run's size, and a problem for every .gz that does not decompress within
    MAX_PLAIN_BYTES (those named in `skip`, already reported, are only counted)."""
    listed, _ = seal.walk(run_dir)  # links and special files: seal.check reports them
    size, problems = Size(), []
    for name in listed:
        path = run_dir / name
        try:
            stored = os.lstat(path).st_size
        except OSError:
            continue
        size += Size(1, stored, stored, int(name.endswith(GZ)))
        if not name.endswith(GZ) or one_line(str(path)) in skip:
            continue
        try:
            size.plain += sum(len(piece) for piece in chunks(path)) - stored
        except ArchiveError as exc:
            problems.append(exc)
        except FileNotFoundError:
            continue
    return size, problems


@dataclass
class Excerpt:
    """The first and last lines of a long file, for a page that cannot show all of it."""

    plain_bytes: int = 0
    lines: int = 0
    head: list[str] = field(default_factory=list)
    tail: list[str] = field(default_factory=list)
    cut: bool = False  # whether a line was longer than `width` (and ends with "…")

    @property
    def left_out(self) -> int:
        return self.lines - len(self.head) - len(self.tail)


def excerpt(path: Path, keep: int, width: int) -> Excerpt:
    """The first and last `keep` lines of a stored file (each cut to `width` characters),
    read in one bounded pass: memory holds 2 × keep lines, whatever the file's size. Lines
    between are counted and measured, never decoded: a log holds millions."""
    out = Excerpt()
    tail: deque[bytes] = deque(maxlen=keep)
    bound = 4 * width + 4  # UTF-8 is at most 4 bytes a character: enough to cut at `width`

    def text(raw: bytes) -> str:
        return raw.decode("utf-8", errors="replace").rstrip("\r")

    def take(lines: list[bytes]) -> None:
        out.lines += len(lines)
        room = max(keep - len(out.head), 0)
        out.head += [text(raw[:bound]) for raw in lines[:room]]
        tail.extend(raw[:bound] for raw in lines[max(room, len(lines) - keep):])
        if not out.cut and max(map(len, lines), default=0) > width:  # bytes ≥ characters
            out.cut = any(len(text(raw[:bound])) > width for raw in lines if len(raw) > width)

    line = b""
    for chunk in chunks(path):
        out.plain_bytes += len(chunk)
        pieces = chunk.split(b"\n")
        if len(pieces) > 1:
            pieces[0] = line + pieces[0][: bound - len(line)]
            take(pieces[:-1])
            line = b""
        if len(line) < bound:
            line += pieces[-1][: bound - len(line)]
    if line:
        take([line])
    out.head = [_cut(t, width) for t in out.head]
    out.tail = [_cut(text(raw), width) for raw in tail]
    return out


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width] + "…"

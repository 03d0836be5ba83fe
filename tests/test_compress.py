"""Archive size: large diagnostics and samples are stored gzip-compressed (NAME.gz), sealed as
they are on disk, read back transparently and within bounds, verified, sized by `bench verify`,
and readable on the run page; runs archived before stay as they were."""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import re
import shutil
import subprocess
import tracemalloc
import zlib
from dataclasses import replace
from pathlib import Path

import pytest

from perfpages.archive import diagnostics, files, writer
from perfpages.archive.reader import open_run, read_manifest, verify
from perfpages.archive.secrets import Redactor
from perfpages.archive.writer import ArchiveWriter
from perfpages.errors import ArchiveError
from perfpages.site import runpages
from perfpages.testing import Spec, generate
from sites import build_site, perfpages

ROOT = Path(__file__).resolve().parent.parent
LEGACY = ROOT / "tests" / "fixtures" / "results" / "2026-11-01-synthetic-demo"
RUN = "2026-11-30-compressed"
LOG = "".join(f"2026-11-30 11:33:{i % 60:02d} INFO GET /item?id={i} 200 {i * 7 % 13} ms\n"
              for i in range(12_000))  # ~700 KB, over the 256 KiB threshold
CSV = "offset_s,latency_ms,status\n" + "".join(f"{i / 1000:.3f},{1 + i % 9 / 10:.3f},200\n"
                                           for i in range(20_000))
SUMMARY = {"database": {"buffer_hit_ratio": 0.98, "temp_files": 0, "temp_bytes": 0,
                        "blk_read_time": 1.5},
           "statements": {"by_total_time": [{"total_ms": 12.5, "mean_ms": 0.1, "calls": 125,
                                             "query": f"SELECT {i} FROM items"}
                                            for i in range(4000)]}}  # > 256 KiB of JSON
SVG = '<svg xmlns="http://www.w3.org/2000/svg">' + "<rect/>" * 50_000 + "</svg>\n"


def demo(results: Path) -> ArchiveWriter:
    """A writer for a small synthetic run, its windows appended, ready for files and finish."""
    source = generate(results / ".source", Spec(rounds=2, windows=1, distinct=5))
    w = ArchiveWriter.create(results, replace(source.manifest, id=RUN, files={}))
    for window in source.windows:
        w.append(window)
    shutil.rmtree(results / ".source")
    return w


@pytest.fixture(scope="module")
def compressed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A complete run with large files written through the writer and one beside it."""
    results = tmp_path_factory.mktemp("results")
    w = demo(results)
    w.write_file("diagnostics/callers/v1.0/server.log", LOG)
    w.write_file("samples/callers/v1.0/r1.csv", CSV)
    w.write_file("diagnostics/callers/v1.0/summary.json", json.dumps(SUMMARY, indent=2))
    w.write_file("diagnostics/profile/v1.0/flamegraph.svg", SVG)
    w.write_file("diagnostics/callers/v1.0/small.json", '{"calls": 3}\n')
    subject = w.run_dir / "diagnostics/callers/v1.1/server.log"  # as a subject writes its log
    subject.parent.mkdir(parents=True)
    for turn in range(2):  # appended turn after turn: stays plain until the run is final
        with subject.open("a") as fh:
            fh.write(f"turn {turn}\n" + LOG)
        assert not subject.with_name("server.log.gz").exists()
    w.finish("complete")
    return w.run_dir


def test_large_files_are_stored_compressed_and_sealed_as_on_disk(compressed: Path) -> None:
    gz = {p.relative_to(compressed).as_posix() for p in compressed.rglob("*.gz")}
    assert gz == {"diagnostics/callers/v1.0/server.log.gz", "samples/callers/v1.0/r1.csv.gz",
                  "diagnostics/callers/v1.0/summary.json.gz",
                  "diagnostics/profile/v1.0/flamegraph.svg.gz",
                  "diagnostics/callers/v1.1/server.log.gz"}
    for name in gz:  # the plain file is gone: only what is sealed is on disk
        assert not (compressed / files.plain_name(name)).exists()
    assert (compressed / "diagnostics/callers/v1.0/small.json").read_text() == '{"calls": 3}\n'
    assert (compressed / "run.json").read_bytes().startswith(b"{")  # run.json, results plain
    assert (compressed / "results.jsonl").read_bytes().startswith(b'{"')
    seal = json.loads((compressed / "seal.json").read_text())["files"]
    listed = read_manifest(compressed).files
    for name in gz:
        digest = hashlib.sha256((compressed / name).read_bytes()).hexdigest()
        assert seal[name] == listed[name] == digest
        assert files.plain_name(name) not in seal
    assert verify(compressed) == []
    # What `zcat` gives back is what was written (the subject's log: both turns, in order).
    log = subprocess.run(["zcat", str(compressed / "diagnostics/callers/v1.0/server.log.gz")],
                         capture_output=True, check=True).stdout
    assert log == LOG.encode()
    both = files.read_text(compressed, "diagnostics/callers/v1.1/server.log")
    assert both == f"turn 0\n{LOG}turn 1\n{LOG}"
    assert files.read_text(compressed, "samples/callers/v1.0/r1.csv") == CSV


def test_the_same_content_gives_the_same_bytes(compressed: Path, tmp_path: Path) -> None:
    data = (compressed / "diagnostics/callers/v1.0/server.log.gz").read_bytes()
    assert data[3] == 0 and data[4:8] == b"\0\0\0\0"  # no file name, no mtime in the header
    assert gzip.decompress(data) == LOG.encode()
    other = demo(tmp_path)  # another run, another day, another path: the same bytes
    other.write_file("diagnostics/elsewhere/x.log", LOG)
    other.finish("complete")
    assert (tmp_path / RUN / "diagnostics/elsewhere/x.log.gz").read_bytes() == data


def test_readers_get_the_plain_text_back(compressed: Path) -> None:
    assert files.names(compressed, "diagnostics/*/*/summary.json") == [
        "diagnostics/callers/v1.0/summary.json"]
    lines = diagnostics.summary_lines(compressed)
    assert lines[0].startswith("callers / v1.0: buffer hit ratio 98.00%")
    assert any("SELECT 0 FROM items" in line for line in lines)
    report = perfpages("bench", "report", "--results", str(compressed.parent), "--run", RUN)
    assert report.returncode == 0, report.stderr
    assert "callers / v1.0: buffer hit ratio 98.00%" in report.stdout


def test_a_partial_run_keeps_its_log_plain_and_resuming_compresses_all_of_it(
        tmp_path: Path) -> None:
    w = demo(tmp_path)
    log = w.run_dir / "diagnostics/calls/v1.0/server.log"
    log.parent.mkdir(parents=True)
    log.write_text(LOG)
    w.finish("partial")  # the subject will go on appending to it when the run resumes
    assert log.is_file() and not log.with_name("server.log.gz").exists()
    resumed = ArchiveWriter.resume(w.run_dir)
    with log.open("a") as fh:
        fh.write("resumed\n")
    resumed.finish("complete")
    assert not log.exists() and verify(w.run_dir) == []
    assert files.read_text(w.run_dir, "diagnostics/calls/v1.0/server.log") == LOG + "resumed\n"


def test_a_large_file_written_plain_beside_its_gz_wins(tmp_path: Path) -> None:
    """What a compression interrupted between its rename and its unlink leaves: both, whole."""
    w = demo(tmp_path)
    w.write_file("diagnostics/calls/a.log", LOG)
    (w.run_dir / "diagnostics/calls/a.log").write_text(LOG + "last\n")
    (w.run_dir / "diagnostics/calls/.a.log.gz.x1y2.tmp").write_bytes(b"half")
    w.finish("complete")
    assert verify(w.run_dir) == [] and not (w.run_dir / "diagnostics/calls/a.log").exists()
    assert files.read_text(w.run_dir, "diagnostics/calls/a.log") == LOG + "last\n"
    assert not list(w.run_dir.rglob("*.tmp"))


def test_a_tampered_gz_fails_verify_naming_it(compressed: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / RUN
    shutil.copytree(compressed, run_dir)
    target = run_dir / "samples/callers/v1.0/r1.csv.gz"
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0xFF
    target.write_bytes(bytes(data))
    problems = [str(p) for p in verify(run_dir)]
    assert problems == [f"{target}: checksum mismatch (the file changed after the run was "
                        "complete) — restore it from git: a complete run is immutable"]
    done = perfpages("bench", "verify", "--results", str(tmp_path))
    assert done.returncode == 1 and done.stdout == "1 run verified, 1 with problems, 0 unsealed\n"
    assert done.stderr == f"error: {problems[0]}\n"


def _partial(tmp_path: Path) -> Path:
    w = demo(tmp_path)
    w.finish("partial")  # unsealed: only the decompression check can tell a bad .gz
    return w.run_dir


def test_a_corrupt_gz_is_one_line_naming_it(tmp_path: Path) -> None:
    run_dir = _partial(tmp_path)
    good = files.gzip_bytes(LOG.encode())
    cases = {"cut.log.gz": good[:-100], "flipped.log.gz": good[:500] + b"x" + good[501:],
             "junk.log.gz": b"not gzip at all", "empty.log.gz": b""}
    for name, data in cases.items():
        (run_dir / "diagnostics" / name).write_bytes(data)
    problems = sorted(str(p) for p in verify(run_dir))
    assert len(problems) == len(cases)
    for line, name in zip(problems, sorted(cases), strict=True):
        assert re.fullmatch(rf"{run_dir}/diagnostics/{name}: not a readable gzip file "
                            r"\([^)]+\) — restore it from git: a complete run is immutable", line)
    with pytest.raises(ArchiveError, match=r"cut\.log\.gz: not a readable gzip file \(cut short"):
        files.read_text(run_dir, "diagnostics/cut.log")


def test_a_decompression_bomb_is_refused_in_one_line_without_memory(tmp_path: Path) -> None:
    run_dir = _partial(tmp_path)
    zeros = zlib.compressobj(9, zlib.DEFLATED, 31)
    member = zeros.compress(bytes(16 << 20)) + zeros.flush()  # 16 MiB of zeros: 16 KB
    bomb = run_dir / "diagnostics/bomb.log.gz"
    with bomb.open("wb") as fh:  # 64 members, as `zcat` reads them: 1 GiB of zeros
        for _ in range(64):
            fh.write(member)
    assert bomb.stat().st_size < 2 << 20
    tracemalloc.start()
    try:
        problems = verify(run_dir)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [str(p) for p in problems] == [
        f"{bomb}: decompresses to more than 256 MiB — this is not a file perfpages wrote: "
        "restore it from git: a complete run is immutable"]
    assert peak < 32 << 20  # inflated a piece at a time, never held
    with pytest.raises(ArchiveError, match=r"bomb\.log\.gz: decompresses to more than 64 MiB"):
        files.read_text(run_dir, "diagnostics/bomb.log")
    single = tmp_path / "single.gz"  # one member, inflated past the bound within it
    single.write_bytes(member)
    with pytest.raises(ArchiveError, match=r"single\.gz: decompresses to more than 1 MiB"):
        list(files.chunks(single, limit=1 << 20))
    done = perfpages("bench", "verify", "--results", str(tmp_path))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [f"error: {problems[0]}"]


def test_verify_reports_each_runs_size_and_a_total(compressed: Path, tmp_path: Path) -> None:
    shutil.copytree(compressed, tmp_path / RUN)
    shutil.copytree(LEGACY, tmp_path / LEGACY.name)
    size = verify(tmp_path / RUN).size
    assert size is not None and size.compressed == 5 and size.files == 9
    assert size.plain - size.stored == sum(
        len(gzip.decompress(p.read_bytes())) - p.stat().st_size
        for p in (tmp_path / RUN).rglob("*.gz"))
    done = perfpages("bench", "verify", "--results", str(tmp_path))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert re.fullmatch(rf"ok: {LEGACY.name} \(complete\) · 2 files · [\d.]+ KiB", lines[0])
    assert re.fullmatch(rf"ok: {RUN} \(complete\) · 9 files · [\d.]+ KiB "
                        r"\([\d.]+ MiB uncompressed\)", lines[2]), lines
    assert re.fullmatch(r"total: 2 runs · 11 files · [\d.]+ KiB \([\d.]+ MiB uncompressed\)",
                        lines[-2])
    assert lines[-1] == f"2 runs verified, 1 unsealed: {LEGACY.name}"
    one = perfpages("bench", "verify", "--results", str(tmp_path), "--run", RUN)
    assert one.stdout == lines[2] + "\n"  # one run: no total


def test_the_repositorys_runs_verify_as_before() -> None:
    done = perfpages("bench", "verify", "--results", str(ROOT / "results"))
    assert done.returncode == 0, done.stderr
    oks = [line for line in done.stdout.splitlines() if line.startswith("ok: ")]
    # The runs archived before compression existed hold no .gz, and still verify.
    legacy = [line for line in oks if line.startswith("ok: 2026-11-30-")]
    assert len(legacy) == 3 and len(oks) == len(list((ROOT / "results").iterdir()))
    assert all(re.search(r" · \d+ files · [\d.]+ (B|KiB|MiB)$", line) for line in legacy)
    assert not runpages.readable(open_run(LEGACY))


def test_the_run_page_lists_compressed_files_and_shows_them_readable(
        compressed: Path, tmp_path: Path) -> None:
    for attempt in ("cold", "cached"):  # the second build reads the page and copies cached
        site, _ = build_site(tmp_path / "project", {"index.md": "# x\n"}, compressed.parent)
        page = (site / "runs" / RUN / "index.html").read_text()
        folder = site / "runs" / RUN / "diagnostics/callers/v1.0"
        assert (folder / "server.log.gz").read_bytes() == \
            (compressed / "diagnostics/callers/v1.0/server.log.gz").read_bytes(), attempt
        assert not (folder / "server.log").exists()
        excerpt = (folder / "server.log.excerpt.txt").read_text()
        lines = LOG.splitlines()
        assert excerpt.startswith("diagnostics/callers/v1.0/server.log: the first 200 and the "
                                  "last 200 of its 12,000 lines")
        assert "`zcat server.log.gz | less`" in excerpt.splitlines()[0]
        assert "\n".join(lines[:200]) in excerpt and "\n".join(lines[-200:]) in excerpt
        assert "[… 11,600 lines left out …]" in excerpt and lines[200] not in excerpt
        assert len(excerpt) < 40_000  # not the 700 KB of the log
        plain = len(LOG)
        assert re.search(r'server\.log\.gz</a> \(<a href="diagnostics/callers/v1\.0/server\.log'
                         r'\.excerpt\.txt">first and last 200 lines</a>\)', page), attempt
        assert f"({runpages._size(plain)} uncompressed)" in page
        svg = site / "runs" / RUN / "diagnostics/profile/v1.0/flamegraph.svg"
        assert svg.read_text() == SVG  # an image is shown whole
        assert 'flamegraph.svg">view</a>' in page


def test_secrets_never_survive_inside_a_gz(tmp_path: Path) -> None:
    w = demo(tmp_path)
    w.redactor = Redactor({"hunter2-secret"})
    w.write_file("diagnostics/calls/a.log", LOG + "password=hunter2-secret\n")
    dropped = w.run_dir / "diagnostics/calls/b.log.gz"  # a .gz a subject left there itself
    dropped.write_bytes(gzip.compress(b"token hunter2-secret\n" + LOG.encode()))
    w.finish("complete")
    for path in w.run_dir.rglob("*.gz"):
        plain = gzip.decompress(path.read_bytes())
        assert b"hunter2-secret" not in plain and b"***" in plain, path
    assert verify(w.run_dir) == []


def test_the_threshold_is_stated_and_applies_under_diagnostics_and_samples_only() -> None:
    assert writer.COMPRESS_ABOVE == 256 << 10
    big = writer.COMPRESS_ABOVE + 1
    assert writer.compressible("diagnostics/x/server.log", big)
    assert writer.compressible("samples/x/r1.csv", big)
    assert not writer.compressible("diagnostics/x/server.log", writer.COMPRESS_ABOVE)
    assert not writer.compressible("results.jsonl", big)
    assert not writer.compressible("diagnostics/x/server.log.gz", big)


def test_an_excerpt_is_bounded_however_long_its_lines(tmp_path: Path) -> None:
    one = tmp_path / "one-line.json.gz"  # 8 MB on one line, then two short ones
    one.write_bytes(files.gzip_bytes(b"[" + b"1," * (4 << 20) + b"1]\nsecond\r\nthird"))
    ex = files.excerpt(one, keep=2, width=50)
    assert (ex.lines, ex.left_out, ex.cut) == (3, 0, True)
    assert ex.head == [("[" + "1," * 25)[:50] + "…", "second"] and ex.tail == ["third"]
    assert ex.plain_bytes == 1 + 2 * (4 << 20) + 2 + 1 + 8 + 5


VERBOSE = '''
    def log_message(self, format: str, *args: object) -> None:  # a line per request, ~1 KB
        sys.stderr.write(f"{self.address_string()} {format % args} {self.headers!r} "
                         + "detail " * 120 + "\\n")
'''


@pytest.mark.postgres
def test_a_real_run_whose_subject_logs_every_request(tmp_path: Path) -> None:
    bench = tmp_path / "bench"
    shutil.copytree(ROOT / "benchmarks" / "tinyhttp", bench / "tinyhttp")
    shutil.copy(ROOT / "benchmarks" / "tinyhttp.py", bench / "tinyhttp.py")
    server = bench / "tinyhttp" / "server.py"
    quiet = "    def log_message(self, *args: object) -> None:\n        pass\n"
    assert quiet in server.read_text()
    server.write_text(server.read_text().replace(quiet, VERBOSE))
    results = tmp_path / "results"
    done = perfpages("bench", "run", "--suite", "tinyhttp", "--blocks", "calls", "--rounds", "1",
                     "--suites", str(bench), "--results", str(results))
    assert done.returncode == 0, done.stderr
    (run_dir,) = [p for p in results.iterdir() if p.is_dir()]
    log = run_dir / "diagnostics/calls/fast/server.log.gz"
    assert log.is_file() and not log.with_suffix("").exists()
    assert read_manifest(run_dir).files[log.relative_to(run_dir).as_posix()] == \
        hashlib.sha256(log.read_bytes()).hexdigest()
    text = files.read_text(run_dir, "diagnostics/calls/fast/server.log")
    assert len(text) > writer.COMPRESS_ABOVE and '"GET /item?id=' in text
    checked = perfpages("bench", "verify", "--results", str(results))
    assert checked.returncode == 0, checked.stderr
    assert re.fullmatch(rf"ok: {run_dir.name} \(complete\) · \d+ files · [\d.]+ KiB "
                        r"\([\d.]+ (KiB|MiB) uncompressed\)\n1 run verified, 0 unsealed\n",
                        checked.stdout)
    assert diagnostics.summary_lines(run_dir)  # the collected summaries read as before
    site, _ = build_site(tmp_path / "project", {"index.md": "# x\n"}, results)
    page = (site / "runs" / run_dir.name / "index.html").read_text()
    assert "server.log.gz</a> (<a href=" in page
    excerpt = site / "runs" / run_dir.name / "diagnostics/calls/fast/server.log.excerpt.txt"
    assert '"GET /item?id=' in excerpt.read_text() and "listening" in excerpt.read_text()


@pytest.mark.parametrize("seed", range(4))
def test_an_excerpt_is_the_first_and_last_lines_of_the_file(tmp_path: Path, seed: int) -> None:
    """Across chunk boundaries, with long, multibyte and \\r-ended lines: the excerpt holds what
    splitting the whole file gives (only head and tail lines are decoded)."""
    rng = random.Random(seed)
    words = ["a", "statement", "é", "日本", "x" * 70, "\r", "y" * 3000]
    lines = ["".join(rng.choice(words) for _ in range(rng.randint(0, 4 if seed % 2 else 2)))
             for _ in range(rng.choice([3, 150_000, 400_000]))]
    data = "\n".join(lines).encode() + (b"\n" if seed < 2 else b"")
    path = tmp_path / "log.txt.gz"
    path.write_bytes(files.gzip_bytes(data))
    ex = files.excerpt(path, keep=5, width=60)
    split = data.decode().split("\n")
    texts = [line.rstrip("\r") for line in (split[:-1] if split[-1] == "" else split)]
    shown = [t if len(t) <= 60 else t[:60] + "…" for t in texts]
    assert (ex.lines, ex.plain_bytes) == (len(texts), len(data))
    assert ex.head == shown[:5] and ex.tail == shown[5:][-5:]
    assert ex.cut == any(len(t) > 60 for t in texts)

"""Every malformed or hostile archive: one line naming the file and line or key, exit 1,
nothing changed. Each case damages a copy of a sealed synthetic run written by the real writer;
"resealed" cases then recompute every checksum and the seal, as a tool that wrote a bad archive
consistently would, so that only the reader's own checks can object."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from hdrh.histogram import HdrHistogram
from rich.console import Console

from perfpages.archive import seal
from perfpages.archive.files import gzip_bytes
from perfpages.archive.reader import archived_files
from perfpages.cli import console

ROOT = Path(__file__).resolve().parent.parent


def snapshot(run_dir: Path) -> dict[str, str]:
    """Every entry's bytes (or link target): links are listed, never followed."""
    out = {}
    for folder, dirs, files in os.walk(run_dir):
        for name in sorted(dirs + files):
            path = Path(folder) / name
            key = path.relative_to(run_dir).as_posix()
            if path.is_symlink():
                out[key] = "-> " + os.readlink(path)
            elif path.is_file():
                out[key] = hashlib.sha256(path.read_bytes()).hexdigest()
            elif not path.is_dir():
                out[key] = "special"
    return out


def lines(run_dir: Path) -> list[str]:
    return (run_dir / "results.jsonl").read_text().splitlines(keepends=True)


def write_lines(run_dir: Path, new: list[str]) -> None:
    (run_dir / "results.jsonl").write_text("".join(new))


def edit_manifest(run_dir: Path, change: Callable[[dict], None]) -> None:
    data = json.loads((run_dir / "run.json").read_text())
    change(data)
    (run_dir / "run.json").write_text(json.dumps(data, indent=2))


def reseal(run_dir: Path) -> None:
    """Recompute the checksums and the seal, as a tool that wrote a bad archive consistently
    would."""
    edit_manifest(run_dir, lambda d: d.__setitem__("files", archived_files(run_dir)))
    (run_dir / "seal.json").write_text(json.dumps(seal.contents(run_dir)))


def truncate_line(run_dir: Path) -> None:
    rows = lines(run_dir)
    rows[4] = rows[4][:40] + "\n"
    write_lines(run_dir, rows)
    reseal(run_dir)


def edit_window(run_dir: Path, index: int, key: str, value: object) -> None:
    """Set one key of one window, then reseal: only the schema or the reader can object."""
    rows = lines(run_dir)
    data = json.loads(rows[index])
    data[key] = value
    rows[index] = json.dumps(data) + "\n"
    write_lines(run_dir, rows)
    reseal(run_dir)


def edit_latency(run_dir: Path, index: int, key: str, value: object) -> None:
    rows = lines(run_dir)
    data = json.loads(rows[index])
    data["latency"][key] = value
    edit_window(run_dir, index, "latency", data["latency"])


def raw_line(run_dir: Path, index: int, old: str, new: str) -> None:
    """Replace text inside one line (for what json.dumps would never write), then reseal."""
    rows = lines(run_dir)
    assert old in rows[index]
    rows[index] = rows[index].replace(old, new, 1)
    write_lines(run_dir, rows)
    reseal(run_dir)


def drop(run_dir: Path, unwanted: Callable[[dict], bool]) -> None:
    """Remove the windows `unwanted` picks, then reseal: a consistent but incomplete run."""
    write_lines(run_dir, [r for r in lines(run_dir) if not unwanted(json.loads(r))])
    reseal(run_dir)


def wrong_type(run_dir: Path) -> None:
    edit_window(run_dir, 6, "round", "one")


def duplicate_window(run_dir: Path) -> None:
    rows = lines(run_dir)
    write_lines(run_dir, [*rows[:9], rows[3], *rows[9:]])
    reseal(run_dir)


def undeclared_label(run_dir: Path) -> None:
    edit_window(run_dir, 2, "label", "v9")


def empty_run(run_dir: Path) -> None:
    write_lines(run_dir, [])
    reseal(run_dir)


def changed_value(run_dir: Path) -> None:
    text = (run_dir / "results.jsonl").read_text()
    (run_dir / "results.jsonl").write_text(text.replace('"requests":', '"requests": ', 1))


def hdr(lowest: int, highest: int, figures: int) -> str:
    h = HdrHistogram(lowest, highest, figures)
    h.record_value(1000)
    return h.encode().decode("ascii")


def inflating_hdr() -> str:
    """A valid outer header around a payload that inflates to 4 MiB (a zip bomb, in small)."""
    body = zlib.compress(b"\0" * (4 << 20))
    return base64.b64encode(struct.pack(">II", 0x1C849304, len(body)) + body).decode()


def deep_line(run_dir: Path, depth: int) -> None:
    rows = lines(run_dir)
    rows[5] = rows[5].replace('"params":{', '"params": {"deep": ' + "[" * depth +
                              "]" * depth + ", ", 1)
    write_lines(run_dir, rows)
    reseal(run_dir)


def link(run_dir: Path, name: str, target: str) -> None:
    path = run_dir / name
    if path.exists():
        path.unlink()
    path.symlink_to(target)


def linked_run_dir(run_dir: Path) -> None:
    moved = run_dir.parent.parent / "elsewhere"
    run_dir.rename(moved)
    run_dir.symlink_to(moved, target_is_directory=True)


def edit_seal(run_dir: Path) -> None:
    data = json.loads((run_dir / "seal.json").read_text())
    data["files"]["results.jsonl"] = "0" * 64
    (run_dir / "seal.json").write_text(json.dumps(data))


SAMPLE = "samples/callers/v1.0/r1-call-lookup-callers-32.csv"
CSV = b"offset_s,latency_ms,service_ms,status,process\n" + b"0.001,1.5,1.2,200,0\n" * 400


def stored(run_dir: Path, name: str, data: bytes) -> None:
    """A file sealed with the run (resealed): only the content checks can object to it."""
    (run_dir / name).parent.mkdir(parents=True, exist_ok=True)
    (run_dir / name).write_bytes(data)
    reseal(run_dir)


def bad_crc() -> bytes:
    good = gzip_bytes(b"2026-11-30 11:33:00 INFO GET /item 200\n" * 1000)
    return good[:-8] + bytes([good[-8] ^ 0xFF]) + good[-7:]


def bomb() -> bytes:
    """257 MiB of zeros in one gzip member of ~260 KB: past files.MAX_PLAIN_BYTES."""
    deflate = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(1 << 20)
    return b"".join(deflate.compress(zeros) for _ in range(257)) + deflate.flush()


def measured(w: dict) -> bool:
    return w["kind"] == "measure"


CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    "truncated line": (truncate_line, r"results\.jsonl:5: truncated or invalid JSON line — "),
    "wrong type": (wrong_type, r"results\.jsonl:7: round: 'one' is not of type 'integer' — "),
    "float round": (lambda d: edit_window(d, 6, "round", 1.0),
                    r"results\.jsonl:7: round: 1\.0 is not of type 'integer' — "),
    "unknown version": (
        lambda d: edit_manifest(d, lambda m: m.__setitem__("format_version", 3)),
        r"run\.json: format_version: unknown format version 3 \(this perfpages reads 1, 2\) — "
        "upgrade perfpages"),
    "started not a date": (
        lambda d: (edit_manifest(d, lambda m: m.__setitem__("started", "yesterday")), reseal(d)),
        r"run\.json: started: 'yesterday' is not a 'date-time' — "),
    "window start without a time zone": (
        lambda d: edit_window(d, 6, "start", "2026-11-01T10:00:00"),
        r"results\.jsonl:7: start: '2026-11-01T10:00:00' is not a 'date-time' — "),
    "negative metric": (lambda d: edit_window(d, 6, "metrics", {"cpu_ms": -1.5}),
                        r"results\.jsonl:7: metrics\.cpu_ms: -1\.5 is less than the minimum "
                        r"of 0 — "),
    "unknown key": (
        lambda d: edit_manifest(d, lambda m: m["method"].__setitem__("round", 5)),
        r"run\.json: method: unknown key \('round' was unexpected\) — "),
    "manifest not json": (
        lambda d: (d / "run.json").write_text('{\n  "id": "x",\n  oops\n}'),
        r"run\.json:3: not valid JSON \(Expecting property name enclosed in double quotes\) — "),
    "missing file": (lambda d: (d / "results.jsonl").unlink(),
                     r"synthetic-demo: results\.jsonl is missing — restore it"),
    "missing manifest": (lambda d: (d / "run.json").unlink(),
                         r"synthetic-demo: run\.json is missing — "),
    "checksum mismatch": (changed_value, r"results\.jsonl: checksum mismatch .* — restore it"),
    "added file": (lambda d: (d / "diagnostics" / "extra.txt").write_text("x"),
                   r"diagnostics/extra\.txt: file not listed in seal\.json — remove it"),
    "file named with a newline": (lambda d: (d / "samples" / "a\nb").write_text("x"),
                                  r"samples/a\\nb: file not listed in seal\.json — remove it"),
    "hidden file": (lambda d: (d / "samples" / ".hidden").write_text("x"),
                    r"samples/\.hidden: file not listed in seal\.json — remove it"),
    "duplicate window": (duplicate_window, r"results\.jsonl:10: duplicate window \(same block, "
                                           r"label, round, parameters and index as line 4\) — "),
    "undeclared label": (undeclared_label,
                         r"results\.jsonl:3: label: window for undeclared label 'v9' — declare it"),
    "undeclared block": (lambda d: edit_window(d, 2, "block", "zz"),
                         r"results\.jsonl:3: block: window for undeclared block 'zz' — declare"),
    "empty run": (empty_run, r"results\.jsonl: empty run: no measurement windows — "),
    # The seal: run.json edited after completion, the seal deleted, edited or misplaced.
    "pin edited": (
        lambda d: edit_manifest(d, lambda m: m["labels"]["v1.1"]["pin"].__setitem__(
            "commit", "f" * 40)),
        r"run\.json: checksum mismatch \(the file changed after the run was sealed\) — "),
    "rounds edited down": (
        lambda d: edit_manifest(d, lambda m: m["method"].__setitem__("rounds", 3)),
        r"run\.json: checksum mismatch \(the file changed after the run was sealed\) — "),
    "rounds edited up": (
        lambda d: edit_manifest(d, lambda m: m["method"].__setitem__("rounds", 7)),
        r"run\.json: checksum mismatch \(the file changed after the run was sealed\) — "),
    "seal deleted": (lambda d: (d / "seal.json").unlink(),
                     r"synthetic-demo: seal\.json is missing \(a complete format-2 run is "
                     r"sealed\) — restore it"),
    "seal edited": (edit_seal, r"results\.jsonl: checksum mismatch \(the file changed after "
                                r"the run was complete\) — "),
    "seal not json": (lambda d: (d / "seal.json").write_text("{"),
                      r"seal\.json:1: not valid JSON \(.*\) — "),
    "seal of the wrong shape": (lambda d: (d / "seal.json").write_text('{"files": {}}'),
                                r"seal\.json: not a seal: expected the keys format, algorithm "
                                r"and files — "),
    "seal in a legacy run": (
        lambda d: (edit_manifest(d, lambda m: m.__setitem__("format_version", 1))),
        r"seal\.json: a seal in a format-1 run \(that format predates sealing\) — run\.json's "
        r"format_version was edited"),
    "seal in a partial run": (
        lambda d: edit_manifest(d, lambda m: m.__setitem__("status", "partial")),
        r"seal\.json: a seal in a partial run \(only complete runs are sealed\) — "),
    # Completeness, resealed: only the windows themselves can tell.
    "half the rounds": (lambda d: drop(d, lambda w: w["round"] > 2),
                        r"results\.jsonl: rounds 3–5 of 5 have no measure window in any block "
                        r"\(method\.rounds\) — "),
    "last round": (lambda d: drop(d, lambda w: w["round"] == 5),
                   r"results\.jsonl: round 5 of 5 has no measure window in any block"),
    "no windows for a label": (
        lambda d: drop(d, lambda w: w["label"] == "v1.1"),
        r"results\.jsonl: label 'v1\.1' has no measure window in any block — "),
    "a round missing in a block": (
        lambda d: drop(d, lambda w: w["block"] == "one-caller" and w["round"] == 3),
        r"results\.jsonl: block 'one-caller': 3 of 15 cells \(label × round × parameters\) "
        r"have no measure window, the first: label 'v1\.0', round 3, call=lookup, callers=1 — "),
    "a cell missing": (
        lambda d: drop(d, lambda w: measured(w) and w["block"] == "callers" and
                       w["label"] == "v1.1" and w["round"] == 4 and
                       w["params"]["call"] == "page"),
        r"block 'callers': 1 of 30 cells .* the first: label 'v1\.1', round 4, call=page, "
        r"callers=32 — "),
    "a window missing": (
        lambda d: drop(d, lambda w: measured(w) and w["block"] == "callers" and
                       w["round"] == 2 and w["window"] == 1 and w["label"] == "v1.0" and
                       w["params"]["call"] == "lookup"),
        r"block 'callers': label 'v1\.0', round 2, call=lookup, callers=32: window 1 of 3 is "
        r"missing — "),
    "floor after missing": (
        lambda d: drop(d, lambda w: w["kind"] == "floor" and w["block"] == "one-caller" and
                       w["params"]["position"] == "after"),
        r"block 'one-caller': the floor before \(clients=1\) has no floor after — "),
    "measure window in round 0": (
        lambda d: edit_window(d, 1, "round", 0),
        r"block 'callers': a measure window in round 0 \(rounds count from 1\) — "),
    # Values: finite, bounded, non-negative, and the histogram agrees with what is beside it.
    "NaN": (lambda d: raw_line(d, 3, '"duration_s":1.0', '"duration_s": NaN'),
            r"results\.jsonl:4: duration_s: not a finite number \(NaN\) — "),
    "Infinity": (lambda d: raw_line(d, 3, '"throughput":', '"throughput": -Infinity, "x": '),
                 r"results\.jsonl:4: throughput: not a finite number \(-Infinity\) — "),
    "1e400": (lambda d: raw_line(d, 3, '"duration_s":1.0', '"duration_s": 1e400'),
              r"results\.jsonl:4: duration_s: not a finite number \(1e400\) — "),
    "negative count": (lambda d: edit_window(d, 3, "errors", -1),
                       r"results\.jsonl:4: errors: -1 is less than the minimum of 0 — "),
    "negative duration": (lambda d: edit_window(d, 3, "duration_s", -1.0),
                          r"results\.jsonl:4: duration_s: -1\.0 is less than the minimum of 0"),
    "huge count": (lambda d: edit_window(d, 3, "requests", 10**30),
                   r"results\.jsonl:4: requests: a number beyond ±2\^53 \(10{30}\) — "),
    "a thousand digits": (lambda d: edit_window(d, 3, "requests", 10**1000),
                          r"results\.jsonl:4: requests: a number written with more than 40 "
                          r"characters \(1000000000"),
    "rounds 10^30": (
        lambda d: edit_manifest(d, lambda m: m["method"].__setitem__("rounds", 10**30)),
        r"run\.json: method\.rounds: a number beyond ±2\^53 \(10{30}\) — "),
    "negative percentile": (lambda d: edit_latency(d, 3, "p50", -1.0),
                            r"results\.jsonl:4: latency\.p50: -1\.0 is less than the minimum"),
    "percentile outside the histogram": (
        lambda d: edit_latency(d, 3, "p99", 5000.0),
        r"results\.jsonl:4: latency\.p99: 5000\.0 ms is outside the histogram's [0-9.]+–[0-9.]+ "
        r"ms — "),
    "percentiles out of order": (
        lambda d: edit_latency(d, 3, "p50", json.loads(lines(d)[3])["latency"]["p99"]),
        r"results\.jsonl:4: latency\.p50: p50 [0-9.]+ ms exceeds p95 [0-9.]+ ms — "),
    "histogram count is not the request count": (
        lambda d: (edit_window(d, 3, "codes", {"200": json.loads(lines(d)[3])["requests"] + 1}),
                   edit_window(d, 3, "requests", json.loads(lines(d)[3])["requests"] + 1)),
        r"results\.jsonl:4: latency\.hdr: the histogram holds [0-9]+ values for [0-9]+ "
        r"responses — "),
    "histogram of another range": (
        lambda d: edit_latency(d, 3, "hdr", hdr(1, 1_000_000, 2)),
        r"results\.jsonl:4: latency\.hdr: a histogram of 1–1000000 µs with 2 figures, not "
        r"perfpages' 1–3600000000 µs with 3 — "),
    "histogram not base64": (lambda d: edit_latency(d, 3, "hdr", "HISTF!!"),
                             r"results\.jsonl:4: latency\.hdr: not a valid encoded HdrHistogram"),
    "histogram that inflates": (
        lambda d: edit_latency(d, 3, "hdr", inflating_hdr()),
        r"results\.jsonl:4: latency\.hdr: the histogram inflates beyond 1 MiB — "),
    "lone surrogate": (lambda d: raw_line(d, 3, '"label":"v1.0"', '"label": "v1.0\\udc80"'),
                       r"results\.jsonl:4: label: a lone UTF-16 surrogate in a string — "),
    "control character in a key": (
        lambda d: raw_line(d, 3, '"params":{', '"params": {"a\\nb": [], '),
        r"results\.jsonl:4: params\.a\\nb: \[\] is not of type"),
    "not UTF-8": (lambda d: (d / "results.jsonl").write_bytes(
        (d / "results.jsonl").read_bytes().replace(b"v1.0", b"v1.\xff", 1)),
        r"results\.jsonl:2: not UTF-8 text — "),
    # Hostile sizes and shapes: no RecursionError, no MemoryError, one line.
    "JSON nested 200k deep": (lambda d: deep_line(d, 200_000),
                              r"results\.jsonl:6: JSON nested deeper than 64 levels — "),
    "JSON nested 100 deep": (lambda d: deep_line(d, 100),
                             r"results\.jsonl:6: JSON nested deeper than 64 levels — "),
    "manifest nested 200k deep": (
        lambda d: (d / "run.json").write_text('{"machine": ' + "[" * 200_000 + "]" * 200_000 +
                                               "}"),
        r"run\.json: JSON nested deeper than 64 levels — "),
    "line of 17 MiB": (
        lambda d: raw_line(d, 3, '"params":{', '"params": {"pad": "' + "x" * (17 << 20) + '", '),
        r"results\.jsonl:4: a line longer than 16 MiB — "),
    "manifest of 17 MiB": (
        lambda d: (d / "run.json").write_text((d / "run.json").read_text() + " " * (17 << 20)),
        r"run\.json: larger than 16 MiB — "),
    # Contents the site refuses, resealed: every command refuses them too (one reader).
    "samples garbage": (lambda d: stored(d, SAMPLE, b"\x00\xff garbage\n"),
                        rf"{SAMPLE}:1: not a samples file \(its header is not offset_s,"),
    "samples empty": (lambda d: stored(d, SAMPLE, b""), rf"{SAMPLE}:1: not a samples file"),
    "samples wrongly headed": (lambda d: stored(d, SAMPLE, b"at_s,latency_ms\n0.1,2\n"),
                               rf"{SAMPLE}:1: not a samples file"),
    "samples NaN": (lambda d: stored(d, SAMPLE, CSV + b"0.5,NaN,1,200,0\n"),
                    rf"{SAMPLE}:402: not a sample: '0\.5,NaN,1,200,0' — "),
    "samples .gz cut short": (lambda d: stored(d, SAMPLE + ".gz", gzip_bytes(CSV)[:-30]),
                              rf"{SAMPLE}\.gz: not a readable gzip file \(cut short\) — "),
    "diagnostics .gz of a bad CRC": (
        lambda d: stored(d, "diagnostics/server.log.gz", bad_crc()),
        r"diagnostics/server\.log\.gz: not a readable gzip file \(incorrect data check\) — "),
    "decompression bomb": (lambda d: stored(d, "diagnostics/bomb.log.gz", bomb()),
                           r"diagnostics/bomb\.log\.gz: decompresses to more than 256 MiB — "),
    # Links and special files: refused, never followed out of the run.
    "symlink out of the run": (lambda d: link(d, "diagnostics/passwd", "/etc/passwd"),
                               r"diagnostics/passwd: a symbolic link — a run holds only regular "
                               r"files and directories"),
    "symlinked directory": (lambda d: link(d, "samples/root", "/"),
                            r"samples/root: a symbolic link — "),
    "/dev/zero linked in": (lambda d: link(d, "samples/zero", "/dev/zero"),
                            r"samples/zero: a symbolic link — "),
    "results.jsonl linked to /dev/zero": (lambda d: link(d, "results.jsonl", "/dev/zero"),
                                          r"results\.jsonl: a symbolic link — "),
    "run.json linked to /dev/zero": (lambda d: link(d, "run.json", "/dev/zero"),
                                     r"run\.json: a symbolic link — "),
    "FIFO": (lambda d: os.mkfifo(d / "diagnostics" / "pipe"),
             r"diagnostics/pipe: not a regular file \(a device, FIFO or socket\) — "),
    "results.jsonl a FIFO": (lambda d: ((d / "results.jsonl").unlink(),
                                        os.mkfifo(d / "results.jsonl")),
                             r"results\.jsonl: not a regular file \(a directory, device, FIFO "
                             r"or socket\) — "),
    "run directory a symlink": (linked_run_dir,
                                r"synthetic-demo: the run directory is a symbolic link — "),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("command", ["verify", "report", "cite"])
def test_bad_archive_gives_one_line_and_changes_nothing(
        case: str, command: str, scratch_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    damage, expected = CASES[case]
    damage(scratch_run)
    before = snapshot(scratch_run)
    results = scratch_run.parent
    actions = {
        "verify": lambda out: console.verify_runs(results, scratch_run.name, out),
        "report": lambda out: console.print_report(results, scratch_run.name, None, "md", None,
                                                   out),
        "cite": lambda out: console.print_cite(results, scratch_run.name, ROOT / "mkdocs.yml"),
    }
    code = console.run_command(actions[command], Console(file=sys.stdout))
    captured = capsys.readouterr()
    assert code == 1
    errors = captured.err.splitlines()
    assert errors and all(line.startswith("error: ") for line in errors)
    if command != "verify":
        assert len(errors) == 1  # open_run stops at the first problem
    assert re.search(expected, errors[0]), errors  # the cause first, then what it caused
    assert "Traceback" not in captured.err + captured.out
    assert snapshot(scratch_run) == before


def test_cli_prints_no_traceback_and_exits_nonzero(scratch_run: Path) -> None:
    truncate_line(scratch_run)
    proc = subprocess.run([sys.executable, "-m", "invoke", "bench.verify", "--results",
                           str(scratch_run.parent)], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"error: {scratch_run}/results.jsonl:5: truncated")
    assert "Traceback" not in proc.stderr


def test_partial_run_cannot_be_cited(scratch_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit_manifest(scratch_run, lambda m: (m.__setitem__("status", "partial"), m.pop("files")))
    (scratch_run / "seal.json").unlink()  # only complete runs are sealed
    code = console.run_command(
        lambda out: console.print_cite(scratch_run.parent, scratch_run.name, ROOT / "mkdocs.yml"))
    assert code == 1
    err = capsys.readouterr().err
    assert "run is partial, not complete — only complete runs can be cited" in err


def test_bench_list_and_verify_exit_1_for_a_missing_results_path(tmp_path: Path) -> None:
    for task in ("bench.list", "bench.verify"):
        done = subprocess.run([sys.executable, "-m", "perfpages", task, "--results",
                               str(tmp_path / "nowhere")], cwd=ROOT, capture_output=True,
                              text=True)
        assert done.returncode == 1, task
        assert done.stderr == (f"error: {tmp_path / 'nowhere'}: no such results directory — "
                               "pass the directory that holds the runs with --results\n")


def partial_copy(run_dir: Path, run_id: str) -> Path:
    """A partial run of the same suite beside `run_dir` (unsealed, as the writer leaves it)."""
    copy = run_dir.parent / run_id
    shutil.copytree(run_dir, copy)
    edit_manifest(copy, lambda m: (m.update(id=run_id, status="partial"), m.pop("files")))
    (copy / "seal.json").unlink()
    return copy


def test_claims_only_refuses_what_bench_replay_refuses(scratch_run: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    from perfpages.cli.replay import print_reproduction

    partial = partial_copy(scratch_run, "2026-11-02-synthetic-partial")
    mkdocs = tmp_path / "mkdocs.yml"
    mkdocs.write_text("site_name: t\nplugins: [perfpages]\n")

    def claims_only(ref: str, other: str) -> str:
        code = console.run_command(lambda out: print_reproduction(
            scratch_run.parent, ref, other, "md", out, mkdocs=mkdocs, suites=tmp_path))
        assert code == 1
        return capsys.readouterr().err

    resume = "resume it with `invoke bench.run --suite synthetic --resume"
    assert claims_only(partial.name, scratch_run.name) == (
        f"error: bench.replay: run {partial.name} is partial — {resume} {partial.name}`\n")
    assert claims_only(scratch_run.name, partial.name) == (
        f"error: --claims-only: run {partial.name} is partial — {resume} {partial.name}`\n")
    mkdocs.write_text("site_name: t\nplugins: [perfpages\n")  # refused before any run is read
    assert claims_only(scratch_run.name, partial.name).startswith(
        f"error: {mkdocs}: not valid YAML: ")

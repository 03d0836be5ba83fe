"""Every malformed archive: one line naming the file and line or key, exit 1, nothing changed."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from perfpages.archive.reader import archived_files
from perfpages.cli import console

ROOT = Path(__file__).resolve().parent.parent


def snapshot(run_dir: Path) -> dict[str, str]:
    return {p.relative_to(run_dir).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(run_dir.rglob("*")) if p.is_file()}


def lines(run_dir: Path) -> list[str]:
    return (run_dir / "results.jsonl").read_text().splitlines(keepends=True)


def write_lines(run_dir: Path, new: list[str]) -> None:
    (run_dir / "results.jsonl").write_text("".join(new))


def edit_manifest(run_dir: Path, change: Callable[[dict], None]) -> None:
    data = json.loads((run_dir / "run.json").read_text())
    change(data)
    (run_dir / "run.json").write_text(json.dumps(data, indent=2))


def reseal(run_dir: Path) -> None:
    """Recompute the checksums, as a tool that wrote a bad archive consistently would."""
    edit_manifest(run_dir, lambda d: d.__setitem__("files", archived_files(run_dir)))


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


CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    "truncated line": (truncate_line, r"results\.jsonl:5: truncated or invalid JSON line — "),
    "wrong type": (wrong_type, r"results\.jsonl:7: round: 'one' is not of type 'integer' — "),
    "unknown version": (
        lambda d: edit_manifest(d, lambda m: m.__setitem__("format_version", 2)),
        r"run\.json: format_version: unknown format version 2 \(this perfpages reads 1\) — "
        "upgrade perfpages"),
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
                   r"diagnostics/extra\.txt: file not listed in run\.json's checksums — "),
    "duplicate window": (duplicate_window, r"results\.jsonl:10: duplicate window \(same block, "
                                           r"label, round, parameters and index as line 4\) — "),
    "undeclared label": (undeclared_label,
                         r"results\.jsonl:3: label: window for undeclared label 'v9' — declare it"),
    "empty run": (empty_run, r"results\.jsonl: empty run: no measurement windows — "),
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
    assert any(__import__("re").search(expected, line) for line in errors), errors
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
    code = console.run_command(
        lambda out: console.print_cite(scratch_run.parent, scratch_run.name, ROOT / "mkdocs.yml"))
    assert code == 1
    err = capsys.readouterr().err
    assert "run is partial, not complete — only complete runs can be cited" in err

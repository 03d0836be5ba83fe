"""Issue 38's bad-input campaign, rerun on the commands added since the first one: each case
through the real command line — one `error:` line, exit 1, no traceback, nothing written outside
what the command owns, nothing deleted that it did not write."""

from __future__ import annotations

import fcntl
import gzip
import os
import re
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from perfpages.testing import generate
from sites import CLI_ENV, DEMO

PIN = f"---\nruns:\n  demo: {DEMO}\n---\n"
PAGE = PIN + "# Demo\n\n{{ table('throughput', rows='call', block='callers') }}\n"


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("results")
    generate(root)
    return root


def perfpages(cwd: Path, *args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "perfpages", *args], cwd=cwd,
                          capture_output=True, text=True, env=CLI_ENV, **kwargs)  # type: ignore


def one_error(done: subprocess.CompletedProcess[str], *parts: str) -> str:
    """The command failed with exactly one `error:` line holding every part."""
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr + done.stdout
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    for part in parts:
        assert part in lines[0], (part, lines[0])
    return lines[0]


def site(project: Path, results: Path, pages: dict[str, str] | None = None,
         run_pages: bool = False) -> Path:
    """docs/ and mkdocs.yml under `project` (not built)."""
    for name, text in (pages or {"index.md": PAGE}).items():
        (project / "docs" / name).parent.mkdir(parents=True, exist_ok=True)
        (project / "docs" / name).write_text(text, encoding="utf-8")
    (project / "mkdocs.yml").write_text(yaml.safe_dump({
        "site_name": "t", "plugins": [{"perfpages": {"results": str(results),
                                                      "run_pages": run_pages}}]}))
    return project


def names(root: Path) -> list[str]:
    """The entries of a directory, the site's cache left out."""
    return sorted(p.name for p in root.iterdir() if p.name != ".cache")


def tree(root: Path) -> dict[str, str]:
    """Every entry under `root`, links listed, never followed."""
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            out[rel] = ("-> " + os.readlink(path) if path.is_symlink() else
                        path.read_text(errors="replace") if path.is_file() else "dir")
    return out


# --- perfpages render ---------------------------------------------------------------------


def test_render_refuses_results_docs_and_a_directory_it_does_not_own(tmp_path: Path,
                                                                     results: Path) -> None:
    project = site(tmp_path, tmp_path / "results")
    (tmp_path / "results").mkdir()  # an empty results/: still the runs' directory
    one_error(perfpages(project, "render", "--no-strict", "--out", "results"),
              "--out: it overlaps the archived runs")
    one_error(perfpages(project, "render", "--no-strict", "--out", "docs/built"),
              "--out: it overlaps the pages")
    one_error(perfpages(project, "render", "--no-strict", "--out", "."), "--out: it overlaps")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep\n")
    one_error(perfpages(project, "render", "--no-strict", "--out", "mine"),
              "not written by perfpages render")
    (tmp_path / "file").write_text("keep\n")
    one_error(perfpages(project, "render", "--no-strict", "--out", "file"), "not a directory")
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    one_error(perfpages(project, "render", "--no-strict", "--out", "link"), "not a directory")
    assert not (tmp_path / "elsewhere").exists()
    assert tree(tmp_path / "results") == {} and (tmp_path / "mine" / "notes.txt").is_file()
    assert sorted(p.name for p in (tmp_path / "docs").iterdir()) == ["index.md"]


def test_render_never_deletes_what_it_did_not_write(tmp_path: Path, results: Path) -> None:
    project = site(tmp_path / "p", results)
    first = perfpages(project, "render", "--out", "out")
    assert first.returncode == 0, first.stderr
    out = project / "out"
    assert (out / "docs" / "index.md").is_file() and (out / ".perfpages-render").is_file()
    # A sealed run copied into the rendered tree: refused, kept.
    (out / "docs" / DEMO).mkdir()
    (out / "docs" / DEMO / "run.json").write_text("{}\n")
    before = tree(out)
    one_error(perfpages(project, "render", "--out", "out"),
              f"{out}/docs/{DEMO}/run.json: not written by perfpages render")
    assert tree(out) == before
    (out / "docs" / DEMO / "run.json").unlink()
    (out / "docs" / DEMO).rmdir()
    # A page of the rendered tree edited by hand is not render's any more either.
    (out / "docs" / "index.md").write_text("mine\n")
    one_error(perfpages(project, "render", "--out", "out"), "(added or changed since)")
    assert (out / "docs" / "index.md").read_text() == "mine\n"
    (out / "docs" / "index.md").unlink()
    # The user's out.partial (a directory, or a link to one) is neither used nor deleted; the
    # build a generator wrote into out/site is render's to replace.
    (project / "out.partial").mkdir()
    (project / "out.partial" / "keep.txt").write_text("keep\n")
    (project / "target").mkdir()
    (project / "target" / "keep.txt").write_text("keep\n")
    (project / "other.partial").symlink_to(project / "target", target_is_directory=True)
    (out / "site").mkdir()
    (out / "site" / "index.html").write_text("<p>old build</p>\n")
    again = perfpages(project, "render", "--out", "out")
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("rendered 1 pages")
    again = perfpages(project, "render", "--out", "other")
    assert again.returncode == 0, again.stderr
    assert tree(project / "out.partial") == {"keep.txt": "keep\n"}
    assert tree(project / "target") == {"keep.txt": "keep\n"}
    assert (out / "docs" / "index.md").is_file() and not (out / "site").exists()
    assert names(project) == [
        "docs", "mkdocs.yml", "other", "other.partial", "out", "out.partial", "target"]


def test_a_second_render_at_once_fails_with_one_line(tmp_path: Path, results: Path) -> None:
    project = site(tmp_path, results)
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as the render running beside it holds it
        one_error(perfpages(project, "render"), "another perfpages render is writing")
    finally:
        os.close(fd)
    assert not (tmp_path / "rendered").exists()
    # Two at once for real: whichever exits 0 left every page there.
    for _ in range(2):
        both = [subprocess.Popen([sys.executable, "-m", "perfpages", "render"], cwd=project,
                                 env=CLI_ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True) for _ in range(2)]
        for proc in both:
            stdout, stderr = proc.communicate(timeout=120)
            assert "Traceback" not in stderr
            if proc.returncode:
                assert stderr.startswith("error: ") and len(stderr.splitlines()) == 1, stderr
            else:
                assert stdout.startswith("rendered 1 pages")
        assert any(proc.returncode == 0 for proc in both)
        assert (tmp_path / "rendered" / "docs" / "index.md").is_file()
        assert names(tmp_path) == ["docs", "mkdocs.yml", "rendered"]


def test_render_gives_one_line_for_a_bad_page_or_an_unwritable_output(tmp_path: Path,
                                                                      results: Path) -> None:
    project = site(tmp_path, results, {"index.md": PAGE, "latin.md": "# Caf\xe9\n"})
    (tmp_path / "docs" / "latin.md").write_bytes("# Café\n".encode("latin-1"))
    one_error(perfpages(project, "render"), "docs/latin.md: not UTF-8 text (byte 0xe9")
    (tmp_path / "docs" / "latin.md").unlink()
    one_error(perfpages(project, "render", "--out", "x" * 300), "cannot write the rendered "
              "pages (File name too long)")
    one_error(perfpages(project, "render", "--docs", "d" * 300), "docs_dir: no such directory")

    def small_files() -> None:  # a file past 4 KiB fails as on a full disk (EFBIG, not a kill)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    (tmp_path / "docs" / "big.txt").write_text("x" * 8192)
    one_error(perfpages(project, "render", preexec_fn=small_files),
              "cannot write the rendered pages (File too large)")
    assert names(tmp_path) == ["docs", "mkdocs.yml"]
    if os.geteuid() != 0:
        (tmp_path / "ro").mkdir(mode=0o555)
        one_error(perfpages(project, "render", "--out", "ro/out"), "Permission denied")


# --- perfpages import ---------------------------------------------------------------------

SOURCE = ("--title", "A published table", "--url", "https://example.org/t", "--date",
          "2024-01-02")


def imported(tmp_path: Path, name: str, text: str, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / name).write_text(text, encoding="utf-8")
    return perfpages(tmp_path, "import", name, *SOURCE, *(args or ("--results", "results")))


def test_import_refuses_each_bad_table_with_one_line(tmp_path: Path) -> None:
    one_error(imported(tmp_path, "huge.csv", "label,round,throughput (/s)\na,1,5\n"
                       "a,999999999,6\n"), "huge.csv:3: round: round '999999999' is past 10000")
    one_error(imported(tmp_path, "digits.json", '[{"label": "a", "callers": ' + "9" * 400 +
                       ', "throughput (/s)": 5}]'), "digits.json: not valid JSON (the number "
              "99999999999999999999… has 400 digits)")
    one_error(imported(tmp_path, "keys.json", '[{"label": "a", "label": "b", '
                       '"throughput (/s)": 5}]'), "the key 'label' is given twice")
    one_error(imported(tmp_path, "rows.csv", "label,callers,throughput (/s)\na,8,5\na,8.0,6\n"),
              "rows.csv:3: duplicate row: label a, callers=8.0 is already on line 2")
    one_error(imported(tmp_path, "rows.json", '[{"label": "a", "callers": 8, '
                       '"throughput (/s)": 5}, {"label": "a", "callers": 8.0, '
                       '"throughput (/s)": 6}]'), "rows.json: rows[1]: duplicate row")
    one_error(imported(tmp_path, "line.csv", 'label,throughput (/s)\n"a\nb",5\n'),
              "line.csv:3: label: a line break or control character in the label 'a\\nb'")
    one_error(imported(tmp_path, "line.json", '[{"label": "a\\u2028b", "throughput (/s)": 5}]'),
              "a line break or control character")
    os.mkfifo(tmp_path / "fifo.csv")  # nothing writes to it: reading it would wait forever
    one_error(perfpages(tmp_path, "import", "fifo.csv", *SOURCE, timeout=60),
              "fifo.csv: not a regular file")
    assert not (tmp_path / "results").exists()


def test_import_gives_one_line_when_the_results_cannot_be_written(tmp_path: Path) -> None:
    table = "label,throughput (/s)\n" + "".join(f"v{i},{i}\n" for i in range(200))
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    one_error(imported(tmp_path, "t.csv", table, "--results", "pyproject.toml"),
              "pyproject.toml: --results: not a directory")
    one_error(imported(tmp_path, "t.csv", table, "--results", "r" * 300),
              "--results: cannot write the run (File name too long)")
    (tmp_path / "results").mkdir()

    def small_files(limit: int) -> Callable[[], None]:
        def setup() -> None:  # past `limit` a write fails as on a full disk (EFBIG, no kill)
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        return setup

    (tmp_path / "t.csv").write_text(table)
    # 4 KiB: the windows fail; 256 bytes: run.json, as the writer creates the run's directory
    for limit in (4096, 256):
        one_error(perfpages(tmp_path, "import", "t.csv", *SOURCE, preexec_fn=small_files(limit)),
                  "results: --results: cannot write the run (File too large); nothing was "
                  "archived")
        assert os.listdir(tmp_path / "results") == []  # no hidden .RUN.xxxx left either


def test_a_killed_import_leaves_no_run_to_resume(tmp_path: Path) -> None:
    table = "label,throughput (/s)\n" + "".join(f"v{i},{i}\n" for i in range(3000))
    (tmp_path / "t.csv").write_text(table)
    (tmp_path / "results").mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "perfpages", "import", "t.csv", *SOURCE],
                            cwd=tmp_path, env=CLI_ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    while proc.poll() is None:  # killed once its windows are being written (a fsync each)
        try:
            if any((p / "results.jsonl").stat().st_size > 0
                   for p in (tmp_path / "results").iterdir()):
                proc.kill()
                break
        except OSError:  # it was renamed meanwhile
            pass
        time.sleep(0.002)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    listed = perfpages(tmp_path, "bench.list", "--results", "results")
    assert listed.returncode == 0 and "no archived runs" in listed.stdout, listed.stdout
    assert "resume" not in listed.stdout + listed.stderr
    assert [p.name[0] for p in (tmp_path / "results").iterdir()] == ["."]  # hidden, unsealed
    again = perfpages(tmp_path, "import", "t.csv", *SOURCE)
    assert again.returncode == 0, again.stderr
    left = [p.name for p in (tmp_path / "results").iterdir()]  # the killed one removed
    assert len(left) == 1 and left[0].endswith("-t-transcribed"), left
    verified = perfpages(tmp_path, "bench.verify", "--results", "results")
    assert verified.returncode == 0 and "resume" not in verified.stdout + verified.stderr


def test_import_help_helps(tmp_path: Path) -> None:
    for args in (("import", "--help"), ("import", "-h"), ("check-site", "--help"),
                 ("guide", "--help")):
        done = perfpages(tmp_path, *args)
        assert done.returncode == 0 and done.stdout.startswith(
            f"Usage: perfpages [--core-opts] {args[0]} "), (args, done.stderr)
    assert "--title" in perfpages(tmp_path, "import", "--help").stdout


# --- perfpages check-site, perfpages guide ---------------------------------------------------


def test_check_site_skips_what_is_no_page_and_never_waits(tmp_path: Path) -> None:
    site_dir = tmp_path / "site"
    (site_dir / "x.html").mkdir(parents=True)  # a directory named like a page
    (site_dir / "dangling.html").symlink_to(tmp_path / "nowhere.html")
    os.mkfifo(site_dir / "fifo.html")  # reading it would wait for a writer forever
    (site_dir / "index.html").write_text("<p>Throughput: {{ table('throughput') }}</p>\n")
    done = perfpages(tmp_path, "check-site", "site", timeout=60)
    one_error(done, "site/index.html:1: unrendered perfpages macro {{ table('throughput') }}")
    (site_dir / "index.html").write_text("<p>ok</p>\n")
    done = perfpages(tmp_path, "check-site", "site", timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("ok: 1 pages in site"), done.stderr
    os.mkfifo(tmp_path / "fifo")
    one_error(perfpages(tmp_path, "check-site", "fifo", timeout=60), "fifo: no such directory")
    one_error(perfpages(tmp_path, "check-site", "s" * 300), "cannot read it (File name too long)")


def test_guide_with_a_long_or_odd_name_is_one_line(tmp_path: Path) -> None:
    for name in ("x" * 300, "../README", "/etc/passwd", "pages/../adopt"):
        one_error(perfpages(tmp_path, "guide", name), "guide: no guide page ",
                  "choose among: adopt")
    assert perfpages(tmp_path, "guide", "pages.md#versions").stdout.startswith("# ")


# --- published garbage ----------------------------------------------------------------------


@pytest.mark.parametrize("macro", [
    "{{ certified(block='callers') }}",
    "{{ faster('v1.0', 'v1.1 + cache', block='callers') }}",
    "{{ statement('lookup', label='v1.0', block='callers', at_most=0.1) }}",
    "{{ table }}"])
def test_a_condition_or_macro_printed_outside_claim_fails_the_build(
        tmp_path: Path, results: Path, macro: str) -> None:
    project = site(tmp_path, results, {"index.md": PAGE + f"\nIt holds: {macro}\n"})
    line = one_error(perfpages(project, "render"), "error: docs/index.md:9: macro: ")
    assert "Condition(" not in line and " at 0x" not in line
    assert ("outside claim()" in line) if macro != "{{ table }}" else (
        "table printed without calling it" in line), line
    assert not (tmp_path / "rendered").exists()
    loose = perfpages(project, "render", "--no-strict")  # stops any build, as a bad pin does
    assert loose.returncode == 1 and not (tmp_path / "rendered").exists()


# --- cache poisoning --------------------------------------------------------------------------


def test_an_edited_cache_entry_with_its_checksum_recomputed_is_not_published(
        tmp_path: Path, results: Path) -> None:
    import hashlib
    import json

    project = site(tmp_path, results, run_pages=True)
    first = perfpages(project, "render")
    assert first.returncode == 0, first.stderr
    page = (tmp_path / "rendered" / "docs" / "index.md").read_text()
    entries = sorted((tmp_path / ".cache" / "perfpages" / "cells").glob("*.json"))
    assert entries
    for entry in entries:  # every value 777777, the checksum recomputed as the code did
        saved = json.loads(entry.read_text())
        for cell in saved["data"]["cells"]:
            cell["values"] = [777777.0] * len(cell["values"])
        body = json.dumps(saved["data"], sort_keys=True, ensure_ascii=False)
        saved["checksum"] = hashlib.sha256(f"{saved['key']}\0{body}".encode()).hexdigest()
        entry.write_text(json.dumps(saved))
    again = perfpages(project, "render")
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "rendered" / "docs" / "index.md").read_text() == page
    assert "777" not in page
    assert all("777777" not in e.read_text() for e in entries)  # rewritten from the run


# --- a password in output -------------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent


def closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(("dsn", "password"), [
    ("postgresql://bob:Zq@Xv9@Kw7@127.0.0.1:{port}/db", "Zq@Xv9@Kw7"),
    ("postgresql://bob:Zq@Xv9@Kw7@HOST.invalid/db", "Zq@Xv9@Kw7"),
    ("postgres://bob:Zq:Xv9@Kw7@[::1]:{port}/db", "Zq:Xv9@Kw7"),
    ("postgresql://bob:Zq?Xv9#Kw7@127.0.0.1:{port}/db", "Zq?Xv9#Kw7"),
    ("postgresql://bob:Zqq Xv9 Kw7@127.0.0.1:{port}/db", "Zqq Xv9 Kw7"),
    ("postgresql://bob@127.0.0.1:{port}/db?password=Zq@Xv9@Kw7", "Zq@Xv9@Kw7"),
    ("host=127.0.0.1 port={port} user=bob password='Zq@Xv9 Kw7'", "Zq@Xv9 Kw7"),
])
def test_no_part_of_a_dsn_password_is_printed(tmp_path: Path, dsn: str, password: str) -> None:
    dsn = dsn.replace("{port}", str(closed_port()))
    done = subprocess.run([sys.executable, "-m", "perfpages", "bench.run", "--suite", "tiny",
                           "--labels", "a", "--dsn", dsn, "--results", str(tmp_path / "r")],
                          cwd=ROOT, capture_output=True, text=True, env=CLI_ENV, timeout=120)
    out = done.stdout + done.stderr
    assert done.returncode == 1 and "Traceback" not in out
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith("error: --dsn: ")
    for piece in {password, *re.split(r"[@:?# ]", password)}:
        assert piece not in out, (piece, out)
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())


def test_redact_ends_the_user_info_at_its_last_at() -> None:
    from perfpages.archive.secrets import canonical_dsn, dsn_password, mask_urls, redact

    dsn = "postgresql://bob:p@ss@word9@HOST/db"
    assert redact(dsn) == "postgresql://bob@HOST/db"
    assert dsn_password(dsn) == "p@ss@word9"
    assert canonical_dsn(dsn) == "postgresql://bob:p%40ss%40word9@HOST/db"
    assert mask_urls(f"cannot reach {dsn} now") == "cannot reach postgresql://bob:***@HOST/db now"
    assert redact("postgresql://bob@h/db?sslmode=require&password=p@ss") == (
        "postgresql://bob@h/db?sslmode=require&password=***")
    assert redact("postgresql://bob@h:5432,h2:5433/db") == "postgresql://bob@h:5432,h2:5433/db"


# --- silently accepted, now refused -----------------------------------------------------------


@pytest.mark.parametrize(("front", "key"), [
    ("default_run: demo\n", "default_run"), ("allow_failed: [demo]\n", "allow_failed"),
    ("perfpages: {holm: true}\n", "perfpages")])
def test_a_key_about_runs_on_a_page_without_runs_is_refused(tmp_path: Path, results: Path,
                                                            front: str, key: str) -> None:
    project = site(tmp_path, results, {"index.md": f"---\ntitle: T\n{front}---\n# T\n"})
    one_error(perfpages(project, "render"), f"docs/index.md:3: {key}: {key} on a page that "
              "pins no run")


@pytest.mark.parametrize(("macro", "says"), [
    ("{{ change('v1.0', 'v1.0', block='callers') }}", "'v1.0' compared with itself"),
    ("{{ claim('Same.', faster('v1.0', 'v1.0', block='callers')) }}",
     "'v1.0' compared with itself"),
    ("{{ why('v1.0', 'v1.0', block='callers') }}", "why(): 'v1.0' compared with itself"),
    ("{{ why('v1.0', 'v1.1 + cache', block='callers', profile='nosuch') }}",
     "why(): no profile block 'nosuch' in run 'demo'")])
def test_a_comparison_of_nothing_is_refused(tmp_path: Path, results: Path, macro: str,
                                            says: str) -> None:
    project = site(tmp_path, results, {"index.md": PAGE + f"\n{macro}\n"})
    one_error(perfpages(project, "render", "--no-strict"), "docs/index.md:9: macro: ", says)


def test_compare_a_label_with_itself_and_an_empty_results_setting(tmp_path: Path,
                                                                   results: Path) -> None:
    one_error(perfpages(tmp_path, "bench.report", "--results", str(results), "--run", DEMO,
                        "--compare", "v1.0,v1.0"), "--compare: --compare takes two labels, "
              "got 'v1.0,v1.0'")
    (tmp_path / "pyproject.toml").write_text('[tool.perfpages]\nresults = ""\n')
    one_error(perfpages(tmp_path, "bench.list"), "tool.perfpages.results: results is empty")


def copied_run(results: Path, into: Path, run_id: str = DEMO) -> Path:
    """A sealed copy of the demo run under `into` (named `run_id`)."""
    import shutil

    from test_bad_input import edit_manifest, reseal

    shutil.copytree(results / DEMO, into / run_id)
    if run_id != DEMO:
        edit_manifest(into / run_id, lambda m: m.__setitem__("id", run_id))
        reseal(into / run_id)
    return into / run_id


def test_damage_resealed_is_refused_by_verify(tmp_path: Path, results: Path) -> None:
    from test_bad_input import edit_manifest, reseal

    sample = "samples/callers/v1.0/r1-call-lookup-callers-32.csv"
    header = b"offset_s,latency_ms,service_ms,status,process\n"
    run = copied_run(results, tmp_path / "both")
    (run / sample).parent.mkdir(parents=True, exist_ok=True)
    (run / sample).write_bytes(header + b"0.001,1.5,1.2,200,0\n")
    (run / f"{sample}.gz").write_bytes(gzip.compress(header + b"0.002,1.5,1.2,200,0\n"))
    reseal(run)
    one_error(perfpages(tmp_path, "bench.verify", "--results", str(tmp_path / "both")),
              f"{sample}: {sample} and {sample}.gz are both present")
    run = copied_run(results, tmp_path / "negative")
    (run / sample).parent.mkdir(parents=True, exist_ok=True)
    (run / sample).write_bytes(header + b"0.001,1.5,1.2,200,0\n-0.5,1.5,1.2,200,0\n")
    reseal(run)
    one_error(perfpages(tmp_path, "bench.verify", "--results", str(tmp_path / "negative")),
              f"{sample}:3: not a sample: '-0.5,")
    run = copied_run(results, tmp_path / "itself")
    edit_manifest(run, lambda m: m.__setitem__("replay_of", DEMO))
    reseal(run)
    one_error(perfpages(tmp_path, "bench.verify", "--results", str(tmp_path / "itself")),
              "run.json: replay_of: the run names itself as the run it replays")


def test_claims_only_fails_on_a_broken_page_or_a_missing_site(tmp_path: Path,
                                                              results: Path) -> None:
    runs = tmp_path / "runs"
    copied_run(results, runs)
    second = copied_run(results, runs, "2026-11-09-synthetic-again").name
    project = site(tmp_path / "p", runs, {"index.md": PAGE + "\n{{ claim('x', nosuch()) }}\n"})
    args = ("bench.replay", DEMO, "--claims-only", second, "--results", str(runs))
    done = perfpages(project, *args)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: docs/index.md: the page cannot be rendered on the "
                                  "original run: docs/index.md:9: macro: "), done.stderr
    (project / "docs" / "index.md").write_text(f"---\nruns: {{demo: {DEMO}\n---\n# T\n")
    done = perfpages(project, *args)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: docs/index.md: the page cannot be rendered on the "
                                  "original run: "), done.stderr
    (project / "docs" / "index.md").write_text(PAGE)
    assert perfpages(project, *args).returncode == 0
    (project / "docs").rename(project / "elsewhere")
    one_error(perfpages(project, *args), "docs: --claims-only: no such directory")
    (project / "mkdocs.yml").unlink()
    one_error(perfpages(project, *args), "mkdocs.yml: --claims-only: no such file")

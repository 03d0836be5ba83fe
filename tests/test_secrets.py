"""No secret reaches an archive, the site or a printed line: DSN passwords in every form, URL
user info, secret variables (by name, or marked Secret), and the writer's last search before it
seals.

The corpus test runs a real (tiny) suite whose command line, notes, label environment, process
environment and PostgreSQL log all carry secrets, then greps every byte of the archive, of the
site built from it and of what the run printed; a `--pin` whose clone fails is run through the
command line and its output grepped."""

from __future__ import annotations

import gzip
import io
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

import test_seal as sealed
from perfpages import Public, Secret
from perfpages.archive import files, writer
from perfpages.archive.reader import read_manifest, verify
from perfpages.archive.secrets import (
    MASK,
    Redactor,
    dsn_password,
    is_secret_name,
    mask_urls,
    masked_env,
    redact,
    redact_command,
)
from perfpages.errors import ArchiveError, PerfpagesError
from perfpages.run.runner import Options, run
from sites import build_site

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(("text", "secret"), [
    ("invoke bench.run --dsn=postgresql://bench:hunter22@db:5432/app", "hunter22"),
    ("invoke bench.run --dsn postgresql://bench:p%40ss%3Aword@db/app", "p%40ss%3Aword"),
    ("postgresql://bench@db/app?sslmode=require&password=hunter22", "hunter22"),
    ("host=db user=bench password=hunter22 dbname=app", "hunter22"),
    ("host=db password = 'two words' dbname=app", "two words"),
    ("PASSWORD=hunter22", "hunter22"),
    ("--dsn host=db password='S3 cret PW2' dbname=app", "cret PW2"),  # the tail, too
    ("--pin a=git+https://ghp_tok12345@github.com/o/r@main", "ghp_tok12345"),
    ("--pin a=git+https://ci:pin-pass-9@example.org/o/r@v1", "pin-pass-9"),
    ("https://ci:url-pass-7@example.org/x", "url-pass-7"),
])
def test_every_dsn_form_loses_its_password(text: str, secret: str) -> None:
    redacted = Redactor().text(text)
    assert secret not in redacted and redacted != text


def test_a_quoted_dsn_password_is_masked_whole_in_the_command_and_the_notes() -> None:
    dsn = "host=db user=bench password='S3 cret PW2' dbname=app"
    assert redact(dsn) == "host=db user=bench dbname=app"
    assert redact_command(f"perfpages bench.run --dsn {dsn}") == (
        "perfpages bench.run --dsn host=db user=bench dbname=app")
    assert dsn_password(dsn) == "S3 cret PW2"


@pytest.mark.parametrize("name", ["DB_PASS", "DB_PWD", "GITHUB_PAT", "AUTH_HEADER", "SENTRY_DSN",
                                  "PGPASSWORD", "API_KEY", "APIKEY", "SESSION_COOKIE",
                                  "AWS_SECRET_ACCESS_KEY", "dbPassword", "X_CREDENTIALS"])
def test_names_that_say_secret(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["PATH", "HOME", "KEYBOARD", "GIT_AUTHOR_NAME", "PATTERN",
                                  "LANG", "DEMO_CACHE_TTL"])
def test_names_that_do_not(name: str) -> None:
    assert not is_secret_name(name)


def test_a_value_marked_secret_or_public_overrides_its_name() -> None:
    env = {"UPSTREAM": Secret("sig-abcdef"), "CACHE_KEY_PREFIX": Public("v2-prefix"),
           "DB_PASS": "pass-123456"}
    assert masked_env(env) == {"UPSTREAM": MASK, "CACHE_KEY_PREFIX": "v2-prefix",
                               "DB_PASS": MASK}
    assert repr(env["UPSTREAM"]) == "Secret('***')"  # a traceback's locals show no value
    r = Redactor.for_run(env={}, extra=[env["UPSTREAM"], env["DB_PASS"]],
                         urls=["git+https://ghp_tok12345@github.com/o/r"])
    assert r.text("sig-abcdef pass-123456 v2-prefix ghp_tok12345") == "*** *** v2-prefix ***"
    # The process's own variables that only look secret are not secret material.
    assert Redactor.for_run(env={"PWD": "/work/x", "XDG_SESSION_CLASS": "user",
                                 "TOKENIZERS_PARALLELISM": "false"}).values == set()


def test_every_error_line_masks_a_urls_user_info() -> None:
    exc = PerfpagesError("cannot clone git+https://ghp_tok12345@github.com/o/r: fatal: "
                         "repository 'https://ci:pin-pass-9@example.org/' not found",
                         key="labels.a.git")
    assert "ghp_tok12345" not in str(exc) and "pin-pass-9" not in str(exc)
    assert "git+https://***@github.com/o/r" in str(exc)
    assert mask_urls("postgresql://bob@db/app, postgresql://bob:pw12@db and https://x.org/") == (
        "postgresql://bob@db/app, postgresql://bob:***@db and https://x.org/")  # a DSN's user


@pytest.mark.parametrize("gz", [False, True])
def test_a_run_still_holding_a_secret_is_not_sealed(tmp_path: Path, gz: bool) -> None:
    """What redaction cannot reach (bytes that are not UTF-8) is found by the search before
    sealing: the run ends failed and unsealed, the error names the file and never the value."""
    w = writer.ArchiveWriter.create(tmp_path, sealed.manifest())
    for label in ("a", "b"):
        w.append(sealed.window(label))
    w.redactor = Redactor({"planted-secret-5"})
    name = "diagnostics/flame.bin" + (".gz" if gz else "")
    data = b"\xff\xfe planted-secret-5"
    (w.run_dir / name).write_bytes(files.gzip_bytes(data) if gz else data)
    with pytest.raises(ArchiveError) as caught:
        w.finish("complete")
    assert str(caught.value).startswith(f"{w.run_dir / name}: holds the value of a secret")
    assert "planted-secret-5" not in str(caught.value)
    assert read_manifest(w.run_dir).status == "failed"
    assert not (w.run_dir / "seal.json").exists() and not (w.run_dir / ".lock").exists()


def test_secret_values_are_masked_wherever_they_appear() -> None:
    env = {"API_TOKEN": "tok-123456", "DB_PASSWORD": "pw-abcdef", "GITHUB_KEY": "k-99999",
           "HOME": "/root", "KEYBOARD": "us", "PATH": "/bin"}
    r = Redactor.for_run("postgresql://u:dsn-secret@h/db", env=env)
    text = r.text("tok-123456 then pw-abcdef then k-99999, dsn-secret; /root us /bin")
    assert text == "*** then *** then ***, ***; /root us /bin"
    assert masked_env(env) == {**env, "API_TOKEN": MASK, "DB_PASSWORD": MASK,
                               "GITHUB_KEY": MASK}
    assert dsn_password("host=h password='a b'") == "a b"
    assert r.data(b"\xff\xfe tok-123456") == b"\xff\xfe tok-123456"  # not text: left alone


SUITE = """
import dataclasses, sys

sys.path.insert(0, {benchmarks!r})
import tiny
from perfpages import Secret

ENV = {{"DB_PASS": "db-pass-value-1", "DB_PWD": "db-pwd-value-2", "GITHUB_PAT": "ghp_patvalue3",
        "AUTH_HEADER": "Bearer auth-value-4", "SERVICE_TOKEN": "label-token-value-1",
        "SENTRY_DSN": "https://sentrykey5@o1.ingest.sentry.io/6",
        "UPSTREAM": Secret("marked-secret-6")}}


def suite(quick):
    s = tiny.suite(quick)
    # The secrets reach an EXPLAIN plan and, with every statement logged, PostgreSQL's log.
    labels = tuple(dataclasses.replace(x, env=ENV, pg_settings={{
        **x.pg_settings, "log_min_duration_statement": 0}}) for x in s.labels)
    leak = ("SELECT v FROM items WHERE v::text IN ("
            + ", ".join(repr(str(v)) for v in ENV.values()) + ")")
    blocks = tuple(dataclasses.replace(b, explain={{"leak": leak}}) for b in s.blocks)
    return dataclasses.replace(
        s, name="leaky", labels=labels, blocks=blocks, rounds=1,
        notes="connect with password=notes-secret-2 or host=db password='S3 cret PW2' "
              "dbname=app; mirror https://ci:url-pass-7@example.org/x")
"""
PLANTED = ["db-pass-value-1", "db-pwd-value-2", "ghp_patvalue3", "auth-value-4",
           "label-token-value-1", "sentrykey5", "marked-secret-6"]
COMMAND = ("perfpages bench.run --suite leaky --dsn=postgresql://u:cmd-secret-3@h/db --note "
           "env-secret-4 --dsn host=db password='S3 cret PW2' dbname=app "
           "--pin a=git+https://ghp_tok12345@github.com/o/r@main "
           "--pin b=git+https://ci:pin-pass-9@example.org/o/r@v1")
SECRETS = [*PLANTED, "notes-secret-2", "cmd-secret-3", "env-secret-4", "S3 cret PW2", "cret PW2",
           "url-pass-7", "ghp_tok12345", "pin-pass-9"]


@pytest.mark.postgres
def test_a_run_and_its_site_hold_no_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PERFPAGES_TEST_API_KEY", "env-secret-4")
    bench = tmp_path / "benchmarks"
    bench.mkdir()
    (bench / "leaky.py").write_text(SUITE.format(benchmarks=str(ROOT / "benchmarks")))
    shutil.copytree(ROOT / "benchmarks" / "tiny", bench / "tiny")
    monkeypatch.setattr(writer, "COMPRESS_ABOVE", 256)  # logs and plans are stored as .gz
    printed = io.StringIO()
    run_dir = run(Options(suite="leaky", benchmarks=bench, results=tmp_path / "results",
                          command=COMMAND), Console(file=printed, width=200))
    assert verify(run_dir) == []
    logs = files.names(run_dir, "diagnostics/postgresql-*.log")
    # The statement, redacted (a log of every statement may outgrow a whole read's 64 MiB).
    assert any("IN ('***', '***'" in files.read_text(run_dir, p, files.MAX_PLAIN_BYTES)
               for p in logs)
    plans = files.names(run_dir, "diagnostics/*/*/explain-leak.json")
    assert plans and all("***" in files.read_text(run_dir, p) for p in plans)
    assert read_manifest(run_dir).labels["a"].env == {name: MASK for name in (
        "DB_PASS", "DB_PWD", "GITHUB_PAT", "AUTH_HEADER", "SERVICE_TOKEN", "SENTRY_DSN",
        "UPSTREAM")}
    site, _ = build_site(tmp_path / "project", {"index.md": "# x\n"}, tmp_path / "results")
    assert (site / "search" / "search_index.json").is_file()
    for root in (run_dir, site):
        assert list(root.rglob("*/postgresql-*.log.gz"))  # the grep below looks inside them
        for path in root.rglob("*"):
            leaked = leaks(path, SECRETS)
            assert not leaked, f"{path.relative_to(root)} holds {leaked}"
    out, err = capfd.readouterr()
    shown = printed.getvalue() + out + err
    assert "floor after" in shown and not [s for s in SECRETS if s in shown]


@pytest.mark.parametrize("pin", ["git+https://ghp_tok12345@127.0.0.1:9/o/r.git@main",
                                 "git+https://ci:pin-pass-9@127.0.0.1:9/o/r.git@v1"])
def test_a_pin_whose_clone_fails_prints_no_token(tmp_path: Path, pin: str) -> None:
    done = subprocess.run([sys.executable, "-m", "perfpages", "bench.run", "--suite", "tiny",
                           "--suites", str(ROOT / "benchmarks"), "--results",
                           str(tmp_path / "results"), "--pin", f"a={pin}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "error: labels.a.git: cannot clone https://" in done.stderr
    assert "***@127.0.0.1:9/o/r.git" in done.stderr
    assert not [s for s in SECRETS if s in done.stdout + done.stderr]
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


def leaks(path: Path, secrets: list[str]) -> list[str]:
    """The secrets in a file's bytes and, for a .gz, in the bytes it decompresses to."""
    if not path.is_file():
        return []
    data = path.read_bytes()
    if path.name.endswith(".gz"):
        data += b"\0" + gzip.decompress(data)
    return [s for s in secrets if s.encode() in data]


def test_the_grep_looks_inside_compressed_files(tmp_path: Path) -> None:
    (tmp_path / "a.log.gz").write_bytes(files.gzip_bytes(b"x" * 4096 + b"env-secret-4"))
    assert leaks(tmp_path / "a.log.gz", ["env-secret-4", "other"]) == ["env-secret-4"]
    (tmp_path / "b.log.gz").write_bytes(files.gzip_bytes(b"x" * 4096 + b"***"))
    assert leaks(tmp_path / "b.log.gz", ["env-secret-4"]) == []

"""No secret reaches an archive or the site: DSN passwords in every form, secret variables.

The corpus test runs a real (tiny) suite whose command line, notes, label environment, process
environment and PostgreSQL log all carry secrets, then greps every byte of the archive and of
the site built from it."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from perfpages.archive import files, writer
from perfpages.archive.reader import verify
from perfpages.archive.secrets import MASK, Redactor, dsn_password, masked_env
from perfpages.run.runner import Options, run
from sites import build_site, quiet

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(("text", "secret"), [
    ("invoke bench.run --dsn=postgresql://bench:hunter22@db:5432/app", "hunter22"),
    ("invoke bench.run --dsn postgresql://bench:p%40ss%3Aword@db/app", "p%40ss%3Aword"),
    ("postgresql://bench@db/app?sslmode=require&password=hunter22", "hunter22"),
    ("host=db user=bench password=hunter22 dbname=app", "hunter22"),
    ("host=db password = 'two words' dbname=app", "two words"),
    ("PASSWORD=hunter22", "hunter22"),
])
def test_every_dsn_form_loses_its_password(text: str, secret: str) -> None:
    redacted = Redactor().text(text)
    assert secret not in redacted and MASK in redacted


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


SUITE = '''
import dataclasses, sys

sys.path.insert(0, {benchmarks!r})
import tiny


def suite(quick):
    s = tiny.suite(quick)
    # The secret reaches an EXPLAIN plan and, with every statement logged, PostgreSQL's log.
    labels = tuple(dataclasses.replace(x, env={{"SERVICE_TOKEN": "label-token-value-1"}},
                                       pg_settings={{**x.pg_settings,
                                                     "log_min_duration_statement": 0}})
                   for x in s.labels)
    leak = "SELECT v FROM items WHERE v::text = 'label-token-value-1'"
    blocks = tuple(dataclasses.replace(b, explain={{"leak": leak}}) for b in s.blocks)
    return dataclasses.replace(s, name="leaky", labels=labels, blocks=blocks, rounds=1,
                               notes="connect with password=notes-secret-2")
'''


@pytest.mark.postgres
def test_a_run_and_its_site_hold_no_secret(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    secrets = ["label-token-value-1", "notes-secret-2", "cmd-secret-3", "env-secret-4"]
    monkeypatch.setenv("PERFPAGES_TEST_API_KEY", "env-secret-4")
    bench = tmp_path / "benchmarks"
    bench.mkdir()
    (bench / "leaky.py").write_text(SUITE.format(benchmarks=str(ROOT / "benchmarks")))
    shutil.copytree(ROOT / "benchmarks" / "tiny", bench / "tiny")
    command = ("invoke bench.run --suite leaky --dsn=postgresql://u:cmd-secret-3@h/db "
               "--note env-secret-4")
    monkeypatch.setattr(writer, "COMPRESS_ABOVE", 256)  # logs and plans are stored as .gz
    run_dir = run(Options(suite="leaky", benchmarks=bench, results=tmp_path / "results",
                          command=command), quiet())
    assert verify(run_dir) == []
    logs = files.names(run_dir, "diagnostics/postgresql-*.log")
    # The statement, redacted (a log of every statement may outgrow a whole read's 64 MiB).
    assert any("= '***'" in files.read_text(run_dir, p, files.MAX_PLAIN_BYTES) for p in logs)
    plans = files.names(run_dir, "diagnostics/*/*/explain-leak.json")
    assert plans and all("***" in files.read_text(run_dir, p) for p in plans)
    site, _ = build_site(tmp_path / "project", {"index.md": "# x\n"}, tmp_path / "results")
    for root in (run_dir, site):
        assert list(root.rglob("*/postgresql-*.log.gz"))  # the grep below looks inside them
        for path in root.rglob("*"):
            leaked = leaks(path, secrets)
            assert not leaked, f"{path.relative_to(root)} holds {leaked}"


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

"""Issue 38's bad-input campaign on the commands added since the first one, counted.

Every case runs the real command line (`python -m perfpages …` with this checkout's src/ on
PYTHONPATH) in a fresh temporary git repository (a sealed synthetic run in results/, a page
pinned to it, mkdocs.yml) beside a directory `outside/` it must not touch. Each case is put in
one class:

- traceback: a Python traceback in the output;
- hang: still running at its timeout, or killed by a signal (an out-of-memory kill);
- lost: a file there before deleted or changed, or one written outside what the command owns
  (the whole case directory is snapshotted before and after; links listed, never followed),
  a staging directory left on a full disk, or a password printed;
- silent: exit 0 on bad input (or bad data published);
- unclear: refused, but not with one `error:` line (or a good input refused);
  (an input that may be skipped or refused — a dangling link among the pages — is ok either way)
- ok: one `error:` line and exit 1 (exit 0 where the input is good), nothing lost.

Full disks are small tmpfs mounts in a private mount namespace (`unshare -m`; needs root or
user namespaces), read-only directories are read as root without CAP_DAC_OVERRIDE (`setpriv`).
Left out: cases that need a PostgreSQL run (`bench.run` on a full disk, `bench.calibrate` with
a valid but tiny `--minutes`).

    python benchmarks/bad_input_campaign.py [--jobs 2] [--only REGEX] [--src DIR] [--keep]

Figures (164 cases, 2 at a time on 2 shared cores at load 10-14, 4.5-5 min): at bffd450 (its
src/ exported, --src) 0 tracebacks, 0 silent, 3 lost, 2 hangs, 2 unclear (a FIFO as mkdocs.yml
or as a site-cache entry waited forever; a cache entry that was a directory, or cells/ a file,
failed the build; --out '', results: 5, docs_dir: 5 rendered into the default directory);
after the fixes of issue 38's branch c, 164 ok.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"  # --src: the code under test (e.g. an export of an earlier commit's src/)
sys.path[:0] = [str(SRC), str(ROOT / "tests")]

DEMO = "2026-11-01-synthetic-demo"
PIN = f"---\nruns:\n  demo: {DEMO}\n---\n"
PAGE = PIN + "# Demo\n\n{{ table('throughput', rows='call', block='callers') }}\n"
SOURCE = ("--title", "A published table", "--url", "https://example.org/t", "--date",
          "2024-01-02")
CLASSES = ("traceback", "silent", "lost", "hang", "unclear", "ok")
READ_ONLY = ("setpriv", "--bounding-set=-dac_override,-dac_read_search")
# $0 the mount point; its contents come from $0.src; what is left there is listed in $0.after
FULL = ('top=$PWD; mount -t tmpfs -o size=$(($(du -sk "$0.src" | cut -f1) + 8))k tmpfs "$0" '
        '&& cp -a "$0.src/." "$0/" && cd "$0" && "$@"; rc=$?; '
        'find "$top/$0" -mindepth 1 -printf "%P\\n" | sort > "$top/$0.after"; exit $rc')


@dataclass
class Done:
    code: int | None  # None: timed out
    stdout: str
    stderr: str


Setup = Callable[[Path], None]


@dataclass
class Case:
    name: str
    command: str  # the surface it counts under
    args: tuple[str, ...]
    setup: Setup | None = None
    expect: str = "refuse"  # "accept": the input is good, exit 0 is right; "either": both are
    owns: tuple[str, ...] = ()  # paths under proj/ the command may write
    keep: tuple[str, ...] = ()  # paths under owns that must survive all the same
    timeout: float = 90
    wrap: tuple[str, ...] = ()
    limit: Callable[[], None] | None = None
    judge: Callable[[Path, Done], tuple[str, str] | None] | None = None
    custom: Callable[[Path, Case], tuple[str, str]] | None = None


def env(base: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(SRC), "NO_MKDOCS_2_WARNING": "1",
            "COLUMNS": "200", "PERFPAGES_CACHE": str(base / "perfpages-cache")}


def snapshot(root: Path) -> dict[str, str]:
    """Every entry's kind and bytes; links listed, never followed; FIFOs never opened."""
    out = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in dirs + files:
            path = Path(folder) / name
            st = path.lstat()
            key = path.relative_to(root).as_posix()
            if stat.S_ISLNK(st.st_mode):
                out[key] = "-> " + os.readlink(path)
            elif stat.S_ISREG(st.st_mode) and st.st_size > 16 << 20:  # a sparse giant: unread
                out[key] = f"{st.st_size} bytes, modified {st.st_mtime_ns}"
            elif stat.S_ISREG(st.st_mode):
                out[key] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                out[key] = "dir" if stat.S_ISDIR(st.st_mode) else f"special {st.st_mode:o}"
    return out


def damage(before: dict[str, str], after: dict[str, str], case: Case) -> list[str]:
    def under(path: str, prefixes: tuple[str, ...]) -> bool:
        return any(path == f"proj/{p}" or path.startswith(f"proj/{p}/") for p in prefixes)

    found = [f"{'deleted' if p not in after else 'changed'} {p}" for p, v in before.items()
             if after.get(p) != v and (not under(p, case.owns) or under(p, case.keep))]
    found += [f"written {p}" for p in after if p not in before and not under(p, case.owns)]
    return found


def spawn(case_dir: Path, case: Case, base: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([*case.wrap, sys.executable, "-m", "perfpages", *case.args],
                            cwd=case_dir / "proj", env=env(base), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=case.limit)


def finish(proc: subprocess.Popen[str], timeout: float) -> Done:
    try:
        out, err = proc.communicate(timeout=timeout)
        return Done(proc.returncode, out, err)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # its own session: the command and its children
        out, err = proc.communicate()
        return Done(None, out, err)


def classify(done: Done, case: Case, lost: list[str], judged: tuple[str, str] | None
             ) -> tuple[str, str]:
    text = done.stdout + done.stderr
    last = (done.stderr.strip().splitlines() or [""])[-1][:160]
    if done.code is None:
        return "hang", f"still running after {case.timeout:g} s"
    if done.code < 0:
        return "hang", f"killed by signal {-done.code}"
    if "Traceback" in text:
        return "traceback", last
    if lost:
        return "lost", "; ".join(lost[:3])
    if judged:
        return judged
    lines = done.stderr.splitlines()
    one = done.code == 1 and len(lines) == 1 and lines[0].startswith("error: ")
    if case.expect == "accept" or (case.expect == "either" and done.code == 0):
        return ("ok", "") if done.code == 0 else ("unclear", f"refused: {last}")
    if done.code == 0:
        return "silent", (done.stdout.strip().splitlines() or ["(no output)"])[0][:160]
    return ("ok", "") if one else ("unclear", f"exit {done.code}: {last}")


def run_case(case: Case, template: Path, base: Path) -> tuple[str, str]:
    case_dir = base / "cases" / case.name
    shutil.copytree(template, case_dir, symlinks=True)
    if case.setup:
        case.setup(case_dir / "proj")
    if case.custom:
        return case.custom(case_dir, case)
    before = snapshot(case_dir)
    done = finish(spawn(case_dir, case, base), case.timeout)
    lost = damage(before, snapshot(case_dir), case)
    judged = case.judge(case_dir / "proj", done) if case.judge else None
    return classify(done, case, lost, judged)


# --- the template repository --------------------------------------------------------------


def make_template(base: Path) -> Path:
    from perfpages.testing import generate

    proj = base / "template" / "proj"
    generate(proj / "results")
    (proj / "docs").mkdir()
    (proj / "docs" / "index.md").write_text(PAGE)
    site_config(proj, "results")
    (proj / "pyproject.toml").write_text("[project]\nname = 'adopter'\nversion = '0.1'\n")
    (base / "template" / "outside").mkdir()
    (base / "template" / "outside" / "keep.txt").write_text("not perfpages'\n")
    git = ("git", "-C", str(proj), "-c", "user.name=c", "-c", "user.email=c@example.org")
    for cmd in (("init", "-q"), ("add", "-A"), ("commit", "-qm", "adopter")):
        subprocess.run([*git, *cmd], check=True)
    return base / "template"


def site_config(proj: Path, results: str, run_pages: bool = False) -> None:
    (proj / "mkdocs.yml").write_text(json.dumps({
        "site_name": "t", "plugins": [{"perfpages": {"results": results,
                                                      "run_pages": run_pages}}]}))


# --- setups -----------------------------------------------------------------------------------


def write(rel: str, text: str | bytes) -> Setup:
    def setup(proj: Path) -> None:
        path = proj / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode() if isinstance(text, str) else text)
    return setup


def steps(*setups: Setup) -> Setup:
    def setup(proj: Path) -> None:
        for one in setups:
            one(proj)
    return setup


def fifo(rel: str) -> Setup:
    def setup(proj: Path) -> None:
        (proj / rel).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(proj / rel)
    return setup


def sparse(rel: str, size: int) -> Setup:
    """A file of `size` zero bytes that takes no disk."""
    def setup(proj: Path) -> None:
        (proj / rel).parent.mkdir(parents=True, exist_ok=True)
        with open(proj / rel, "wb") as fh:
            fh.truncate(size)
    return setup


def memory() -> None:
    """A runaway command fails here (MemoryError) instead of taking the machine."""
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}]\n" for i in range(9))


def link(rel: str, target: str) -> Setup:
    def setup(proj: Path) -> None:
        (proj / rel).symlink_to(proj / target)
    return setup


def mkdir(rel: str, mode: int = 0o755) -> Setup:
    def setup(proj: Path) -> None:
        (proj / rel).mkdir(parents=True, mode=mode)
        os.chmod(proj / rel, mode)
    return setup


def rendered(run_pages: bool = False) -> Setup:
    """A first render, as the user ran it before the bad input."""
    def setup(proj: Path) -> None:
        if run_pages:
            site_config(proj, "results", run_pages=True)
        done = subprocess.run([sys.executable, "-m", "perfpages", "render", "--out", "out"],
                              cwd=proj, env=env(proj.parent.parent.parent), capture_output=True,
                              text=True)
        assert done.returncode == 0, done.stderr
    return setup


def copy_run(rel: str) -> Setup:
    def setup(proj: Path) -> None:
        shutil.copytree(proj / "results" / DEMO, proj / rel)
    return setup


def resealed(change: Callable[[Path], None]) -> Setup:
    def setup(proj: Path) -> None:
        from test_bad_input import reseal
        change(proj / "results" / DEMO)
        reseal(proj / "results" / DEMO)
    return setup


SAMPLE = "samples/callers/v1.0/r1-call-lookup-callers-32.csv"
HEADER = "offset_s,latency_ms,service_ms,status,process\n"


def both_gz(run: Path) -> None:
    import gzip
    (run / SAMPLE).parent.mkdir(parents=True, exist_ok=True)
    (run / SAMPLE).write_text(HEADER + "0.001,1.5,1.2,200,0\n")
    (run / f"{SAMPLE}.gz").write_bytes(gzip.compress((HEADER + "0.002,1.5,1.2,200,0\n").encode()))


def negative_offset(run: Path) -> None:
    (run / SAMPLE).parent.mkdir(parents=True, exist_ok=True)
    (run / SAMPLE).write_text(HEADER + "0.001,1.5,1.2,200,0\n-0.5,1.5,1.2,200,0\n")


def replays_itself(run: Path) -> None:
    from test_bad_input import edit_manifest
    edit_manifest(run, lambda m: m.__setitem__("replay_of", DEMO))


def second_run(proj: Path) -> None:
    from test_bad_input import edit_manifest, reseal
    again = proj / "results" / "2026-11-09-synthetic-again"
    shutil.copytree(proj / "results" / DEMO, again)
    edit_manifest(again, lambda m: m.__setitem__("id", again.name))
    reseal(again)


def poisoned(proj: Path) -> None:
    """Every cached cell 777777, its checksum recomputed as a sha256 of key and data."""
    for entry in (proj / ".cache" / "perfpages" / "cells").glob("*.json"):
        saved = json.loads(entry.read_text())
        for cell in saved["data"]["cells"]:
            cell["values"] = [777777.0] * len(cell["values"])
        body = json.dumps(saved["data"], sort_keys=True, ensure_ascii=False)
        saved["checksum"] = hashlib.sha256(f"{saved['key']}\0{body}".encode()).hexdigest()
        entry.write_text(json.dumps(saved))


def each_entry(change: Callable[[Path], None]) -> Setup:
    def setup(proj: Path) -> None:
        entries = sorted((proj / ".cache" / "perfpages" / "cells").glob("*.json"))
        assert entries, "no cache entry to damage"
        for entry in entries:
            entry.unlink()
            change(entry)
    return setup


def full_disk(rel: str, *setups: Setup) -> tuple[Setup, tuple[str, ...]]:
    """`rel` (under proj/) becomes a tmpfs 8 KiB larger than what the setups put there."""
    def setup(proj: Path) -> None:
        for one in setups:
            one(proj / f"{rel}.src")
        (proj / rel).mkdir()
    return setup, ("unshare", "-m", "sh", "-c", FULL, rel)


def left_on_disk(rel: str) -> Callable[[Path, Done], tuple[str, str] | None]:
    """What the command left on the full disk beyond what was there: a staging directory."""
    def judge(proj: Path, done: Done) -> tuple[str, str] | None:
        there = {p.relative_to(proj / f"{rel}.src").as_posix()
                 for p in (proj / f"{rel}.src").rglob("*")}
        after = (proj / f"{rel}.after").read_text().split() if (
            proj / f"{rel}.after").exists() else []
        left = [p for p in after if p not in there and not p.startswith(".cache")]
        return ("lost", f"left on the full disk: {', '.join(left[:3])}") if left else None
    return judge


# --- judges and custom runs -----------------------------------------------------------------


def no_password(password: str) -> Callable[[Path, Done], tuple[str, str] | None]:
    pieces = {password, *(p for p in re.split(r"[@:?# ]", password) if len(p) > 2)}

    def judge(proj: Path, done: Done) -> tuple[str, str] | None:
        shown = [p for p in pieces if p in done.stdout + done.stderr]
        return ("lost", f"password printed: {shown[0]!r}") if shown else None
    return judge


def page_has(text: str) -> Callable[[Path, Done], tuple[str, str] | None]:
    def judge(proj: Path, done: Done) -> tuple[str, str] | None:
        page = proj / "out" / "docs" / "index.md"
        if page.exists() and text in page.read_text(errors="replace"):
            return "silent", f"{text} published"
        return None
    return judge


def two_at_once(case_dir: Path, case: Case) -> tuple[str, str]:
    """Two renders into one directory at once: whichever exits 0 left every page there."""
    base = case_dir.parent.parent
    both = [spawn(case_dir, case, base) for _ in range(2)]
    done = [finish(proc, case.timeout) for proc in both]
    for one in done:
        got = classify(one, Case(case.name, case.command, case.args, expect="accept"), [], None)
        if got[0] in ("hang", "traceback"):
            return got
        if one.code not in (0, None) and not (one.stderr.startswith("error: ") and
                                              len(one.stderr.splitlines()) == 1):
            return "unclear", one.stderr.strip()[-160:]
    pages = case_dir / "proj" / "rendered" / "docs" / "index.md"
    if not any(one.code == 0 for one in done):
        return "unclear", "neither render succeeded"
    if not pages.is_file():
        return "lost", "exit 0, yet the page is not there"
    left = sorted(p.name for p in (case_dir / "proj").iterdir())
    if left != [".cache", ".git", "docs", "mkdocs.yml", "pyproject.toml", "rendered", "results"]:
        return "lost", f"left beside: {left}"
    return "ok", ""


def killed_import(case_dir: Path, case: Case) -> tuple[str, str]:
    """An import SIGKILLed while it writes; then bench.list, a second import, bench.verify."""
    proj, base = case_dir / "proj", case_dir.parent.parent
    (proj / "t.csv").write_text("label,throughput (/s)\n" + "".join(
        f"v{i},{i}\n" for i in range(3000)))
    proc = spawn(case_dir, case, base)
    deadline = time.monotonic() + case.timeout
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            if any((p / "results.jsonl").stat().st_size > 0
                   for p in (proj / "results").iterdir() if p.name != DEMO):
                break
        except OSError:
            pass
        time.sleep(0.002)
    with contextlib.suppress(ProcessLookupError):  # it ended first
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()
    said = []
    for args in (("bench.list",), case.args, ("bench.verify",)):
        again = finish(spawn(case_dir, Case(case.name, case.command, args), base), case.timeout)
        said.append(again)
        if again.code is None or "Traceback" in again.stdout + again.stderr:
            return classify(again, case, [], None)
    if any("resume" in d.stdout + d.stderr for d in said):
        return "unclear", "suggests --resume on a killed import"
    if said[1].code or said[2].code:
        return "lost", f"after the kill: {(said[1].stderr + said[2].stderr).strip()[-160:]}"
    hidden = [p.name for p in (proj / "results").iterdir() if p.name.startswith(".")]
    return ("lost", f"left: {hidden}") if hidden else ("ok", "")


# --- the cases ----------------------------------------------------------------------------


def render_cases() -> list[Case]:
    r = ("render", "--no-strict")
    owns = (".cache", "out")
    disk, wrap = full_disk("disk", write("docs/index.md", PAGE), write("docs/big.txt", "x" * 9000),
                           lambda d: site_config(d, "../results"))
    return [
        Case("render --out results", "render", (*r, "--out", "results"), owns=(".cache",)),
        Case("render --out results, empty", "render", (*r, "--out", "empty"),
             steps(mkdir("empty"), lambda p: site_config(p, "empty")), owns=(".cache",)),
        Case("render --out docs/built", "render", (*r, "--out", "docs/built"), owns=(".cache",)),
        Case("render --out .", "render", (*r, "--out", "."), owns=(".cache",)),
        Case("render --out ..", "render", (*r, "--out", ".."), owns=(".cache",)),
        Case("render --out results/x", "render", (*r, "--out", "results/x"), owns=(".cache",)),
        Case("render --out a user's directory", "render", (*r, "--out", "mine"),
             write("mine/notes.txt", "keep\n"), owns=(".cache",)),
        Case("render --out a file", "render", (*r, "--out", "file"), write("file", "keep\n"),
             owns=(".cache",)),
        Case("render --out a dangling link", "render", (*r, "--out", "link"),
             link("link", "../outside/made"), owns=(".cache",)),
        Case("render --out a link to outside", "render", (*r, "--out", "link"),
             link("link", "../outside"), owns=(".cache",)),
        Case("render --out 300 characters", "render", (*r, "--out", "x" * 300), owns=owns),
        Case("render --docs 300 characters", "render", (*r, "--docs", "d" * 300), owns=owns),
        Case("render --docs a file", "render", (*r, "--docs", "mkdocs.yml"), owns=owns),
        Case("render, a sealed run copied into out", "render", (*r, "--out", "out"),
             steps(rendered(), copy_run(f"out/docs/{DEMO}")), owns=owns,
             keep=(f"out/docs/{DEMO}",)),
        Case("render, a rendered page edited", "render", (*r, "--out", "out"),
             steps(rendered(), write("out/docs/index.md", "mine\n")), owns=owns,
             keep=("out/docs/index.md",)),
        Case("render, the user's out.partial", "render", (*r, "--out", "out"),
             write("out.partial/keep.txt", "keep\n"), expect="accept", owns=owns,
             keep=("out.partial",)),
        Case("render, out.partial a link", "render", (*r, "--out", "out"),
             steps(write("target/keep.txt", "keep\n"), link("out.partial", "target")),
             expect="accept", owns=owns, keep=("out.partial", "target")),
        Case("render, a non-UTF-8 page", "render", r,
             write("docs/latin.md", "# Café\n".encode("latin-1")), owns=(".cache",)),
        Case("render, a FIFO as a page", "render", r, fifo("docs/fifo.md"), expect="accept",
             owns=(".cache", "rendered"), timeout=60),
        Case("render, a FIFO as mkdocs.yml", "render", r,
             steps(lambda p: (p / "mkdocs.yml").unlink(), fifo("mkdocs.yml")),
             owns=(".cache",), timeout=60),
        Case("render, bad YAML front matter", "render", r,
             write("docs/index.md", f"---\nruns: {{demo: {DEMO}\n---\n# T\n"), owns=(".cache",)),
        Case("render, no mkdocs.yml", "render", r, lambda p: (p / "mkdocs.yml").unlink(),
             owns=(".cache",)),
        Case("render, a FIFO as pyproject.toml", "render", r,  # no file: no settings
             steps(lambda p: (p / "pyproject.toml").unlink(), fifo("pyproject.toml")),
             expect="accept", owns=(".cache", "rendered"), timeout=60),
        Case("render --out under a file", "render", (*r, "--out", "file/out"),
             write("file", "keep\n"), owns=(".cache",)),
        Case("render, rendered/ a link to outside", "render", r, link("rendered", "../outside"),
             owns=(".cache",)),
        Case("render --out ''", "render", (*r, "--out", ""), owns=(".cache",)),
        Case("render --docs ''", "render", (*r, "--docs", ""), owns=(".cache",)),
        Case("render, docs_dir: ''", "render", r,
             write("mkdocs.yml", "site_name: t\ndocs_dir: ''\nplugins: [perfpages]\n"),
             owns=(".cache",)),
        Case("render, a link loop among the pages", "render", r, link("docs/loop", "docs"),
             expect="accept", owns=(".cache", "rendered"), timeout=60),
        Case("render, a dangling link as a page", "render", r, link("docs/gone.md", "nowhere"),
             expect="either", owns=(".cache", "rendered")),
        Case("render, a directory x.md", "render", r, mkdir("docs/x.md"), expect="either",
             owns=(".cache", "rendered")),
        Case("render, a YAML bomb in front matter", "render", r,
             write("docs/index.md", "---\n" + BOMB + "---\n# T\n"), expect="either",
             owns=(".cache", "rendered"), limit=memory, timeout=60),
        Case("render, a YAML bomb in mkdocs.yml", "render", r,
             write("mkdocs.yml", BOMB + "plugins: [perfpages]\n"), expect="either",
             owns=(".cache", "rendered"), limit=memory, timeout=60),
        Case("render, mkdocs.yml a list", "render", r, write("mkdocs.yml", "- a\n"),
             owns=(".cache",)),
        Case("render, mkdocs.yml not UTF-8", "render", r,
             write("mkdocs.yml", b"site_name: caf\xe9\nplugins: [perfpages]\n"), owns=(".cache",)),
        Case("render, results: 5 in mkdocs.yml", "render", r,
             write("mkdocs.yml", "site_name: t\nplugins: [{perfpages: {results: 5}}]\n"),
             owns=(".cache",)),
        Case("render, docs_dir: 5", "render", r,
             write("mkdocs.yml", "site_name: t\ndocs_dir: 5\nplugins: [perfpages]\n"),
             owns=(".cache",)),
        Case("render, a page pinning no such run", "render", r,
             write("docs/index.md", "---\nruns: {demo: 2020-01-01-nosuch}\n---\n# T\n"),
             owns=(".cache",)),
        Case("render, runs: 5", "render", r, write("docs/index.md", "---\nruns: 5\n---\n# T\n"),
             owns=(".cache",)),
        Case("render, a read-only output", "render", (*r, "--out", "ro/out"), mkdir("ro", 0o555),
             owns=(".cache",), wrap=READ_ONLY),
        Case("render, a full disk", "render", ("render",), disk, owns=("disk.after",),
             wrap=wrap, judge=left_on_disk("disk")),
        Case("render, two at once", "render", ("render",), custom=two_at_once, timeout=180),
        Case("render, two at once again", "render", ("render",), custom=two_at_once,
             timeout=180),
    ]


def import_cases() -> list[Case]:
    def table(name: str, text: str | bytes, *extra: str) -> tuple[tuple[str, ...], Setup]:
        return (("import", name, *SOURCE, *(extra or ("--results", "results"))),
                write(name, text))

    def case(name: str, file: str, text: str | bytes, *extra: str, **kw: object) -> Case:
        args, setup = table(file, text, *extra)
        return Case(f"import {name}", "import", args, setup, owns=("results",), **kw)  # type: ignore

    good = "label,throughput (/s)\n" + "".join(f"v{i},{i}\n" for i in range(200))
    disk, wrap = full_disk("disk", write("t.csv", good), mkdir("results"))
    return [
        case("a round of 999999999", "huge.csv", "label,round,throughput (/s)\na,1,5\n"
             "a,999999999,6\n", limit=memory, timeout=120),
        case("a 400-digit integer", "digits.json", '[{"label": "a", "callers": ' + "9" * 400 +
             ', "throughput (/s)": 5}]'),
        case("a key given twice", "keys.json",
             '[{"label": "a", "label": "b", "throughput (/s)": 5}]'),
        case("rows 8 and 8.0 (CSV)", "rows.csv", "label,callers,throughput (/s)\na,8,5\na,8.0,6\n"),
        case("rows 8 and 8.0 (JSON)", "rows.json", '[{"label": "a", "callers": 8, '
             '"throughput (/s)": 5}, {"label": "a", "callers": 8.0, "throughput (/s)": 6}]'),
        case("a label with a newline", "line.csv", 'label,throughput (/s)\n"a\nb",5\n'),
        case("a label with U+2028", "line.json", '[{"label": "a\\u2028b", "throughput (/s)": 5}]'),
        case("an empty file", "empty.csv", ""),
        case("a header only", "head.csv", "label,throughput (/s)\n"),
        case("binary garbage", "bin.csv", "\x00\xff\xfe" * 100),
        case("non-UTF-8", "latin.csv", "label,throughput (/s)\ncaf\xe9,5\n".encode("latin-1")),
        case("NaN throughput", "nan.csv", "label,throughput (/s)\na,nan\n"),
        case("infinite throughput", "inf.csv", "label,throughput (/s)\na,inf\n"),
        case("negative throughput", "neg.csv", "label,throughput (/s)\na,-5\n"),
        case("no known metric", "metric.csv", "label,bogus\na,5\n"),
        case("JSON not a list", "obj.json", '{"label": "a"}'),
        case("a date 2024-13-45", "d.csv", "label,throughput (/s)\na,5\n", "--date",
             "2024-13-45"),
        case("--results pyproject.toml", "t.csv", good, "--results", "pyproject.toml"),
        case("--results 300 characters", "t.csv", good, "--results", "r" * 300),
        Case("import --results a read-only directory", "import",
             ("import", "t.csv", *SOURCE, "--results", "ro"),
             steps(write("t.csv", good), mkdir("ro", 0o555)), wrap=READ_ONLY),
        case("a field of 200 000 characters", "wide.csv", "label,throughput (/s)\n" +
             "a" * 200_000 + ",5\n"),
        case("JSON nested 100 000 deep", "deep.json", "[" * 100_000 + "]" * 100_000),
        case("a CSV of 10 000 columns", "cols.csv", ",".join(f"c{i}" for i in range(10_000)) +
             "\n" + ",".join("1" for _ in range(10_000)) + "\n"),
        Case("import a sparse 20 GB file", "import", ("import", "big.csv", *SOURCE),
             sparse("big.csv", 20 << 30), limit=memory, timeout=60),
        case("--title ''", "t.csv", good, "--title", ""),
        case("--title with a newline", "t.csv", good, "--title", "a\nb"),
        case("--date ''", "t.csv", good, "--date", ""),
        case("--url not a URL", "t.csv", good, "--url", "javascript:alert(1)"),
        case("--suite ../x (made the name x)", "t.csv", good, "--suite", "../x",
             expect="accept"),
        case("--rounds abc", "t.csv", good, "--rounds", "abc"),
        case("--env without =", "t.csv", good, "--env", "NOEQUALS"),
        case("--build malformed", "t.csv", good, "--build", "==="),
        case("--setting malformed", "t.csv", good, "--setting", "x"),
        case("--method bogus (a note)", "t.csv", good, "--method", "bogus", expect="accept"),
        case("--rule bogus", "t.csv", good, "--rule", "bogus"),
        Case("import the same table twice", "import", ("import", "t.csv", *SOURCE),
             steps(write("t.csv", good), lambda p: subprocess.run(
                 [sys.executable, "-m", "perfpages", "import", "t.csv", *SOURCE], cwd=p,
                 env=env(p.parent.parent.parent), capture_output=True, check=True)),
             owns=("results",), keep=("results",)),
        case("--rounds 0", "t.csv", good, "--rounds", "0"),
        case("--rounds 1e9", "t.csv", good, "--rounds", "1000000000"),
        Case("import, a FIFO as pyproject.toml", "import", ("import", "t.csv", *SOURCE),
             steps(write("t.csv", good), lambda p: (p / "pyproject.toml").unlink(),
                   fifo("pyproject.toml")), expect="accept", owns=("results",), timeout=60),
        Case("import a missing file", "import", ("import", "nosuch.csv", *SOURCE)),
        Case("import a directory", "import", ("import", "docs", *SOURCE)),
        Case("import a FIFO", "import", ("import", "fifo.csv", *SOURCE), fifo("fifo.csv"),
             timeout=60),
        Case("import without --title", "import", ("import", "t.csv"), write("t.csv", good)),
        Case("import onto a full disk", "import", ("import", "t.csv", *SOURCE, "--results",
                                                   "results"), disk, owns=("disk.after",),
             wrap=wrap, judge=left_on_disk("disk")),
        Case("import killed, then list, import, verify", "import",
             ("import", "t.csv", *SOURCE), owns=("results", "t.csv"), custom=killed_import,
             timeout=120),
    ]


def site_cases() -> list[Case]:
    html = "<p>Throughput: {{ table('throughput') }}</p>\n"
    ok_page = write("site/index.html", "<p>ok</p>\n")
    check = ("check-site", "site")
    return [
        Case("check-site, a directory x.html", "check-site", check,
             steps(ok_page, mkdir("site/x.html")), expect="accept"),
        Case("check-site, a dangling x.html", "check-site", check,
             steps(ok_page, link("site/x.html", "nowhere.html")), expect="accept"),
        Case("check-site, a FIFO x.html", "check-site", check,
             steps(ok_page, fifo("site/x.html")), expect="accept", timeout=60),
        Case("check-site, a FIFO as the site", "check-site", check, fifo("site"), timeout=60),
        Case("check-site, a file as the site", "check-site", check, write("site", "x\n")),
        Case("check-site, no such site", "check-site", check),
        Case("check-site, 300 characters", "check-site", ("check-site", "s" * 300)),
        Case("check-site, an unrendered macro", "check-site", check, write("site/index.html",
                                                                           html)),
        Case("check-site, a link loop", "check-site", check,
             steps(ok_page, link("site/loop", "site")), expect="accept", timeout=60),
        Case("check-site, a sparse 20 GB page", "check-site", check,
             steps(ok_page, sparse("site/big.html", 20 << 30)), expect="either", limit=memory,
             timeout=60),
        Case("check-site, an unreadable page", "check-site", check,
             steps(ok_page, write("site/x.html", "<p>x</p>"), lambda p: os.chmod(
                 p / "site/x.html", 0)), expect="either", wrap=READ_ONLY),
        Case("check-site, a non-UTF-8 page", "check-site", check,
             write("site/index.html", "<p>caf\xe9</p>".encode("latin-1")), expect="accept"),
        *(Case(f"guide {name[:20]!r}", "guide", ("guide", name)) for name in (
            "x" * 300, "../README", "/etc/passwd", "pages/../adopt", "", "nosuch", "-",
            "adopt\nx")),
        Case("guide list", "guide", ("guide", "list"), expect="accept"),
        Case("guide pages.md#versions", "guide", ("guide", "pages.md#versions"),
             expect="accept"),
    ]


def macro_cases() -> list[Case]:
    r = ("render", "--no-strict", "--out", "out")
    made = [(f"macro {m} outside claim()", write("docs/index.md", PAGE + f"\nIt holds: {m}\n"))
            for m in ("{{ certified(block='callers') }}",
                      "{{ faster('v1.0', 'v1.1 + cache', block='callers') }}",
                      "{{ statement('lookup', label='v1.0', block='callers', at_most=0.1) }}",
                      "{{ table }}", "{{ claim }}", "{{ why }}")]
    cases = [Case(name, "macros", r, setup, owns=(".cache", "out"),
                  judge=page_has(" at 0x")) for name, setup in made]
    cache = (".cache", "out")
    for name, change in (
            ("an entry re-checksummed", poisoned),
            ("an entry not JSON", each_entry(lambda e: e.write_text("{"))),
            ("an entry a FIFO", each_entry(lambda e: os.mkfifo(e))),
            ("an entry a link outside", each_entry(
                lambda e: e.symlink_to(e.parents[4].parent / "outside" / "keep.txt"))),
            ("an entry a directory", each_entry(lambda e: e.mkdir())),
            ("cells a file", lambda p: (shutil.rmtree(p / ".cache/perfpages/cells"),
                                        (p / ".cache/perfpages/cells").write_text("x")))):
        cases.append(Case(f"cache: {name}", "cache", r, steps(rendered(run_pages=True), change),
                          expect="accept", owns=cache, timeout=90, judge=page_has("777")))
    return cases


def calibrate_cases() -> list[Case]:
    suites = ("--suites", str(ROOT / "benchmarks"), "--suite", "tiny", "--block", "lookup")
    cases = [Case(f"calibrate --minutes {m}", "calibrate", ("bench.calibrate", *suites,
                                                              "--minutes", m))
             for m in ("1e9", "1e300", "0", "-5", "nan", "inf", "abc", "", "1441")]
    cases += [Case(f"calibrate {name}", "calibrate", ("bench.calibrate", *args)) for name, args
              in (("--suite nosuch", ("--suite", "nosuch", "--block", "x")),
                  ("--suite ../../etc/passwd", ("--suite", "../../etc/passwd", "--block", "x")),
                  ("--block nosuch", (*suites[:4], "--block", "nosuch")),
                  ("--block without --suite", ("--block", "lookup")),
                  ("--seed abc", (*suites, "--seed", "abc")),
                  ("--run nosuch", ("--run", "nosuch")))]
    cases.append(Case("calibrate --run with --minutes", "calibrate",
                      ("bench.calibrate", "--run", DEMO, "--minutes", "1e300")))
    cases.append(Case("calibrate --format bogus", "calibrate",
                      ("bench.calibrate", "--run", DEMO, "--format", "bogus")))
    return cases


def dsn_cases() -> list[Case]:
    cases = []
    for dsn, password in (("postgresql://bob:p@ss@word9@127.0.0.1:9/db", "p@ss@word9"),
                          ("postgresql://bob:p@ss@word9@HOST.invalid/db", "p@ss@word9"),
                          ("postgres://bob:Zq:Xv9@Kw7@[::1]:9/db", "Zq:Xv9@Kw7"),
                          ("postgresql://bob:Zq?Xv9#Kw7@127.0.0.1:9/db", "Zq?Xv9#Kw7"),
                          ("postgresql://bob@127.0.0.1:9/db?password=Zq@Xv9@Kw7", "Zq@Xv9@Kw7"),
                          ("host=127.0.0.1 port=9 user=bob password='Zq@Xv9 Kw7'", "Zq@Xv9 Kw7"),
                          ("host=127.0.0.1 user=bob password='Zq@Xv9 Kw7", "Zq@Xv9 Kw7"),
                          ("postgresql://bob:Zq%zzXv9@127.0.0.1:9/db", "Zq%zzXv9"),
                          ("postgresql://bob:Zq@Xv9@", "Zq@Xv9")):
        cases.append(Case(f"dsn {dsn[:36]}…", "dsn", (
            "bench.run", "--suites", str(ROOT / "benchmarks"), "--suite", "tiny", "--labels", "a",
            "--dsn", dsn, "--results", "r"), owns=("r",), timeout=120,
            judge=no_password(password)))
    return cases


def silent_cases() -> list[Case]:
    r = ("render", "--no-strict", "--out", "out")
    owns = (".cache", "out")
    cases = [Case(f"page: {key} without runs", "accepted", r,
                  write("docs/index.md", f"---\ntitle: T\n{front}---\n# T\n"), owns=owns)
             for key, front in (("default_run", "default_run: demo\n"),
                                ("allow_failed", "allow_failed: [demo]\n"),
                                ("holm", "perfpages: {holm: true}\n"))]
    cases += [Case(f"page: {name}", "accepted", r, write("docs/index.md", PAGE + f"\n{m}\n"),
                   owns=owns) for name, m in (
        ("change() of a label with itself", "{{ change('v1.0', 'v1.0', block='callers') }}"),
        ("faster() of a label with itself",
         "{{ claim('Same.', faster('v1.0', 'v1.0', block='callers')) }}"),
        ("why() of a label with itself", "{{ why('v1.0', 'v1.0', block='callers') }}"),
        ("why() on an unknown profile block",
         "{{ why('v1.0', 'v1.1 + cache', block='callers', profile='nosuch') }}"))]
    cases += [
        Case("report --compare a,a", "accepted", ("bench.report", "--run", DEMO, "--compare",
                                                  "v1.0,v1.0")),
        Case("results = \"\" in [tool.perfpages]", "accepted", ("bench.list",),
             write("pyproject.toml", '[tool.perfpages]\nresults = ""\n')),
        Case("verify: x and x.gz both present", "accepted", ("bench.verify",),
             resealed(both_gz), owns=("results",), keep=("results",)),
        Case("verify: a negative sample offset", "accepted", ("bench.verify",),
             resealed(negative_offset), owns=("results",), keep=("results",)),
        Case("verify: replay_of the run itself", "accepted", ("bench.verify",),
             resealed(replays_itself), owns=("results",), keep=("results",))]
    replay = ("bench.replay", DEMO, "--claims-only", "2026-11-09-synthetic-again")
    for name, broken in (
            ("a broken macro", write("docs/index.md", PAGE + "\n{{ claim('x', nosuch()) }}\n")),
            ("bad YAML", write("docs/index.md", f"---\nruns: {{demo: {DEMO}\n---\n# T\n")),
            ("no docs dir", lambda p: shutil.rmtree(p / "docs")),
            ("no mkdocs.yml", lambda p: (p / "mkdocs.yml").unlink())):
        cases.append(Case(f"replay --claims-only, {name}", "accepted", replay,
                          steps(second_run, broken), owns=(".cache",)))
    return cases


def all_cases() -> list[Case]:
    return [*render_cases(), *import_cases(), *site_cases(), *macro_cases(),
            *calibrate_cases(), *dsn_cases(), *silent_cases()]


def main() -> int:
    global SRC
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", default="", help="run the cases whose name matches this regex")
    parser.add_argument("--keep", action="store_true", help="keep the case directories")
    parser.add_argument("--src", type=Path, default=SRC, help="the perfpages src/ to run")
    opts = parser.parse_args()
    SRC = opts.src.resolve()
    cases = [c for c in all_cases() if re.search(opts.only, c.name)]
    assert len({c.name for c in cases}) == len(cases), "two cases of one name"
    base = Path(tempfile.mkdtemp(prefix="bad-input-38-"))
    started = time.monotonic()
    template = make_template(base)
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    print(f"{SRC} (checkout at {head}), {len(cases)} cases, {opts.jobs} at a time", flush=True)

    def one(case: Case) -> tuple[Case, str, str]:
        try:
            return (case, *run_case(case, template, base))
        except Exception as exc:  # the campaign's own setup failed: say so, count it apart
            return case, "setup", f"{type(exc).__name__}: {exc}"[:160]

    with ThreadPoolExecutor(opts.jobs) as pool:
        outcomes = list(pool.map(one, cases))
    by_class = Counter(kind for _, kind, _ in outcomes)
    commands = list(dict.fromkeys(c.command for c in cases))
    print(f"\n{'command':<12}" + "".join(f"{k:>10}" for k in (*CLASSES, "setup")))
    for command in commands:
        got = Counter(kind for c, kind, _ in outcomes if c.command == command)
        print(f"{command:<12}" + "".join(f"{got[k]:>10}" for k in (*CLASSES, "setup")))
    print(f"{'all':<12}" + "".join(f"{by_class[k]:>10}" for k in (*CLASSES, "setup")))
    failing = [(c, kind, why) for c, kind, why in outcomes if kind != "ok"]
    if failing:
        print("\nfailing:")
        for c, kind, why in failing:
            print(f"  {kind:<9} {c.name}: {why}")
    print(f"\n{time.monotonic() - started:.0f} s; left out: bench.run on a full disk and "
          "bench.calibrate with a valid tiny --minutes (each a PostgreSQL run)")
    if not opts.keep:
        shutil.rmtree(base, ignore_errors=True)
    else:
        print(f"cases kept in {base}")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())

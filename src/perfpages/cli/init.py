"""`perfpages init`: a working starting point in an existing git repository.

Writes mkdocs.yml (Material, the perfpages plugin), docs/index.md, an example suite and page
that work as written, results/, tasks.py, a CI workflow and the `[tool.perfpages]` section of
pyproject.toml. Everything is checked before anything is written: a path that leaves the
repository (`--suites ../x`, a link out, a dangling link), a file where a directory must go, a
directory it cannot write, a file that already exists — any of these and it writes nothing and
says which. Each file is written atomically, and a write that still fails takes back the others.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import subprocess
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from importlib import metadata, resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

from perfpages._version import __version__
from perfpages.archive.manifest import without_credentials
from perfpages.archive.writer import write_text_atomic
from perfpages.cli import pyproject
from perfpages.errors import PerfpagesError
from perfpages.run import machine
from perfpages.settings import DEFAULTS, PYPROJECT

WORKFLOW = ".github/workflows/perfpages.yml"
KEY = "perfpages init"
AGAIN = "then run perfpages init again"


@dataclass(frozen=True)
class Planned:
    path: str  # relative to the repository root
    text: str
    edit: bool = False  # replaces an existing file with an edited copy (pyproject.toml)


def _template(name: str) -> str:
    return resources.files("perfpages.cli").joinpath(f"scaffold/{name}.tmpl").read_text()


def git_root(start: Path) -> Path:
    done = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=start,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise PerfpagesError(f"{start} is not in a git repository", key=KEY,
                             fix="run `git init` first (runs record the commit they measured)")
    return Path(done.stdout.strip()).resolve()


# What the workflow installs when perfpages came from somewhere CI cannot reach (a local
# directory, a wheel file): `init` names it in one line, and pip fails on it naming this host.
PLACEHOLDER = "git+https://REPLACE-WITH-YOUR-GIT-HOST/perfpages.git@FULL-COMMIT-SHA"


@dataclass(frozen=True)
class Source:
    """Where CI installs perfpages from: `requirement` pinned exactly (None: nowhere CI can
    reach, so the workflow holds PLACEHOLDER); `origin`: how it is installed here, for the note."""
    requirement: str | None
    origin: str


def _local(url: str) -> Path | None:
    parts = urlsplit(url)
    return Path(url2pathname(parts.path)) if parts.scheme == "file" else None


# A URL the workflow can hold as it is: inside a shell's double quotes and a YAML plain scalar
# (no quote, $, backtick, space or parenthesis), so nothing in it is read as code.
SAFE_URL = re.compile(r"[\w.~:/?#@!&+,;=%-]+")


def _reachable(url: str) -> str | None:
    """`url` without its credentials (a token in a remote's URL never reaches the workflow),
    if CI can fetch it and the workflow can hold it; else None."""
    url = without_credentials(url)
    return url if SAFE_URL.fullmatch(url) and not _local(url) and "://" in url else None


def _pushed(checkout: Path, commit: str) -> str | None:
    """The URL of a remote (not on this machine) whose fetched branches hold `commit`."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(checkout), *args], capture_output=True,
                              text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    for ref in git("for-each-ref", "--contains", commit, "--format=%(refname)",
                   "refs/remotes").split():
        url = git("remote", "get-url", ref.split("/")[2])
        scp = re.fullmatch(r"(?:[\w.-]+@)?([\w.-]+):(?!/)(.+)", url)  # git@host:owner/repo
        found = _reachable(f"https://{scp[1]}/{scp[2]}" if scp and "://" not in url else url)
        if found:
            return found
    return None


def source(origin: dict[str, Any] | None, version: str = __version__) -> Source:
    """Where CI can install the perfpages running here, from its PEP 610 direct_url.json
    (None: installed from a package index): a git URL at the commit pip installed, a wheel's
    URL with its sha256, a local checkout's commit once a remote holds it, else nowhere."""
    if origin is None:
        return Source(f"perfpages[docs]=={version}", f"perfpages {version} from a package index")
    url = str(origin.get("url", ""))
    local = _local(url)
    vcs = origin.get("vcs_info") or {}
    commit = str(vcs.get("commit_id", ""))
    if vcs.get("vcs") == "git" and re.fullmatch(r"[0-9a-f]{40}", commit):
        if local is None:
            found = _reachable(url)
            return Source(found and f"perfpages[docs] @ git+{found}@{commit}",
                          f"git {without_credentials(url)} at {commit}")
        remote = _pushed(local, commit)
        return Source(remote and f"perfpages[docs] @ git+{remote}@{commit}",
                      f"the local git repository {local} at {commit}")
    if "archive_info" in origin:
        sha = str((origin["archive_info"].get("hashes") or {}).get("sha256", ""))
        found = _reachable(url)
        if found and re.fullmatch(r"[0-9a-f]{64}", sha):
            return Source(f"perfpages[docs] @ {found}#sha256={sha}", f"the archive {found}")
        return Source(None, f"the file {local or without_credentials(url)}")
    if local is not None:  # a directory: its commit, if a remote has it
        head = machine.repository(local).get("commit") if local.is_dir() else None
        remote = head and _pushed(local, head)
        return Source(remote and f"perfpages[docs] @ git+{remote}@{head}",
                      f"the directory {local}")
    return Source(None, f"{without_credentials(url) or 'an unknown source'}")


def installed_source() -> Source:
    """`source` of the distribution that is the code running (not another perfpages earlier
    on the path, nor a source tree's metadata that no installer wrote)."""
    unknown = Source(None, "a source tree that no installer recorded")
    try:
        dist = metadata.distribution("perfpages")
        origin = json.loads(dist.read_text("direct_url.json") or "null")
    except (metadata.PackageNotFoundError, ValueError):
        return unknown
    running = Path(__file__).resolve().parent.parent
    there = Path(str(dist.locate_file("perfpages"))).resolve()
    if not isinstance(origin, dict):  # from an index: pip writes INSTALLER, no direct_url.json
        return source(None, dist.version) if dist.read_text("INSTALLER") and there == running \
            else unknown
    local = _local(str(origin.get("url", "")))  # an editable install runs its source
    if there != running and not (local and running.is_relative_to(local.resolve())):
        return unknown
    return source(origin, dist.version)


def install_command(pyproject_text: str, found: Source | None = None) -> str:
    """How CI installs perfpages: this checkout itself in perfpages' own repository; else from
    where it is installed here, pinned exactly, or PLACEHOLDER."""
    if pyproject.project_name(pyproject_text) == "perfpages":
        return 'pip install -e ".[docs]"'
    found = found or installed_source()
    return f'pip install "{found.requirement or "perfpages[docs] @ " + PLACEHOLDER}"'


def written_note(start: Path) -> str | None:
    """One line: what to put where the workflow just written holds PLACEHOLDER (None: it
    does not)."""
    if PLACEHOLDER not in (git_root(start) / WORKFLOW).read_text():
        return None
    found = installed_source()
    return (f"edit {WORKFLOW}: perfpages is installed here from {found.origin}, which CI "
            f"cannot reach; replace {PLACEHOLDER} (2 Install steps) with a git URL at a full "
            "commit or a wheel's https URL (perfpages guide adopt: Install)")


def suites_dir(suites: str) -> str:
    """`--suites` as a normalised path inside the repository, relative to its root."""
    fix = "give a directory inside the repository, relative to its root (e.g. benchmarks)"
    if not suites.strip() or any(ord(ch) < 32 or ord(ch) == 127 for ch in suites):
        raise PerfpagesError(f"not a directory name: {suites!r}", key="--suites", fix=fix)
    if posixpath.isabs(suites) or Path(suites).is_absolute():
        raise PerfpagesError(f"{suites} is an absolute path", key="--suites", fix=fix)
    norm = posixpath.normpath(suites)
    if norm == ".." or norm.startswith("../"):
        raise PerfpagesError(f"{suites} is outside the repository", key="--suites", fix=fix)
    if norm.split("/")[0] == ".git":
        raise PerfpagesError(f"{suites} is inside .git", key="--suites", fix=fix)
    clash = [t for t in targets(".") if norm == t or norm.startswith(t + "/")]
    if clash:
        raise PerfpagesError(f"{suites} clashes with {clash[0]}, a file init writes",
                             key="--suites", fix=fix)
    return norm


def targets(suites: str) -> list[str]:
    """Every path init writes, relative to the root; pyproject.toml last (it is the only edit,
    so a failure before it leaves nothing of the user's changed)."""
    return [posixpath.normpath(p) for p in (
        "mkdocs.yml", "docs/index.md", "docs/performance/example/v1.md", f"{suites}/example.py",
        f"{suites}/example/sort.sql", "results/.gitkeep", "tasks.py", WORKFLOW, PYPROJECT)]


def plan(root: Path, suites: str = DEFAULTS["suites"],
         suites_list: str = "example") -> list[Planned]:
    """What init writes: each file's text, pyproject.toml's with `[tool.perfpages]` added (as it
    is when the section is already there: `conflicts` names it); `suites_list`: the suites CI
    replays (tests/test_workflow.py)."""
    suites = suites_dir(suites)
    existing = pyproject.read(root / PYPROJECT)
    name = re.sub(r"[^\w.-]+", "-", root.name) or "project"
    fill = {"{{name}}": name, "{{suites}}": suites, "{{suites_list}}": suites_list,
            "{{install}}": install_command(existing)}

    def text(template: str) -> str:
        out = _template(template)
        for key, value in fill.items():
            out = out.replace(key, value)
        return out

    where = root / PYPROJECT
    edited = (existing if pyproject.has_settings(existing, where)
              else pyproject.with_settings(existing, suites, where))
    paths = targets(suites)
    texts = [text("mkdocs.yml"), text("index.md"), text("page.md"), text("suite.py"),
             text("sort.sql"), "", text("tasks.py"), text("workflow.yml")]
    return [*(Planned(p, t) for p, t in zip(paths[:-1], texts, strict=True)),
            Planned(PYPROJECT, edited, edit=True)]


def _prefixes(root: Path, rel: str) -> Iterator[Path]:
    """root/a, root/a/b, … root/rel."""
    path = root
    for part in rel.split("/"):
        path = path / part
        yield path


def _shown(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def _link_problem(root: Path, path: Path) -> tuple[str, str] | None:
    try:
        real = path.resolve()
    except (OSError, RuntimeError):  # a loop of links
        real = None
    if real is None or not real.exists():
        return (f"{_shown(root, path)} is a dangling link (to {os.readlink(path)})",
                f"remove the link, {AGAIN}")
    if not real.is_relative_to(root):
        return (f"{_shown(root, path)} links outside the repository (to {real})",
                f"replace the link with a directory or file of its own, {AGAIN}")
    return None


def blocker(root: Path, rel: str, edit: bool = False) -> tuple[str, str] | None:
    """Why init cannot write root/rel, and what to do (None: it can). A link anywhere on the way
    must stay inside the repository and lead somewhere; a directory on the way must be one; the
    directory written to (and a file edited) must be writable."""
    target = root / rel
    last_dir = root
    for path in _prefixes(root, rel):
        if path.is_symlink() and (problem := _link_problem(root, path)):
            return problem
        if path == target or not path.exists():
            break
        if not path.is_dir():
            return (f"{_shown(root, path)} is a file where init needs a directory",
                    f"move it aside, {AGAIN}")
        last_dir = path
    if edit and target.exists() and not target.resolve().is_file():
        return f"{rel} is not a file", f"move it aside, {AGAIN}"
    for place in (last_dir.resolve(), *([target.resolve()] if edit and target.exists() else [])):
        if not os.access(place, os.W_OK | (os.X_OK if place.is_dir() else 0)):
            return (f"{_shown(root, place) or '.'} is read-only",
                    f"make it writable (or run init as its owner), {AGAIN}")
    return None


def conflicts(root: Path, planned: list[Planned]) -> list[str]:
    """What init would overwrite: existing files (links too), and `[tool.perfpages]`."""
    found = [p.path for p in planned if not p.edit and os.path.lexists(root / p.path)]
    if pyproject.has_settings(pyproject.read(root / PYPROJECT), root / PYPROJECT):
        found.append(f"{PYPROJECT} [tool.perfpages]")
    return found


def _write_atomically(path: Path, text: str) -> None:
    """The archive's atomic write (a temporary file beside `path`, renamed over it); an edited
    file keeps its mode (a group-only pyproject.toml stays so)."""
    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    write_text_atomic(path, text)
    if mode is not None:
        os.chmod(path, mode)


def write(root: Path, planned: list[Planned]) -> list[str]:
    """Write the checked plan; a failure removes what this call wrote (files, then the
    directories it made) and is one line."""
    made: list[Path] = []
    written: list[Path] = []
    try:
        for item in planned:
            path = root / item.path
            missing = [p for p in reversed(path.parents) if p.is_relative_to(root)
                       and not p.exists()]
            for directory in missing:
                directory.mkdir()
                made.append(directory)
            if item.edit:
                path = path.resolve()  # a link inside the repository stays a link
            _write_atomically(path, item.text)
            written.append(path)
    except OSError as exc:
        for path in reversed(written):
            path.unlink(missing_ok=True)  # only new files: the one edit is written last
        for directory in reversed(made):
            with suppress(OSError):
                directory.rmdir()
        failed = Path(exc.filename).parent if exc.filename else root
        raise PerfpagesError(f"cannot write in {failed}: {exc.strerror}; nothing was written",
                             where=root, key=KEY, fix=f"fix that, {AGAIN}") from None
    return [item.path for item in planned]


def init(start: Path, suites: str = DEFAULTS["suites"]) -> list[str]:
    """Check every path, then write the scaffold; returns the paths written. Refuses, writing
    nothing, to overwrite, to leave the repository or to follow a link."""
    root = git_root(start)
    suites = suites_dir(suites)
    found = [blocker(root, rel, edit=rel == PYPROJECT) for rel in targets(suites)]
    problems = list(dict.fromkeys(p for p in found if p))  # a file on the way blocks several
    if problems:
        (what, fix), more = problems[0], len(problems) - 1
        also = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
        raise PerfpagesError(f"{what}{also}; nothing was written", where=root, key=KEY, fix=fix)
    planned = plan(root, suites)
    taken = conflicts(root, planned)
    if taken:
        one = len(taken) == 1
        raise PerfpagesError(f"{', '.join(taken)} already exist{'s' if one else ''}; nothing "
                             "was written", where=root, key=KEY,
                             fix=f"move {'it' if one else 'them'} aside, or add perfpages by "
                                 "hand (perfpages guide adopt)")
    return write(root, planned)

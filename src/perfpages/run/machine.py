"""The machine fingerprint recorded in every run, the harness's own version and commit, and
the commit of the repository holding the suites."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

from perfpages._version import __version__


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def memory_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return 0.0


def cpuinfo_field(name: str) -> str | None:
    """The first `name : value` of /proc/cpuinfo (None: absent, or no /proc)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == name:
                return value.strip()
    except OSError:
        pass
    return None


def cpu_flags() -> str | None:
    """"101 flags, sha256 1a2b3c4d5e6f": two VM builds under one CPU name often expose
    different instruction sets; a short stable hash of the sorted flags tells them apart."""
    flags = cpuinfo_field("flags")
    if flags is None:
        return None
    words = sorted(set(flags.split()))
    digest = hashlib.sha256(" ".join(words).encode()).hexdigest()[:12]
    return f"{len(words)} flags, sha256 {digest}"


def hypervisor() -> str | None:
    """The hypervisor the machine runs under ("none": bare metal; None: unknown), from
    `systemd-detect-virt --vm` (a container's VM, not the container), /sys/hypervisor/type or
    the cpuinfo `hypervisor` flag."""
    tool = shutil.which("systemd-detect-virt")
    if tool:
        try:  # exits 1 and prints "none" on bare metal
            out = subprocess.run([tool, "--vm"], capture_output=True, text=True, timeout=5).stdout
            if out.strip():
                return out.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    try:
        return Path("/sys/hypervisor/type").read_text().strip() or None
    except OSError:
        pass
    flags = cpuinfo_field("flags")
    if flags is None:
        return None
    return "unknown hypervisor" if "hypervisor" in flags.split() else "none"


def fingerprint(postgresql: str | None = None,
                pg_settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """What tells machines apart (run.json `machine`); `floor_tps`, the machine's speed, is
    added once the first block's pgbench floor is measured (`sqlblock.floor`)."""
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count() or 1,
        "memory_gib": memory_gib(),
        "kernel": platform.release(),
        "kernel_version": platform.version(),
        "cpu_flags": cpu_flags(),
        "microcode": cpuinfo_field("microcode"),
        "hypervisor": hypervisor(),
        "python": platform.python_version(),
        "postgresql": postgresql,
        "pg_settings": pg_settings or {},
    }


# Variables that point git at another repository than the directory it runs in (a hook, a
# wrapper): never let the caller's repository answer for another one.
GIT_LOCATION = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
                "GIT_COMMON_DIR", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE")
SHA = re.compile(r"^[0-9a-f]{40}$")


def _git(directory: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in GIT_LOCATION}
    return subprocess.run(["git", "-C", str(directory), *args], capture_output=True, text=True,
                          check=True, env=env).stdout.strip()


def repository(directory: Path, must_track: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The commit of the git repository holding `directory` (None outside git), and whether it
    is dirty: a tracked file changed, or one of `must_track` is not tracked at all."""
    try:
        commit = _git(directory, "rev-parse", "--verify", "HEAD")
        dirty = bool(_git(directory, "status", "--porcelain", "--untracked-files=no"))
        for path in must_track:
            dirty = dirty or bool(_git(directory, "ls-files", "--others", "--",
                                       os.path.relpath(path, directory)))
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None}
    return {"commit": commit, "dirty": dirty} if SHA.match(commit) else {"commit": None}


def _checkout(directory: Path) -> dict[str, Any]:
    """A directory's commit only if it is a git checkout's top level: a perfpages copy inside
    another repository (vendored, or a venv in an adopter's repository) has no commit of its own."""
    try:
        top = Path(_git(directory, "rev-parse", "--show-toplevel"))
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None}
    return repository(directory) if top.resolve() == directory.resolve() else {"commit": None}


def harness() -> dict[str, Any]:
    """perfpages' own version and commit, from the installed distribution (PEP 610's
    direct_url.json): the commit pip installed from git; a local directory's own commit; the
    commit a wheel was built from (its perfpages/_build.json); else None. Never the working
    tree of the caller, whose HEAD is not perfpages'."""
    package = Path(__file__).resolve().parent.parent
    try:
        dist = metadata.distribution("perfpages")
        origin = json.loads(dist.read_text("direct_url.json") or "{}")
    except (metadata.PackageNotFoundError, ValueError):
        return {"version": __version__, "commit": None}
    if not isinstance(origin, dict):
        origin = {}
    url = urlsplit(str(origin.get("url", "")))
    source = Path(url2pathname(url.path)) if url.scheme == "file" else None
    # The distribution found must be the code running (installed there, or an editable
    # install's source), not another perfpages earlier on sys.path.
    installed = Path(str(dist.locate_file("perfpages"))).resolve()
    if package != installed and not (source and package.is_relative_to(source.resolve())):
        return {"version": __version__, "commit": None}
    vcs = origin.get("vcs_info", {})
    if vcs.get("vcs") == "git" and SHA.match(str(vcs.get("commit_id", ""))):
        return {"version": dist.version, "commit": vcs["commit_id"], "dirty": False}
    if "dir_info" in origin and source is not None and source.is_dir():
        return {"version": dist.version, **_checkout(source)}
    return {"version": dist.version, **_built_from(package)}


def _built_from(package: Path) -> dict[str, Any]:
    """The commit a wheel was built from, which its build wrote (setup.py): a wheel's
    direct_url.json names only the file it was installed from."""
    try:
        built = json.loads((package / "_build.json").read_text())
    except (OSError, ValueError):
        return {"commit": None}
    if isinstance(built, dict) and SHA.match(str(built.get("commit", ""))):
        return {"commit": built["commit"], "dirty": built.get("dirty") is True}
    return {"commit": None}

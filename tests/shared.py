"""Products built once per test session and read by several test files.

Under pytest-xdist every worker is a session of its own, so a session-scoped fixture would build
its product once per worker. A product here is built by the first worker that asks for it, under
a lock in the controller's root (the workers' inherited TMPDIR: tests/conftest.py), and read by
the others, as pytest-xdist's docs describe ("Making session-scoped fixtures execute only once").
Products are read-only: a test that must change one copies it first.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from perfpages.run.builds import _locked  # the venv cache's lock: a flock beside the path


class Shared:
    """The session's shared products, under `root` (removed with the controller's root)."""

    def __init__(self, root: Path) -> None:
        self.root = root / "shared"

    def __call__(self, name: str, make: Callable[[Path], None]) -> Path:
        """`name`'s directory, made by `make(directory)` by the first caller; a failed make
        publishes nothing (the next caller makes it again, and fails as loudly)."""
        target = self.root / name
        with _locked(target):
            if not target.is_dir():
                work = Path(tempfile.mkdtemp(dir=self.root, prefix=f".{name}-"))
                try:
                    make(work)
                except BaseException:
                    shutil.rmtree(work, ignore_errors=True)
                    raise
                work.rename(target)  # published whole: a reader never sees half a product
        return target

"""Where perfpages keeps what it can build again: build venvs, copied binaries, git mirrors,
cached clusters and the venvs of external tools (`perfpages.tools`)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """`PERFPAGES_CACHE`, or /tmp/perfpages-cache (never under /root: the server user reads it)."""
    return Path(os.environ.get("PERFPAGES_CACHE", "/tmp/perfpages-cache"))

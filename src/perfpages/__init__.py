"""perfpages: performance documentation as code."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from perfpages.archive import Run, open_run
    from perfpages.frame import load

__all__ = ["Run", "__version__", "load", "open_run"]


def __getattr__(name: str) -> Any:
    # Imported on first use, so a process that only needs one module (a load generator process,
    # spawned) does not pay for pandas.
    if name in ("Run", "open_run"):
        from perfpages import archive

        return getattr(archive, name)
    if name == "load":
        from perfpages.frame import load

        return load
    raise AttributeError(f"module 'perfpages' has no attribute {name!r}")

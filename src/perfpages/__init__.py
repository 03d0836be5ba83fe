"""perfpages: performance documentation as code."""

from __future__ import annotations

__version__ = "0.1.0"

from typing import TYPE_CHECKING, Any

from perfpages.archive import Run, open_run

if TYPE_CHECKING:
    from perfpages.frame import load

__all__ = ["Run", "__version__", "load", "open_run"]


def __getattr__(name: str) -> Any:
    """`perfpages.load` imports pandas on first use only (the MkDocs plugin rarely needs it)."""
    if name == "load":
        from perfpages.frame import load

        return load
    raise AttributeError(f"module 'perfpages' has no attribute {name!r}")

"""perfpages: performance documentation as code."""

from __future__ import annotations

__version__ = "0.1.0"

from perfpages.archive import Run, open_run
from perfpages.frame import load

__all__ = ["Run", "__version__", "load", "open_run"]

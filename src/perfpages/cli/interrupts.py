"""Ctrl-C and SIGTERM outside a run's own handling (run/signals.py): while the command's modules
load (a second or more on a busy machine), before a run starts, after it ends. Either ends the
command with one line and status 130, as an interrupted run does: never a traceback, never a
silent exit."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

INTERRUPTED = 130  # what an interrupted run exits with (perfpages.errors.Interrupted)


def _raise(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@contextmanager
def interruptible(program: str, when: str) -> Iterator[None]:
    """SIGTERM as Ctrl-C inside; either one ends the command: `error: interrupted WHEN`."""
    try:
        previous = {s: signal.signal(s, _raise) for s in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread: the caller's handlers stand
        yield
        return
    try:
        yield
    except KeyboardInterrupt:
        print(f"error: {program}: interrupted {when} — run it again", file=sys.stderr)
        raise SystemExit(INTERRUPTED) from None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

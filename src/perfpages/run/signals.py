"""Signals during `bench run`: SIGTERM as Ctrl-C, a swallowed Ctrl-C re-raised, and the
teardown shielded from a second Ctrl-C."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager

pending: list[int] = []  # signals received whose KeyboardInterrupt may have been swallowed


def check_interrupt() -> None:
    """Raise the KeyboardInterrupt a signal asked for if Python swallowed it: raised inside an
    at-fork hook (every subprocess start runs logging's) it is only printed as "ignored", and
    the run would go on to complete."""
    if pending:
        raise KeyboardInterrupt


def _quiet_unraisable(unraisable: sys.UnraisableHookArgs) -> None:
    if unraisable.exc_type is not KeyboardInterrupt:  # that one check_interrupt re-raises
        sys.__unraisablehook__(unraisable)


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM takes the same path as Ctrl-C: windows kept, servers stopped."""
    def handler(signum: int, frame: object) -> None:
        pending.append(signum)
        raise KeyboardInterrupt
    pending.clear()
    try:
        previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread
        yield
        return
    hook, sys.unraisablehook = sys.unraisablehook, _quiet_unraisable
    try:
        yield
    finally:
        sys.unraisablehook = hook
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextmanager
def deferred_signals() -> Iterator[list[int]]:
    """Ctrl-C and SIGTERM wait (noted, not raised) while a run is finished or torn down: a
    second Ctrl-C must not leave a server or a cluster directory behind."""
    caught: list[int] = []
    try:
        previous = {s: signal.signal(s, lambda n, _: caught.append(n))
                    for s in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread
        yield caught
        return
    try:
        yield caught
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

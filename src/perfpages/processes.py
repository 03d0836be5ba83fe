"""Child processes of the harness: they end when it ends, and they bind free loopback ports.

Shared by every stage that starts processes (the run's servers, subjects and pgbench, the load
engines): a process perfpages started never outlives it, even when it is killed by SIGKILL.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import sys
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1
# Loaded in the parent: a child between fork and exec should not have to open libraries.
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def die_with_parent(sig: int = signal.SIGKILL,
                    cpus: tuple[int, ...] = ()) -> Callable[[], None] | None:
    """A Popen preexec_fn: the child gets `sig` when the harness dies, even by SIGKILL (Linux's
    parent-death signal; it runs after Popen's user switch, which would clear it). Processes in
    their own session never see the terminal's Ctrl-C, so nothing else would end them. With
    `cpus`, the child and everything it starts run on those CPUs only (as `taskset -c`)."""
    if _LIBC is None:
        return None
    parent = os.getpid()
    libc = _LIBC

    def preexec() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:  # the harness died before the signal was armed
            os.kill(os.getpid(), sig)
        if cpus:
            os.sched_setaffinity(0, cpus)

    return preexec


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])

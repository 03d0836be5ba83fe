"""Where a service's CPU goes: py-spy samples → category shares and a self-contained SVG."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfpages.archive.stacks import (
    RATE_HZ,
    STACKS_FILE,
    Stack,
    fold,
    parse,
    short_name,
    tree,
)
from perfpages.errors import PerfpagesError

if TYPE_CHECKING:
    from perfpages.archive.writer import ArchiveWriter
    from perfpages.run.suite import Suite


INSTALL = ("pip install py-spy (perfpages' extra profile has it: perfpages[docs,profile]), or "
           "set flamegraph=False")


def py_spy() -> str | None:
    """py-spy's executable: on PATH, or installed in this venv (maybe not on PATH)."""
    beside = Path(sys.executable).parent / "py-spy"
    return shutil.which("py-spy") or (str(beside) if beside.exists() else None)


def check(suite: Suite) -> None:
    """Refuse, before anything starts, a suite whose blocks sample flame graphs when py-spy is
    missing: a run without its profiles would complete and say nothing of them."""
    wanted = [b.name for b in suite.blocks if getattr(b, "flamegraph", False)]
    if wanted and py_spy() is None:
        raise PerfpagesError(f"block {wanted[0]!r} samples flame graphs (flamegraph=True) but "
                             "py-spy is not installed", key=f"blocks.{wanted[0]}.flamegraph",
                             fix=INSTALL)


class Recorder:
    """py-spy sampling a process and its children from `start()` until `stop()`, so the samples
    cover exactly the work in between however long its start-up takes."""

    def __init__(self, pid: int, rate: int = RATE_HZ) -> None:
        exe = py_spy()
        if exe is None:
            raise PerfpagesError("py-spy is not installed", key="flamegraph", fix=INSTALL)
        self.pid = pid
        self._tmp = tempfile.TemporaryDirectory()
        self._out = Path(self._tmp.name) / "stacks.txt"
        self._proc = subprocess.Popen(
            [exe, "record", "--pid", str(pid), "--rate", str(rate), "--subprocesses",
             "--nonblocking", "--format", "raw", "--output", str(self._out)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def stop(self) -> str:
        """Collapsed stacks ('a;b;c 12'); py-spy writes them when interrupted."""
        try:
            if self._proc.poll() is None:
                self._proc.send_signal(signal.SIGINT)
            try:
                _, stderr = self._proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                _, stderr = self._proc.communicate()
            if not self._out.exists():
                last = (stderr.strip().splitlines() or ["no output"])[-1]
                raise PerfpagesError(f"py-spy could not sample pid {self.pid}: {last}",
                                     key="flamegraph",
                                     fix="py-spy needs ptrace: run as root or with CAP_SYS_PTRACE")
            return self._out.read_text()
        finally:
            self._tmp.cleanup()


def shares(stacks: Counter[Stack], rules: list[tuple[str, str]],
           other: str = "Everything else") -> dict[str, float]:
    """Percent of samples per category. A sample belongs to its innermost frame that any rule
    matches (the code that was running, not the framework it was called from); a frame that
    several rules match takes the first of them."""
    compiled = [(name, re.compile(pattern)) for name, pattern in rules]
    counts: Counter[str] = Counter({name: 0 for name, _ in rules})
    counts[other] = 0
    for stack, n in stacks.items():
        category = next((name for frame in reversed(stack)
                         for name, rx in compiled if rx.search(frame)), other)
        counts[category] += n
    total = sum(counts.values()) or 1
    return {name: 100.0 * n / total for name, n in counts.items()}


def svg(stacks: Counter[Stack], title: str, width: int = 1000, row: int = 16) -> str:
    """A flame graph (root at the bottom) with a tooltip per frame; colours follow the page's
    text colour so it reads in light and dark mode; hidden from the search index."""
    root = tree(stacks)
    total = root.samples or 1
    rects: list[str] = []
    height = (root.depth() + 2) * row
    for frame in root.walk(least=0.5 * total / width):  # half a pixel or more
        name, n = frame.path[-1], frame.node.samples
        x, w = width * frame.offset / total, width * n / total
        y = height - (frame.level + 2) * row
        pct = 100.0 * n / total
        label = escape(short_name(name))
        text = (f'<text x="{x + 3:.1f}" y="{y + row - 4}" font-size="11">{label}</text>'
                if w > 7 * len(label) else "")
        hue = 20 + (sum(map(ord, name)) % 40)
        rects.append(
            f'<g><title>{escape(name)}: {n} samples, {pct:.1f} %</title>'
            f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{row - 1}" '
            f'fill="hsl({hue},85%,60%)" fill-opacity="0.85"/>{text}</g>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
            f'role="img" data-search-exclude font-family="sans-serif" fill="currentColor">'
            f'<title>{escape(title)}</title>'
            f'<text x="0" y="{row - 4}" font-size="12">{escape(title)} ({total} samples)</text>'
            + "".join(rects) + "</svg>")


class Profiler:
    """py-spy on an HTTP block's subject (`pid`) from the start of a case's load to its end,
    saved as its flame graph, CPU shares and raw stacks (or the reason it could not be)."""

    def __init__(self, pid: int) -> None:
        self.stacks = ""
        self.error = ""
        try:
            self.recorder: Recorder | None = Recorder(pid)
        except PerfpagesError as exc:
            self.recorder, self.error = None, str(exc)

    def stop(self) -> None:
        if self.recorder is not None:
            try:
                self.stacks = self.recorder.stop()
            except PerfpagesError as exc:
                self.error = str(exc)
            self.recorder = None

    def save(self, writer: ArchiveWriter, base: str, rules: list[tuple[str, str]],
             title: str) -> None:
        if self.error:
            writer.write_file(f"{base}/flamegraph-error.txt", self.error + "\n")
            return
        stacks = parse(self.stacks)
        data: dict[str, Any] = {"samples": sum(stacks.values()),
                                "shares_pct": shares(stacks, rules)}
        writer.write_file(f"{base}/cpu-shares.json", json.dumps(data, indent=2) + "\n")
        writer.write_file(f"{base}/flamegraph.svg", svg(stacks, title))
        # the raw samples, for differences between labels (archive.stacks reads them back)
        writer.write_file(f"{base}/{STACKS_FILE}", fold(stacks))

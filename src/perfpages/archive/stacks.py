"""py-spy's collapsed stacks as a run archives them, and their call tree.

A profiled label's samples are kept as `diagnostics/<block>/<label>/stacks.folded`: one line per
distinct stack, `frame;frame;frame count`, root first, sorted (the format flamegraph.pl,
speedscope and inferno read). Past the writer's COMPRESS_ABOVE it is stored as
`stacks.folded.gz`; `read_stacks` reads either. The run stage records and writes them
(run/profile.py), the site draws their differences (site/flamediff.py): both parse and walk them
here, the one stage both may import.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from perfpages.archive import files
from perfpages.archive.reader import path_part

Stack = tuple[str, ...]
STACKS_FILE = "stacks.folded"
# The run stage samples at this rate (a sample: 10 ms of one thread's time); the folded format
# has no room for it, so a change here must be recorded beside the stacks.
RATE_HZ = 100

# py-spy's frames: `function (file.py:LINE)`, and with --subprocesses `process PID:"cmdline"`.
_LINE = re.compile(r"^(.*) \(([^()]*):\d+\)$")
_PROCESS = re.compile(r'^process \d+:".*"$', re.DOTALL)


def parse(collapsed: str) -> Counter[Stack]:
    """Samples per stack of collapsed text ('a;b;c 12' a line); other lines are skipped."""
    stacks: Counter[Stack] = Counter()
    for line in collapsed.splitlines():
        frames, _, count = line.rpartition(" ")
        if frames and count.isdigit():
            stacks[tuple(frames.split(";"))] += int(count)
    return stacks


def fold(stacks: Counter[Stack]) -> str:
    """The collapsed text of `stacks`, a sorted line per stack: `parse(fold(s)) == s`."""
    return "".join(sorted(f"{';'.join(stack)} {n}\n" for stack, n in stacks.items() if n > 0))


def by_function(stacks: Counter[Stack]) -> Counter[Stack]:
    """`stacks` with line numbers and process ids dropped (`f (a.py:12)` → `f (a.py)`,
    `process 7654:"gunicorn …"` → `process`), equal stacks merged: two releases, or two runs
    of one, then share their frames, which a line number or a pid would tell apart."""
    out: Counter[Stack] = Counter()
    for stack, n in stacks.items():
        out[tuple(_function(frame) for frame in stack)] += n
    return out


def _function(frame: str) -> str:
    if _PROCESS.match(frame):
        return "process"
    return _LINE.sub(r"\1 (\2)", frame)


def short_name(frame: str) -> str:
    """What a frame's box shows: the function without its file (`f (a.py:12)` → `f`)."""
    return frame.split(" (")[0]


@dataclass
class Node:
    """A frame in the call tree: `samples` inclusive of its callees (`kids`, by frame name)."""

    samples: int = 0
    kids: dict[str, Node] = field(default_factory=dict)

    @property
    def own(self) -> int:
        """Samples in the frame itself, not in a callee (self time)."""
        return self.samples - sum(k.samples for k in self.kids.values())

    def depth(self) -> int:
        """Levels below this node (0 for a leaf)."""
        return max((1 + k.depth() for k in self.kids.values()), default=0)

    def find(self, path: Stack) -> Node | None:
        node: Node | None = self
        for frame in path:
            node = node.kids.get(frame) if node is not None else None
        return node

    def walk(self, least: float = 0.0) -> Iterator[Placed]:
        """Every frame below this node, depth first, callees in name order, each with its
        offset (in samples, from this node's left edge). A frame of fewer than `least` samples
        is left out with its callees, its room kept (so a drawing's widths stay true)."""
        return self._walk(least, (), 0.0)

    def _walk(self, least: float, path: Stack, offset: float) -> Iterator[Placed]:
        for name, kid in sorted(self.kids.items()):
            if kid.samples >= least and kid.samples > 0:
                placed = Placed((*path, name), kid, offset)
                yield placed
                yield from kid._walk(least, placed.path, offset)
            offset += kid.samples


@dataclass
class Placed:
    path: Stack  # the frames from the walked node's callee down to this one
    node: Node
    offset: float

    @property
    def level(self) -> int:
        """0 for the walked node's callees, 1 for theirs…"""
        return len(self.path) - 1


def tree(stacks: Counter[Stack]) -> Node:
    """The call tree of `stacks`: the root holds every sample."""
    root = Node()
    for stack, n in stacks.items():
        node = root
        node.samples += n
        for frame in stack:
            node = node.kids.setdefault(frame, Node())
            node.samples += n
    return root


def stacks_path(block: str, label: str) -> str:
    """Where a label's stacks are archived (before any .gz)."""
    return f"diagnostics/{block}/{path_part(label)}/{STACKS_FILE}"


def read_stacks(run_dir: Path, block: str, label: str) -> Counter[Stack] | None:
    """The samples per stack py-spy took of `label`'s subject in `block` (plain or .gz), or
    None when the run kept none: runs before the stacks were archived, or a failed profile
    (its `flamegraph-error.txt` says why)."""
    relative = stacks_path(block, label)
    if files.locate(run_dir, relative) is None:
        return None
    return parse(files.read_text(run_dir, relative))

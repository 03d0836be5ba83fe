"""Task names typed with a space: `bench report` means `bench.report`, as people type it."""

from __future__ import annotations

from invoke import Collection, Program


def spaced_names(args: list[str], collection: Collection) -> list[str]:
    """`bench report --x` -> `bench.report --x`: the first task named with a space between its
    collection and itself is rejoined with a dot (`bench nosuch` -> `bench.nosuch`, so the
    error names what was meant)."""
    for i, arg in enumerate(args):
        if arg.startswith("-"):
            continue
        if (arg in collection.collections and arg not in collection.task_names
                and i + 1 < len(args) and not args[i + 1].startswith("-")):
            return [*args[:i], f"{arg}.{args[i + 1]}", *args[i + 2:]]
        return args
    return args


def accept_spaced_names() -> None:
    """Let plain `invoke` take `bench report` too. invoke has no hook between loading tasks.py
    and parsing the task names, so its Program learns the same rule as ours; idempotent."""
    if getattr(Program.parse_tasks, "_perfpages", False):
        return
    original = Program.parse_tasks

    def parse_tasks(self: Program) -> None:
        if self.collection is not None:
            self.core.unparsed = spaced_names(self.core.unparsed, self.collection)
        original(self)

    parse_tasks._perfpages = True  # type: ignore[attr-defined]
    Program.parse_tasks = parse_tasks  # type: ignore[method-assign]

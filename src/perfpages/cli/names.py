"""The command line as people type it: `bench report` means `bench.report`, a number is checked
as a number, and a mistake invoke's parser finds is one `error:` line naming the task's help."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import TracebackType

from invoke.collection import Collection
from invoke.exceptions import ParseError
from invoke.parser.parser import ParseMachine
from invoke.program import Program

from perfpages.errors import PerfpagesError


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


def help_asked(args: list[str], collection: Collection) -> str | None:
    """The task in `TASK … --help` (or -h): invoke hands that --help to a task's positional
    argument (`perfpages import --help` would import a file named --help)."""
    names = [a for a in args if not a.startswith("-")]
    if not names or names[0] not in collection.task_names:
        return None
    cut = args.index("--") if "--" in args else len(args)
    return names[0] if {"--help", "-h"} & set(args[:cut]) else None


def program_name() -> str:
    """How the command was called: `perfpages` or `invoke` (also under `python -m`)."""
    name = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    if name in ("__main__.py", ""):  # python -m invoke / python -m perfpages
        name = Path(sys.argv[0]).parent.name or "invoke"
    return name


def whole_number(text: str | int | None, flag: str, minimum: int | None = None,
                 maximum: int | None = None, noun: str = "whole number") -> int | None:
    """An option's value as an int. invoke types an option by its default, so one that
    defaults to None (`--rounds`) arrives as a string; a value out of range is not a `noun`."""
    if text is None:
        return None
    span = (f" from {minimum} to {maximum}" if minimum is not None and maximum is not None
            else f" of at least {minimum}" if minimum is not None else "")
    fix = f"give {flag} a whole number{span}"
    try:
        value = int(text)
    except ValueError:
        raise PerfpagesError(f"not a whole number: {str(text)!r}", key=flag, fix=fix) from None
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise PerfpagesError(f"not a {noun}: {str(text)!r}", key=flag, fix=fix)
    return value


FLAG = re.compile(r"<Argument: (\w+)")


def _flag(name: str) -> str:
    return ("-" if len(name) == 1 else "--") + name.replace("_", "-")


def parse_error(exc: BaseException, collection: Collection | None) -> ParseError:
    """One `error:` line for what invoke's parser refused, naming where to look: the task's
    `--help`, or `--list` when the task itself is unknown."""
    program = program_name()
    context = getattr(exc, "context", None)
    task = getattr(context, "name", None)
    if isinstance(exc, ValueError):  # invoke cast an option with an int default itself
        flag, task = _casting(exc.__traceback__)
        value = str(exc).rsplit(": ", 1)[-1]
        help_ = f"{program} {task} --help" if task else f"{program} --help"
        return ParseError(f"error: {flag}: not a whole number: {value} — give {flag} a whole "
                          f"number (see {help_})")
    what = str(exc)
    token = re.fullmatch(r"No idea what '(.*)' is!", what)
    missing = FLAG.search(what)
    if token and task is None:
        return ParseError(f"error: no task {token.group(1)!r} — see {program} --list")
    if token:
        name = token.group(1)
        what = (f"unknown option {name!r}" if name.startswith("-")
                else f"unexpected {name!r} (not an option of this task, nor a task)")
    elif missing and "needed value" in what:
        what = f"{_flag(missing.group(1))} needs a value"
    elif missing and "doesn't take any value" in what:
        what = f"{_flag(missing.group(1))} takes no value"
    elif "did not receive required positional arguments" in what:
        names = re.findall(r"'(\w+)'", what.split(":", 1)[1])
        what = f"missing {', '.join(n.upper() for n in names)}"
    if task is None or (collection is not None and task not in collection.task_names):
        return ParseError(f"error: {what} — see {program} --help")
    return ParseError(f"error: {task}: {what} — see {program} {task} --help")


def _casting(tb: TracebackType | None) -> tuple[str, str | None]:
    """The flag and task invoke's parser was filling when a cast failed (its own state)."""
    while tb is not None:
        machine = tb.tb_frame.f_locals.get("self")
        if isinstance(machine, ParseMachine) and machine.flag is not None:
            return _flag(machine.flag.name), getattr(machine.context, "name", None)
        tb = tb.tb_next
    return "an option", None


def accept_spaced_names() -> None:
    """Let plain `invoke` take `bench report` too, and print its parse errors as ours. invoke
    has no hook between loading tasks.py and parsing the task names, so its Program learns
    the same rules as ours; idempotent."""
    if getattr(Program.parse_tasks, "_perfpages", False):
        return
    original_tasks, original_cleanup = Program.parse_tasks, Program.parse_cleanup

    def parse_tasks(self: Program) -> None:
        if self.collection is not None:
            self.core.unparsed = spaced_names(self.core.unparsed, self.collection)
            asked = help_asked(self.core.unparsed, self.collection)
            if asked is not None:  # parse_cleanup prints the task's help
                self.parser = self._make_parser()
                self.args.help.value = asked
                return
        try:
            original_tasks(self)
        except (ParseError, ValueError) as exc:
            raise parse_error(exc, self.collection) from None

    def parse_cleanup(self: Program) -> None:  # `--help nosuch`
        try:
            original_cleanup(self)
        except ParseError as exc:
            raise parse_error(exc, self.collection) from None

    parse_tasks._perfpages = True  # type: ignore[attr-defined]
    Program.parse_tasks = parse_tasks  # type: ignore[method-assign]
    Program.parse_cleanup = parse_cleanup  # type: ignore[method-assign]

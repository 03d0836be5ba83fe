"""The command line as people type it: `bench report` means `bench.report`, a number is checked
as a number, and a mistake invoke's parser finds is one `error:` line naming the task's help.

`perfpages` runs `Program`, a subclass of invoke's Program (its documented extension point).
Plain `invoke` runs invoke's own Program, which has no hook between loading tasks.py and parsing
the task names: `accept_spaced_names` (called by perfpages' tasks.py) gives that class the same
two steps. It relies on Program.parse_tasks/parse_cleanup/_make_parser and on the wording of
invoke's parse errors, hence the pinned invoke range in pyproject.toml, which
tests/test_robust.py and tests/test_cli.py check under both commands."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from invoke.collection import Collection
from invoke.exceptions import ParseError
from invoke.parser.context import ParserContext
from invoke.program import Program as InvokeProgram

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


# An absolute path in an argument: a word's start or a value's (`--results=/…`, `host=/…`).
_ABSOLUTE = re.compile(r"(?:^|(?<=[\s=]))/[^\s&,;'\"]*")


def _unrooted(path: str, root: Path) -> str:
    """A path as run.json records it: relative to the repository root, or outside it only its
    name (never the user's home or checkout)."""
    for candidate in (Path(os.path.normpath(path)), Path(path).resolve()):
        if candidate.is_relative_to(root):
            return str(candidate.relative_to(root)) or "."
    return f"<outside the repository>/{Path(path).name}"


def command_line(root: Path | None = None) -> str:
    """The command as archived: the program's name and its arguments, absolute paths made
    relative to the repository root (`settings.find_root` of the working directory)."""
    from perfpages.settings import find_root

    base = (root or find_root(Path.cwd())[0]).resolve()
    args = [_ABSOLUTE.sub(lambda m: _unrooted(m.group(0), base), a) for a in sys.argv[1:]]
    return " ".join([program_name(), *args])


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


def failed_cast(args: list[str], contexts: Any) -> tuple[str, str | None]:
    """The flag (and its task) whose value invoke could not cast to its type, found again in the
    arguments invoke parsed: the first valued flag of a typed option whose value does not cast
    (invoke parses left to right and stops at the first). `contexts`: the parser's, by name."""
    context: ParserContext | None = None
    for i, token in enumerate(args):
        if token == "--":
            break
        if not token.startswith("-"):
            if token in contexts:
                context = contexts[token]
            continue
        flag, given, value = token.partition("=")
        if context is None or flag not in context.flags:
            continue
        arg = context.flags[flag]
        if arg.kind in (bool, list, str) or not (given or i + 1 < len(args)):
            continue
        try:
            arg.kind(value if given else args[i + 1])
        except ValueError:
            return _flag(arg.name), context.name
    return "an option", None


def parse_error(exc: BaseException, collection: Collection | None, args: list[str],
                contexts: Any) -> ParseError:
    """One `error:` line for what invoke's parser refused, naming where to look: the task's
    `--help`, or `--list` when the task itself is unknown."""
    program = program_name()
    context = getattr(exc, "context", None)
    task = getattr(context, "name", None)
    if isinstance(exc, ValueError):  # invoke cast an option with an int default itself
        flag, task = failed_cast(args, contexts)
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


def parse_tasks(program: InvokeProgram, parse: Callable[[], None]) -> None:
    """invoke's parse_tasks (`parse`) on the arguments as people type them, its errors ours."""
    if program.collection is not None:
        program.core.unparsed = spaced_names(program.core.unparsed, program.collection)
        asked = help_asked(program.core.unparsed, program.collection)
        if asked is not None:  # parse_cleanup prints the task's help
            program.parser = program._make_parser()
            program.args.help.value = asked
            return
    try:
        parse()
    except (ParseError, ValueError) as exc:
        contexts = program.parser.contexts if getattr(program, "parser", None) else {}
        raise parse_error(exc, program.collection, program.core.unparsed, contexts) from None


def parse_cleanup(program: InvokeProgram, cleanup: Callable[[], None]) -> None:
    """invoke's parse_cleanup (`--help nosuch`), its errors ours."""
    try:
        cleanup()
    except ParseError as exc:
        raise parse_error(exc, program.collection, [], {}) from None


# invoke's own steps, kept before accept_spaced_names teaches them to invoke's class
_INVOKE_TASKS, _INVOKE_CLEANUP = InvokeProgram.parse_tasks, InvokeProgram.parse_cleanup


class Program(InvokeProgram):
    """The `perfpages` command's invoke Program: invoke's own parsing steps, each wrapped."""

    def parse_tasks(self) -> None:
        parse_tasks(self, lambda: _INVOKE_TASKS(self))

    def parse_cleanup(self) -> None:
        parse_cleanup(self, lambda: _INVOKE_CLEANUP(self))


def accept_spaced_names() -> None:
    """Let plain `invoke` take `bench report` too, and print its parse errors as ours: invoke's
    Program class learns the two steps of ours (see the module's docstring); idempotent, and
    no change to perfpages' own Program, which has them already."""
    if getattr(InvokeProgram.parse_tasks, "_perfpages", False):
        return

    def tasks(self: InvokeProgram) -> None:
        parse_tasks(self, lambda: _INVOKE_TASKS(self))

    def cleanup(self: InvokeProgram) -> None:
        parse_cleanup(self, lambda: _INVOKE_CLEANUP(self))

    tasks._perfpages = True  # type: ignore[attr-defined]  # marks the class as taught
    # invoke runs its own Program: no subclass can reach it (see the module's docstring)
    InvokeProgram.parse_tasks = tasks  # type: ignore[method-assign]
    InvokeProgram.parse_cleanup = cleanup  # type: ignore[method-assign]

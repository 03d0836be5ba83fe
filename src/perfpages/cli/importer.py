"""`perfpages import FILE`: a table measured elsewhere, archived as a sealed run of scope
`transcribed` with its source, through the same writer and seal as every run."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console

from perfpages.analysis import tablefile, transcribed
from perfpages.archive.manifest import Block, Label, Manifest, Method, Pin, Source
from perfpages.archive.reader import LOCK_FILE, RUN_FILE
from perfpages.archive.writer import ArchiveWriter, new_run_id, utc_now
from perfpages.cli.console import as_called
from perfpages.errors import PerfpagesError
from perfpages.run.machine import harness

# Nothing was measured on this machine: a transcribed run records none (bench cite and the
# pages say "transcribed, not measured here" instead of naming a machine).
MACHINE = {"cpu": "not recorded: transcribed from its source", "cores": None,
           "memory_gib": None, "kernel": "", "python": ""}
PIN_NOTE = "transcribed: nothing was installed or run here"
NOTES = {"rounds": "per-round values transcribed as published: each row is one round",
         "summary": "a summary transcribed as published: one given value per cell (a median, "
                    "with its given min and max as METRIC.min and METRIC.max); no rounds"}


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9_.-]+", "-", text.lower()).strip("-.")


def labels_for(table: tablefile.Table, builds: dict[str, str],
               env: dict[str, dict[str, str]], settings: dict[str, dict[str, Any]]
               ) -> dict[str, Label]:
    """Each label pinned to nothing installed here, with its build, environment and settings as
    the source states them (shown by settings(), fact(), the run page and cite)."""
    for option, given in (("--build", builds), ("--env", env), ("--setting", settings)):
        unknown = [name for name in given if name not in table.labels]
        if unknown:
            raise PerfpagesError(f"no label {unknown[0]!r} in the table", key=option,
                                 fix=f"use one of: {', '.join(table.labels)}")
    return {name: Label(name, Pin("none", note=transcribed.BUILD_NOTE + builds[name]
                                  if name in builds else PIN_NOTE),
                        env=dict(env.get(name, {})), pg_settings=dict(settings.get(name, {})))
            for name in table.labels}


def manifest_for(table: tablefile.Table, source: Source, suite: str, run_id: str,
                 command: str, labels: dict[str, Label] | None = None) -> Manifest:
    """The run.json of a transcribed run: labels pinned to nothing, no machine; a summary's
    changes decided by its source's rule when it states one (min_rounds: its rounds)."""
    note = NOTES[table.values]
    if source.rule_text():
        note = (f"a summary transcribed as published: each cell the median of {source.rounds} "
                "rounds with its given min and max (METRIC.min, METRIC.max), judged by "
                f"{source.rule_text()}")
    if source.method:
        note += f". The source's method: {source.method}"
    return Manifest(
        id=run_id, suite=suite, title=table.title or f"{source.title} (transcribed)",
        scope="transcribed", status="running", started=utc_now(), command=command,
        harness=harness(),
        labels=labels or labels_for(table, {}, {}, {}),
        method=Method(rounds=table.rounds, order="fixed", notes=note,
                      min_rounds=source.rounds if source.rounds and source.rule_text()
                      else 5),
        machine=dict(MACHINE),
        blocks={name: Block(name, metrics=tuple(metrics), parameters=tuple(params))
                for name, (metrics, params) in table.blocks.items()},
        source=source)


def pairs(option: str, given: list[str] | tuple[str, ...]) -> dict[str, dict[str, str]]:
    """`LABEL:NAME=VALUE` options, per label (a label may hold a colon: the last one splits)."""
    out: dict[str, dict[str, str]] = {}
    for text in given:
        left, eq, value = text.partition("=")
        label, sep, name = left.rpartition(":")
        if not sep or not eq or not label.strip() or not name.strip():
            raise PerfpagesError(f"not LABEL:NAME=VALUE: {text!r}", key=option,
                                 fix=f'e.g. {option} "0.43 + cache:QUERYAPIGATE_TTL=5"')
        out.setdefault(label.strip(), {})[name.strip()] = value.strip()
    return out


def builds_of(given: list[str] | tuple[str, ...]) -> dict[str, str]:
    """`LABEL=BUILD` options: the build a label ran, as its source states it."""
    out = {}
    for text in given:
        label, eq, build = text.partition("=")
        if not eq or not label.strip() or not build.strip() or not build.isprintable():
            raise PerfpagesError(f"not LABEL=BUILD: {text!r}", key="--build",
                                 fix='e.g. --build "v0.42.0=git commit 647ab6f"')
        out[label.strip()] = " ".join(build.split())
    return out


def _meta_labels(path: Path, raw: Any) -> tuple[list[str], list[str], list[str]]:
    """A JSON file's `labels`: {LABEL: {"build": …, "env": {…}, "settings": {…}}}, as options."""
    if raw is None:
        return [], [], []
    fix = 'give {"LABEL": {"build": "…", "env": {"NAME": "VALUE"}, "settings": {…}}}'
    if not isinstance(raw, dict):
        raise PerfpagesError("not an object", where=path, key="labels", fix=fix)
    builds: list[str] = []
    env: list[str] = []
    settings: list[str] = []
    for label, spec in raw.items():
        if not isinstance(spec, dict) or set(spec) - {"build", "env", "settings"}:
            raise PerfpagesError("not build, env and settings", where=path,
                                 key=f"labels.{label}", fix=fix)
        if "build" in spec:
            builds.append(f"{label}={spec['build']}")
        for key, out in (("env", env), ("settings", settings)):
            if not isinstance(spec.get(key, {}), dict):
                raise PerfpagesError("not an object", where=path, key=f"labels.{label}.{key}",
                                     fix=fix)
            out += [f"{label}:{k}={v}" for k, v in spec.get(key, {}).items()]
    return builds, env, settings


def already(results: Path, sha256: str) -> str | None:
    """The id of a transcribed run already imported from the same file, if any."""
    for run_json in sorted(results.glob(f"*/{RUN_FILE}")) if results.is_dir() else []:
        if run_json.parent.name.startswith("."):  # an import killed before it sealed
            continue
        try:
            data = json.loads(run_json.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("source"), dict) and \
                data["source"].get("sha256") == sha256:
            return str(data.get("id") or run_json.parent.name)
    return None


_STAGED = re.compile(r"\.\d{4}-\d\d-\d\d-.+-transcribed(?:-\d+)?\.[a-z0-9_]+")


def remove_killed_imports(results: Path) -> None:
    """The hidden directories of imports killed before they sealed (their lock free: the
    writer is dead; their run.json still `running`): never a run, only what it would have
    been. Anything else hidden is left alone."""
    for path in results.glob(".*") if results.is_dir() else []:
        if not _STAGED.fullmatch(path.name) or path.is_symlink() or not path.is_dir():
            continue
        try:
            manifest = json.loads((path / RUN_FILE).read_text(encoding="utf-8"))
            if manifest.get("scope") != "transcribed" or manifest.get("status") != "running":
                continue
            fd = os.open(path / LOCK_FILE, os.O_RDWR | os.O_NOFOLLOW)
        except (OSError, ValueError, AttributeError):
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held: that import still runs
        except BlockingIOError:
            continue
        finally:
            os.close(fd)
        shutil.rmtree(path, ignore_errors=True)


def import_table(results: Path, file: str, title: str | None, url: str | None,
                 day: str | None, suite: str | None, command: str, console: Console, *,
                 rounds: str | int | None = None, rule: str | None = None,
                 builds: tuple[str, ...] | list[str] = (), env: tuple[str, ...] | list[str] = (),
                 settings: tuple[str, ...] | list[str] = (), method: str | None = None,
                 unpublished: str | None = None, again: bool = False) -> int:
    """Check the source and the whole table, then write and seal the run; on any problem one
    error line, and no run directory left behind. A JSON file's source keys stand for the
    options (an option given wins)."""
    path = Path(file)
    table = tablefile.read_table(path)
    meta = table.meta
    def pick(value: Any, key: str) -> Any:
        return value if value not in (None, "") else meta.get(key)
    title, url, day = pick(title, "title"), pick(url, "url"), pick(day, "date")
    unpublished = pick(unpublished, "unpublished")
    for key, value in (("title", title), ("url", url), ("date", day),
                       ("unpublished", unpublished), ("method", pick(method, "method")),
                       ("rule", pick(rule, "rule"))):
        if value is not None and not isinstance(value, str):
            raise PerfpagesError(f"not text: {value!r}", where=path, key=key,
                                 fix="give it as a string")
    source = transcribed.check_source(title, url, day, unpublished=unpublished)
    n, rule_name = transcribed.check_rule(pick(rounds, "rounds"), pick(rule, "rule"),
                                          table.values)
    note = " ".join((pick(method, "method") or "").split())
    digest = hashlib.sha256(tablefile.read_regular(path)).hexdigest()
    source = replace(source, values=table.values, rounds=n, rule=rule_name, method=note,
                     sha256=digest, notes=dict(table.notes))
    more_builds, more_env, more_settings = _meta_labels(path, meta.get("labels"))
    labels = labels_for(table, builds_of([*more_builds, *builds]),
                        pairs("--env", [*more_env, *env]),
                        pairs("--setting", [*more_settings, *settings]))
    name = _slug(suite or table.suite or path.stem)
    if not name:
        raise PerfpagesError(f"no suite name in {suite or path.stem!r}", key="--suite",
                             fix="name it with letters or digits: --suite NAME")
    try:
        if results.exists() and not results.is_dir():
            raise PerfpagesError("not a directory", where=results, key="--results",
                                 fix="pass the directory that holds the runs with --results")
        remove_killed_imports(results)
        before = already(results, digest) if not again else None
        if before:
            raise PerfpagesError(f"this file is already imported, as run {before}", where=path,
                                 fix="pin that run; to import it a second time, pass --again")
        manifest = manifest_for(table, source, name, new_run_id(results, name, "transcribed"),
                                command, labels)
        # Hidden until sealed: a killed import leaves no run to resume, only a hidden
        # directory no command reads.
        writer = ArchiveWriter.create(results, manifest, hidden=True)
        try:
            for window in transcribed.windows(table, source):
                writer.append(window)
            writer.finish("complete")
        except BaseException:
            writer.abandon()  # releases the lock; the run was never complete: take it back
            shutil.rmtree(writer.run_dir, ignore_errors=True)
            raise
    except OSError as exc:
        raise PerfpagesError(f"cannot write the run ({exc.strerror or exc}); nothing was "
                             "archived", where=results, key="--results",
                             fix="free space, or make the results directory writable") from None
    labels_shown = f"{len(table.labels)} label{'s' if len(table.labels) != 1 else ''}"
    shown = f"{len(table.rows)} rows, {labels_shown}, " + (
        f"{table.rounds} rounds" if table.values == "rounds" else
        f"a summary judged by {source.rule_text()}" if source.rule_text() else
        "a summary (no rounds)")
    console.print(f"complete: {writer.run_dir} (transcribed from {source.title!r}: {shown})",
                  highlight=False, markup=False, emoji=False)
    console.print(as_called(f"verify: invoke bench.verify --run {manifest.id} --results "
                            f"{results}"), highlight=False, markup=False, emoji=False)
    return 0

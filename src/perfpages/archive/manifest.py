"""run.json: the manifest of one archived run, as validated value objects."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from perfpages.archive import schema
from perfpages.archive.vocabulary import DRIFT_THRESHOLD, MIN_ROUNDS, SCOPE_TEXTS, Scope
from perfpages.errors import ArchiveError

Status = Literal["running", "partial", "complete", "failed"]
SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
SHA_PREFIX = re.compile(r"^[0-9a-fA-F]{4,40}$")


def is_local(repository: str) -> bool:
    """git's rule: `scheme://…` is a URL (file:// a local one), `host:path` with no slash before
    the colon is ssh, anything else is a path."""
    scheme = SCHEME.match(repository)
    if scheme:
        return scheme.group(1).lower() == "file"
    return ":" not in repository.split("/", 1)[0]


def shown_repository(repository: str) -> str:
    """A repository as it may be shown or published: a URL without its user and password (a
    token hides there), a local path by its directory's name only (a path names a user)."""
    if is_local(repository):
        path = urlsplit(repository).path if SCHEME.match(repository) else repository
        return PurePosixPath(path).name or repository
    return without_credentials(repository)


def without_credentials(url: str) -> str:
    """A `scheme://` URL without its user and password; anything else as it is."""
    parts = urlsplit(url)
    if SCHEME.match(url) and "@" in parts.netloc:
        return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    return url


@dataclass(frozen=True)
class Pin:
    """What a label ran: an exact package release, a git commit, or nothing to install."""

    kind: Literal["package", "git", "none"]
    requirement: str = ""
    version: str = ""
    artifacts: dict[str, str] = field(default_factory=dict)  # file name -> sha256
    repository: str = ""
    ref: str = ""
    commit: str = ""
    subdirectory: str = ""
    note: str = ""
    remote: str = ""  # git: the repository as shown (see shown_repository); "" in older runs

    def describe(self) -> str:
        """The pin as every page, report and citation shows it."""
        if self.kind == "package":
            hashes = ", ".join(f"{n} sha256:{h[:12]}" for n, h in sorted(self.artifacts.items()))
            return f"{self.requirement} ({hashes})" if hashes else self.requirement
        if self.kind == "git":
            where = self.remote or shown_repository(self.repository)
            # A ref that is the commit (or its abbreviation) would print the SHA twice.
            same = SHA_PREFIX.match(self.ref) and self.commit.startswith(self.ref.lower())
            ref = f" ({self.ref})" if self.ref and not same else ""
            sub = f", subdirectory {self.subdirectory}" if self.subdirectory else ""
            return f"{where} @ {self.commit}{ref}{sub}"
        return self.note or "nothing installed"

    def to_json(self) -> dict[str, Any]:
        if self.kind == "package":
            return {"kind": "package", "requirement": self.requirement, "version": self.version,
                    "artifacts": dict(self.artifacts)}
        if self.kind == "git":
            out: dict[str, Any] = {"kind": "git", "repository": self.repository, "ref": self.ref,
                                   "commit": self.commit}
            if self.subdirectory:
                out["subdirectory"] = self.subdirectory
            if self.remote:
                out["remote"] = self.remote
            return out
        return {"kind": "none", "note": self.note} if self.note else {"kind": "none"}


@dataclass(frozen=True)
class Label:
    name: str
    pin: Pin
    env: dict[str, str] = field(default_factory=dict)
    pg_settings: dict[str, Any] = field(default_factory=dict)
    description: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"pin": self.pin.to_json()}
        if self.description:
            out["description"] = self.description
        if self.env:
            out["env"] = dict(self.env)
        if self.pg_settings:
            out["pg_settings"] = dict(self.pg_settings)
        return out


@dataclass(frozen=True)
class Method:
    rounds: int
    order: Literal["rotate", "shuffle", "fixed", "pairs"] = "rotate"
    seed: int | None = None
    warmup_s: float = 0.0
    window_s: float = 0.0
    min_rounds: int = MIN_ROUNDS
    drift_threshold: float = DRIFT_THRESHOLD
    notes: str = ""
    # CPUs each part ran on ("subject", "postgres", "load"); a part not named ran anywhere
    placement: dict[str, list[int]] = field(default_factory=dict)
    # Method v2: the exact rank test deciding changes, {"test": "wilcoxon"|"mann-whitney",
    # "alpha": 0.01, "version": "2.1", "certify_alpha": 0.01[, "target_pct": 10]}
    # (perfpages.analysis.decision.Rule; no version: 2.0); None: ranges apart (runs before v2)
    rule: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.rounds < 1 or self.min_rounds < 1:
            raise ValueError("rounds and min_rounds must be at least 1")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rounds": self.rounds, "order": self.order, "seed": self.seed,
                               "warmup_s": self.warmup_s, "window_s": self.window_s,
                               "min_rounds": self.min_rounds,
                               "drift_threshold": self.drift_threshold}
        if self.notes:
            out["notes"] = self.notes
        if self.placement:
            out["placement"] = {k: list(v) for k, v in self.placement.items()}
        if self.rule:
            out["rule"] = dict(self.rule)
        return out


@dataclass(frozen=True)
class Block:
    name: str
    title: str = ""
    description: str = ""
    metrics: tuple[str, ...] = ()
    parameters: tuple[str, ...] = ()
    engine: str = ""  # what made an HTTP block's load: "" (perfpages' generator), "locust …"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.title:
            out["title"] = self.title
        if self.description:
            out["description"] = self.description
        if self.metrics:
            out["metrics"] = list(self.metrics)
        if self.parameters:
            out["parameters"] = list(self.parameters)
        if self.engine:
            out["engine"] = self.engine
        return out


@dataclass(frozen=True)
class Source:
    """Where a transcribed run's figures were published (`perfpages import`): they were not
    measured here. `values`: "rounds" (per-round values as published) or "summary" (a median
    with the given min and max, and percentiles, one value per cell). A summary may say how
    many rounds each cell summarises and the rule its source decided by (`rounds`, `rule`:
    "ranges", ranges of the rounds apart), which then decides its changes; `method` is the
    source's method as a note; `unpublished` (instead of `url`) who gave it, `date` then the
    day it was received."""

    title: str
    url: str
    date: str  # YYYY-MM-DD, as the source is dated (unpublished: the day it was received)
    values: Literal["rounds", "summary"] = "rounds"
    rounds: int | None = None
    rule: str = ""
    method: str = ""
    unpublished: str = ""
    sha256: str = ""  # of the file imported: the same file twice is refused
    notes: dict[str, str] = field(default_factory=dict, hash=False)  # "block/label/params/metric"

    def where(self) -> str:
        return f"unpublished, received from {self.unpublished}" if self.unpublished else self.url

    def note(self) -> str:
        """How every report, citation and page says where the figures come from."""
        return f"{SCOPE_TEXTS['transcribed']}: from “{self.title}” ({self.where()}), {self.date}"

    def rule_text(self) -> str:
        """The source's rule as every verdict on it says it ("" when it gave none)."""
        if self.rule != "ranges" or not self.rounds:
            return ""
        return f"the source's rule: ranges of {self.rounds} rounds apart"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"title": self.title, "url": self.url, "date": self.date,
                               "values": self.values}
        out |= {k: v for k, v in (("rounds", self.rounds), ("rule", self.rule),
                                  ("method", self.method), ("unpublished", self.unpublished),
                                  ("sha256", self.sha256), ("notes", dict(self.notes)))
                if v}
        return out


@dataclass(frozen=True)
class Manifest:
    id: str
    suite: str
    title: str
    scope: Scope
    status: Status
    started: str
    command: str
    harness: dict[str, Any]
    labels: dict[str, Label]
    method: Method
    machine: dict[str, Any]
    blocks: dict[str, Block] = field(default_factory=dict)
    ended: str | None = None
    files: dict[str, str] = field(default_factory=dict)
    format_version: int = schema.FORMAT_VERSION
    # The git repository holding the suites: commit (None outside git) and dirty; older runs
    # did not record it.
    suite_repository: dict[str, Any] | None = None
    replay_of: str | None = None  # the id of the run this one replays (`bench replay`)
    replay_of_seed: int | None = None  # that run's method.seed (a replay draws its own)
    source: Source | None = None  # scope "transcribed" only: where its figures come from

    @property
    def date(self) -> str:
        return self.id[:10]

    def block(self, name: str) -> Block:
        return self.blocks.get(name) or Block(name)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "format": "perfpages-run", "format_version": self.format_version, "id": self.id,
            "suite": self.suite, "title": self.title, "scope": self.scope, "status": self.status,
            "started": self.started, "ended": self.ended, "command": self.command,
            **({"replay_of": self.replay_of} if self.replay_of is not None else {}),
            **({"replay_of_seed": self.replay_of_seed}
               if self.replay_of is not None and self.replay_of_seed is not None else {}),
            "harness": dict(self.harness),
            **({"suite_repository": dict(self.suite_repository)}
               if self.suite_repository is not None else {}),
            "labels": {name: label.to_json() for name, label in self.labels.items()},
            "method": self.method.to_json(),
            "blocks": {name: block.to_json() for name, block in self.blocks.items()},
            "machine": dict(self.machine),
            **({"source": self.source.to_json()} if self.source is not None else {}),
        }
        if self.files:
            out["files"] = dict(sorted(self.files.items()))
        return out

    @classmethod
    def from_json(cls, data: Any, where: str | Path) -> Manifest:
        version = data.get("format_version") if isinstance(data, dict) else None
        if version is not None and version not in schema.SUPPORTED_VERSIONS:
            raise ArchiveError(
                f"unknown format version {data.get('format_version')!r} (this perfpages reads "
                f"{', '.join(map(str, schema.SUPPORTED_VERSIONS))})",
                where=where, key="format_version",
                fix="upgrade perfpages to a version that reads it")
        schema.check(data, "run", where=where)
        labels = {
            name: Label(name=name, pin=Pin(**raw["pin"]), env=raw.get("env", {}),
                        pg_settings=raw.get("pg_settings", {}),
                        description=raw.get("description", ""))
            for name, raw in data["labels"].items()
        }
        blocks = {
            name: Block(name=name, title=raw.get("title", ""),
                        description=raw.get("description", ""),
                        metrics=tuple(raw.get("metrics", ())),
                        parameters=tuple(raw.get("parameters", ())),
                        engine=raw.get("engine", ""))
            for name, raw in data.get("blocks", {}).items()
        }
        try:
            method = Method(**data["method"])
        except ValueError as exc:
            raise ArchiveError(str(exc), where=where, key="method") from None
        return cls(id=data["id"], suite=data["suite"], title=data["title"], scope=data["scope"],
                   status=data["status"], started=data["started"], command=data["command"],
                   harness=data["harness"], labels=labels, method=method,
                   machine=data["machine"], blocks=blocks, ended=data.get("ended"),
                   files=data.get("files", {}), format_version=data["format_version"],
                   suite_repository=data.get("suite_repository"),
                   replay_of=data.get("replay_of"), replay_of_seed=data.get("replay_of_seed"),
                   source=Source(**data["source"]) if "source" in data else None)

"""A performance page: front matter pins, macros rendered by Jinja, claims, lint — no MkDocs.

Only pages that pin runs are rendered. Fenced code and code spans are set aside before Jinja sees
the page (so `{{ … }}` in an example stays literal) and put back line for line, so every error,
claim and lint finding names the true line of the source file.
"""

from __future__ import annotations

import re
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import yaml

from perfpages.analysis.certification import Certificate
from perfpages.errors import PerfpagesError
from perfpages.site import agreement, cards, contrary, family, lint, sentences
from perfpages.site import reproduction as repro
from perfpages.site.arguments import checked_namespace
from perfpages.site.claims import Claim, Condition, Conditions
from perfpages.site.facts import Facts
from perfpages.site.macros import Macros
from perfpages.site.pins import Ledger, Pins, Side, parse_front_matter
from perfpages.site.plots import Plots, chart_style
from perfpages.site.store import Loaded, RunStore

FRONT_MATTER = re.compile(r"\A-{3}[ \t]*\n(.*?\n)(?:\.{3}|-{3})[ \t]*\n", re.S)
CODE_SPAN = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)")
TOKEN = "\x00{}\x00"
CLAIM_MARK = re.compile("\x01(\\d+)\x01")
MACRO_CALL = re.compile(r"(\{\{.*?\}\})")
LATER = "\x02{}\x02"  # a macro over the whole page (verdicts, certification), filled in last
LATER_MARK = re.compile("\x02(\\d+)\x02")
GUIDE = "see the guide: perfpages guide pages"


@dataclass
class Rendered:
    markdown: str
    claims: list[Claim] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # lint findings and failed claims
    pins_runs: bool = True  # False: the page has no `runs:` and was left as written
    # The pinned runs by alias, for the header the plugin adds outside the snapshot
    # (perfpages.site.header: warnings and the machine)
    runs: dict[str, Loaded] = field(default_factory=dict)
    # The verdicts it prints or claims, for the site-wide check (perfpages.site.agreement)
    stated: list[agreement.Stated] = field(default_factory=list)
    # (line of the body, alias) of every run its macros read: the header's runs by section
    read: list[tuple[int, str]] = field(default_factory=list)
    # (alias, replay's id, lines) of its claims that did not hold on a replay it reproduces
    replays: list[tuple[str, str, list[int | None]]] = field(default_factory=list)
    blocks: set[tuple[str, str]] = field(default_factory=set)  # (alias, block) it reads


def split(source: str, path: str | None = None) -> tuple[dict[str, Any], str, int]:
    """Front matter, body, and the number of source lines before the body (as MkDocs strips).
    Front matter that is not YAML is an error naming `path` and the line (MkDocs would
    silently render it as text, with the page's pins and macros unread)."""
    m = FRONT_MATTER.match(source)
    if not m:
        return {}, source, 0
    try:
        meta = yaml.safe_load(m.group(1)) or {}
    except yaml.YAMLError as exc:
        if path is None:
            return {}, source, 0
        mark = getattr(exc, "problem_mark", None)
        raise PerfpagesError(f"not valid YAML: {getattr(exc, 'problem', exc)}",
                             where=path, line=mark.line + 2 if mark else 1, key="front matter",
                             fix="fix the YAML between the two `---` lines") from None
    rest = source[m.end():]
    body = rest.lstrip("\n")
    return (meta if isinstance(meta, dict) else {}), body, source[: len(source) - len(body)].count(
        "\n")


def offset_of(source: str, body: str) -> int:
    """Lines of the source before `body` (MkDocs hands plugins the body without front matter)."""
    if body and source.endswith(body):
        return source[: len(source) - len(body)].count("\n")
    return split(source)[2]


def pin_lines(source: str, aliases: dict[str, str]) -> dict[str, int]:
    """The source line of each alias under `runs:` (the `runs:` line itself as a fallback)."""
    m = FRONT_MATTER.match(source)
    if not m:
        return {}
    lines = source[: m.end()].split("\n")
    start = next((i for i, text in enumerate(lines) if text.startswith("runs:")), 0)
    out = {}
    for alias, run_id in aliases.items():
        out[alias] = start + 1
        for i in range(start, len(lines)):
            text = lines[i].strip().lstrip("- ").strip("'\"")
            if text.startswith((f"{alias}:", f"'{alias}':", f'"{alias}":')) or text == run_id:
                out[alias] = i + 1
                break
    return out


def protect(body: str) -> tuple[str, list[str]]:
    """Replace fenced code lines and code spans by tokens Jinja leaves alone."""
    saved: list[str] = []

    def keep(text: str) -> str:
        saved.append(text)
        return TOKEN.format(len(saved) - 1)

    def spans(line: str) -> str:
        """Code spans set aside, except one inside a macro's arguments (a claim's sentence
        may hold one): that is the macro's text. A code span showing a macro is kept."""
        calls = [m.span() for m in MACRO_CALL.finditer(line)]

        def inside(m: re.Match[str]) -> bool:
            return any(a < m.start() and m.end() < b for a, b in calls)

        return CODE_SPAN.sub(lambda m: m.group(0) if inside(m) else keep(m.group(0)), line)

    lines = body.split("\n")
    out = [keep(line) if code else spans(line)
           for line, code in zip(lines, lint.fenced(lines), strict=True)]
    return "\n".join(out), saved


def restore(text: str, saved: list[str]) -> str:
    return re.sub("\x00(\\d+)\x00", lambda m: saved[int(m.group(1))], text)


def _error_line(exc: BaseException, name: str) -> int | None:
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == name]
    return lines[-1] if lines else None


class _Page:
    """The state of one rendering: where it is, its claims, its namespace."""

    def __init__(self, path: str, offset: int, pins: Pins, style: int = 1,
                 store: RunStore | None = None, docs: repro.Docs | None = None,
                 nested: bool = False) -> None:
        self.path = path
        self.offset = offset
        self.claims: list[Claim] = []
        self.pins, self.store, self.docs, self.nested = pins, store, docs, nested
        self.reproductions: dict[tuple[str, str], dict[str, Any]] = {}
        self.later: list[Callable[[], str]] = []
        self.options = family.Options()
        # Where each comparison is first printed or claimed (for a contrary one left out)
        pins.judged = Ledger(lambda: offset + agreement.template_line())
        self.namespace: dict[str, Any] = checked_namespace({
            **Macros(pins).namespace(), **Facts(pins).namespace(),
            **Plots(pins, style).namespace(), **Conditions(pins).namespace(),
            "claim": self.claim, "reproduction": self.reproduction,
            "reproduced": self.reproduced, "verdicts": self.verdicts,
            "certification": self.certification, "certified": self.certified,
            "verdict": self.verdict})

    def _later(self, make: Callable[[], str]) -> str:
        self.later.append(make)
        return LATER.format(len(self.later) - 1)

    def verdicts(self) -> str:
        """How many verdicts the page makes, and how many false ones to expect."""
        return self._later(lambda: family.verdicts_text(self.pins, self.options.holm))

    def certification(self, *, run: str | None = None, block: str | None = None) -> str:
        """Per pinned run's block: its A/A cells, what it resolves, the smallest change the
        page claims on it, certified or not."""
        family.certificates(self.pins, [], run, block)  # a wrong name stops at its line
        return self._later(lambda: family.certification_table(self.pins, self.claims, run,
                                                               block))

    def verdict(self, base: Side, other: Side, metrics: list[str] | str | None = None,
                **filters: Any) -> str:
        """A verdict card: per metric the change, clear or not, what it resolves, and whether
        its block is certified (settled once every claim of the page is in)."""
        card = cards.build(self.pins, base, other, metrics, **filters)

        def certify(alias: str, block: str) -> Certificate | None:
            if not self.pins.rule(alias).exact:
                return None
            return family.certificates(self.pins, self.claims, alias, block)[0][1]

        return self._later(lambda: cards.render(card, certify))

    def certified(self, block: str, *, run: str | None = None) -> Condition:
        """The block is certified (settled once every claim of the page is in)."""
        return family.certified(self.pins, block, run)

    def finish(self, text: str) -> str:
        """Settle what reads the whole page: certified(), Holm, then the late macros."""
        self.claims = family.settle(self.claims)
        if self.options.holm:
            self.claims = family.holm(self.claims, self.path)
        self.claims = family.uncertified(self.pins, self.claims)
        self.claims = contrary.check(self.pins, self.claims, self.path, self.offset)
        return LATER_MARK.sub(lambda m: self.later[int(m.group(1))](), text)

    def _reproduce(self, original: str, second: str) -> dict[str, Any]:
        """The reproduction of one pinned run by another, with the claims of every page pinning
        the first, this one included (made once per page)."""
        if (original, second) not in self.reproductions:
            ids = [self.pins.runs[self.pins.aliases(a)[0]].manifest.id for a in (original, second)]
            assert self.store is not None
            self.reproductions[original, second] = reproduce(
                self.store, self.docs or repro.Docs.find(), ids[0], ids[1])
        return self.reproductions[original, second]

    def reproduction(self, original: str, second: str) -> str:
        """The reproduction of pinned run `original` by `second`: the summary, the cells and
        changes that did not reproduce, the claims of the pages pinning `original` on
        `second`."""
        if self.nested:
            return ""
        return "\n\n" + repro.markdown(self._reproduce(original, second), level=3) + "\n"

    def reproduced(self, original: str, second: str, at_least: float = 0.9) -> Condition:
        """At least `at_least` of the claims of the pages pinning `original` hold on
        `second`."""
        if self.nested:
            return repro.SKIPPED
        return repro.condition(self._reproduce(original, second), at_least)

    def claim(self, sentence: str, condition: Condition, *, uncertified_ok: str = "") -> str:
        """`uncertified_ok`: why the claim may stand on a block that is not certified, shown
        beside it (`family.uncertified`)."""
        if not isinstance(condition, Condition):
            raise PerfpagesError("claim() needs a sentence and a condition",
                                 key="claim", fix="e.g. claim(\"…\", faster(\"v1\", \"v2\")); "
                                 + GUIDE)
        if not isinstance(uncertified_ok, str):
            raise PerfpagesError("uncertified_ok must be the reason, in words", key="claim",
                                 fix="e.g. uncertified_ok=\"the block has no A/A pair; …\"")
        self.claims.append(Claim(self.path, self.offset + agreement.template_line(), str(sentence),
                                 condition, uncertified_ok.strip()))
        return f"\x01{len(self.claims) - 1}\x01"  # the sentence, once the page is settled


def macro_names() -> frozenset[str]:
    """Every name a page's macros call: what an unrendered macro starts with."""
    return frozenset(_Page("", 0, Pins({})).namespace)


def _shown(value: Any) -> Any:
    """What `{{ … }}` prints: a condition or a macro itself is refused, never published as
    `Condition(holds=True, …)` or `<function … at 0x…>`."""
    if isinstance(value, Condition):
        raise PerfpagesError("a condition printed outside claim(): it states nothing on its "
                             "own", key="macro", fix="write it as {{ claim('The sentence.', "
                             "CONDITION) }}")
    if callable(value):
        name = getattr(value, "__name__", type(value).__name__)
        raise PerfpagesError(f"{name} printed without calling it", key="macro",
                             fix=f"call it: {{{{ {name}(…) }}}}")
    return value


def _environment(path: str, text: str) -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FunctionLoader(lambda name: (text, name, lambda: True)),
        finalize=_shown,
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False,
        # `{#id}` is attribute-list syntax in Markdown: keep Jinja comments out of its way.
        comment_start_string="{##", comment_end_string="##}", cache_size=0)


RUN_KEYS = ("default_run", "allow_failed", "perfpages", "charts")  # about a page's runs


def _no_runs(meta: dict[str, Any], path: str, source: str | None) -> None:
    """A page that pins no run is rendered as written: a key about its runs would be ignored
    without a word, so it is an error naming its line."""
    for key in RUN_KEYS:
        if key in meta:
            found = re.search(rf"^{key}\s*:", source or "", re.M)
            line = (source or "").count("\n", 0, found.start()) + 1 if found else None
            raise PerfpagesError(f"{key} on a page that pins no run (no `runs:`): it would be "
                                 "ignored", where=path, line=line, key=key,
                                 fix="pin the runs under `runs:`, or remove it")


def render(body: str, meta: dict[str, Any], *, path: str, offset: int, store: RunStore,
           source: str | None = None, docs: repro.Docs | None = None,
           nested: bool = False) -> Rendered:
    """Render a page's macros and claims; pages that pin no runs come back unchanged. `docs`
    is where the site's other pages are (for `reproduction`; default: from mkdocs.yml);
    `nested` renders a page for another's reproduction (see perfpages.site.reproduction)."""
    if source is not None and not meta:
        split(source, path)  # raises if MkDocs dropped front matter it could not parse
    aliases = parse_front_matter(meta, path)
    if not aliases:
        _no_runs(meta, path, source)
        return Rendered(body, pins_runs=False)
    style = chart_style(meta, path)
    pins = Pins.load(store, aliases, path, pin_lines(source or "", aliases))
    names = lint.known(loaded.manifest for loaded in pins.runs.values())
    warnings = [lint.message(path, offset + f.line, f.figure, f.kind)
                for f in lint.check(body, names)]
    page = _Page(path, offset, pins, style, store, docs, nested)
    page.options = family.options(meta, path)
    protected, saved = protect(body)
    try:
        template = _environment(path, protected).get_template(path)
        text = page.finish(template.render(page.namespace))
    except jinja2.TemplateSyntaxError as exc:
        raise PerfpagesError(exc.message or "syntax error", where=path,
                             line=offset + (exc.lineno or 1), key="macro", fix=GUIDE) from None
    except PerfpagesError as exc:
        line = _error_line(exc, path)
        raise PerfpagesError(exc.what, where=path, line=offset + line if line else None,
                             key=exc.key or "macro", fix=exc.fix or GUIDE) from None
    except (jinja2.UndefinedError, TypeError, ValueError, KeyError) as exc:
        line = _error_line(exc, path)
        raise PerfpagesError(str(exc), where=path, line=offset + line if line else None,
                             key="macro", fix=GUIDE) from None
    except Exception as exc:  # any error in an expression (`{{ 1/0 }}`) is the page's, one line
        line = _error_line(exc, path)
        raise PerfpagesError(f"{type(exc).__name__}: {exc}", where=path,
                             line=offset + line if line else None, key="macro",
                             fix=GUIDE) from None
    warnings += [c.message for c in page.claims if not c.holds]
    text = sentences.annotate(restore(text, saved), page.claims, CLAIM_MARK)
    stated = agreement.stated(path, pins.judged, pins.judged.lines,
                              {alias: loaded.manifest for alias, loaded in pins.runs.items()})
    replays = [(original, data["second"]["id"], [i["line"] for i in data["claims"]["items"]
                                         if i["page"] == path and not i["reproduces"]])
               for (original, _), data in page.reproductions.items()]
    return Rendered(text, page.claims, warnings, runs=dict(pins.runs), stated=stated,
                    read=pins.read, replays=replays, blocks=pins.blocks)


def render_file(file: Path, *, path: str, store: RunStore,
                docs: repro.Docs | None = None) -> Rendered:
    source = file.read_text(encoding="utf-8-sig")
    meta, body, offset = split(source, path)
    return render(body, meta, path=path, offset=offset, store=store, source=source, docs=docs)


def claims_on(docs: repro.Docs, store: RunStore, original: str,
              second: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Every claim of every page under `docs` that pins run `original`, on the original and
    with the pin pointed at `second`; and the pages. The page asking is one of them: its
    nested rendering evaluates no reproduction of its own."""
    items: list[dict[str, Any]] = []
    pages = []
    for file in docs.pages():
        shown = docs.shown(file)
        try:
            source = file.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError):
            continue  # a page the build cannot read either: it pins nothing we can know of
        try:
            meta, body, offset = split(source, shown)
        except PerfpagesError as exc:  # its front matter is broken: does it pin the run?
            if original in source:
                pages.append(shown)
                items += repro.pair_claims(shown, str(exc), str(exc))
            continue
        if not repro.pins(meta, shown, original):
            continue
        pages.append(shown)
        sides: list[list[Claim] | str] = []
        for front in (meta, repro.swapped(meta, original, second)):
            try:
                sides.append(render(body, front, path=shown, offset=offset, store=store,
                                    source=source, nested=True).claims)
            except PerfpagesError as exc:
                sides.append(str(exc))
        items += repro.pair_claims(shown, *sides)
    return items, pages


def reproduce(store: RunStore, docs: repro.Docs, original: str, second: str) -> dict[str, Any]:
    """The reproduction report of run `original` by run `second` as plain data: cells,
    changes, and the claims of every page pinning `original` on `second`; made once per
    `docs` (a build), whichever page or run page asks first."""
    if (original, second) not in docs.reproduced:
        data = repro.compare(store.get(original), store.get(second))
        docs.reproduced[original, second] = repro.with_claims(
            data, *claims_on(docs, store, original, second))
    return docs.reproduced[original, second]

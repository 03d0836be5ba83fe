"""Differential flame graphs: where two labels' py-spy samples differ, frame by frame.

The standard differential flame graph (Brendan Gregg's difffolded.pl + flamegraph.pl) draws the
second profile's shape and colours each frame by its change: red where the head spends more
time, blue less. Here the change is a frame's inclusive time (it and its callees), so a hot
path is red from the root up to what grew, not only at its tip. Frames the head never reached
have no width in the head's shape; Gregg's answer is the negated graph, the base's shape with
the same colours, and so here: under the head's graph, the base's, drawn when something the
head no longer runs took at least `neutral` of the base's time (or always, `base_view=True`).

Frames are functions: line numbers and process ids are dropped (`stacks.by_function`), or two
releases would share no frame. Without calls, both profiles are normalised to shares of their
samples; with the calls each served, a frame is its time per call (a sample is 1/RATE_HZ s of
one thread's time), both graphs are drawn to one scale, and a head that costs less per call
is narrower. Inline SVG, no script: text and neutral frames take the page's text colour
(currentColor), red and blue are ColorBrewer's RdBu ends at an opacity that grows with the
change, so they read on Material's light and dark schemes; each frame has a tooltip with both
values and the change.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from html import escape
from typing import Literal

from perfpages.analysis.metric import format_number
from perfpages.archive.stacks import RATE_HZ, Node, Stack, by_function, short_name, tree
from perfpages.errors import AnalysisError

WIDTH = 720  # its 12-unit text is 11 px at 660 px; narrower, the figure shows NARROW_NOTE
ROW = 17  # a frame's height, its gap included
FONT = 12
CHAR = 0.6 * FONT  # an average character's width in a sans-serif face
MORE, LESS = "#b2182b", "#2166ac"  # RdBu's ends: told apart by every colour vision
FAINT, STRONG = 0.15, 0.65  # opacity of the least and the largest coloured change
SATURATE = 0.1  # a change of at least this share of the base's total is the strongest colour
NARROW_NOTE = ("On a screen this narrow the flame graph's labels would be too small to read: "
               "the table below lists the functions that gained or lost most.")


@dataclass(frozen=True)
class _Side:
    """One profile, normalised: a frame's value is samples / per (a share, or ms per call)."""

    root: Node
    per: float

    def value(self, node: Node | None) -> float:
        return node.samples / self.per if node is not None else 0.0


def _side(stacks: Counter[Stack], calls: float | None, which: str) -> _Side:
    root = tree(by_function(stacks))
    if root.samples <= 0:
        raise AnalysisError(f"the {which} profile has no py-spy samples",
                            fix="profile a block whose load keeps the subject busy")
    if calls is None:
        return _Side(root, float(root.samples))
    if calls <= 0:
        raise AnalysisError(f"{which}_calls is {calls}; it must be above 0",
                            fix="pass the requests served while py-spy sampled")
    return _Side(root, calls * RATE_HZ / 1000.0)  # samples → ms per call


def _sides(base: Counter[Stack], head: Counter[Stack], base_calls: float | None,
           head_calls: float | None) -> tuple[_Side, _Side]:
    if (base_calls is None) != (head_calls is None):
        raise AnalysisError("calls given for one profile only",
                            fix="pass both base_calls and head_calls, or neither")
    return _side(base, base_calls, "base"), _side(head, head_calls, "head")


def amount(value: float, per_call: bool) -> str:
    """A frame's time as the graph and its table show it: `12.3 %` of the samples, or
    `0.412 ms` per call."""
    if value == 0:
        return "0 ms" if per_call else "0 %"
    return f"{format_number(100 * value)} %" if not per_call else f"{format_number(value)} ms"


def _change(before: float, after: float, per_call: bool) -> tuple[str, str]:
    """A change in words: its step (`+0.12 ms`, `−3.4 points`) and its note (`−21 %`, or
    `new in head`, `gone in head`)."""
    delta = after - before
    sign = "+" if delta > 0 else "−" if delta < 0 else "±"
    step = (f"{sign}{format_number(abs(delta))} ms" if per_call
            else f"{sign}{format_number(100 * abs(delta))} points")
    if before == 0:
        return step, "new in head"
    if after == 0:
        return step, "gone in head"
    return step, f"{sign}{format_number(100 * abs(delta) / before)} %"


def _fill(change: float, neutral: float, strongest: float) -> str:
    """The rect's paint for a change (a fraction of the base's total)."""
    if abs(change) < neutral:
        return 'fill="currentColor" fill-opacity="0.12"'
    t = min(1.0, (abs(change) - neutral) / max(strongest - neutral, 1e-9))
    return (f'fill="{MORE if change > 0 else LESS}" '
            f'fill-opacity="{FAINT + (STRONG - FAINT) * t:.2f}"')


def _label(name: str, width: float) -> str:
    fits = int((width - 6) / CHAR)
    if fits < 3:
        return ""
    return name if len(name) <= fits else name[: fits - 1] + "…"


@dataclass
class _Box:
    path: Stack  # () for the root ("all")
    x: float
    width: float
    level: int  # 0: the root
    base: float
    head: float


def _boxes(shape: _Side, other: _Side, scale: float, shape_is_head: bool) -> Iterator[_Box]:
    """The frames of `shape` half a pixel wide or more (`scale` pixels per unit), each with
    its value in both profiles."""

    def pair(mine: Node | None, theirs: Node | None) -> tuple[float, float]:
        a, b = shape.value(mine), other.value(theirs)
        return (b, a) if shape_is_head else (a, b)

    yield _Box((), 0.0, scale * shape.value(shape.root), 0, *pair(shape.root, other.root))
    for placed in shape.root.walk(least=0.5 * shape.per / scale):
        yield _Box(placed.path, scale * placed.offset / shape.per,
                   scale * shape.value(placed.node), placed.level + 1,
                   *pair(placed.node, other.root.find(placed.path)))


def _view(boxes: list[_Box], top: float, neutral: float, strongest: float, total: float,
          per_call: bool) -> tuple[list[str], float]:
    """One flame graph, root at the bottom, from `top`; returns its elements and height."""
    levels = max(b.level for b in boxes) + 1
    height = levels * ROW
    out = ['<g style="stroke:var(--md-default-bg-color, #fff)" stroke-width="0.6">']
    for b in boxes:
        name = b.path[-1] if b.path else "all"
        y = top + height - (b.level + 1) * ROW
        tip = (f"{escape(name)}&#10;base: {escape(amount(b.base, per_call))} · "
               f"head: {escape(amount(b.head, per_call))}&#10;"
               "{} ({})".format(*map(escape, _change(b.base, b.head, per_call))))
        shown = _label(short_name(name) if b.path else name, b.width)
        text = (f'<text x="{b.x + 3:.2f}" y="{y + ROW - 5:.2f}" stroke="none">'
                f"{escape(shown)}</text>" if shown else "")
        out.append(f"<g><title>{tip}</title>"
                   f'<rect x="{b.x:.2f}" y="{y:.2f}" width="{b.width:.2f}" '
                   f'height="{ROW - 1}" {_fill((b.head - b.base) / total, neutral, strongest)}/>'
                   f"{text}</g>")
    out.append("</g>")
    return out, height


def _legend(y: float, per_call: bool, neutral: float) -> list[str]:
    entries = [(f'fill="{MORE}" fill-opacity="{STRONG}"', "more time in head"),
               (f'fill="{LESS}" fill-opacity="{STRONG}"', "less time in head"),
               ('fill="currentColor" fill-opacity="0.12"',
                f"within ±{100 * neutral:g} % of the base's total")]
    out, x = [], 0.0
    for paint, text in entries:
        out.append(f'<rect x="{x:.1f}" y="{y - FONT + 2:.1f}" width="{FONT}" height="{FONT}" '
                   f"{paint}/>"
                   f'<text x="{x + FONT + 4:.1f}" y="{y:.1f}">{escape(text)}</text>')
        x += FONT + 4 + CHAR * len(text) + 14
    width = ("width: time per call, one scale for both" if per_call
             else "width: share of the profile's samples")
    out.append(f'<text x="{x:.1f}" y="{y:.1f}" fill-opacity="0.75">{width}</text>')
    return out


def diff_svg(base: Counter[Stack], head: Counter[Stack], title: str,
             base_calls: float | None = None, head_calls: float | None = None, *,
             neutral: float = 0.01, base_view: bool | None = None) -> str:
    """A differential flame graph of two profiles (`read_stacks` of two labels), as an inline
    `<figure>` of one line of SVG, ready for a page.

    Widths are the head's: each frame's share of the head's samples, or, with `base_calls` and
    `head_calls` (the requests each served while py-spy sampled, warm-up included when the
    profile spans it), its time per call in ms, both graphs to one scale. Colours are the change
    of a frame's inclusive time (its share, or its time per call) from base to head, as a
    fraction of the base's total: red more, blue less, stronger the larger (the strongest at
    the largest change, or at 10 %, whichever is more), grey within `neutral` (±1 %; on a few
    thousand samples, sampling alone moves a large frame's share by about a point, so the
    faintest colours may be noise). The root frame, `all`, holds the totals.
    Frames the head never reached are drawn in a second graph, the base's shape in the same
    colours, when they took `neutral` of the base or more (`base_view` True or False forces
    it). Every frame's tooltip gives both values and the change.
    """
    b, h = _sides(base, head, base_calls, head_calls)
    per_call = base_calls is not None
    total = b.value(b.root)
    scale = WIDTH / max(total, h.value(h.root))
    shapes = [list(_boxes(h, b, scale, True)), list(_boxes(b, h, scale, False))]
    gone = any(box.head == 0 and box.base >= neutral * total for box in shapes[1])
    if not (gone if base_view is None else base_view):
        shapes.pop()
    strongest = max([SATURATE, *(abs(box.head - box.base) / total
                                 for boxes in shapes for box in boxes)])
    flat = " ".join(title.split())
    out = [f'<text x="0" y="{FONT + 2}" font-size="{FONT + 2}">{escape(flat)}</text>',
           *_legend(2 * ROW + 4, per_call, neutral)]
    top: float = 2 * ROW + 14
    against = (f"{amount(total, True)}, {_change(total, h.value(h.root), True)[1]}"
               if per_call else f"{b.root.samples:,}")
    captions = [f"head, {_totals(h, per_call)} (base {against}); widths from the head",
                f"base, {_totals(b, per_call)}: what the head no longer runs shows here"]
    for boxes, caption in zip(shapes, captions, strict=False):
        out.append(f'<text x="0" y="{top + FONT:.1f}" font-weight="bold">'
                   f"{escape(caption)}</text>")
        drawn, height = _view(boxes, top + ROW + 2, neutral, strongest, total, per_call)
        out += drawn
        top += ROW + 2 + height + 10
    desc = (f"Differential flame graph, {flat}: frame widths from the head profile, red where "
            "the head spends more time, blue less.")
    return ('<figure class="perfpages-chart perfpages-flamediff" data-search-exclude>'
            f'<svg class="perfpages-flame" xmlns="http://www.w3.org/2000/svg" '
            f'viewBox="0 0 {WIDTH} {top:.0f}" '
            f'role="img" aria-label="{escape(flat)}" font-family="sans-serif" '
            f'font-size="{FONT}" fill="currentColor"><title>{escape(flat)}</title>'
            f"<desc>{escape(desc)}</desc>" + "".join(out) + "</svg>"
            f'<p class="perfpages-flame-note">{NARROW_NOTE}</p></figure>')


def _totals(shape: _Side, per_call: bool) -> str:
    """`2,576 samples`, or `0.77 ms per call`, of the profile whose shape is drawn."""
    if not per_call:
        return f"{shape.root.samples:,} samples"
    return f"{amount(shape.value(shape.root), True)} per call"


@dataclass(frozen=True)
class FrameChange:
    """A function's time in both profiles: a share of the samples (0–1), or ms per call."""

    frame: str  # `function (file.py)`: line numbers dropped
    base: float
    head: float
    base_samples: int
    head_samples: int
    per_call: bool

    @property
    def change(self) -> float:
        return self.head - self.base

    @property
    def ratio(self) -> float | None:
        """head / base − 1 (−0.25: a quarter less), None for a function new in head."""
        return self.head / self.base - 1 if self.base else None

    def text(self) -> tuple[str, str, str, str]:
        """Its cells for a table: base, head, the step and the note (`−21 %`, `new in head`)."""
        return (amount(self.base, self.per_call), amount(self.head, self.per_call),
                *_change(self.base, self.head, self.per_call))


def frame_changes(base: Counter[Stack], head: Counter[Stack], *,
                  base_calls: float | None = None, head_calls: float | None = None,
                  by: Literal["self", "inclusive"] = "self",
                  top: int | None = 10) -> list[FrameChange]:
    """The functions whose time changed most from base to head, largest change first (gains
    and losses alike: split them by the sign of `change`), at most `top` (None: all that
    changed). `by="self"` counts the samples a function was running itself, where the time
    went; `"inclusive"` those it was anywhere on the stack (once per sample, however deep it
    recursed), which ranks the callers a change sits under. Values as `diff_svg`: shares of
    each profile's samples, or ms per call with the calls."""
    sides = _sides(base, head, base_calls, head_calls)
    counted = [_by_function(stacks, by) for stacks in (base, head)]
    out = []
    for frame in counted[0].keys() | counted[1].keys():
        n_base, n_head = counted[0][frame], counted[1][frame]
        before, after = n_base / sides[0].per, n_head / sides[1].per
        if before != after:
            out.append(FrameChange(frame, before, after, n_base, n_head, base_calls is not None))
    out.sort(key=lambda c: (-abs(c.change), c.frame))
    return out if top is None else out[:top]


def _by_function(stacks: Counter[Stack], by: str) -> Counter[str]:
    if by not in ("self", "inclusive"):
        raise AnalysisError(f"by={by!r} is not a kind of time",
                            fix='use by="self" or by="inclusive"')
    counted: Counter[str] = Counter()
    for stack, n in by_function(stacks).items():
        for frame in ({stack[-1]} if by == "self" else set(stack)) if stack else ():
            counted[frame] += n
    return counted

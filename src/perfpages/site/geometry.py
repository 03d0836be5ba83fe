"""A chart's drawn geometry: its width, margins and plot height in SVG units, and how its text
is fitted (legend names cut, x labels thinned so none overlaps).

An SVG with a viewBox scales its text with its width: a chart drawn 640 units wide shrinks to
0.56× in a phone's 358 px column, its 13-unit text to 7 px. So each chart is drawn twice, WIDE
for a laptop's column and NARROW at the phone's column width (its text at 13 px as drawn), and
the stylesheet (charts.STYLE) shows the one that suits the width of the figure.
"""

from __future__ import annotations

from dataclasses import dataclass

FONT = 13  # the charts' text, in SVG units


@dataclass(frozen=True)
class Geometry:
    name: str  # the SVG's class: perfpages-wide or perfpages-narrow
    width: int
    left: int  # room for the value axis' tick labels and title
    right: int
    top: int  # the plot's top below one legend row
    bottom: int  # room for the x tick labels and title
    plot_h: int
    char: float  # a character's estimated width at FONT, for legends and labels
    legend_x: int  # where the legend's first entry starts
    thin: bool  # drop x labels that would overlap (the wide layout keeps its published bytes)

    @property
    def plot_w(self) -> int:
        return self.width - self.left - self.right

    def fit(self, text: str, room: float) -> str:
        """`text` cut to `room` units, with an ellipsis, when the layout thins its text."""
        most = int(room / self.char)
        if not self.thin or len(text) <= most:
            return text
        return text[: max(most - 1, 1)] + "…"

    def place(self, at: float, text: str) -> float:
        """Where a centred x label is written: at its tick, or, when the layout thins, moved
        in just enough to stay inside the chart (the first and last labels of a narrow axis)."""
        if not self.thin:
            return at
        half = self.char * len(text) / 2
        return min(max(at, half), self.width - half)

    def shown(self, labels: list[tuple[float, str]]) -> set[int]:
        """Which of the x labels (pixel, text), left to right, are written: all of them, or,
        when the layout thins, those that keep clear of the next one kept, counted from the
        right (the newest release, the highest load)."""
        if not self.thin:
            return set(range(len(labels)))
        kept: set[int] = set()
        edge = float("inf")
        for i in reversed(range(len(labels))):
            at, text = labels[i]
            at, half = self.place(at, text), self.char * len(text) / 2
            if at + half + self.char <= edge:
                kept.add(i)
                edge = at - half
        return kept


# 640 × 340, as the first charts were drawn: at a 688 px column the text renders at 14 px.
WIDE = Geometry("wide", 640, 64, 16, 40, 48, 252, 7.0, 64, False)
# A phone's column (358 px at a 390 px viewport): drawn at the size it is shown.
NARROW = Geometry("narrow", 358, 68, 14, 40, 48, 220, 7.6, 8, True)
LAYOUTS = (WIDE, NARROW)

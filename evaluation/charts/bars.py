"""Horizontal bar charts for inline SVG.

`bar_chart` places one bar per row on a fixed scale ([0, 1] for percent agreement, [-1, 1]
for kappa), with an optional interval whisker, and returns plain numbers for the template
(`templates/evaluation/charts/_bar_chart.html`). A missing value (an undefined kappa) gets no bar
and the text "n/a", never a bar of length 0 that would read as "no agreement".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

ROW_HEIGHT = 22
LABEL_WIDTH = 220
PLOT_WIDTH = 360
VALUE_WIDTH = 90


@dataclass(frozen=True)
class BarInput:
    label: str
    value: float | None
    href: str = ""
    low: float | None = None
    high: float | None = None
    note: str = ""  # shown after the value, e.g. "n = 40"


@dataclass(frozen=True)
class Bar:
    label: str
    text: str
    href: str
    y: float  # top of the row
    x: float  # left of the bar
    width: float
    whisker: tuple[float, float] | None  # x of the interval's ends
    negative: bool


@dataclass(frozen=True)
class BarChart:
    bars: tuple[Bar, ...]
    width: int
    height: int
    plot_left: int
    plot_width: int
    zero_x: float
    ticks: tuple[tuple[float, str], ...]  # (x, label)
    title: str


def bar_chart(
    rows: Sequence[BarInput],
    *,
    title: str,
    low: float = 0.0,
    high: float = 1.0,
    percent: bool = False,
) -> BarChart:
    if not low < high:
        raise ValueError("low must be below high")

    def x_of(value: float) -> float:
        clipped = min(max(value, low), high)
        return LABEL_WIDTH + (clipped - low) / (high - low) * PLOT_WIDTH

    zero = x_of(0.0 if low <= 0.0 <= high else low)
    bars = []
    for n, row in enumerate(rows):
        y = 20 + n * ROW_HEIGHT
        if row.value is None:
            x, width, text = zero, 0.0, "n/a"
        else:
            end = x_of(row.value)
            x, width = min(zero, end), abs(end - zero)
            text = f"{row.value:.0%}" if percent else f"{row.value:.3f}"
        whisker = None
        if row.low is not None and row.high is not None:
            whisker = (x_of(row.low), x_of(row.high))
        bars.append(
            Bar(
                label=row.label,
                text=f"{text} {row.note}".strip(),
                href=row.href,
                y=y,
                x=round(x, 2),
                width=round(width, 2),
                whisker=(round(whisker[0], 2), round(whisker[1], 2)) if whisker else None,
                negative=row.value is not None and row.value < 0,
            )
        )
    steps = 4
    ticks = tuple(
        (
            round(x_of(low + (high - low) * i / steps), 2),
            f"{low + (high - low) * i / steps:.0%}"
            if percent
            else f"{low + (high - low) * i / steps:g}",
        )
        for i in range(steps + 1)
    )
    return BarChart(
        bars=tuple(bars),
        width=LABEL_WIDTH + PLOT_WIDTH + VALUE_WIDTH + 60,
        height=20 + len(rows) * ROW_HEIGHT + 24,
        plot_left=LABEL_WIDTH,
        plot_width=PLOT_WIDTH,
        zero_x=round(zero, 2),
        ticks=ticks,
        title=title,
    )


def shade(count: int, largest: int) -> float:
    """Opacity in [0.08, 0.85] for a confusion-matrix cell, by its share of the largest
    cell; 0 for an empty cell, so that empty and small stay distinguishable."""
    if count <= 0 or largest <= 0:
        return 0.0
    return round(0.08 + 0.77 * count / largest, 3)

"""A column chart for inline SVG: one column per period (a minute of reward traffic), on a
scale from 0 to the largest value rounded up to a tick. Returns plain numbers for
`templates/evaluation/charts/_column_chart.svg`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

LEFT, TOP, BOTTOM_MARGIN = 48, 12, 28
PLOT_WIDTH, PLOT_HEIGHT = 600, 140
TICKS = 4


@dataclass(frozen=True)
class Column:
    x: float
    y: float
    width: float
    height: float
    title: str


@dataclass(frozen=True)
class ColumnChart:
    title: str
    width: int
    height: int
    left: int
    right: int
    bottom: int
    columns: tuple[Column, ...]
    ticks: tuple[tuple[float, str], ...]  # (y, label)
    labels: tuple[tuple[float, str], ...]  # (x, label) under some columns
    empty: bool


def nice_top(largest: float) -> float:
    """The scale's top: 1, 2 or 5 times a power of ten, at least `largest` (1 for none)."""
    if largest <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(largest))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= largest)


def column_chart(
    values: Sequence[tuple[str, float]], *, title: str, unit: str, label_every: int = 10
) -> ColumnChart:
    top = nice_top(max((v for _, v in values), default=0))
    step = PLOT_WIDTH / max(len(values), 1)
    bottom = TOP + PLOT_HEIGHT
    columns = []
    for i, (label, value) in enumerate(values):
        height = round(PLOT_HEIGHT * value / top, 2)
        columns.append(
            Column(
                x=round(LEFT + i * step + 1, 2), y=round(bottom - height, 2),
                width=round(max(step - 2, 1), 2), height=height,
                title=f"{label}: {value:g} {unit}",
            )
        )  # fmt: skip
    ticks = tuple(
        (round(bottom - PLOT_HEIGHT * k / TICKS, 2), f"{top * k / TICKS:g}")
        for k in range(TICKS + 1)
    )
    labels = tuple(
        (round(LEFT + (i + 0.5) * step, 2), label)
        for i, (label, _) in enumerate(values)
        if i % label_every == 0 or i == len(values) - 1
    )
    return ColumnChart(
        title=title, width=LEFT + PLOT_WIDTH + 8, height=bottom + BOTTOM_MARGIN, left=LEFT,
        right=LEFT + PLOT_WIDTH, bottom=bottom, columns=tuple(columns), ticks=ticks,
        labels=labels, empty=not any(v for _, v in values),
    )  # fmt: skip

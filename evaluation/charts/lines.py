"""A line chart for inline SVG: one line per series over ordered categories (complexity
buckets) on a [0, 1] scale, each point with its interval whisker and a link, and an
optional horizontal reference line with its band (the experts' overlap, the human line).

Returns plain numbers for `templates/evaluation/charts/_line_chart.svg`. A missing value breaks
the line (no point is drawn for a bucket with no data), never a point at 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

LEFT = 48
TOP = 16
PLOT_WIDTH = 560
PLOT_HEIGHT = 260
BOTTOM = 40
LEGEND_WIDTH = 200
# Distinguishable without colour too: each series also gets its own dash pattern.
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b")
DASHES = ("", "6 3", "2 3", "8 3 2 3", "1 4", "10 4", "4 4")


@dataclass(frozen=True)
class PointInput:
    value: float | None
    low: float | None = None
    high: float | None = None
    href: str = ""
    note: str = ""


@dataclass(frozen=True)
class SeriesInput:
    label: str
    points: Sequence[PointInput]  # one per category


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    whisker: tuple[float, float] | None  # y of the interval's ends
    href: str
    title: str


@dataclass(frozen=True)
class Series:
    label: str
    colour: str
    dash: str
    segments: tuple[str, ...]  # SVG polyline "x,y x,y" runs between missing values
    points: tuple[Point, ...]
    legend_y: float


@dataclass(frozen=True)
class Reference:
    label: str
    y: float
    band: tuple[float, float] | None  # top and bottom y of the interval


@dataclass(frozen=True)
class LineChart:
    title: str
    width: int
    height: int
    left: int
    top: int
    right: int
    bottom: int
    categories: tuple[tuple[float, str, str, str], ...]  # (x, label, href, its link's title)
    ticks: tuple[tuple[float, str], ...]  # (y, label)
    series: tuple[Series, ...]
    reference: Reference | None


def day_label(when: datetime | None, otherwise: str) -> str:
    """A category named by its day (runs a night apart: month and day), else `otherwise`."""
    return when.strftime("%m-%d") if when else otherwise


def line_chart(
    categories: Sequence[tuple[str, str]],  # (label, href)
    series: Sequence[SeriesInput],
    *,
    title: str,
    reference: tuple[str, float, float | None, float | None] | None = None,
    category_title: str = "Drill into {} criteria",
) -> LineChart:
    if any(len(s.points) != len(categories) for s in series):
        raise ValueError("every series needs one point per category")
    step = PLOT_WIDTH / max(len(categories), 1)

    def x_of(i: int) -> float:
        return round(LEFT + step * (i + 0.5), 2)

    def y_of(value: float) -> float:
        clipped = min(max(value, 0.0), 1.0)
        return round(TOP + (1 - clipped) * PLOT_HEIGHT, 2)

    drawn = []
    for n, s in enumerate(series):
        segments: list[list[str]] = [[]]
        points = []
        for i, p in enumerate(s.points):
            if p.value is None:
                if segments[-1]:
                    segments.append([])
                continue
            x, y = x_of(i), y_of(p.value)
            segments[-1].append(f"{x},{y}")
            whisker = None
            if p.low is not None and p.high is not None:
                whisker = (y_of(p.high), y_of(p.low))
            interval = f" [{p.low:.0%}, {p.high:.0%}]" if whisker else ""
            note = f", {p.note}" if p.note else ""
            points.append(
                Point(
                    x,
                    y,
                    whisker,
                    p.href,
                    f"{s.label}, {categories[i][0]}: {p.value:.0%}{interval}{note}",
                )
            )
        drawn.append(
            Series(
                s.label,
                PALETTE[n % len(PALETTE)],
                DASHES[n % len(DASHES)],
                tuple(" ".join(seg) for seg in segments if seg),
                tuple(points),
                TOP + 14 + n * 18,
            )
        )
    ref = None
    if reference is not None and reference[1] is not None:
        label, value, low, high = reference
        band = (y_of(high), y_of(low)) if low is not None and high is not None else None
        ref = Reference(label, y_of(value), band)
    return LineChart(
        title=title,
        width=LEFT + PLOT_WIDTH + LEGEND_WIDTH,
        height=TOP + PLOT_HEIGHT + BOTTOM,
        left=LEFT,
        top=TOP,
        right=LEFT + PLOT_WIDTH,
        bottom=TOP + PLOT_HEIGHT,
        categories=tuple(
            (x_of(i), label, href, category_title.format(label))
            for i, (label, href) in enumerate(categories)
        ),
        ticks=tuple((y_of(v / 4), f"{v / 4:.0%}") for v in range(5)),
        series=tuple(drawn),
        reference=ref,
    )

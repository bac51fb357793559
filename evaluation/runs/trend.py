"""Each system's score across a panel's runs, oldest first: the trend a team running a
schedule every night reads to see where a system moved (issue 44).

Read from kept per-run figures only, never from verdicts: each run's latest kept scores
summary (the run page's, evaluation.runs.scores) or, for an archived run, the scores frozen
in its archive. Three queries however many runs and verdicts: the runs, their summaries,
their archives. A run with neither (its scores not counted yet: right after seeding, a
migration or a new figure version) is a gap in the lines, its count queued under the one
rule for cold figures (evaluation.kept.cold) and by the warm-up; the page says how many
are being counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.urls import reverse

from evaluation.charts.lines import LineChart, PointInput, SeriesInput, day_label, line_chart
from evaluation.kept import cold
from evaluation.kept import figures as kept_figures
from evaluation.runs import scores
from evaluation.runs.models import Run

RUNS = 120  # the newest runs drawn: four months of nightly runs


@dataclass(frozen=True)
class SystemPoint:
    system: str
    value: float | None  # the mean value under the dataset's scoring strategy
    low: float | None  # its interval over queries, where the figures carry one
    high: float | None
    pass_rate: float | None
    answers: int
    undecided: int


@dataclass(frozen=True)
class RunPoint:
    run_id: int
    name: str
    finished_at: datetime | None
    archived: bool
    systems: dict[str, SystemPoint] | None  # None: not counted yet

    @property
    def label(self) -> str:
        return day_label(self.finished_at, f"run {self.run_id}")


@dataclass(frozen=True)
class Trend:
    points: list[RunPoint]
    systems: list[str] = field(default_factory=list)

    def rows(self) -> list[tuple[RunPoint, list[SystemPoint | None]]]:
        """Each run with its systems' points in `systems` order (None: no figure): the
        chart's table."""
        return [(p, [(p.systems or {}).get(name) for name in self.systems]) for p in self.points]

    @property
    def counting(self) -> int:
        """Runs whose scores are being counted (a gap in the lines until they are)."""
        return sum(p.systems is None for p in self.points)


def runs_of(run: Run) -> list[Run]:
    """The ended runs of `run`'s dataset and panel that score systems, up to `run` and
    at most RUNS of them, oldest first."""
    found = (
        Run.objects.filter(
            dataset_id=run.dataset_id, panel_id=run.panel_id, status__in=Run.FINISHED
        )
        .exclude(kind=Run.Kind.CROSS_EVALUATION)
        .not_checks()
        .filter(created_at__lte=run.created_at)
        .order_by("-created_at", "-id")
        .only("pk", "name", "dataset_id", "finished_at", "archived_at")
    )
    return list(reversed(found[:RUNS]))


def score_trend(run: Run, *, at_least: int = 1) -> Trend:
    """The trend up to `run`, from kept figures; a run not counted yet is queued. Empty
    when there are fewer than `at_least` runs (a page draws no trend of one run, and then
    reads nothing more)."""
    runs = runs_of(run)
    if len(runs) < at_least:
        return Trend([])
    kept = scores.systems_of_runs(run.dataset_id, runs)
    points = []
    for r in runs:
        cells = kept.get(r.pk)
        if cells is None and r.archived_at is None and not kept_figures.writes_refused():
            cells = _queue(r)
        systems = _systems(cells) if cells is not None else None
        points.append(RunPoint(r.pk, r.name, r.finished_at, r.archived_at is not None, systems))
    names = sorted({name for p in points if p.systems for name in p.systems})
    return Trend(points, names)


def _systems(cells: dict) -> dict[str, SystemPoint]:
    intervals = {s["system_id"]: s["mean"] for s in cells["intervals"]}
    out = {}
    for s in cells["systems"]:
        interval = intervals.get(s["system_id"]) or {}
        out[s["system"]] = SystemPoint(
            s["system"], s["value"], interval.get("low"), interval.get("high"),
            s["pass_rate"], s["answers"], s.get("undecided", 0),
        )  # fmt: skip
    return out


def _queue(run: Run) -> dict | None:
    """A run without kept scores: its count queued once for every reader (the rule for
    cold figures), its point a gap until then. Never counted here, not even where the rule
    says to count in the request (the test suite's settings): a trend may find a hundred
    runs cold. With an eager Celery (a demo without a worker) the count has run inside
    the call, and its figures are read."""
    if cold.fill(run.dataset_id, run.pk, scores.REFRESH_GROUP) is cold.Cold.KEPT:
        return scores.systems_of_runs(run.dataset_id, [run]).get(run.pk)
    return None


def chart(trend: Trend) -> LineChart:
    """One line per system: its value at each run with its interval; a point links to the
    run's page."""
    links = [reverse("run-detail", args=[p.run_id]) for p in trend.points]
    categories = [(p.label, href) for p, href in zip(trend.points, links, strict=True)]
    lines = []
    for name in trend.systems:
        points = []
        for p, href in zip(trend.points, links, strict=True):
            s = (p.systems or {}).get(name)
            if s is None or s.value is None:
                points.append(PointInput(None))
                continue
            note = f"{p.name}: {s.answers} answers" + (", archived" if p.archived else "")
            points.append(PointInput(s.value, s.low, s.high, href, note))
        lines.append(SeriesInput(name, points))
    return line_chart(
        categories, lines, title="Each system's score across the panel's runs",
        category_title="Run finished on {}",
    )  # fmt: skip

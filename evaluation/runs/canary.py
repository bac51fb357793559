"""A judge canary as the run page shows it (docs/judging.md#judge-canary): the canary that
checked a run's judges, what it found (kept in its `canary_result` by
evaluation.agreement.canary when it ended), and each judge's agreement with the human
labels over the dataset's canaries of the same panel, as a chart."""

from __future__ import annotations

from django.db.models import QuerySet
from django.urls import reverse

from evaluation.charts.lines import LineChart, PointInput, SeriesInput, day_label, line_chart
from evaluation.runs.models import Run

# Canaries in the chart of agreement over time, the newest last.
SERIES = 30


def canary_of(run: Run) -> Run | None:
    """The canary that checked this run's judges (its latest), if any."""
    return run.canaries.order_by("-pk").first()


def measured(dataset_id: int, panel_id: int) -> QuerySet[Run]:
    """The dataset's canaries of the panel that were measured, the newest first: the one
    series the chart, the latest canary and the previous canary are read from."""
    return (
        Run.objects.filter(dataset=dataset_id, panel=panel_id, canary_for__isnull=False)
        .exclude(canary_result={})
        .order_by("-pk")
    )


def latest(dataset_id: int, panel_id: int) -> Run | None:
    """The dataset's latest measured canary of the panel: where its chart ends."""
    return measured(dataset_id, panel_id).first()


def series(canary: Run) -> list[Run]:
    """The canaries of the dataset and panel up to this one that were measured, oldest
    first."""
    found = measured(canary.dataset_id, canary.panel_id).filter(pk__lte=canary.pk)
    fields = ("pk", "name", "finished_at", "canary_result", "canary_for")
    return list(reversed(found.only(*fields)[:SERIES]))


def chart(canaries: list[Run]) -> LineChart:
    """One line per judge: its agreement with the human labels at each canary, with its
    interval; each point links to the run the canary checked."""
    judges = sorted({name for run in canaries for name in run.canary_result.get("judges", {})})
    links = [reverse("run-detail", args=[run.canary_for_id]) for run in canaries]
    categories = [
        (day_label(run.finished_at, str(run.pk)), href)
        for run, href in zip(canaries, links, strict=True)
    ]
    lines = []
    for name in judges:
        points = []
        for run, href in zip(canaries, links, strict=True):
            figure = run.canary_result.get("judges", {}).get(name)
            if figure is None or figure["rate"] is None:
                points.append(PointInput(None))
                continue
            changed = name in run.canary_result.get("changed", ())
            note = f"{figure['agree']} of {figure['n']}" + (", judge changed?" if changed else "")
            points.append(PointInput(figure["rate"], figure["low"], figure["high"], href, note))
        lines.append(SeriesInput(name, points))
    return line_chart(
        categories, lines, title="Each judge's agreement with the human labels",
        category_title="The run the canary of {} checked",
    )  # fmt: skip


def shown(run: Run) -> dict | None:
    """The run page's canary section: for a run a canary checked, or for a canary itself,
    its result, the judges it named as changed, and the chart; None without a canary."""
    checked_by = run if run.canary_for_id else canary_of(run)
    if checked_by is None:
        return None
    result = checked_by.canary_result
    if not result:
        return {"canary": checked_by, "measured": False}
    before = result.get("previous_judges") or {}
    judges = [
        {"name": name, "now": figure, "before": before.get(name),
         "changed": name in result["changed"]}
        for name, figure in sorted(result["judges"].items())
    ]  # fmt: skip
    canaries = series(checked_by)
    return {
        "canary": checked_by, "measured": True, "changed": result["changed"], "judges": judges,
        "panel": result["panel"], "previous": result.get("previous"),
        "chart": chart(canaries) if len(canaries) > 1 else None,
    }  # fmt: skip

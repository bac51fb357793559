"""Analytics pages of a dataset: system scores with intervals, human-calibrated (PPI++)
scores, the complexity curve with the human line (SVG, table, CSV), run comparison and,
for the dataset's admins, criterion health. Reviewers and admins only, like runs."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET

from annotation import roles
from annotation.models import Criterion, Dataset, Query
from annotation.permissions import access_dataset, dataset_permissions
from evaluation.analytics import figures
from evaluation.analytics import selectors as sel
from evaluation.charts.lines import PointInput, SeriesInput, line_chart
from evaluation.data.formats import csv_safe
from evaluation.metrics import analytics as am
from evaluation.models import Run
from evaluation.permissions import can_see_runs

PANEL_OPTIONS = 10  # the best candidate panels shown


def access_analytics(request: HttpRequest, pk: int, *, admin: bool = False) -> Dataset:
    """The dataset for its reviewers and admins (404 for non-members, 403 for experts);
    `admin`: for its admins only."""
    dataset = access_dataset(request.user, pk)
    perms = dataset_permissions(request.user, dataset)
    if not can_see_runs(perms):
        raise PermissionDenied("Analytics are for the dataset's reviewers and admins.")
    if admin and roles.CHANGE not in perms:
        raise PermissionDenied("Criterion health is for the dataset's admins.")
    return dataset


def _int(request: HttpRequest, name: str) -> int | None:
    value = request.GET.get(name, "")
    if not value:
        return None
    if not value.isdigit():
        raise Http404(f"Bad {name}.")
    return int(value)


def _edges(request: HttpRequest) -> tuple[int, ...]:
    text = request.GET.get("edges", "")
    if not text:
        return am.DEFAULT_EDGES
    try:
        return am.parse_edges(text)
    except ValueError as error:
        raise Http404(str(error)) from None


@dataclass
class Selection:
    dataset: Dataset
    runs: list[Run]
    run: Run | None
    edges: tuple[int, ...]


def select_run(request: HttpRequest, dataset: Dataset, param: str = "run") -> Selection:
    runs = sel.analysable_runs(dataset)
    try:
        run = sel.choose_run(dataset, _int(request, param), runs)
    except Run.DoesNotExist:
        raise Http404("No such run in this dataset.") from None
    return Selection(dataset, runs, run, _edges(request))


def _query(selection: Selection, **extra: str) -> str:
    params = {}
    if selection.run:
        params["run"] = str(selection.run.pk)
    if selection.edges != am.DEFAULT_EDGES:
        params["edges"] = ",".join(map(str, selection.edges))
    params.update({k: v for k, v in extra.items() if v})
    return "?" + urlencode(params) if params else ""


def curve_chart(selection: Selection, curve: sel.ComplexityCurve):
    base = reverse("dataset-analytics", args=[selection.dataset.pk])
    categories = [
        (b.label, f"{base}{_query(selection, bucket=b.key)}#bucket") for b in curve.buckets
    ]
    series = [
        SeriesInput(
            line.system,
            [
                PointInput(
                    p.estimate.mean,
                    p.estimate.low,
                    p.estimate.high,
                    href=categories[i][1],
                    note=f"n={p.estimate.n}",
                )
                for i, p in enumerate(line.points)
            ],
        )
        for line in curve.lines
    ]
    human = curve.human
    return line_chart(
        categories,
        series,
        title="Score by number of criteria per checklist, with the experts' overlap",
        reference=("Human (experts' overlap)", human.mean, human.low, human.high)
        if human.mean is not None
        else None,
    )


def _score_tables(cells: list[sel.Cell]) -> list[dict]:
    titles = {
        "category": "By query category",
        "bucket": "By complexity (criteria per checklist)",
        "kind": "By criterion kind",
        "source": "By source type",
    }
    tables = []
    for group in sel.GROUPS:
        rows: dict[str, dict] = {}
        systems: list[str] = []
        for c in cells:
            if c.group != group:
                continue
            if c.system not in systems:
                systems.append(c.system)
            rows.setdefault(c.value, {})[c.system] = c.estimate
        tables.append(
            {
                "group": group,
                "title": titles[group],
                "systems": systems,
                "rows": [
                    {"value": value, "cells": [by.get(s) for s in systems]}
                    for value, by in rows.items()
                ],
            }
        )
    return tables


def _judge_tables(rows: list[sel.JudgeAgreement]) -> list[dict]:
    """One table per group (every item, kind, source type): a row per value, a column per
    rater (the run's panel first, then each judge)."""
    raters: list[str] = []
    for a in rows:
        if a.rater not in raters:
            raters.append(a.rater)
    titles = {"all": "Every labelled item", "kind": "By criterion kind", "source": "By source type"}
    tables = []
    for group, title in titles.items():
        by_value: dict[str, dict[str, object]] = {}
        for a in rows:
            if a.group == group:
                by_value.setdefault(a.value, {})[a.rater] = a.agreement
        if by_value:
            tables.append({
                "title": title,
                "raters": raters,
                "rows": [{"value": v or "all", "cells": [by.get(r) for r in raters]}
                         for v, by in by_value.items()],
            })  # fmt: skip
    return tables


@require_GET
@login_required
def dataset_analytics(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = access_analytics(request, pk)
    selection = select_run(request, dataset)
    context: dict = {
        "dataset": dataset,
        "selection": selection,
        "run": selection.run,
        "is_admin": roles.CHANGE in dataset_permissions(request.user, dataset),
    }
    if selection.run is not None:
        page = figures.page(selection.run, selection.edges)
        bucket = request.GET.get("bucket", "")
        context.update(
            data=page,
            overall=[c for c in page.cells if c.group == "all"],
            tables=_score_tables(page.cells),
            calibrated=page.calibrated,
            panels=page.panels[:PANEL_OPTIONS],
            judge_tables=_judge_tables(page.judges),
            saturated=list(
                Query.objects.filter(pk__in=page.saturated, dataset=dataset).values_list(
                    "pk", "text"
                )
            ),
            curve=page.curve,
            chart=curve_chart(selection, page.curve),
            csv_href=reverse("analytics-complexity-csv", args=[dataset.pk]) + _query(selection),
            svg_href=reverse("analytics-complexity-svg", args=[dataset.pk]) + _query(selection),
            png_name=f"complexity-dataset-{dataset.pk}-run-{selection.run.pk}.png",
            bucket=next((b for b in page.curve.buckets if b.key == bucket), None),
            bucket_rows=figures.bucket_rows(selection.run, bucket, selection.edges)
            if bucket
            else [],
            edges=",".join(map(str, selection.edges)),
        )
    return render(request, "evaluation/analytics.html", context)


def _curve_for(request: HttpRequest, pk: int) -> tuple[Selection, sel.ComplexityCurve]:
    dataset = access_analytics(request, pk)
    selection = select_run(request, dataset)
    if selection.run is None:
        raise Http404("No run to analyse yet.")
    return selection, figures.page(selection.run, selection.edges).curve


@require_GET
@login_required
def complexity_csv(request: HttpRequest, pk: int) -> HttpResponse:
    """The complexity curve's numbers: one row per system and bucket, then the human line."""
    selection, curve = _curve_for(request, pk)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    name = f"complexity-dataset-{selection.dataset.pk}-run-{selection.run.pk}.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    writer = csv.writer(response)
    writer.writerow(["series", "bucket", "mean", "low", "high", "answers", "queries"])
    for line in curve.lines:
        for p in line.points:
            e = p.estimate
            writer.writerow(
                [csv_safe(line.system), p.bucket.label, e.mean, e.low, e.high, e.n, e.clusters]
            )
    h = curve.human
    writer.writerow(["human (experts' overlap)", "all", h.mean, h.low, h.high, h.n_pairs,
                     h.n_queries])  # fmt: skip
    return response


@require_GET
@login_required
def complexity_svg(request: HttpRequest, pk: int) -> HttpResponse:
    selection, curve = _curve_for(request, pk)
    svg = render_to_string(
        "evaluation/_line_chart.svg", {"chart": curve_chart(selection, curve), "standalone": True}
    )
    response = HttpResponse(svg, content_type="image/svg+xml; charset=utf-8")
    name = f"complexity-dataset-{selection.dataset.pk}-run-{selection.run.pk}.svg"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@require_GET
@login_required
def compare_runs(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = access_analytics(request, pk)
    runs = sel.analysable_runs(dataset)
    context: dict = {"dataset": dataset, "runs": runs}
    a_id, b_id = _int(request, "a"), _int(request, "b")
    if a_id is None and b_id is None and len(runs) >= 2:
        a_id, b_id = runs[1].pk, runs[0].pk  # the previous run against the latest
    if a_id is not None and b_id is not None:
        try:
            run_a = sel.choose_run(dataset, a_id, runs)
            run_b = sel.choose_run(dataset, b_id, runs)
        except Run.DoesNotExist:
            raise Http404("No such run in this dataset.") from None
        system_a, system_b = _int(request, "system_a"), _int(request, "system_b")
        comparison, systems_a, systems_b = figures.comparison(
            run_a, run_b, system_a=system_a, system_b=system_b
        )
        regressions, gains = comparison.regressions(), comparison.gains()
        texts = dict(
            Query.objects.filter(
                pk__in=[d.query_id for d in (*regressions, *gains)], dataset=dataset
            ).values_list("pk", "text")
        )
        context.update(
            run_a=run_a,
            run_b=run_b,
            systems_a=systems_a,
            systems_b=systems_b,
            system_a=system_a,
            system_b=system_b,
            comparison=comparison,
            regressions=[(d, texts.get(d.query_id, "")) for d in regressions],
            gains=[(d, texts.get(d.query_id, "")) for d in gains],
        )
    return render(request, "evaluation/analytics_compare.html", context)


@require_GET
@login_required
def criterion_health(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = access_analytics(request, pk, admin=True)
    selection = select_run(request, dataset)
    context: dict = {"dataset": dataset, "selection": selection, "run": selection.run}
    if selection.run is not None:
        flag = request.GET.get("flag", "")
        total, shown = figures.health_page(selection.run, flag)
        criteria = Criterion.objects.select_related(
            "checklist__query", "checklist__author"
        ).in_bulk([h.criterion for h in shown])
        context.update(
            rows=[(h, criteria.get(h.criterion)) for h in shown],
            total=total,
            flag=flag,
            flags=figures.HEALTH_FLAGS,
        )
    return render(request, "evaluation/analytics_criteria.html", context)

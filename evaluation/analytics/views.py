"""Analytics pages of a dataset: system scores with intervals, human-calibrated (PPI++)
scores, the complexity curve with the human line (SVG, table, CSV), run comparison and,
for the dataset's admins, criterion health. Reviewers and admins only, like runs."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET

from annotation import roles
from annotation.access import dataset_permissions
from annotation.models import Criterion, Dataset, Query
from evaluation.analytics import figures, summaries
from evaluation.analytics.access import access_analytics
from evaluation.charts.lines import PointInput, SeriesInput, line_chart
from evaluation.metrics import analytics as am
from evaluation.pairwise import figures as pairwise_figures
from evaluation.runs import canary, scores, stability, trend
from evaluation.runs.models import Run
from evaluation.runs.selectors import choose_run, runs_of_system_answers
from evaluation.tables.formats import csv_safe

PANEL_OPTIONS = 10  # the best candidate panels shown


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
    runs = runs_of_system_answers(dataset)
    try:
        run = choose_run(dataset, _int(request, param), runs, or_newest=True)
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


def curve_chart(selection: Selection, curve: summaries.ComplexityCurve):
    base = reverse("dataset-analytics", args=[selection.dataset.pk])
    if curve.dimension:  # a point per value: its row in the dimension's table
        anchor = f"#scores-{_table_key(summaries.DIMENSION + curve.dimension)}"
        by = _query(selection, complexity=curve.dimension)
        categories = [(b.label, f"{base}{by}{anchor}") for b in curve.buckets]
    else:
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
        title=f"Score by {curve.dimension}, with the experts' overlap"
        if curve.dimension
        else "Score by number of criteria per checklist, with the experts' overlap",
        reference=("Human (experts' overlap)", human.mean, human.low, human.high)
        if human.mean is not None
        else None,
    )


def _score_tables(cells: list[summaries.Cell], bucket_labels: dict[str, str]) -> list[dict]:
    """One table per grouping; a bucket's row reads as the chart's axis does ("<10", not
    its key "lt10", which the API and CSV keep)."""
    titles = {
        "category": "By query category",
        "bucket": "By complexity (criteria per checklist)",
        "kind": "By criterion kind",
        "source": "By source type",
        "group": "By top-level group of the checklists",
    }
    labels = {"group": "Group"}
    present = {c.group for c in cells}
    dimensions = sorted(g for g in present if g.startswith(summaries.DIMENSION))
    for group in dimensions:
        name = group[len(summaries.DIMENSION) :]
        titles[group], labels[group] = f"By query dimension “{name}”", name
    tables = []
    for group in (*summaries.GROUPS, *dimensions):
        if group == "group" and group not in present:
            continue  # no checklist of the run has groups
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
                "key": _table_key(group),
                "label": labels.get(group, group.capitalize()),
                "title": titles[group],
                "systems": systems,
                "rows": [
                    {
                        "value": bucket_labels.get(value, value) if group == "bucket" else value,
                        "cells": [by.get(s) for s in systems],
                    }
                    for value, by in rows.items()
                ],
            }
        )
    return tables


def _table_key(group: str) -> str:
    """A table's id suffix: the group, a dimension's as "dimension-<name>"."""
    return group.replace(":", "-").replace(" ", "_")


def complexity_curve(
    request: HttpRequest, page: figures.Page
) -> tuple[summaries.ComplexityCurve, list[str]]:
    """The curve the page asks for (`complexity`: a numeric query dimension, else the
    criteria count) and the numeric dimensions it may ask for."""
    numeric = summaries.numeric_dimensions(page.cells)
    by = request.GET.get("complexity", "")
    if by in numeric:
        return summaries.dimension_curve(page.cells, by, page.curve.human), numeric
    return page.curve, numeric


def _judge_tables(rows: list[summaries.JudgeAgreement]) -> list[dict]:
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


def _freshness_url(dataset: Dataset, part: str, **params: object) -> str:
    query = {"part": part, **{k: str(v) for k, v in params.items() if v not in (None, "")}}
    return reverse("analytics-freshness", args=[dataset.pk]) + "?" + urlencode(query)


def _updating(request: HttpRequest, served: figures.Served, poll_url: str) -> dict:
    """The context of the "updating" banner (evaluation/analytics/_figures_updating.html)."""
    return {"served": served, "poll_url": poll_url, "reload_url": request.get_full_path()}


@require_GET
@login_required
def dataset_analytics(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = access_analytics(request.user, pk)
    selection = select_run(request, dataset)
    context: dict = {
        "dataset": dataset,
        "selection": selection,
        "run": selection.run,
        "is_admin": roles.CHANGE in dataset_permissions(request.user, dataset),
    }
    if selection.run is not None:
        # Never computed here: the figures of the current state, else those of an earlier
        # one (or a placeholder) while a refresh runs in Celery (figures.served).
        served = figures.served_page(selection.run, selection.edges)
        edges = ",".join(map(str, selection.edges))
        context.update(
            _updating(
                request,
                served,
                _freshness_url(
                    dataset,
                    "page",
                    run=selection.run.pk,
                    edges="" if selection.edges == am.DEFAULT_EDGES else edges,
                ),
            ),
            edges=edges,
        )
        if served.figures is not None:
            context.update(_page_context(request, selection, served.figures))
            if served.updating and served.figures.curve.human.mean is None:
                # Figures from before a cross-evaluation ended: the human line is coming
                # with the refresh, not missing (one query, while updating only).
                context["human_coming"] = Run.objects.filter(
                    dataset=dataset, kind=Run.Kind.CROSS_EVALUATION, status__in=Run.FINISHED
                ).exists()
    if selection.run is not None:
        # Each system across the panel's runs, from their kept figures (one query, and two
        # more when there are two runs to draw).
        found = trend.score_trend(selection.run, at_least=2)
        if found.points:
            context["trend"] = found
            context["trend_chart"] = trend.chart(found)
        # The judge canary of the run's panel over time (docs/judging.md#judge-canary): kept
        # figures of the canary runs, two queries.
        newest = canary.latest(dataset.pk, selection.run.panel_id)
        if newest is not None:
            context["canary_newest"] = newest
            context["canary_chart"] = canary.chart(canary.series(newest))
    if context["is_admin"]:
        # Pairwise preference (issue 42) for the admins: reviewers may still be voting blind.
        found = pairwise_figures.dataset_figures(dataset, selection.run)
        if found.votes or found.judge_pairs:
            context["pairwise"] = found
            context["pairwise_chart"] = pairwise_figures.win_rate_chart(found)
    return render(request, "evaluation/analytics/analytics.html", context)


def _page_context(request: HttpRequest, selection: Selection, page: figures.Page) -> dict:
    dataset, bucket = selection.dataset, request.GET.get("bucket", "")
    overall = figures.overall_undecided(selection.run, page.cells)
    curve, numeric = complexity_curve(request, page)
    by = {"complexity": curve.dimension} if curve.dimension else {}
    return {
        "complexity_by": curve.dimension,
        "numeric_dimensions": numeric,
        "data": page,
        # (cell, undecided criteria): how much of each score is missing, from the run's
        # kept scores (None until its end or its run page has counted them).
        "overall": overall,
        "undecided_known": all(n is not None for _, n in overall),  # kept, or no system
        "tables": _score_tables(page.cells, {b.key: b.label for b in page.curve.buckets}),
        "calibrated": page.calibrated,
        "panels": page.panels[:PANEL_OPTIONS],
        "judge_tables": _judge_tables(page.judges),
        "saturated": list(
            Query.objects.filter(pk__in=page.saturated, dataset=dataset).values_list("pk", "text")
        ),
        "curve": curve,
        "chart": curve_chart(selection, curve),
        "csv_href": reverse("analytics-complexity-csv", args=[dataset.pk])
        + _query(selection, **by),
        "svg_href": reverse("analytics-complexity-svg", args=[dataset.pk])
        + _query(selection, **by),
        "png_name": f"complexity-dataset-{dataset.pk}-run-{selection.run.pk}.png",
        "bucket": next((b for b in page.curve.buckets if b.key == bucket), None),
        "bucket_rows": figures.served_bucket_rows(selection.run, bucket, selection.edges).figures
        if bucket
        else [],
    }


def _curve_for(
    request: HttpRequest, pk: int
) -> tuple[Selection, summaries.ComplexityCurve | None, figures.Served]:
    dataset = access_analytics(request.user, pk)
    selection = select_run(request, dataset)
    if selection.run is None:
        raise Http404("No run to analyse yet.")
    served = figures.served_page(selection.run, selection.edges)
    if served.figures is None:
        return selection, None, served
    return selection, complexity_curve(request, served.figures)[0], served


def _state_headers(response: HttpResponse, served: figures.Served) -> HttpResponse:
    """Which state a download reflects: when its figures were computed, for which review
    revision, and whether fresher ones are being computed (docs/api.md)."""
    facts = served.facts()
    response["X-Figures-Updating"] = "true" if facts["updating"] else "false"
    if facts["computed_at"]:
        response["X-Figures-Computed-At"] = facts["computed_at"]
    if facts["review_revision"] is not None:
        response["X-Figures-Review-Revision"] = str(facts["review_revision"])
    if served.failure:
        response["X-Figures-Refresh-Failed-At"] = served.failure.failed_at.isoformat()
    return response


def _not_yet(served: figures.Served) -> HttpResponse:
    text = (
        "Computing the figures of this run failed; the next try starts at "
        f"{served.failure.retry_at.isoformat()}.\n"
        if served.failure
        else "The figures of this run are being computed; try again in a few seconds.\n"
    )
    response = HttpResponse(text, status=503, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(served.retry_after())
    return _state_headers(response, served)


@require_GET
@login_required
def complexity_csv(request: HttpRequest, pk: int) -> HttpResponse:
    """The complexity curve's numbers: one row per system and bucket, then the human line."""
    selection, curve, served = _curve_for(request, pk)
    if curve is None:
        return _not_yet(served)
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
    return _state_headers(response, served)


@require_GET
@login_required
def complexity_svg(request: HttpRequest, pk: int) -> HttpResponse:
    selection, curve, served = _curve_for(request, pk)
    if curve is None:
        return _not_yet(served)
    svg = render_to_string(
        "evaluation/charts/_line_chart.svg",
        {"chart": curve_chart(selection, curve), "standalone": True},
    )
    response = HttpResponse(svg, content_type="image/svg+xml; charset=utf-8")
    name = f"complexity-dataset-{selection.dataset.pk}-run-{selection.run.pk}.svg"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return _state_headers(response, served)


def _compared_runs(request: HttpRequest, dataset: Dataset, runs: list[Run]):
    a_id, b_id = _int(request, "a"), _int(request, "b")
    if a_id is None and b_id is None and len(runs) >= 2:
        a_id, b_id = runs[1].pk, runs[0].pk  # the previous run against the latest
    if a_id is None or b_id is None:
        return None
    try:
        return choose_run(dataset, a_id, runs), choose_run(dataset, b_id, runs)
    except Run.DoesNotExist:
        raise Http404("No such run in this dataset.") from None


@require_GET
@login_required
def compare_runs(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = access_analytics(request.user, pk)
    runs = runs_of_system_answers(dataset)
    context: dict = {"dataset": dataset, "runs": runs}
    pair = _compared_runs(request, dataset, runs)
    if pair is not None:
        run_a, run_b = pair
        system_a, system_b = _int(request, "system_a"), _int(request, "system_b")
        served = figures.served_comparison(run_a, run_b, system_a=system_a, system_b=system_b)
        poll = _freshness_url(dataset, "compare", a=run_a.pk, b=run_b.pk)
        context.update(
            _updating(request, served, poll),
            run_a=run_a,
            run_b=run_b,
            system_a=system_a,
            system_b=system_b,
        )
        if served.figures is not None:
            comparison, systems_a, systems_b = served.figures
            regressions, gains = comparison.regressions(), comparison.gains()
            texts = dict(
                Query.objects.filter(
                    pk__in=[d.query_id for d in (*regressions, *gains)], dataset=dataset
                ).values_list("pk", "text")
            )
            context.update(
                systems_a=systems_a,
                systems_b=systems_b,
                comparison=comparison,
                undecided_a=scores.kept_undecided_of(
                    run_a, comparison.system_a if system_a else None
                ),
                undecided_b=scores.kept_undecided_of(
                    run_b, comparison.system_b if system_b else None
                ),
                regressions=[(d, texts.get(d.query_id, "")) for d in regressions],
                gains=[(d, texts.get(d.query_id, "")) for d in gains],
            )
    return render(request, "evaluation/analytics/analytics_compare.html", context)


@require_GET
@login_required
def criterion_health(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = access_analytics(request.user, pk, admin=True)
    selection = select_run(request, dataset)
    context: dict = {"dataset": dataset, "selection": selection, "run": selection.run}
    if selection.run is not None:
        flag = request.GET.get("flag", "")
        served = figures.served_health_page(selection.run, flag)
        context.update(
            _updating(request, served, _freshness_url(dataset, "health", run=selection.run.pk)),
            flag=flag,
            flags=figures.HEALTH_FLAGS,
            rows=None,
        )
        # The judge's flip rates beside the other flags, when a judge of the run graded
        # items several times: read from the kept figure, never counted here.
        judged = stability.served(selection.run)
        flips = stability.by_criterion(judged.figures)
        context.update(
            stability=stability.stability_shown(judged.figures), stability_served=judged,
            repeated=bool(flips),
        )  # fmt: skip
        if served.computed_at is not None:
            total, shown = served.figures
            criteria = Criterion.objects.select_related(
                "checklist__query", "checklist__author"
            ).in_bulk([h.criterion for h in shown])
            context.update(
                rows=[(h, criteria.get(h.criterion), flips.get(h.criterion)) for h in shown],
                total=total,
            )
    return render(request, "evaluation/analytics/analytics_criteria.html", context)


@require_GET
@login_required
def analytics_freshness(request: HttpRequest, pk: int) -> HttpResponse:
    """The analytics pages' poll (htmx, every 2 s while their figures are updating): the
    "updating" banner again while the fresh figures are not kept (queueing a refresh if
    none is queued), else a "ready" note that makes htmx reload the page (HX-Refresh).
    Same access as the page it serves (criterion health: admins)."""
    part = request.GET.get("part", "page")
    if part not in ("page", "health", "compare"):
        raise Http404("Unknown part.")
    dataset = access_analytics(request.user, pk, admin=part == "health")
    params = {k: v for k, v in request.GET.items() if k != "part"}
    page_name = {"page": "dataset-analytics", "health": "analytics-criteria",
                 "compare": "analytics-compare"}[part]  # fmt: skip
    reload_url = reverse(page_name, args=[dataset.pk]) + ("?" + urlencode(params) if params else "")
    if part == "compare":
        pair = _compared_runs(request, dataset, runs_of_system_answers(dataset))
        if pair is None:
            raise Http404("Two runs are needed to compare.")
        fresh = figures.comparison_is_fresh(*pair)
    else:
        selection = select_run(request, dataset)
        if selection.run is None:
            raise Http404("No run to analyse yet.")
        kept_part = "health-top" if part == "health" else "page"
        fresh = figures.is_fresh(selection.run, kept_part, selection.edges)
    if not fresh and request.headers.get("HX-Request") == "true":
        # No content: htmx leaves the banner as it is (its time and revision are the
        # page's) and asks again in 2 s.
        return HttpResponse(status=204)
    # Opened without htmx (a link, a crawler): a note either way, never an empty answer.
    context = {"reload_url": reload_url, "fresh": fresh}
    response = render(request, "evaluation/analytics/_figures_fresh.html", context)
    if fresh:
        response["HX-Refresh"] = "true"
    return response

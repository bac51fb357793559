"""The agreement page of a dataset (judge vs human, human vs human, per reviewer) and the
drill-down list of the items behind any figure. For the dataset's reviewers and admins."""

from __future__ import annotations

from dataclasses import replace

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse
from django.utils.text import capfirst
from django.views.decorators.http import require_GET
from markupsafe import Markup

from annotation.access import access_dataset, dataset_permissions
from annotation.models import Criterion, Dataset
from config.ids import is_id
from config.jinja import macros
from evaluation.agreement.selectors import (
    AgreementReport,
    Figure,
    FigureKey,
    agreement_report,
    drill_down,
    overlap_hint,
)
from evaluation.charts.bars import BarInput, bar_chart, shade
from evaluation.metrics.agreement import PASS_FAIL, kappa_undefined_reason
from evaluation.runs import stability
from evaluation.runs.access import can_see_runs
from evaluation.runs.models import Run

# Items per drill-down page; pages follow each other by keyset (?after=answer:criterion), so
# a page costs the same wherever it is and nothing counts every item behind a figure.
DRILL_DOWN_PAGE = 100
TABLES_TEMPLATE = "evaluation/agreement/tables.jinja"


def _after(value: str) -> tuple[int, int] | None:
    first, _, second = value.partition(":")
    if not (first.isdigit() and second.isdigit()):
        return None
    return int(first), int(second)


def review_url(answer_id: int, criterion_id: int) -> str:
    """The review page of an item; empty while the review page is not installed."""
    try:
        return reverse("answer-review", args=[answer_id]) + f"?criterion={criterion_id}"
    except NoReverseMatch:
        return ""


def _access(request: HttpRequest, pk: int) -> Dataset:
    dataset = access_dataset(request.user, pk)
    if not can_see_runs(dataset_permissions(request.user, dataset)):
        raise PermissionDenied("Agreement is for the dataset's reviewers and admins.")
    return dataset


def _run_id(request: HttpRequest) -> int | None:
    value = request.GET.get("run", "")
    if not value:
        return None
    if not is_id(value):
        raise Http404("No such run.")
    return int(value)


def items_href(base: str, run: Run | None, key: FigureKey, cell: str = "") -> str:
    """The link from a figure (one cell of its matrix) to its items. `base` is the dataset's
    items URL, reversed once per page: a page links a few hundred numbers."""
    extra = {"run": str(run.pk)} if run else {}
    if cell:
        extra["cell"] = cell
    return f"{base}?{key.params(**extra)}"


def _raters(key: FigureKey) -> tuple[str, str]:
    """The two raters a figure compares, as the page names them."""
    if key.figure == "pair":
        return key.value, key.other
    if key.figure == "rater-judges":
        return key.value, "the judges"
    if key.figure == "rater-others":
        return key.value, "the other raters"
    if key.figure == "judge":
        return "the judge", "the humans"
    return "the panel", "the humans"


def _row(base: str, run: Run | None, figure: Figure) -> dict:
    agreement, kappa = figure.agreement, figure.agreement.kappa
    matrix = agreement.confusion
    largest = max((c for row in matrix.counts for c in row), default=0)
    # Shown as "n/a" with the reason when one side never varied: kappa is then 0 (0–0) or
    # 0/0 and says nothing. The figure itself (API, export, oracle tests) is unchanged.
    undefined = kappa_undefined_reason(matrix, *_raters(figure.key))
    return {
        "label": figure.label,
        "key": figure.key,
        "n": agreement.n,
        "agree": agreement.agree,
        "percent": agreement.percent,
        "kappa": None if undefined else kappa.kappa,
        "kappa_reason": undefined or "",
        "low": None if undefined else kappa.low,
        "high": None if undefined else kappa.high,
        "href": items_href(base, run, figure.key),
        "matrix": [
            {
                "label": first,
                "cells": [
                    {
                        "count": matrix.counts[i][j],
                        "opacity": shade(matrix.counts[i][j], largest),
                        "agree": i == j,
                        "href": items_href(base, run, figure.key, f"{first},{second}"),
                    }
                    for j, second in enumerate(matrix.categories)
                ],
            }
            for i, first in enumerate(matrix.categories)
        ],
    }


def _charts(base: str, run: Run | None, title: str, figures: list[Figure]) -> dict:
    def shown(f: Figure) -> bool:  # kappa is drawn only where the table shows a number
        return kappa_undefined_reason(f.agreement.confusion, *_raters(f.key)) is None

    def rows(kappa: bool) -> list[BarInput]:
        return [
            BarInput(
                label=f.label,
                value=(f.agreement.kappa.kappa if shown(f) else None)
                if kappa
                else f.agreement.percent,
                href=items_href(base, run, f.key),
                low=f.agreement.kappa.low if kappa and shown(f) else None,
                high=f.agreement.kappa.high if kappa and shown(f) else None,
                note=f"n={f.agreement.n}",
            )
            for f in figures
        ]

    return {
        "title": title,
        "percent": bar_chart(rows(False), title=f"Agreement {title}", percent=True),
        "kappa": bar_chart(rows(True), title=f"Cohen's kappa {title}", low=-1.0, high=1.0),
    }


def _named(report: AgreementReport) -> list[Figure]:
    """The panel's figure and each judge's, named so that a panel and a judge of the same
    name ("Offline checks" with its only judge "Offline checks") read apart."""
    return [
        replace(report.overall, label=f"{report.overall.label} (panel)"),
        *(replace(f, label=f"{f.label} (judge)") for f in report.judges),
    ]


def page_context(report: AgreementReport) -> dict:
    dataset, run = report.dataset, report.run
    base = reverse("agreement-items", args=[dataset.pk])
    judge_figures = _named(report)
    fragments = macros(TABLES_TEMPLATE)  # the tables and matrices (decision 0006)

    def table(figures: list[Figure]) -> list[dict]:
        return [_row(base, run, f) for f in figures]

    def group(title: str, figures: list[Figure], charted: bool) -> tuple:
        shown = fragments.table(table(figures), title, capfirst(title))
        return title, shown, _charts(base, run, f"per {title}", figures) if charted else None

    judges, pairs = table(judge_figures), table(report.pairs)
    return {
        "dataset": dataset,
        "report": report,
        "run": run,
        "judges_table": fragments.table(judges, "Agreement per judge", "Judge"),
        "judges_matrices": _matrices(fragments, judges, lambda row: ("judge", "human")),
        # Each table with its charts, drawn beside it (None: a table without charts).
        "groups": [
            group("criterion kind", report.kinds, True),
            group("source type", report.sources, True),
            group("query category", report.categories, True),
            group("system", report.systems, False),
        ],
        "charts": [_charts(base, run, "per judge (panel first)", judge_figures)],
        "pairs": pairs,
        "pairs_table": fragments.table(pairs, "Agreement per pair of raters", "Raters"),
        "pairs_matrices": _matrices(
            fragments, pairs, lambda row: (row["key"].value, row["key"].other)
        ),
        "pairs_chart": _charts(base, run, "per pair of raters", report.pairs),
        "reviewers": [
            {
                "stats": r,
                "judges": _row(base, run, r.with_judges),
                "others": _row(base, run, r.with_others),
            }
            for r in report.reviewers
        ],
    }


def _matrices(fragments, rows: list[dict], raters) -> Markup:
    """Each row's confusion matrix, `raters(row)` naming its two sides. In Jinja2: a page
    prints a few hundred linked numbers, about 60% of its CPU in Django's engine."""
    return Markup("").join(fragments.confusion(row, *raters(row), PASS_FAIL) for row in rows)


@require_GET
@login_required
def dataset_agreement(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = _access(request, pk)
    try:
        report = agreement_report(dataset, _run_id(request))
    except Run.DoesNotExist:
        raise Http404("No such run in this dataset.") from None
    context = page_context(report)
    if report.run is not None:
        # Test–retest beside judge–human: the run's judge stability, as kept (never counted
        # in the request: evaluation.runs.stability.served).
        judged = stability.served(report.run)
        context.update(stability=stability.stability_shown(judged.figures), stability_served=judged)
    counts = report.counts
    if (
        report.run
        and counts.without_votes
        and counts.without_votes == counts.items - counts.human_ties
    ):
        # Labels, and a run that graded none of their answers: say so, and where to look,
        # rather than a page of empty judge figures (two queries, on this page only).
        context["hint"] = overlap_hint(dataset, report.run, report.runs)
    return render(request, "evaluation/agreement/agreement.html", context)


@require_GET
@login_required
def agreement_items(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = _access(request, pk)
    try:
        key = FigureKey(
            request.GET.get("figure", ""),
            request.GET.get("value", ""),
            request.GET.get("other", ""),
        )
    except ValueError:
        raise Http404("No such figure.") from None
    cell = None
    if request.GET.get("cell"):
        parts = tuple(request.GET["cell"].split(","))
        if len(parts) != 2 or not set(parts) <= set(PASS_FAIL):
            raise Http404("No such cell.")
        cell = parts
    after = _after(request.GET.get("after", ""))
    try:
        page = drill_down(dataset, _run_id(request), key, cell, after=after, limit=DRILL_DOWN_PAGE)
    except Run.DoesNotExist:
        raise Http404("No such run in this dataset.") from None
    run = page.run
    texts = dict(
        Criterion.objects.filter(
            pk__in={item.criterion_id for item, _, _ in page.pairs}
        ).values_list("pk", "text")
    )
    rows = [
        {
            "item": item,
            "first": first,
            "second": second,
            "agree": first == second,
            "criterion": texts.get(item.criterion_id, ""),
            "judges": sorted(item.judges.items()),
            "labels": sorted(item.labels.items()),
            "review": review_url(item.answer_id, item.criterion_id),
        }
        for item, first, second in page.pairs
    ]
    first = {"run": str(run.pk)} if run else {}
    if cell:
        first["cell"] = request.GET["cell"]
    next_url = ""
    if page.next_after is not None:
        params = request.GET.copy()
        params["after"] = "{}:{}".format(*page.next_after)
        next_url = f"?{params.urlencode()}"
    context = {
        "dataset": dataset,
        "run": run,
        "key": key,
        "cell": cell,
        "rows": rows,
        "after": after,
        "next_url": next_url,
        "first_url": f"?{key.params(**first)}",
        "back": reverse("dataset-agreement", args=[dataset.pk]) + (f"?run={run.pk}" if run else ""),
        "compared": _compared(key),
    }
    return render(request, "evaluation/agreement/agreement_items.html", context)


def _compared(key: FigureKey) -> tuple[str, str]:
    """What the two labels of each row are, in words."""
    if key.figure == "pair":
        return key.value, key.other
    if key.figure == "rater-judges":
        return "panel", key.value
    if key.figure == "rater-others":
        return "other raters (majority)", key.value
    if key.figure == "judge":
        return key.value, "human"
    return "panel", "human"

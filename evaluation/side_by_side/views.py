"""The side-by-side page of a dataset: two systems' (or two runs') answers query by query,
each criterion's outcome on both sides with the differing ones first. The filter form
redraws the results region by htmx (the whole page without it)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from evaluation.runs.selectors import runs_of_system_answers
from evaluation.side_by_side import pairing
from evaluation.side_by_side.access import access_side_by_side
from evaluation.side_by_side.compare import side_by_side
from evaluation.side_by_side.forms import SideBySideForm


@require_GET
@login_required
@vary_on_headers("HX-Request")
def dataset_side_by_side(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = access_side_by_side(request.user, pk)
    runs = runs_of_system_answers(dataset)
    form = SideBySideForm(request.GET, dataset=dataset, runs=runs)
    context: dict = {
        "dataset": dataset, "runs": runs, "form": form, "comparison": None,
        "computing": None, "labels": pairing.DIFFERENCE_LABELS,
    }  # fmt: skip
    status = 200
    if not runs:
        pass  # nothing to compare yet: the page says so
    elif form.is_valid() and form.computing is not None:
        context["computing"] = form.computing  # the page says so; nothing to compare yet
    elif form.is_valid():
        comparison = side_by_side(dataset, form, request.GET.get("page"))
        context["comparison"] = comparison
        context["systems_a"], context["systems_b"] = form.systems
    else:
        status = 400  # the form names the field
    template = "evaluation/side_by_side/side_by_side.html"
    if request.headers.get("HX-Request") == "true":
        template += "#results"
    return render(request, template, context, status=status)

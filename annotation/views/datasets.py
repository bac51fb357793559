"""Dataset pages: the list, one dataset's queries and annotation progress (its members page is
accounts.views.members)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from annotation import access, hooks, roles, scoring, selectors, services
from annotation.forms import DatasetForm, QueryFilterForm
from config.site_permissions import site_permission_required


@require_GET
@login_required
def home(request: HttpRequest) -> HttpResponse:
    datasets = selectors.dataset_list(request.user)
    return render(request, "annotation/dataset_list.html", {"datasets": datasets})


@require_http_methods(["GET", "POST"])
@login_required
@site_permission_required("annotation.add_dataset", action="Creating a dataset")
def dataset_create(request: HttpRequest) -> HttpResponse:
    form = DatasetForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        dataset = services.dataset_create(**form.cleaned_data, by=request.user)
        messages.success(request, f"Dataset “{dataset.name}” created. You are its admin.")
        return redirect("dataset-detail", pk=dataset.pk)
    return render(request, "annotation/dataset_form.html", {"form": form})


@require_http_methods(["GET", "POST"])
@login_required
def dataset_edit(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = access.access_dataset(request.user, pk, roles.CHANGE)
    form = DatasetForm(request.POST or None, instance=dataset)
    if request.method == "POST" and form.is_valid():
        try:
            services.dataset_update(dataset=dataset, **form.cleaned_data)
        except scoring.ScoringRefused as exc:  # a strategy that cannot score some criterion
            form.add_error(None, exc)
        else:
            messages.success(request, "Settings saved.")
            return redirect("dataset-detail", pk=dataset.pk)
    return render(request, "annotation/dataset_form.html", {"form": form, "dataset": dataset})


@require_GET
@login_required
def dataset_detail(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = access.access_dataset(request.user, pk)
    form = QueryFilterForm(request.GET or None)
    filters = selectors.QueryFilters()
    if form.is_valid():
        data = form.cleaned_data
        filters = selectors.QueryFilters(
            search=data["q"],
            category=data["category"].pk if data["category"] else None,
            status=data["status"],
            submitted=data["submitted"],
            assigned_to_me=data["mine"],
        )
    queries = selectors.query_list(dataset, request.user, filters)
    page = Paginator(queries, 50).get_page(request.GET.get("page"))
    perms = access.dataset_permissions(request.user, dataset)
    can_see_runs = roles.CHANGE in perms or roles.REVIEW in perms
    context = {
        "dataset": dataset,
        "form": form,
        "page": page,
        # An empty list says "no query matches" under filters, what to do next without.
        "filtered": filters != selectors.QueryFilters(),
        "can_manage": roles.CHANGE in perms,
        "can_create_queries": access.can_create_queries(dataset, perms),
        "can_see_runs": can_see_runs,
        # Saturated queries come from run verdicts, which experts (annotating blind) and
        # outsiders do not see.
        "saturated": hooks.saturated_among(dataset, [q.pk for q in page])
        if can_see_runs
        else set(),
    }
    template = "annotation/dataset_detail.html"
    if request.htmx and request.htmx.target == "query-table":
        template += "#query-table"
    return render(request, template, context)


@require_GET
@login_required
def dataset_progress(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = access.access_dataset(request.user, pk, roles.CHANGE)
    queries = selectors.query_list(dataset, request.user, selectors.QueryFilters())
    context = {
        "dataset": dataset,
        "queries": queries,
        "experts": selectors.progress_by_expert(dataset),
    }
    return render(request, "annotation/dataset_progress.html", context)

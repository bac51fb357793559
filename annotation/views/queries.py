"""The query page: the query, the checklists this user may read, assigning experts and
changing the query's external id."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation import access, query_ids, roles, selectors, services
from annotation.forms import AssignExpertsForm, ExternalIdForm, QueryForm
from annotation.headings import in_reading_order
from annotation.models import Checklist, Query


@require_GET
@login_required
def query_detail(request: HttpRequest, pk: int) -> HttpResponse:
    query = access.access_query(request.user, pk)
    return render(request, "annotation/query_detail.html", _detail_context(request, query))


@require_POST
@login_required
def query_external_id(request: HttpRequest, pk: int) -> HttpResponse:
    """Change the query's external id (admins and its author, while nothing outside may hold
    it): the page again with the reason beside the field when refused."""
    query = access.access_query_for_edit(request.user, pk)
    form = ExternalIdForm(request.POST)
    if form.is_valid():
        try:
            services.query_set_external_id(
                query=query, external_id=form.cleaned_data["external_id"]
            )
        except ValidationError as exc:
            for message in exc.message_dict.get("external_id", exc.messages):
                form.add_error("external_id", message)
        else:
            messages.success(request, f"External id saved: {query.external_id}.")
            return redirect("query-detail", pk=query.pk)
    query.refresh_from_db(fields=["external_id"])
    context = _detail_context(request, query, external_id_form=form)
    return render(request, "annotation/query_detail.html", context, status=400)


def _detail_context(
    request: HttpRequest, query: Query, *, external_id_form: ExternalIdForm | None = None
) -> dict:
    perms = access.dataset_permissions(request.user, query.dataset)
    checklists = list(selectors.checklists_visible(query, request.user))
    # Each checklist's criteria as it reads, with its groups' headings (one query for all).
    ordered = in_reading_order(
        [c for checklist in checklists for c in checklist.criteria.all()],
        criterion_of=lambda criterion: criterion,
        first_level=4,  # under the checklist's h3
    )
    for checklist in checklists:
        checklist.reading = [c for c in ordered if c.checklist_id == checklist.pk]
    mine = next((c for c in checklists if c.author_id == request.user.pk), None)
    can_manage = roles.CHANGE in perms
    assign_form = None
    if can_manage:
        experts = selectors.dataset_experts(query.dataset)
        assign_form = AssignExpertsForm(
            experts=experts, initial={"experts": list(query.assigned_experts.all())}
        )
    can_edit = access.can_edit_query(request.user, query, perms)
    if can_edit and not query.external_id_fixed and external_id_form is None:
        external_id_form = ExternalIdForm(initial={"external_id": query.external_id})
    return {
        "query": query,
        "dataset": query.dataset,
        "checklists": checklists,
        "mine": mine,
        "can_start": mine is None and access.can_start_checklist(request.user, query, perms),
        "can_manage": can_manage,
        "can_edit": can_edit,
        "external_id_form": external_id_form if can_edit else None,
        "external_id_fixed_reason": query_ids.fixed_reason(query.external_id_fixed_by),
        "assign_form": assign_form,
        "hidden_count": (
            query.checklists.exclude(pk__in=[c.pk for c in checklists]).count()
            if roles.ANNOTATE in perms
            else None
        ),
    }


@require_POST
@login_required
def query_assign(request: HttpRequest, pk: int) -> HttpResponse:
    query = access.access_query(request.user, pk, roles.CHANGE)
    form = AssignExpertsForm(request.POST, experts=selectors.dataset_experts(query.dataset))
    if form.is_valid():
        services.query_assign_experts(query=query, experts=list(form.cleaned_data["experts"]))
        messages.success(request, "Assignments saved.")
    else:
        messages.error(request, f"Assignments not saved: {form.errors.as_text()}")
    return redirect("query-detail", pk=query.pk)


@require_POST
@login_required
def checklist_start(request: HttpRequest, pk: int) -> HttpResponse:
    query = access.access_query(request.user, pk, roles.ANNOTATE)
    perms = access.dataset_permissions(request.user, query.dataset)
    existing = Checklist.objects.filter(query=query, author=request.user).first()
    if existing is None and not access.can_start_checklist(request.user, query, perms):
        raise PermissionDenied("Other experts are assigned to this query.")
    checklist = existing or services.checklist_start(query=query, by=request.user)
    return redirect("checklist-detail", pk=checklist.pk)


@require_http_methods(["GET", "POST"])
@login_required
def query_create(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = access.access_dataset_for_new_query(request.user, pk)
    form = QueryForm(request.POST or None, dataset=dataset)
    if request.method == "POST" and form.is_valid():
        query = services.query_create(dataset=dataset, by=request.user, **form.cleaned_data)
        messages.success(request, "Query added.")
        return redirect("query-detail", pk=query.pk)
    context = {"dataset": dataset, "form": form, "query": None}
    return render(request, "annotation/query_form.html", context)


@require_http_methods(["GET", "POST"])
@login_required
def query_edit(request: HttpRequest, pk: int) -> HttpResponse:
    query = access.access_query_for_edit(request.user, pk)
    initial = {"tags": ", ".join(t.name for t in query.tags.all())}
    form = QueryForm(request.POST or None, instance=query, initial=initial)
    if request.method == "POST" and form.is_valid():
        fields = {name: form.cleaned_data[name] for name in form.Meta.fields}
        fields["dimensions"] = form.cleaned_data["dimensions"]
        services.query_update(query=query, tags=form.cleaned_data["tags"], **fields)
        messages.success(request, "Query saved.")
        return redirect("query-detail", pk=query.pk)
    context = {"dataset": query.dataset, "form": form, "query": query}
    return render(request, "annotation/query_form.html", context)

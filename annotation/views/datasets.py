"""Dataset pages: the list, one dataset's queries, members and annotation progress."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required, permission_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from guardian.shortcuts import get_users_with_perms

from annotation import permissions, roles, selectors, services
from annotation.forms import DatasetForm, MemberForm, QueryFilterForm
from evaluation.analytics.figures import saturated_among


@require_GET
@login_required
def home(request: HttpRequest) -> HttpResponse:
    datasets = selectors.dataset_list(request.user)
    return render(request, "annotation/dataset_list.html", {"datasets": datasets})


@require_http_methods(["GET", "POST"])
@login_required
@permission_required("annotation.add_dataset", raise_exception=True)
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
    dataset = permissions.access_dataset(request.user, pk, roles.CHANGE)
    form = DatasetForm(request.POST or None, instance=dataset)
    if request.method == "POST" and form.is_valid():
        services.dataset_update(dataset=dataset, **form.cleaned_data)
        messages.success(request, "Settings saved.")
        return redirect("dataset-detail", pk=dataset.pk)
    return render(request, "annotation/dataset_form.html", {"form": form, "dataset": dataset})


@require_GET
@login_required
def dataset_detail(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = permissions.access_dataset(request.user, pk)
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
    perms = permissions.dataset_permissions(request.user, dataset)
    can_see_runs = roles.CHANGE in perms or roles.REVIEW in perms
    context = {
        "dataset": dataset,
        "form": form,
        "page": page,
        "can_manage": roles.CHANGE in perms,
        "can_create_queries": permissions.can_create_queries(dataset, perms),
        "can_see_runs": can_see_runs,
        # Saturated queries come from run verdicts, which experts (annotating blind) and
        # outsiders do not see.
        "saturated": saturated_among(dataset, [q.pk for q in page]) if can_see_runs else set(),
    }
    template = "annotation/dataset_detail.html"
    if request.htmx and request.htmx.target == "query-table":
        template += "#query-table"
    return render(request, template, context)


@require_GET
@login_required
def dataset_progress(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = permissions.access_dataset(request.user, pk, roles.CHANGE)
    queries = selectors.query_list(dataset, request.user, selectors.QueryFilters())
    context = {
        "dataset": dataset,
        "queries": queries,
        "experts": selectors.progress_by_expert(dataset),
    }
    return render(request, "annotation/dataset_progress.html", context)


@require_http_methods(["GET", "POST"])
@login_required
def dataset_members(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = permissions.access_dataset(request.user, pk, roles.CHANGE)
    form = MemberForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.cleaned_data["username"]
        role = roles.DatasetRole(form.cleaned_data["role"])
        if user.pk == request.user.pk and role != roles.DatasetRole.ADMIN:
            # An admin demoting themselves could leave the dataset with nobody to run it.
            messages.error(request, "You cannot change your own role; ask another admin.")
            return redirect("dataset-members", pk=dataset.pk)
        services.dataset_set_role(dataset=dataset, user=user, role=role)
        messages.success(request, f"{user.username} is now {role.value} of this dataset.")
        return redirect("dataset-members", pk=dataset.pk)
    members = [
        (user, roles.role_for_permissions(set(perms)))
        for user, perms in get_users_with_perms(
            dataset, attach_perms=True, with_superusers=False, with_group_users=False
        ).items()
    ]
    members.sort(key=lambda pair: pair[0].username)
    context = {"dataset": dataset, "form": form, "members": members}
    return render(request, "annotation/dataset_members.html", context)


@require_POST
@login_required
def dataset_member_remove(request: HttpRequest, pk: int, user_id: int) -> HttpResponse:
    dataset = permissions.access_dataset(request.user, pk, roles.CHANGE)
    user = get_user_model().objects.filter(pk=user_id).first()
    if user is None or user.pk == request.user.pk:
        messages.error(request, "You cannot remove yourself or an unknown user.")
    else:
        services.dataset_set_role(dataset=dataset, user=user, role=None)
        messages.success(request, f"{user.username} no longer has access to this dataset.")
    return redirect("dataset-members", pk=dataset.pk)

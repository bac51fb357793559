"""Guideline pages: the list of guidelines and their versions, a new guideline started from
a preset, and editing one. Site-wide objects: the Admin group's model permissions
(annotation.roles.GROUP_MODEL_PERMISSIONS) decide who may, as for judges and panels.
Validation and versioning live in annotation.services.guidelines, shared with the API."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from annotation import services
from annotation.forms import GuidelineForm
from annotation.models import Guideline
from annotation.validation import PRESETS, GuidelineConfig
from config.site_permissions import site_permission_required


@require_GET
@login_required
@site_permission_required("annotation.change_guideline", action="Managing guidelines")
def guideline_list(request: HttpRequest) -> HttpResponse:
    guidelines = Guideline.objects.annotate(
        dataset_count=Count("datasets", distinct=True),
        checklist_count=Count("checklists", distinct=True),
    ).order_by("name", "-version")
    context = {
        "guidelines": guidelines,
        "presets": list(PRESETS),
        "can_add": request.user.has_perm("annotation.add_guideline"),
    }
    return render(request, "annotation/guideline_list.html", context)


@require_http_methods(["GET", "POST"])
@login_required
@site_permission_required("annotation.add_guideline", action="Adding a guideline")
def guideline_create(request: HttpRequest) -> HttpResponse:
    preset = request.POST.get("preset") or request.GET.get("preset") or "finance"
    if preset not in PRESETS:
        preset = "finance"
    form = GuidelineForm(request.POST or None, config=PRESETS[preset])
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                guideline = services.guideline_create(
                    name=form.cleaned_data["name"],
                    description=form.cleaned_data["description"],
                    config=form.config(),
                    preset=preset,
                )
            except services.GuidelineInvalid as exc:
                form.add_service_errors(exc.errors)
            else:
                messages.success(request, f"Guideline “{guideline}” created.")
                return redirect("guideline-edit", pk=guideline.pk)
        status = 400
    context = {"form": form, "guideline": None, "preset": preset, "presets": list(PRESETS)}
    return render(request, "annotation/guideline_form.html", context, status=status)


@require_http_methods(["GET", "POST"])
@login_required
@site_permission_required("annotation.change_guideline", action="Changing a guideline")
def guideline_edit(request: HttpRequest, pk: int) -> HttpResponse:
    guideline = get_object_or_404(Guideline, pk=pk)
    config = GuidelineConfig.from_dict(guideline.config)
    form = GuidelineForm(
        request.POST or None,
        config=config,
        editing=True,
        initial={**GuidelineForm.initial_from(config), "name": guideline.name,
                 "description": guideline.description},
    )  # fmt: skip
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                saved = services.guideline_update(
                    guideline=guideline,
                    description=form.cleaned_data["description"],
                    config=form.config(),
                )
            except services.GuidelineInvalid as exc:
                form.add_service_errors(exc.errors)
            else:
                messages.success(request, _saved_message(guideline, saved))
                return redirect("guideline-edit", pk=saved.guideline.pk)
        status = 400
    checklists, datasets = services.guideline_in_use(guideline)
    newest = Guideline.objects.filter(name=guideline.name).order_by("-version").first()
    context = {
        "form": form,
        "guideline": guideline,
        "checklist_count": checklists,
        "datasets": datasets,
        "newest": newest,
        "versions": Guideline.objects.filter(name=guideline.name).order_by("-version"),
    }
    return render(request, "annotation/guideline_form.html", context, status=status)


def _saved_message(edited: Guideline, saved: services.GuidelineSaved) -> str:
    if not saved.new_version:
        return f"Guideline “{saved.guideline}” saved."
    moved = (
        f" Datasets now using it: {', '.join(saved.datasets_moved)}."
        if saved.datasets_moved
        else ""
    )
    return (
        f"Saved as {saved.guideline}: checklists were submitted under {edited}, which stays "
        f"as it was.{moved} Submitted checklists keep their status; their editors show "
        "findings under the new rules, which apply when a checklist is submitted again."
    )

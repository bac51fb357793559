"""The page of one criterion's deterministic check and evidence, linked from the checklist
editor (its author edits it, as the criterion itself)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from annotation.access import access_criterion
from evaluation.checks.forms import CriterionCheckForm
from evaluation.checks.models import CriterionCheck
from evaluation.checks.services import criterion_check_save


@require_http_methods(["GET", "POST"])
@login_required
def criterion_check(request: HttpRequest, pk: int) -> HttpResponse:
    criterion = access_criterion(request.user, pk, edit=True)
    instance = CriterionCheck.objects.filter(criterion=criterion).first()
    data = request.POST if request.method == "POST" else None  # an empty post is a form too
    form = CriterionCheckForm(data, instance=instance)
    back = reverse("checklist-detail", args=[criterion.checklist_id]) + f"#criterion-{pk}"
    if request.method == "POST" and form.is_valid():
        criterion_check_save(criterion=criterion, **form.cleaned_data)
        messages.success(request, "Check saved.")
        return redirect(back)
    status = 400 if request.method == "POST" else 200
    context = {"criterion": criterion, "form": form, "back": back}
    return render(request, "evaluation/checks/check_form.html", context, status=status)

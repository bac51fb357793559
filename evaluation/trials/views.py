"""The trial comparison page and "Use this judge". The comparison follows the run's dataset
permissions like every run page (evaluation.runs.access.access_run); adopting a judge
changes a site-wide panel, so it is also for those who may change panels (the Admin group,
as on the panel pages, evaluation/judges/views.py)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from evaluation.runs.access import access_run
from evaluation.runs.models import Run
from evaluation.trials.selectors import comparison
from evaluation.trials.services import TrialError, use_trial_judges

CHANGE_PANEL = "evaluation.change_panel"


@require_GET
@login_required
def run_comparison(request: HttpRequest, pk: int) -> HttpResponse:
    run = access_run(request.user, pk)
    found = comparison(run)
    can_adopt = (
        request.user.has_perm(CHANGE_PANEL)
        and run.scope == Run.Scope.LABELLED
        and run.baseline is not None
        and run.status in Run.FINISHED
    )
    context = {"run": run, "dataset": run.dataset, "c": found, "can_adopt": can_adopt}
    return render(request, "evaluation/trials/comparison.html", context)


@require_POST
@login_required
def run_use_judge(request: HttpRequest, pk: int) -> HttpResponse:
    run = access_run(request.user, pk)
    if not request.user.has_perm(CHANGE_PANEL):
        raise PermissionDenied("Only those who manage panels adopt a judge.")
    try:
        panel = use_trial_judges(trial=run)
    except TrialError as exc:
        messages.error(request, str(exc))
        return redirect("run-comparison", pk=run.pk)
    messages.success(
        request,
        f"Panel “{panel.name}” now uses the trial's judges for its new runs; earlier runs "
        "keep the panel they ran with.",
    )
    return redirect("panel-edit", pk=panel.pk)

"""Scheduled runs of a dataset, set by its admins in pages (they were only in the site
administration): the schedules with their last and next run, a warning when no scheduler
(celery beat) has been seen to send them, a form to add or change one."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from annotation import roles
from annotation.access import access_dataset
from config.form_pages import form_status, posted
from evaluation.alerts.models import AlertEvent
from evaluation.runs.models import Run
from evaluation.runs.preflight import RunRefused
from evaluation.schedules import beat
from evaluation.schedules import services as schedules
from evaluation.schedules.forms import ScheduleForm
from evaluation.schedules.models import RunSchedule

RECENT_RUNS = 20


@require_http_methods(["GET", "POST"])
@login_required
def dataset_schedules(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = access_dataset(request.user, pk, roles.CHANGE)
    form = ScheduleForm(posted(request), dataset=dataset)
    if request.method == "POST" and _saved(form, dataset, request, None):
        messages.success(request, "Schedule added.")
        return redirect("dataset-schedules", pk=dataset.pk)
    found = RunSchedule.objects.filter(dataset=dataset).select_related(
        "task__crontab", "system", "panel"
    )
    # Each with what its latest canary graded and was estimated to call (one query each).
    rows = [
        (s, schedules.describe(s.task), schedules.next_run(s.task),
         schedules.last_canary(s) if s.canary else None)
        for s in found.order_by("name")
    ]  # fmt: skip
    names = [s.name for s, *_ in rows]
    runs = (
        Run.objects.filter(dataset=dataset, name__in=names).order_by("-created_at", "-pk")
        if names
        else Run.objects.none()
    )[:RECENT_RUNS]
    # The alerts these runs raised, each with its evidence (evaluation/alerts/evidence.py).
    alert_events = (
        AlertEvent.objects.filter(run__in=[run.pk for run in runs])
        .select_related("run", "system")
        .order_by("-created_at", "-pk")
        if runs
        else []
    )
    # Only enabled schedules need beat: paused ones warn of nothing.
    waiting = any(schedule.task.enabled for schedule, *_ in rows)
    context = {
        "dataset": dataset, "form": form, "rows": rows, "runs": runs, "now": timezone.now(),
        "alert_events": alert_events,
        # The scheduler's state from its heartbeat, the source /healthz reads: always said
        # (seen when, or never); a warning only while enabled schedules wait for it.
        "scheduler": beat.state(), "waiting": waiting,
        "heartbeat": settings.SCHEDULER_HEARTBEAT,
    }  # fmt: skip
    return render(
        request, "evaluation/schedules/dataset_schedules.html", context, status=form_status(form)
    )


@require_http_methods(["GET", "POST"])
@login_required
def schedule_edit(request: HttpRequest, pk: int, schedule_pk: int) -> HttpResponse:
    dataset = access_dataset(request.user, pk, roles.CHANGE)
    schedule = get_object_or_404(
        RunSchedule.objects.select_related("task__crontab"), pk=schedule_pk, dataset=dataset
    )
    initial = {
        "name": schedule.name, "system": schedule.system_id, "panel": schedule.panel_id,
        "at": _time(schedule),
        "days": schedule.task.crontab.day_of_week, "enabled": schedule.task.enabled,
        "canary": schedule.canary, "canary_items": schedule.canary_items,
    }  # fmt: skip
    form = ScheduleForm(posted(request), initial=initial, dataset=dataset)
    if request.method == "POST" and _saved(form, dataset, request, schedule):
        messages.success(request, "Schedule saved.")
        return redirect("dataset-schedules", pk=dataset.pk)
    context = {"dataset": dataset, "form": form, "schedule": schedule}
    return render(
        request, "evaluation/schedules/schedule_form.html", context, status=form_status(form)
    )


@require_POST
@login_required
def schedule_delete(request: HttpRequest, pk: int, schedule_pk: int) -> HttpResponse:
    dataset = access_dataset(request.user, pk, roles.CHANGE)
    schedule = get_object_or_404(RunSchedule, pk=schedule_pk, dataset=dataset)
    schedules.schedule_delete(schedule=schedule)
    messages.success(request, "Schedule deleted; the runs it started stay.")
    return redirect("dataset-schedules", pk=dataset.pk)


def _time(schedule: RunSchedule) -> str:
    crontab = schedule.task.crontab
    try:
        return f"{int(crontab.hour):02d}:{int(crontab.minute):02d}"
    except (AttributeError, ValueError):  # changed in the site administration
        return ""


def _saved(form: ScheduleForm, dataset, request: HttpRequest, schedule) -> bool:
    if not form.is_valid():
        return False
    data = form.cleaned_data
    try:
        schedules.schedule_save(
            dataset=dataset, name=data["name"], system=data["system"], panel=data["panel"],
            at=data["at"], days=data["days"], enabled=data["enabled"], by=request.user,
            schedule=schedule, canary=data["canary"], canary_items=data["canary_items"],
        )  # fmt: skip
    except schedules.ScheduleError as error:
        form.add_error(error.field, str(error))
        return False
    except RunRefused as refused:  # as the Runs page words it, under the same field
        for problem in refused.problems:
            form.add_error(refused.field, problem)
        return False
    return True

"""Scheduled runs (for example every night): grade the newest answers of a system with a
panel. Beat (django-celery-beat, `DatabaseScheduler`) sends the task
`evaluation.scheduled_run` with keyword arguments `dataset_id`, `panel_id`, `system_id`
and an optional `name`; the task calls `scheduled_run` below. When the run ends, the
regression alerts compare it with the previous one (alerts.py).

Dataset admins set them in a page (`schedule_save`: a `RunSchedule` row tying beat's
`PeriodicTask` to the dataset); the site administration shows beat's tasks as before. A
schedule is saved enabled only if its panel passes the judges' checks of a run's start
(evaluation/runs/preflight.py): the run it would start must not be refused at 02:30.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Max
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule, PeriodicTask, PeriodicTasks

from annotation.models import Dataset
from evaluation import task_names
from evaluation.answers.models import Answer, System
from evaluation.judges.models import Panel
from evaluation.runs import preflight, sampling
from evaluation.runs import services as run_services
from evaluation.runs.models import Run
from evaluation.runs.preflight import RunRefused
from evaluation.schedules import timing
from evaluation.schedules.forms import DAYS
from evaluation.schedules.models import RunSchedule

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser

logger = logging.getLogger(__name__)


def newest_label(dataset: Dataset, system: System) -> str | None:
    """The run label of the system's most recently added answers in the dataset."""
    found = (
        Answer.objects.filter(query__dataset=dataset, system=system, checklist__isnull=True)
        .values("run_label")
        .annotate(newest=Max("created_at"))
        .order_by("-newest", "run_label")
        .first()
    )
    return None if found is None else found["run_label"]


@transaction.atomic
def scheduled_run(*, dataset_id: int, panel_id: int, system_id: int, name: str = "") -> Run | None:
    """Start a run of the system's newest answers, unless one with the same name and answers
    already exists: a tick delivered twice (a redelivery, a retry after the database came
    back), even twice at once, starts one run. None when there is nothing to grade."""
    dataset = Dataset.objects.get(pk=dataset_id)
    panel = Panel.objects.get(pk=panel_id)
    system = System.objects.get(pk=system_id)
    name = name or f"Scheduled {system} {timezone.localdate():%Y-%m-%d}"
    # Check, then create: without the lock two deliveries at once would both find no run.
    _lock_tick(dataset.pk, name)
    label = newest_label(dataset, system)
    if label is None:
        return None
    existing = Run.objects.filter(
        dataset=dataset, name=name, answer_run_label=label, systems=system
    ).first()
    if existing is not None:
        return existing
    run = run_services.run_create_and_start(
        dataset=dataset, panel=panel, systems=[system], answer_run_label=label, name=name
    )
    schedule = RunSchedule.objects.filter(dataset=dataset, name=name, canary=True).first()
    if schedule is not None:
        _start_canary(run, schedule.canary_items)
    return run


def _start_canary(run: Run, size: int | None = None) -> Run | None:
    """The judge canary beside the run: the dataset's labelled items, or a fixed sample of
    `size` of them (evaluation.runs.sampling), graded again by the run's panel, past the
    cache (docs/judging.md#judge-canary). A dataset with nothing labelled yet has no
    canary; the run goes on without one."""
    items = [] if size is None else sampling.canary_sample(run.dataset_id, size)
    try:
        with transaction.atomic():
            return run_services.run_create_and_start(
                dataset=run.dataset, panel=run.panel, canary_for=run,
                scope=Run.Scope.LISTED if items else Run.Scope.LABELLED, items=items,
                name=f"{run.name} \u00b7 canary",
            )  # fmt: skip
    except RunRefused as refused:
        logger.warning("No judge canary for run %s: %s", run.pk, "; ".join(refused.problems))
        return None


def _lock_tick(dataset_id: int, name: str) -> None:
    """One delivery at a time per schedule (dataset and run name) until the transaction
    ends: the second finds the first one's run. PostgreSQL: a transaction-level advisory
    lock (the single 64-bit key space, apart from the kept figures' two-key locks); SQLite's
    IMMEDIATE transactions already hold the database's write lock."""
    if connection.vendor != "postgresql":
        return
    digest = hashlib.sha256(f"scheduled-run:{dataset_id}:{name}".encode()).digest()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(%s)", [int.from_bytes(digest[:8], "big", signed=True)]
        )


# --- schedules set in pages ----------------------------------------------------------------


class ScheduleError(Exception):
    """A schedule that cannot be saved; `field` names the form field at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@transaction.atomic
def schedule_save(
    *,
    dataset: Dataset,
    name: str,
    system: System,
    panel: Panel,
    at: dt.time,
    days: str,
    enabled: bool,
    by: AbstractBaseUser | None,
    schedule: RunSchedule | None = None,
    canary: bool = False,
    canary_items: int | None = None,
) -> RunSchedule:
    """Create or change a dataset's scheduled run: beat's task (its crontab and the
    task's arguments) and the row that ties it to the dataset, in one transaction.

    Raises ScheduleError, or RunRefused when enabled with a panel a run could not start
    with (a judge's key variable unset, its endpoint unreachable, no judges): the same
    checks and words as starting a run by hand. A paused schedule is not checked, so that
    one whose judge broke can be paused."""
    clash = RunSchedule.objects.filter(dataset=dataset, name=name)
    if schedule is not None:
        clash = clash.exclude(pk=schedule.pk)
    if clash.exists():
        raise ScheduleError("name", "This dataset already has a schedule of that name.")
    if enabled:
        preflight.check_panel(panel)
    crontab, _ = CrontabSchedule.objects.get_or_create(
        minute=str(at.minute), hour=str(at.hour), day_of_week=days, day_of_month="*",
        month_of_year="*", timezone=settings.TIME_ZONE,
    )  # fmt: skip
    kwargs = json.dumps(
        {"dataset_id": dataset.pk, "panel_id": panel.pk, "system_id": system.pk, "name": name}
    )
    # Beat's task names are unique site-wide: the dataset's id keeps datasets apart.
    fields = {"name": f"Dataset {dataset.pk}: {name}"[:200], "task": task_names.SCHEDULED_RUN_TASK,
              "crontab": crontab, "kwargs": kwargs, "enabled": enabled}  # fmt: skip
    if schedule is None:
        task = PeriodicTask.objects.create(**fields)
        return RunSchedule.objects.create(
            dataset=dataset,
            task=task,
            name=name,
            system=system,
            panel=panel,
            created_by=by,
            canary=canary,
            canary_items=canary_items,
        )
    task = PeriodicTask.objects.get(pk=schedule.task_id)
    if (task.crontab_id, task.enabled) != (crontab.pk, enabled):
        # Beat counts from the last send: moved to a time already past today (or enabled
        # again after a while), the task would be overdue and sent at once. Counted from
        # this change instead, as django-celery-beat does for a task never sent.
        fields.update(last_run_at=None, date_changed=timezone.now())
    PeriodicTask.objects.filter(pk=task.pk).update(**fields)
    PeriodicTasks.update_changed()  # .update() skips the signal that tells beat to reload
    schedule.name, schedule.system, schedule.panel = name, system, panel
    schedule.canary, schedule.canary_items = canary, canary_items
    schedule.save(update_fields=["name", "system", "panel", "canary", "canary_items"])
    return schedule


def last_canary(schedule: RunSchedule) -> dict | None:
    """What the schedule's latest canary graded and was estimated to call, as its run kept
    them at start (Run.estimate): the Schedules page shows it (one query). Not counted
    anew: drawing the sample reads every labelled item, 17 s with 100,000 of them
    (docs/benchmarks.md#canary-and-stability-pass-at-scale), too slow for a page."""
    found = (
        Run.objects.filter(canary_for__dataset=schedule.dataset_id, canary_for__name=schedule.name)
        .order_by("-pk")
        .values("pk", "estimate", "scope")
        .first()
    )
    if found is None or not found["estimate"]:
        return None
    return {"run": found["pk"], "items": found["estimate"].get("items"),
            "calls": found["estimate"].get("calls"),
            "sampled": found["scope"] == Run.Scope.LISTED}  # fmt: skip


@transaction.atomic
def schedule_delete(*, schedule: RunSchedule) -> None:
    """Delete the schedule and beat's task with it (the row goes by cascade)."""
    PeriodicTask.objects.filter(pk=schedule.task_id).delete()


def next_run(task: PeriodicTask) -> dt.datetime | None:
    """When beat will next send the task (None while it is disabled or not a crontab): the
    crontab's first tick, in its own time zone, after the last send, or after the last
    change for a task never sent (what django-celery-beat counts from). In the past when
    beat did not send it at that time (it was not running): it is overdue."""
    if not task.enabled or task.crontab is None:
        return None
    since = task.last_run_at or task.date_changed or timezone.now()
    return timing.next_tick(task.crontab.schedule, since)


def describe(task: PeriodicTask) -> str:
    """'02:30, every day': when the task runs, as the schedules page says it."""

    crontab = task.crontab
    if crontab is None:
        return "set in the site administration"
    days = dict(DAYS).get(crontab.day_of_week, crontab.day_of_week).lower()
    # Saved under an earlier TIME_ZONE, it still fires in that zone's time: say which.
    zone = "" if str(crontab.timezone) == settings.TIME_ZONE else f" ({crontab.timezone})"
    try:
        return f"{int(crontab.hour):02d}:{int(crontab.minute):02d}{zone}, {days}"
    except ValueError:  # a crontab written in the site administration: shown as it is
        return f"{crontab.minute} {crontab.hour} * * {crontab.day_of_week}{zone}"

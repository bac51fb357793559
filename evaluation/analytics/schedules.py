"""Scheduled runs (for example every night): grade the newest answers of a system with a
panel. Beat (django-celery-beat, `DatabaseScheduler`) sends the task
`evaluation.scheduled_run` with keyword arguments `dataset_id`, `panel_id`, `system_id`
and an optional `name`; the task calls `scheduled_run` below. When the run ends, the
regression alerts compare it with the previous one (alerts.py).
"""

from __future__ import annotations

from django.db.models import Max
from django.utils import timezone

from annotation.models import Dataset
from evaluation.models import Answer, Panel, Run, System
from evaluation.runs import services as run_services


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


def scheduled_run(*, dataset_id: int, panel_id: int, system_id: int, name: str = "") -> Run | None:
    """Start a run of the system's newest answers, unless one with the same name and answers
    already exists (a tick delivered twice starts one run). None when there is nothing to
    grade."""
    dataset = Dataset.objects.get(pk=dataset_id)
    panel = Panel.objects.get(pk=panel_id)
    system = System.objects.get(pk=system_id)
    label = newest_label(dataset, system)
    if label is None:
        return None
    name = name or f"Scheduled {system} {timezone.localdate():%Y-%m-%d}"
    existing = Run.objects.filter(
        dataset=dataset, name=name, answer_run_label=label, systems=system
    ).first()
    if existing is not None:
        return existing
    return run_services.run_create_and_start(
        dataset=dataset, panel=panel, systems=[system], answer_run_label=label, name=name
    )

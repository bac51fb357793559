from __future__ import annotations

from celery import shared_task

from evaluation import task_names
from evaluation.schedules import services as schedules


@shared_task(name=task_names.SCHEDULED_RUN_TASK, acks_late=True, reject_on_worker_lost=True)
def scheduled_run(dataset_id: int, panel_id: int, system_id: int, name: str = "") -> int | None:
    """Sent by celery beat on a schedule (docs/operations.md); returns the run's id."""
    run = schedules.scheduled_run(
        dataset_id=dataset_id, panel_id=panel_id, system_id=system_id, name=name
    )
    return None if run is None else run.pk

from __future__ import annotations

from celery import shared_task
from django.db import Error

from evaluation import task_names, transient
from evaluation.schedules import services as schedules


@shared_task(
    name=task_names.SCHEDULED_RUN_TASK, bind=True, acks_late=True, reject_on_worker_lost=True
)
def scheduled_run(
    self, dataset_id: int, panel_id: int, system_id: int, name: str = ""
) -> int | None:
    """Sent by celery beat on a schedule (docs/operations.md); returns the run's id. A tick
    that finds the database down or restarting is tried again later (transient.retry_task)
    rather than lost; the service starts one run however many deliveries reach it."""
    try:
        run = schedules.scheduled_run(
            dataset_id=dataset_id, panel_id=panel_id, system_id=system_id, name=name
        )
    except Error as exc:
        transient.retry_task(self, exc)
    return None if run is None else run.pk


@shared_task(name=task_names.SCHEDULER_HEARTBEAT_TASK, acks_late=False)
def scheduler_heartbeat() -> None:
    """Sent by celery beat every SCHEDULER_HEARTBEAT seconds; nothing to do here. Beat
    records each send in its own table, which is what says it runs (schedules/beat.py):
    a heartbeat written by the worker would also stop when only the workers stop."""

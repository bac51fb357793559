"""Celery tasks of dataset import and export: thin, they take ids and call one service."""

from __future__ import annotations

from celery import shared_task

from evaluation import task_names
from evaluation.datasets import purge, services


@shared_task(name=task_names.EXPORT_TASK, acks_late=True, reject_on_worker_lost=True)
def export_dataset(export_id: int) -> None:
    """Write one export job's zip. Safe to redeliver: a finished export is left as it is,
    an interrupted one is written again from the start (the file appears only when whole)."""
    services.export_run(export_id=export_id)


@shared_task(name=task_names.PURGE_TASK, acks_late=True, reject_on_worker_lost=True)
def purge_dataset(dataset_id: int) -> None:
    """Delete a dataset marked for deletion. Safe to deliver twice or after a crash: it
    continues where the last delivery stopped (evaluation.datasets.purge). A worker that dies on it
    leaves the dataset marked: the doctor every worker starts when it is ready
    (evaluation.runs.tasks.start_doctor) sweeps and queues it again."""
    purge.purge(dataset_id=dataset_id)

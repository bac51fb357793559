"""Celery tasks of dataset import and export: thin, they take ids and call one service."""

from __future__ import annotations

from celery import shared_task

from evaluation.data import services


@shared_task(name="evaluation.data.export_dataset", acks_late=True, reject_on_worker_lost=True)
def export_dataset(export_id: int) -> None:
    """Write one export job's zip. Safe to redeliver: a finished export is left as it is,
    an interrupted one is written again from the start (the file appears only when whole)."""
    services.export_run(export_id=export_id)

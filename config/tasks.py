"""Celery tasks: thin, they take ids and call one service. Services queue them by name and
never import this module. Runs' tasks are evaluation.runs.tasks."""

from __future__ import annotations

from celery import shared_task

from evaluation import task_names


@shared_task(name=task_names.PING_TASK, ignore_result=False, acks_late=False)
def ping(token: str) -> str:
    """Health probe: answers with the token it was given, proving a worker is consuming."""
    return token

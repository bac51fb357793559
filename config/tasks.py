"""Celery tasks: thin, they take ids and call one service. Services queue them by name and
never import this module. Runs' tasks are evaluation.runs.tasks."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="evaluation.ping", ignore_result=False, acks_late=False)
def ping(token: str) -> str:
    """Health probe: answers with the token it was given, proving a worker is consuming."""
    return token

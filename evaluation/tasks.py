"""Celery tasks: thin, they take ids and call one service. Services queue them by name and
never import this module. Runs' tasks are evaluation.runs.tasks."""

from __future__ import annotations

import random

from celery import shared_task

from annotation.services.datasets import PURGE_TASK
from evaluation import models, purge, services
from evaluation.cross_evaluation import services as cross_evaluation
from evaluation.judging.client import JudgeUnavailable


@shared_task(name="evaluation.ping", ignore_result=False, acks_late=False)
def ping(token: str) -> str:
    """Health probe: answers with the token it was given, proving a worker is consuming."""
    return token


@shared_task(name=services.CHECK_FORMALITY_TASK, bind=True, max_retries=3)
def check_formality(self, advice_id: int) -> None:
    """Only an unreachable judge is retried (after about 10, 20, 40 s, with jitter); the
    service is safe to run again."""
    try:
        services.formality_run(advice_id=advice_id)
    except JudgeUnavailable as exc:
        if self.request.retries >= self.max_retries:
            models.FormalityAdvice.objects.filter(pk=advice_id).update(
                status=models.FormalityAdvice.Status.ERROR, error=f"The judge is unavailable: {exc}"
            )
            return
        delay = 10 * 2**self.request.retries
        raise self.retry(exc=exc, countdown=random.uniform(delay / 2, delay)) from exc  # noqa: S311


@shared_task(
    name=cross_evaluation.DRAFT_TASK, bind=True, max_retries=3, ignore_result=False,
    track_started=True,
)  # fmt: skip
def draft_perfect_answer(
    self, checklist_id: int, judge_id: int, based_on: str | None = None
) -> dict[str, object]:
    """An LLM drafts a checklist's perfect answer. The result is kept (the page polls it);
    only an unreachable judge is retried. Safe to repeat: the draft replaces only the version
    it was asked for, so a redelivery never overwrites the draft or a later edit."""
    try:
        return cross_evaluation.perfect_answer_draft_run(
            checklist_id=checklist_id, judge_id=judge_id, based_on=based_on
        )
    except JudgeUnavailable as exc:
        if self.request.retries >= self.max_retries:
            return {"ok": False, "error": f"The judge is unavailable: {exc}"}
        delay = 10 * 2**self.request.retries
        raise self.retry(exc=exc, countdown=random.uniform(delay / 2, delay)) from exc  # noqa: S311


@shared_task(name=PURGE_TASK, acks_late=True, reject_on_worker_lost=True)
def purge_dataset(dataset_id: int) -> None:
    """Delete a dataset marked for deletion. Safe to deliver twice or after a crash: it
    continues where the last delivery stopped (evaluation.purge). A worker that dies on it
    leaves the dataset marked: the doctor every worker starts when it is ready
    (evaluation.runs.tasks.start_doctor) sweeps and queues it again."""
    purge.purge(dataset_id=dataset_id)

from __future__ import annotations

from celery import shared_task

from config.backoff import backoff
from evaluation import task_names
from evaluation.formality import services
from evaluation.formality.models import FormalityAdvice
from evaluation.judging.client import JudgeUnavailable


@shared_task(name=task_names.CHECK_FORMALITY_TASK, bind=True, max_retries=3)
def check_formality(self, advice_id: int) -> None:
    """Only an unreachable judge is retried (after about 10, 20, 40 s, with jitter); the
    service is safe to run again."""
    try:
        services.formality_run(advice_id=advice_id)
    except JudgeUnavailable as exc:
        if self.request.retries >= self.max_retries:
            FormalityAdvice.objects.filter(pk=advice_id).update(
                status=FormalityAdvice.Status.ERROR, error=f"The judge is unavailable: {exc}"
            )
            return
        wait = backoff(self.request.retries, base=10, jitter="equal")
        raise self.retry(exc=exc, countdown=wait) from exc

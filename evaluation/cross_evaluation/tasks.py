from __future__ import annotations

from celery import shared_task

from config.backoff import backoff
from evaluation import task_names
from evaluation.cross_evaluation import services as cross_evaluation
from evaluation.judging.client import JudgeUnavailable


@shared_task(
    name=task_names.DRAFT_TASK, bind=True, max_retries=3, ignore_result=False,
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
        wait = backoff(self.request.retries, base=10, jitter="equal")
        raise self.retry(exc=exc, countdown=wait) from exc

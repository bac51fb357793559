from __future__ import annotations

from celery import shared_task

from evaluation import task_names
from evaluation.judges.models import Panel
from evaluation.pairwise import judging
from evaluation.pairwise.models import PairwiseSession


@shared_task(name=task_names.PAIRWISE_JUDGE_TASK, acks_late=True)
def judge_pairs(session_id: int, panel_id: int) -> int:
    """Thin: the service is safe to run again (replies are upserted per pair, judge, sample
    and order, and a voted reply is reused by its cache key, never paid twice); a judge
    that is down leaves error replies, asked again by the next run of the task."""
    session = PairwiseSession.objects.filter(pk=session_id).first()
    panel = Panel.objects.filter(pk=panel_id).first()
    if session is None or panel is None:  # deleted since it was queued
        return 0
    return judging.judge_session(session=session, panel=panel)

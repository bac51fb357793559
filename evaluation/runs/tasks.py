"""Celery tasks of runs: thin, they take ids and call the lifecycle."""

from __future__ import annotations

from celery import shared_task
from celery.signals import worker_ready

from evaluation import task_names
from evaluation.runs import healing, lifecycle


@shared_task(name=task_names.JUDGE_TASK, bind=True, acks_late=True, reject_on_worker_lost=True)
def judge_answer(
    self, run_id: int, answer_id: int, judge_id: int, attempt: int | None = None
) -> None:
    """One answer × one judge of a run, for one attempt. Safe to deliver twice: only one
    delivery claims the task, and it only fills missing verdicts. Its failures end as error
    verdicts (lifecycle.run_task), never as a retry here: "retry failed" redoes them."""
    healing.ensure_doctor()  # the heartbeat of the lease this delivery takes
    lifecycle.run_task(
        run_id=run_id, answer_id=answer_id, judge_id=judge_id, attempt=attempt,
        worker=self.request.hostname or "",
    )  # fmt: skip


@worker_ready.connect
def start_doctor(**_: object) -> None:
    """Sweep for lost work from the moment a worker is up, before any task arrives."""
    healing.ensure_doctor()

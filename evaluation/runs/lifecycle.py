"""A run's tasks from delivery to the end of the run.

Each (answer × judge) task is a RunTask row. A delivery *claims* it with a lease (only if
no live delivery holds it and it was queued for the run's current attempt), does the work,
and *finishes* it, whatever happened: an exception becomes error verdicts for the votes the
task owed (work.record_failure), so a task always ends. The last task to finish ends the
run: done, or done with errors. A lease is kept alive by its worker's heartbeat
(healing.py); one whose heartbeat stopped belongs to a lost worker and is requeued.

Attempts: resume and "retry failed" bump Run.attempt and requeue tasks for it. A delivery
of an older attempt can neither claim a task nor finish it: a stale delivery can never
close a newer attempt early. No two deliveries work on one task at once, so no judge call
is made twice for one (answer, criterion, judge, sample), except to retry an error.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from evaluation import transient
from evaluation.runs import queue, work
from evaluation.runs.models import GradedScore, Run, RunTask, Verdict
from evaluation.runs.signals import run_ended

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Claim:
    task_id: int
    run_id: int
    answer_id: int
    judge_id: int
    attempt: int
    lease: str


def stale_before(now: datetime) -> datetime:
    """A lease whose last heartbeat is older than this belongs to a lost worker."""
    return now - timedelta(seconds=settings.RUNS_LEASE_TIMEOUT)


def claim(
    *, run_id: int, answer_id: int, judge_id: int, attempt: int | None, worker: str
) -> Claim | None:
    """Take the task for this delivery, or None: done already, held by a live delivery,
    queued for another attempt, or gone."""
    row = (
        RunTask.objects.filter(run=run_id, answer=answer_id, judge=judge_id)
        .values_list("pk", "attempt")
        .first()
    )
    if row is None:
        return None
    task_id, current = row
    attempt = current if attempt is None else attempt  # a message queued before attempts
    lease, now = uuid.uuid4().hex, timezone.now()
    # One UPDATE on the task's own row: PostgreSQL re-checks the conditions after waiting
    # for a concurrent claim's row lock, so two deliveries can never both take it.
    taken = (
        RunTask.objects.filter(pk=task_id, attempt=attempt, done_at__isnull=True)
        .filter(Q(lease="") | Q(heartbeat_at__lt=stale_before(now)))
        .update(lease=lease, worker=worker[:200], claimed_at=now, heartbeat_at=now)
    )
    return Claim(task_id, run_id, answer_id, judge_id, attempt, lease) if taken else None


def finish(claim: Claim, *, error: str = "") -> bool:
    """Mark the task done, if this delivery still holds it for the current attempt; then
    end the run if it was the last. A delivery overtaken by a resume hands the task over
    to the current attempt instead."""
    done = RunTask.objects.filter(
        pk=claim.task_id, lease=claim.lease, attempt=claim.attempt
    ).update(done_at=timezone.now(), lease="", error=error)
    if not done:
        _hand_over(claim)
    end_if_complete(claim.run_id)
    return bool(done)


def _hand_over(claim: Claim) -> None:
    current = (
        RunTask.objects.filter(pk=claim.task_id, lease=claim.lease)
        .values_list("attempt", flat=True)
        .first()
    )
    if current is None:  # not ours any more: a sweep gave it to another delivery
        return
    RunTask.objects.filter(pk=claim.task_id, lease=claim.lease).update(
        lease="", queued_at=timezone.now()
    )
    if Run.objects.filter(pk=claim.run_id, status=Run.Status.RUNNING).exists():
        queue.send(claim.run_id, [(claim.answer_id, claim.judge_id)], current)


def run_task(
    *, run_id: int, answer_id: int, judge_id: int, attempt: int | None = None, worker: str
) -> int:
    """One delivery of a judging task: claim, work, finish. Returns the verdicts written.

    A transient database error (a restart, a failover, a dropped connection) is waited out
    (evaluation.transient.retrying), never recorded as the task's failure: each step is
    retried, the writes after the judge's calls on their own (work.py), so no paid call is
    made again. A database still unreachable after RUNS_DB_RETRY_FOR ends the delivery
    without a word: its lease goes silent and the doctor queues the task again."""
    try:
        return _run_task(
            run_id=run_id, answer_id=answer_id, judge_id=judge_id, attempt=attempt,
            worker=worker,
        )  # fmt: skip
    except transient.StillUnreachable as exc:
        logger.warning("Run %s: %s; the task is left to the sweep", run_id, exc)
        return 0


def _run_task(
    *, run_id: int, answer_id: int, judge_id: int, attempt: int | None, worker: str
) -> int:
    run = transient.retrying(lambda: Run.objects.filter(pk=run_id).first())
    if run is None or run.status != Run.Status.RUNNING:
        return 0  # gone, cancelled or ended: a resume redoes what is unfinished
    taken = transient.retrying(
        lambda: claim(
            run_id=run_id, answer_id=answer_id, judge_id=judge_id, attempt=attempt,
            worker=worker,
        )
    )  # fmt: skip
    if taken is None:
        transient.retrying(lambda: end_if_complete(run_id))  # its answer may be gone
        return 0
    written, error = 0, ""
    with holding(taken):
        try:
            # Retried whole only while no call has returned: after the calls, work.py
            # retries the writes itself and a database that stays down raises
            # StillUnreachable, which is not retried here.
            written = transient.retrying(
                lambda: work.judge_answer(run=run, answer_id=answer_id, judge_id=judge_id)
            )
        except transient.StillUnreachable:
            raise
        except Exception as exc:
            logger.exception("Run %s: answer %s × judge %s failed", run_id, answer_id, judge_id)
            error = f"{type(exc).__name__}: {exc}"[:2000]
            try:
                written = transient.retrying(
                    lambda: work.record_failure(
                        run=run, answer_id=answer_id, judge_id=judge_id, error=error
                    )
                )
            except Exception:
                # Nothing more can be written; the task still ends, with its error, so the
                # run does.
                logger.exception("Run %s: could not record the failure", run_id)
    transient.retrying(lambda: finish(taken, error=error))
    return written


def end_if_complete(run_id: int) -> Run.Status | None:
    """End a running run once all its tasks are done; returns the status it ended with."""
    if RunTask.objects.filter(run=run_id, done_at__isnull=True).exists():
        return None
    run = Run.objects.filter(pk=run_id, status=Run.Status.RUNNING).first()
    if run is None:
        return None
    reason = error_summary(run)
    status = Run.Status.DONE_WITH_ERRORS if reason else Run.Status.DONE
    # The attempt guards against a resume between the check above and this write.
    ended = Run.objects.filter(pk=run_id, status=Run.Status.RUNNING, attempt=run.attempt).update(
        status=status,
        finished_at=timezone.now(),
        reason=reason,
        # What the run holds now: criteria disabled or added mid-run change it.
        expected=Verdict.objects.filter(run=run_id).count(),
    )
    if ended:
        # Listeners (regression alerts) act once the end is committed, never on a rollback.
        transaction.on_commit(lambda: run_ended.send(sender=Run, run_id=run_id))
    return status if ended else None


def error_summary(run: Run) -> str:
    """How many calls and tasks failed, with the first error: empty when none did."""
    verdicts = Verdict.objects.filter(run=run, outcome=Verdict.Outcome.ERROR)
    grades = GradedScore.objects.filter(run=run, outcome=GradedScore.Outcome.ERROR)
    calls = verdicts.count() + grades.count()
    tasks = RunTask.objects.filter(run=run).exclude(error="")
    failed_tasks = tasks.count()
    if not calls and not failed_tasks:
        return ""
    first = (
        verdicts.order_by("pk").values_list("error_kind", "error").first()
        or grades.order_by("pk").values_list("error_kind", "error").first()
    )
    parts = []
    if calls:
        parts.append(f"{calls} call{'s' if calls != 1 else ''} ended in error")
    if failed_tasks:
        parts.append(f"{failed_tasks} task{'s' if failed_tasks != 1 else ''} failed")
    detail = f"{first[0]}: {first[1]}" if first else tasks.values_list("error", flat=True).first()
    return f"{' and '.join(parts).capitalize()}. First: {detail}"[:2000]


def fail(run_id: int, reason: str) -> None:
    """End a run that cannot go on (its tasks could not be queued), with the reason."""
    Run.objects.filter(pk=run_id, status__in=[Run.Status.PENDING, Run.Status.RUNNING]).update(
        status=Run.Status.FAILED, finished_at=timezone.now(), reason=reason[:2000]
    )


# --- Leases held by this process, kept alive by healing.Doctor's heartbeat ------------------
_held: dict[str, int] = {}  # lease -> RunTask id
_held_lock = threading.Lock()


@contextmanager
def holding(taken: Claim) -> Iterator[None]:
    with _held_lock:
        _held[taken.lease] = taken.task_id
    try:
        yield
    finally:
        with _held_lock:
            _held.pop(taken.lease, None)


def beat() -> int:
    """Refresh the heartbeat of every lease this process holds; returns how many."""
    with _held_lock:
        leases = list(_held)
    if not leases:
        return 0
    return RunTask.objects.filter(lease__in=leases).update(heartbeat_at=timezone.now())

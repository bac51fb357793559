"""Queueing a run's tasks, by task name: services never import the tasks module, so the
task code can import services freely (no import cycle)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from django.conf import settings
from django.db import transaction

from evaluation import task_names


def send(run_id: int, work: Iterable[tuple[int, int]], attempt: int) -> int:
    """Queue one judging task per (answer, judge) for this attempt; returns how many."""
    sent = 0
    for answer_id, judge_id in work:
        task = task_names.signature(task_names.JUDGE_TASK, (run_id, answer_id, judge_id, attempt))
        task.apply_async(queue=settings.RUNS_QUEUE)  # None: the default queue
        sent += 1
    return sent


def send_on_commit(
    run_id: int,
    work: list[tuple[int, int]],
    attempt: int,
    *,
    on_error: Callable[[int, str], None],
) -> None:
    """Queue once the transaction commits. A broker that cannot take the tasks calls
    `on_error(run_id, reason)`, so the run fails with the reason rather than staying
    "running" with nothing queued."""

    def send_or_fail() -> None:
        try:
            send(run_id, work, attempt)
        except Exception as exc:  # the broker's errors vary by transport
            on_error(run_id, f"Its tasks could not be queued: {type(exc).__name__}: {exc}")

    transaction.on_commit(send_or_fail)

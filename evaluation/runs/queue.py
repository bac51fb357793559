"""Queueing a run's tasks, by task name: services never import the tasks module, so the
task code can import services freely (no import cycle)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction

from evaluation import task_names
from evaluation.judges.models import Judge


def send(run_id: int, work: Iterable[tuple[int, int]], attempt: int) -> int:
    """Queue one judging task per (answer, judge) for this attempt, each on its judge's
    provider's queue (`queues_for`); returns how many."""
    work = list(work)
    queues = queues_for({judge_id for _, judge_id in work})
    sent = 0
    for answer_id, judge_id in work:
        task = task_names.signature(task_names.JUDGE_TASK, (run_id, answer_id, judge_id, attempt))
        task.apply_async(queue=queues[judge_id])  # None: the default queue
        sent += 1
    return sent


def queues_for(judge_ids: set[int]) -> dict[int, str | None]:
    """The queue of each judge's tasks: its endpoint's host:port, else its host, in
    settings.RUNS_QUEUE_BY_HOST (a queue per provider, served by that provider's workers),
    else RUNS_QUEUE (None: the default queue). One query, none without a map."""
    by_host = settings.RUNS_QUEUE_BY_HOST
    if not by_host:
        return dict.fromkeys(judge_ids, settings.RUNS_QUEUE)
    found = Judge.objects.filter(pk__in=judge_ids).values_list("pk", "base_url")
    return {pk: queue_of(base_url, by_host) for pk, base_url in found}


def queue_of(base_url: str, by_host: dict[str, str]) -> str | None:
    """The queue of an endpoint: by host:port, then by host, then RUNS_QUEUE."""
    address = urlsplit(base_url or "")
    host = (address.hostname or "").lower()
    with_port = f"{host}:{address.port}" if address.port else host
    return by_host.get(with_port) or by_host.get(host) or settings.RUNS_QUEUE


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

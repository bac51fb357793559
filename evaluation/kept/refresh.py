"""One recompute at a time of a run's analytics figures (stale-while-revalidate).

A reader that finds the figures of an earlier state serves those and calls `ensure`: the
first one queues the refresh task, the others find its marker and queue nothing, so twenty
readers after a label cost one recompute. The marker is a KeptRefresh row (per run and
group) whose `claimed_at` is when it was taken:

- taking it is an insert that a unique constraint lets only one reader win;
- a marker older than REFRESH_TIMEOUT belongs to a worker that died (or a message that was
  lost): the next reader takes it over with a compare-and-set update, which again only one
  reader wins;
- the task deletes it when the recompute worked, so that the next reader after a label
  that landed mid-compute queues another;
- when the recompute raised, the task keeps the marker as a failure (`fail`): the error's
  kind, when, the number of failed tries in a row and when the next may start. Until then
  it blocks like a live marker, so a recompute that keeps failing is tried once a minute,
  then every 2, 4, … up to 60 minutes (BACKOFF), not by every reader and every 2-second
  poll; the pages and the API say that it failed and when it is tried again (`failure`).

A group is what one task computes from one load of the run: `DEFAULT` (every part for the
default bucket edges, `figures.warm`), or `edges-10.20.30` (the page and bucket rows for
custom edges). A figure kept per dataset, not per run (a review queue, the cross-evaluation
figures, the agreement counts without a run) has a dataset's marker: `run_id` None, one per
dataset and group, refreshed by the dataset's task (DATASET_REFRESH_TASK). Plain module: it
never imports the figures (they import it).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from celery import current_app
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from config.backoff import backoff as growing_wait
from evaluation import task_names
from evaluation.kept.models import KeptRefresh
from evaluation.metrics import analytics as am

logger = logging.getLogger(__name__)

DEFAULT = "default"
# Longer than a recompute takes at full scale (about 10 s for every part at 200,000
# items), short enough that a dead worker's marker does not leave a page updating for long.
REFRESH_TIMEOUT = timedelta(minutes=3)
# After the n-th failed try in a row, the next waits FIRST_BACKOFF * 2**(n-1), at most
# LAST_BACKOFF: a fault that passes (a deadlock, a restart) costs a minute; one that does
# not (a bug in the figures) costs one recompute an hour, not one per poll.
FIRST_BACKOFF = timedelta(minutes=1)
LAST_BACKOFF = timedelta(minutes=60)


@dataclass(frozen=True)
class Failure:
    """The last try of a refresh failed: `error` is the exception's kind (its message is in
    the worker's log, not on the pages), `tries` failed in a row, the next at `retry_at`."""

    error: str
    failed_at: datetime
    tries: int
    retry_at: datetime

    def as_dict(self) -> dict:
        return {
            "error": self.error,
            "failed_at": self.failed_at.isoformat(),
            "tries": self.tries,
            "retry_at": self.retry_at.isoformat(),
        }


def facts(*, updating: bool, computed_at: datetime | None, failure: Failure | None) -> dict:
    """What an API answer carries about the state of the kept figures it serves: the same
    keys for scores, analytics and judge stability (docs/api.md#scores)."""
    return {
        "updating": updating,
        "computed_at": computed_at.isoformat() if computed_at else None,
        "refresh_failed": failure.as_dict() if failure else None,
    }


def retry_after(failure: Failure | None) -> int:
    """Seconds an API client should wait before asking again for figures being counted:
    until the failed refresh's next try, else a few (a refresh takes seconds)."""
    if failure is None:
        return 5
    return max(1, int((failure.retry_at - timezone.now()).total_seconds()) + 1)


def pending(failure: Failure | None) -> tuple[int, dict[str, str]]:
    """The status and headers of an API answer whose figures are still being counted: 202
    while the refresh is queued or running, 503 when its last try failed, with Retry-After
    either way (docs/api.md): a client polling on 202 never waits for ever."""
    return (503 if failure else 202), {"Retry-After": str(retry_after(failure))}


def backoff(tries: int) -> timedelta:
    """The wait after `tries` failed tries in a row (the first failure waits FIRST_BACKOFF)."""
    return growing_wait(max(tries, 1) - 1, base=FIRST_BACKOFF, cap=LAST_BACKOFF)


def group_for(edges: tuple[int, ...]) -> str:
    return DEFAULT if tuple(edges) == am.DEFAULT_EDGES else "edges-" + ".".join(map(str, edges))


def edges_of(group: str) -> tuple[int, ...]:
    if group == DEFAULT:
        return am.DEFAULT_EDGES
    return tuple(int(e) for e in group.removeprefix("edges-").split("."))


def _marker(dataset_id: int, run_id: int | None, group: str) -> QuerySet[KeptRefresh]:
    # run_id None: `run_id IS NULL`, the dataset's marker.
    return KeptRefresh.objects.filter(dataset_id=dataset_id, run_id=run_id, group=group)


def _signature(dataset_id: int, run_id: int | None, group: str):
    """The task that refreshes the group: the run's, or the dataset's (run_id None)."""
    if run_id is None:
        return task_names.signature(task_names.DATASET_REFRESH_TASK, (dataset_id, group))
    return task_names.signature(task_names.REFRESH_TASK, (run_id, group))


def claim(dataset_id: int, run_id: int | None, group: str) -> bool:
    """Take the run's refresh marker; False when another reader holds a live one, or the
    last try failed and its backoff has not run out."""
    now = timezone.now()
    held = _marker(dataset_id, run_id, group)
    found = held.first()
    if found is None:
        try:
            with transaction.atomic():
                KeptRefresh.objects.create(
                    dataset_id=dataset_id, run_id=run_id, group=group, claimed_at=now
                )
            return True
        except IntegrityError:  # another reader took it between the read and the insert
            return False
    failure = _failure(found)
    if failure is not None and now < failure.retry_at:
        return False
    if failure is None and found.claimed_at >= now - REFRESH_TIMEOUT:
        return False
    # A failure whose backoff ran out, or a dead worker's marker: one reader's update
    # matches the old time, the others' none (PostgreSQL re-reads the row after the winner
    # commits). The count of failed tries stays, so the next failure waits longer.
    taken = held.filter(claimed_at=found.claimed_at)
    return taken.update(claimed_at=now, error="", failed_at=None, retry_at=None) == 1


def release(dataset_id: int, run_id: int | None, group: str) -> None:
    """The recompute worked: the marker goes, with its count of failed tries."""
    _marker(dataset_id, run_id, group).delete()


def hold(dataset_id: int, run_id: int | None, group: str, seconds: float) -> None:
    """Keep a taken marker live `seconds` longer than REFRESH_TIMEOUT would: the holder
    waits out a pause before its next step (the warm-up's paced steps,
    evaluation.analytics.warmup.pace) and no one else may start meanwhile."""
    later = timezone.now() + timedelta(seconds=seconds)
    _marker(dataset_id, run_id, group).update(claimed_at=later)


def fail(dataset_id: int, run_id: int | None, group: str, error: BaseException) -> Failure:
    """The recompute raised: keep the marker as a failure that blocks readers until its
    backoff runs out (written whether or not the marker is still there)."""
    now = timezone.now()
    before = _marker(dataset_id, run_id, group)
    tries = (before.values_list("tries", flat=True).first() or 0) + 1
    failure = Failure(type(error).__name__, now, tries, now + backoff(tries))
    KeptRefresh.objects.update_or_create(
        dataset_id=dataset_id, run_id=run_id, group=group,
        defaults={
            "claimed_at": now, "error": failure.error,
            "failed_at": now, "tries": tries, "retry_at": failure.retry_at,
        },
    )  # fmt: skip
    return failure


def failure(dataset_id: int, run_id: int | None, group: str) -> Failure | None:
    """The refresh's last try failed and the next has not started: what the pages and the
    API say (None: no failure, or a new try is running)."""
    return _failure(_marker(dataset_id, run_id, group).first())


def _failure(marker: KeptRefresh | None) -> Failure | None:
    if marker is None or not marker.error:
        return None
    return Failure(marker.error, marker.failed_at, marker.tries, marker.retry_at)


def spacing(took: float = 0.0) -> float:
    """Seconds at least between two refreshes of one group while labels keep moving its
    figures: FIGURES_REFRESH_SPACING, or FIGURES_REFRESH_PAUSE times what the last count
    took (`took`), whichever is longer. A count of a large run (30 s at 720,000 verdicts)
    then takes at most a 1 / (1 + pause) share of a worker's core however fast people
    label, where a fixed spacing let it run half the time, beside the pages it slowed."""
    return max(float(settings.FIGURES_REFRESH_SPACING), settings.FIGURES_REFRESH_PAUSE * took)


def countdown(after: datetime | None, now: datetime | None = None, *, took: float = 0.0) -> float:
    """Seconds to wait before refreshing figures computed at `after`, whose count took
    `took` seconds: what is left of the `spacing` since then (0 without a time)."""
    if after is None:
        return 0.0
    wait = timedelta(seconds=spacing(took))
    return max(0.0, (after + wait - (now or timezone.now())).total_seconds())


def ensure(
    dataset_id: int, run_id: int | None, group: str, *,
    after: datetime | None = None, took: float = 0.0,
) -> bool:  # fmt: skip
    """Queue the run's refresh unless one is queued or running; True when this call queued
    it (with CELERY_TASK_ALWAYS_EAGER it has then already run). `after`: when the figures
    served were computed, and `took` how long their count took; the refresh starts no
    sooner than the `spacing` after it (`countdown`), so that labels arriving without pause
    cost one refresh every so often, not one after the other. A broker that cannot be
    reached leaves no marker behind: the next reader tries again."""
    if not claim(dataset_id, run_id, group):
        return False
    try:
        wait = countdown(after, took=took)
        _signature(dataset_id, run_id, group).apply_async(countdown=wait)
    except Exception:  # the reader still gets the figures kept; the next one retries
        if run_id is None:
            logger.exception("Could not queue the refresh of dataset %s (%s)", dataset_id, group)
        else:
            logger.exception("Could not queue the analytics refresh of run %s (%s)", run_id, group)
        release(dataset_id, run_id, group)
        return False
    return True


def now(dataset_id: int, run_id: int | None, group: str) -> None:
    """Queue the run's refresh at once, whatever marker there is: something the figures
    read has just changed for everyone (a cross-evaluation ended), and a refresh already
    queued may wait out the spacing after labels (`ensure`) or a failure's backoff. The
    marker is taken over (so readers meanwhile queue no other) and its failed tries kept;
    at worst a refresh queued earlier computes the same figures again."""
    stamp = timezone.now()
    taken = _marker(dataset_id, run_id, group).update(
        claimed_at=stamp, error="", failed_at=None, retry_at=None
    )
    if not taken:
        try:
            with transaction.atomic():
                KeptRefresh.objects.create(
                    dataset_id=dataset_id, run_id=run_id, group=group, claimed_at=stamp
                )
        except IntegrityError:  # a reader took it meanwhile: its refresh is queued too
            pass
    _signature(dataset_id, run_id, group).apply_async()


def eager() -> bool:
    """Tasks run inside `apply_async` (CELERY_TASK_ALWAYS_EAGER, the demo without a
    worker): a queued refresh has run by the time `ensure` returns."""
    return bool(current_app.conf.task_always_eager)

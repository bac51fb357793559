"""One recompute at a time of a run's analytics figures (stale-while-revalidate).

A reader that finds the figures of an earlier state serves those and calls `ensure`: the
first one queues the refresh task, the others find its marker and queue nothing, so twenty
readers after a label cost one recompute. The marker is an AgreementCache row
(`analytics-refresh-<run>-<group>`) whose `computed_at` is when it was taken:

- taking it is an insert that a unique constraint lets only one reader win;
- a marker older than REFRESH_TIMEOUT belongs to a worker that died (or a message that was
  lost): the next reader takes it over with a compare-and-set update, which again only one
  reader wins;
- the task deletes it when it ends, whether the recompute worked or raised, so that the
  next reader after a failure, or after a label landed mid-compute, queues another.

A group is what one task computes from one load of the run: `DEFAULT` (every part for the
default bucket edges, `figures.warm`), or `edges-10.20.30` (the page and bucket rows for
custom edges). Plain module: it never imports the figures (they import it).
"""

from __future__ import annotations

import logging
from datetime import timedelta

from celery import current_app
from django.db import IntegrityError, transaction
from django.utils import timezone

from evaluation.metrics import analytics as am
from evaluation.models import AgreementCache

logger = logging.getLogger(__name__)

REFRESH_TASK = "evaluation.refresh_analytics"
DEFAULT = "default"
# Longer than a recompute takes at full scale (about 10 s for every part at 200,000
# items), short enough that a dead worker's marker does not leave a page updating for long.
REFRESH_TIMEOUT = timedelta(minutes=3)


def group_for(edges: tuple[int, ...]) -> str:
    return DEFAULT if tuple(edges) == am.DEFAULT_EDGES else "edges-" + ".".join(map(str, edges))


def edges_of(group: str) -> tuple[int, ...]:
    if group == DEFAULT:
        return am.DEFAULT_EDGES
    return tuple(int(e) for e in group.removeprefix("edges-").split("."))


def marker_key(run_id: int, group: str) -> str:
    return f"analytics-refresh-{run_id}-{group}"


def claim(dataset_id: int, run_id: int, group: str) -> bool:
    """Take the run's refresh marker; False when another reader holds a live one."""
    key, now = marker_key(run_id, group), timezone.now()
    held = AgreementCache.objects.filter(dataset_id=dataset_id, key=key)
    taken = held.values_list("computed_at", flat=True).first()
    if taken is None:
        try:
            with transaction.atomic():
                AgreementCache.objects.create(dataset_id=dataset_id, key=key, cells={})
            return True
        except IntegrityError:  # another reader took it between the read and the insert
            return False
    if taken >= now - REFRESH_TIMEOUT:
        return False
    # A dead worker's marker: one reader's update matches the old time, the others' none
    # (PostgreSQL re-reads the row after the winner commits).
    return held.filter(computed_at=taken).update(computed_at=now) == 1


def release(dataset_id: int, run_id: int, group: str) -> None:
    AgreementCache.objects.filter(dataset_id=dataset_id, key=marker_key(run_id, group)).delete()


def ensure(dataset_id: int, run_id: int, group: str) -> bool:
    """Queue the run's refresh unless one is queued or running; True when this call queued
    it (with CELERY_TASK_ALWAYS_EAGER it has then already run). A broker that cannot be
    reached leaves no marker behind: the next reader tries again."""
    if not claim(dataset_id, run_id, group):
        return False
    try:
        if eager() and REFRESH_TASK not in current_app.tasks:
            # A web process imports the tasks modules only when a worker would (they are
            # autodiscovered lazily); unregistered, the task would go to send_task, which
            # never runs eagerly.
            current_app.loader.import_default_modules()
        current_app.signature(REFRESH_TASK, args=(run_id, group)).apply_async()
    except Exception:  # the reader still gets the figures kept; the next one retries
        logger.exception("Could not queue the analytics refresh of run %s (%s)", run_id, group)
        release(dataset_id, run_id, group)
        return False
    return True


def eager() -> bool:
    """Tasks run inside `apply_async` (CELERY_TASK_ALWAYS_EAGER, the demo without a
    worker): a queued refresh has run by the time `ensure` returns."""
    return bool(current_app.conf.task_always_eager)

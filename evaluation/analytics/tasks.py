"""Thin Celery tasks for analytics: load ids, call one service."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from celery import shared_task

from annotation.models import Dataset
from evaluation import task_names
from evaluation.agreement import kept as agreement_kept
from evaluation.analytics import figures, warmup
from evaluation.kept import cold, refresh
from evaluation.runs import overview, scores, stability
from evaluation.runs.models import Run

logger = logging.getLogger(__name__)


@shared_task(name=task_names.WARM_TASK, acks_late=True, reject_on_worker_lost=True)
def warm_analytics(run_id: int) -> bool:
    """Compute and keep a run's analytics figures when it ends; safe to run twice (the
    second finds nothing to replace). False when the run is gone."""
    run = Run.objects.select_related("dataset").filter(pk=run_id).first()
    if run is None or run.kind == Run.Kind.CROSS_EVALUATION:
        return False
    # The marker was taken by the receiver that queued this task, so that readers queue no
    # other: released when the figures are kept, kept as a failure when they raised.
    return _recompute(run, refresh.DEFAULT, lambda: figures.warm(run))


@shared_task(name=task_names.WARM_FIGURES_TASK, acks_late=True, reject_on_worker_lost=True)
def warm_figures(dataset_id: int | None = None) -> dict:
    """Warm every kept figure of one dataset (or all) before their first reader; safe to
    run twice (what is kept already is read, not counted again)."""
    with cold.counting():  # the background: what it finds cold, it counts
        warmed = warmup.warm(dataset_id)
    return {"queued": warmed.queued, "datasets": warmed.datasets, "failed": warmed.failed}


@shared_task(name=task_names.REFRESH_TASK, acks_late=True, reject_on_worker_lost=True)
def refresh_analytics(run_id: int, group: str = refresh.DEFAULT) -> bool:
    """Recompute a run's analytics figures (or, for the group `scores.REFRESH_GROUP`, its
    kept scores) for the current state, queued by the first reader who found them stale
    (`evaluation.kept.refresh`; the group `stability.REFRESH_GROUP`: its judge stability;
    `overview.REFRESH_GROUP`: an ended run's verdict counts).
    False when the run is gone or the recompute failed:
    logged, the old figures stay served, and the marker records the failure, so that
    readers try again after its backoff, not at once."""
    run = Run.objects.select_related("dataset").filter(pk=run_id).first()
    if run is None:
        return False
    if run.archived_at is not None:
        # Its verdicts are archived: a recount would find none. Its figures are those kept
        # when it was archived (evaluation.archive); the marker goes.
        refresh.release(run.dataset_id, run.pk, group)
        return False
    if group == scores.REFRESH_GROUP:
        return _recompute(run, group, lambda: scores.refresh_scores(run))
    if group == stability.REFRESH_GROUP:
        return _recompute(run, group, lambda: stability.run_stability(run))
    if group == overview.REFRESH_GROUP:
        return _recompute(run, group, lambda: overview.keep_counts(run))
    if group == agreement_kept.REFRESH_GROUP:
        return _recompute(run, group, lambda: agreement_kept.keep_cells(run.dataset, run))
    return _recompute(run, group, lambda: figures.refresh_group(run, group))


@shared_task(name=task_names.DATASET_REFRESH_TASK, acks_late=True, reject_on_worker_lost=True)
def refresh_dataset_figures(dataset_id: int, group: str) -> bool:
    """Count a dataset's kept figure of refresh group `group` (a review queue's order, the
    cross-evaluation figures of a source, the agreement counts without a run) for the
    current state, queued by the first reader who found it cold (evaluation.kept.cold).
    False when the dataset is gone or the count failed: logged, and the marker records the
    failure, so that readers try again after its backoff."""
    dataset = Dataset.objects.filter(pk=dataset_id).first()
    if dataset is None:
        return False
    return warmup.recompute_dataset(dataset, group)


def _recompute(run: Run, group: str, compute: Callable[[], None]) -> bool:
    started = time.monotonic()
    try:
        with cold.counting():  # a figure it reads that is cold is counted here
            compute()
    except Exception as error:
        logger.exception("Analytics refresh of run %s (%s) failed", run.pk, group)
        failure = refresh.fail(run.dataset_id, run.pk, group, error)
        logger.warning(
            "Analytics refresh of run %s (%s): %d failed tries in a row, next at %s",
            run.pk, group, failure.tries, failure.retry_at.isoformat(),
        )  # fmt: skip
        return False
    refresh.release(run.dataset_id, run.pk, group)
    # What a refresh of each group costs, for operators (and bench.web) to read: the
    # spacing after labels grows with it (evaluation.kept.refresh.spacing).
    logger.info("Refreshed run %s (%s) in %.2f s", run.pk, group, time.monotonic() - started)
    return True

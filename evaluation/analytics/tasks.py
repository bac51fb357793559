"""Thin Celery tasks for analytics: load ids, call one service."""

from __future__ import annotations

from celery import shared_task

from annotation.models import Dataset
from evaluation import task_names
from evaluation.analytics import figures, recount, warmup
from evaluation.kept import cold, refresh
from evaluation.runs.models import Run


@shared_task(name=task_names.WARM_TASK, acks_late=True, reject_on_worker_lost=True)
def warm_analytics(run_id: int) -> bool:
    """Compute and keep a run's analytics figures when it ends; safe to run twice (the
    second finds nothing to replace). False when the run is gone."""
    run = Run.objects.select_related("dataset").filter(pk=run_id).first()
    if run is None or run.kind == Run.Kind.CROSS_EVALUATION:
        return False
    # The marker was taken by the receiver that queued this task, so that readers queue no
    # other: released when the figures are kept, kept as a failure when they raised.
    return recount.recompute(run, refresh.DEFAULT, lambda: figures.warm(run))


@shared_task(name=task_names.WARM_FIGURES_TASK, acks_late=True, reject_on_worker_lost=True)
def warm_figures(dataset_id: int | None = None, paced: bool = True) -> dict:
    """Warm every kept figure of one dataset (or all) before their first reader; safe to
    run twice (what is kept already is read, not counted again)."""
    with cold.counting():  # the background: what it finds cold, it counts
        warmed = warmup.warm(dataset_id, paced=paced)
    return {
        "queued": warmed.queued, "datasets": warmed.datasets, "paced": warmed.paced,
        "failed": warmed.failed,
    }  # fmt: skip


@shared_task(name=task_names.WARM_OLDER_RUNS_TASK, acks_late=True, reject_on_worker_lost=True)
def warm_older_runs(dataset_id: int) -> bool:
    """One paced step of the warm-up: count the next cold figure of the dataset's older
    runs and queue the next step after a pause (evaluation.analytics.warmup.pace). False
    when the dataset is gone or nothing was left to count."""
    dataset = Dataset.objects.filter(pk=dataset_id).first()
    if dataset is None:
        return False
    return warmup.pace(dataset)


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
    return recount.recount_run(run, group)


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

"""Deleting a dataset in the background, in bounded batches.

`annotation.services.dataset_delete` marks the dataset (`deleting_since`), which hides it
from every user at once, and queues `PURGE_TASK`. The task deletes the dataset's rows
bottom-up, table by table: each batch selects at most `batch` ids and deletes them with one
raw DELETE in its own short transaction. Django's cascading `dataset.delete()` would load
every row of every related table into Python first (and send a signal per row), which on a
dataset with a million verdicts takes minutes in one transaction that a timeout rolls back.

Raw deletes send no signals. What the signals would have done is done here instead or is
moot: the review counters (`evaluation.kept.events`), the kept figures and the analytics
refresh markers belong to the dataset and are deleted with it; the audit history
(django-simple-history) writes no "deleted" row per checklist, criterion, label and
adjudication, and keeps the rows it has (see docs/operations.md).

Killed at any point, the task leaves the dataset marked and partly deleted; run again it
drains every step from the first (an emptied step costs one query) and the dataset row goes
last. The workers' doctor (`evaluation.runs.healing`) calls `sweep()`, which queues the
task again for a mark that made no progress for RUNS_LEASE_TIMEOUT seconds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone
from django_celery_beat.models import PeriodicTask, PeriodicTasks
from guardian.models import GroupObjectPermission, UserObjectPermission

from annotation.models import (
    Checklist,
    ChecklistEvent,
    Citation,
    Criterion,
    Dataset,
    DatasetGroupObjectPermission,
    DatasetUserObjectPermission,
    Query,
)
from annotation.services.datasets import queue_purge
from evaluation import task_names
from evaluation.alerts.models import AlertEvent, RegressionAlert
from evaluation.answers.models import Answer
from evaluation.archive import services as archive_services
from evaluation.checks.models import CriterionCheck
from evaluation.cross_evaluation.models import CrossEvaluationSettings
from evaluation.datasets import services as exports
from evaluation.datasets.models import DatasetExport
from evaluation.formality.models import FormalityAdvice
from evaluation.kept.models import (
    KeptFigure,
    KeptQueueRow,
    KeptRefresh,
    ReviewRevision,
    ScoresMove,
)
from evaluation.labels.models import Adjudication, HumanLabel, ReviewAssignment
from evaluation.rewards.models import RewardAudit, RewardBatch
from evaluation.runs.models import GradedScore, Run, RunArchive, RunTask, Verdict
from evaluation.schedules.models import RunSchedule

logger = logging.getLogger(__name__)

BATCH = 5000  # rows per DELETE: a fraction of a second each on PostgreSQL

# Paths from a row to its dataset, used in filters.
QUERY = "query__dataset"
ANSWER = "answer__query__dataset"
CRITERION = "criterion__checklist__query__dataset"
CHECKLIST = "checklist__query__dataset"


@dataclass(frozen=True)
class Step:
    """One table's rows of a dataset: `rows(dataset_id)` is the queryset to drain. Rows
    reachable by more than one path (a verdict by its run, its answer and its criterion)
    list each: a row of another path would block its parent's delete."""

    name: str
    rows: Callable[[int], QuerySet]
    order: tuple[str, ...] = ()


def _by(model, *paths: str) -> Callable[[int], QuerySet]:
    def rows(dataset_id: int) -> QuerySet:
        match = Q()
        for path in paths:
            match |= Q(**{f"{path}_id": dataset_id})
        return model._base_manager.filter(match)

    return rows


def _through(field, *paths: str) -> Callable[[int], QuerySet]:
    return _by(field.through, *paths)


def _guardian(model) -> Callable[[int], QuerySet]:
    # Generic object permissions have no foreign key to the dataset: nothing cascades them.
    # The content type is matched by name, not through ContentType's per-process cache (a
    # test database flushed under a long-lived worker gets new content type ids).
    def rows(dataset_id: int) -> QuerySet:
        meta = Dataset._meta
        return model.objects.filter(
            content_type__app_label=meta.app_label,
            content_type__model=meta.model_name,
            object_pk=str(dataset_id),
        )

    return rows


# Leaves first: every step's rows are referenced by no row of a later step.
STEPS: tuple[Step, ...] = (
    # Work queued for the dataset's runs: without its task row a judging delivery stops.
    Step("run tasks", _by(RunTask, "run__dataset", ANSWER)),
    Step("kept queue rows", _by(KeptQueueRow, "kept__dataset")),
    Step("kept figures", _by(KeptFigure, "dataset")),
    Step("analytics refreshes", _by(KeptRefresh, "dataset")),
    Step("scores moves", _by(ScoresMove, "dataset")),
    Step("alert events", _by(AlertEvent, "alert__dataset", "run__dataset", "previous__dataset")),
    Step("regression alerts", _by(RegressionAlert, "dataset")),
    Step("run schedules", _by(RunSchedule, "dataset")),
    Step("exports", _by(DatasetExport, "dataset")),
    # Reward traffic (evaluation.rewards): an audited item points at its query.
    Step("reward audits", _by(RewardAudit, "batch__dataset", QUERY)),
    Step("reward batches", _by(RewardBatch, "dataset")),
    Step("verdicts", _by(Verdict, "run__dataset", ANSWER, CRITERION)),
    Step("graded scores", _by(GradedScore, "run__dataset", ANSWER)),
    Step("run queries", _through(Run.queries, "run__dataset", QUERY)),
    Step("run systems", _through(Run.systems, "run__dataset")),
    Step("run archives", _by(RunArchive, "run__dataset")),
    Step("runs", _by(Run, "dataset")),
    Step("human labels", _by(HumanLabel, ANSWER, CRITERION)),
    Step("adjudications", _by(Adjudication, ANSWER, CRITERION)),
    Step("review assignments", _by(ReviewAssignment, ANSWER, CRITERION)),
    Step("answers", _by(Answer, QUERY, CHECKLIST)),
    Step("formality advice", _by(FormalityAdvice, CRITERION)),
    Step("criterion checks", _by(CriterionCheck, CRITERION)),
    Step("citations", _by(Citation, CRITERION)),
    Step("criterion source types", _through(Criterion.source_types, CRITERION)),
    # Newest first: a criterion's next version points at it (previous_version, RESTRICT,
    # checked at commit), and a later version always has a larger id.
    Step("criteria", _by(Criterion, CHECKLIST), order=("-pk",)),
    Step("checklist events", _by(ChecklistEvent, CHECKLIST)),
    Step("checklists", _by(Checklist, QUERY)),
    Step("query tags", _through(Query.tags, QUERY)),
    Step("query experts", _through(Query.assigned_experts, QUERY)),
    Step("queries", _by(Query, "dataset")),
    Step("cross-evaluation settings", _by(CrossEvaluationSettings, "dataset")),
    Step("review revision", _by(ReviewRevision, "dataset")),
    Step("user permissions", _by(DatasetUserObjectPermission, "content_object")),
    Step("group permissions", _by(DatasetGroupObjectPermission, "content_object")),
    Step("generic user permissions", _guardian(UserObjectPermission)),
    Step("generic group permissions", _guardian(GroupObjectPermission)),
)


def delete_batch(step: Step, dataset_id: int, batch: int) -> int:
    """Delete at most `batch` rows of one step in one short transaction; how many went."""
    rows = step.rows(dataset_id)
    with transaction.atomic():
        pks = list(rows.order_by(*step.order).values_list("pk", flat=True)[:batch])
        if not pks:
            return 0
        return rows.model._base_manager.filter(pk__in=pks)._raw_delete(rows.db)


def purge(*, dataset_id: int, batch: int | None = None) -> dict[str, int]:
    """Delete a dataset marked for deletion, rows bottom-up, the dataset row last. Safe to
    run again after any interruption, and alongside another run of itself. Returns the rows
    deleted per step (the dataset itself under "dataset"); {} for a dataset that is not
    marked (never deleted by mistake) or already gone."""
    if not Dataset.objects.filter(pk=dataset_id, deleting_since__isnull=False).exists():
        return {}
    batch = batch or BATCH
    deleted: dict[str, int] = {}
    _drop_schedules(dataset_id)
    _drop_exports(dataset_id)
    _drop_archives(dataset_id)
    for step in STEPS:
        while n := delete_batch(step, dataset_id, batch):
            deleted[step.name] = deleted.get(step.name, 0) + n
            _progress(dataset_id)
    # Everything below it is gone, so Django's cascade finds nothing left to load: it is a
    # dozen cheap queries, and it still deletes whatever a table added later would hold.
    with transaction.atomic():
        found = Dataset.objects.filter(pk=dataset_id, deleting_since__isnull=False).first()
        if found is not None:
            deleted["dataset"] = found.delete()[1].get("annotation.Dataset", 0)
    logger.info("Dataset %s deleted: %s", dataset_id, deleted)
    return deleted


def _progress(dataset_id: int) -> None:
    Dataset.objects.filter(pk=dataset_id).update(deletion_progress_at=timezone.now())


def _drop_schedules(dataset_id: int) -> None:
    """Beat's periodic tasks of the dataset's run schedules (the schedule row cascades from
    its task, not the other way round: deleting the schedule alone would leave beat firing
    runs of a dataset that no longer exists)."""
    tasks = RunSchedule.objects.filter(dataset_id=dataset_id).values("task_id")
    with transaction.atomic():
        if PeriodicTask.objects.filter(pk__in=tasks).delete()[0]:
            PeriodicTasks.update_changed()


def _drop_archives(dataset_id: int) -> None:
    """Archived runs' Parquet files hold the dataset's verdicts: they go with it (the rows
    go in STEPS)."""
    found = RunArchive.objects.filter(run__dataset_id=dataset_id).values_list("path", flat=True)
    for path in found.iterator():
        (archive_services.archive_dir() / path).unlink(missing_ok=True)


def _drop_exports(dataset_id: int) -> None:
    """Export files hold the dataset's content: they go with it (the rows go in STEPS)."""
    for export in DatasetExport.objects.filter(dataset_id=dataset_id).iterator():
        exports.export_path(export).unlink(missing_ok=True)


def send(dataset_id: int) -> None:
    """Queue PURGE_TASK for a dataset (annotation.services.datasets.queue_purge calls it
    through annotation.hooks; annotation does not import evaluation)."""
    task_names.signature(task_names.PURGE_TASK, (dataset_id,)).apply_async()


def sweep() -> int:
    """Queue the task again for every marked dataset whose deletion made no progress for
    RUNS_LEASE_TIMEOUT seconds (its worker was lost, or its message). Several sweepers are
    safe: the conditional UPDATE lets one of them win each dataset. Returns how many."""
    now = timezone.now()
    stale = now - timedelta(seconds=settings.RUNS_LEASE_TIMEOUT)
    stalled = Dataset.objects.filter(deleting_since__isnull=False).filter(
        Q(deletion_progress_at__lt=stale)
        | Q(deletion_progress_at__isnull=True, deleting_since__lt=stale)
    )
    requeued = 0
    for pk, progress in stalled.values_list("pk", "deletion_progress_at"):
        taken = Dataset.objects.filter(pk=pk, deletion_progress_at=progress).update(
            deletion_progress_at=now
        )
        if taken:
            queue_purge(pk)
            requeued += 1
    if requeued:
        logger.warning("Dataset deletion sweep: %s stalled deletion(s) queued again", requeued)
    return requeued

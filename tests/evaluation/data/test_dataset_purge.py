"""Deleting a dataset in the background: a real worker deletes every row of it and none of
another dataset built the same way; a deletion stopped midway is finished by running it
again; the workers' sweep queues a stalled deletion again."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.models import Criterion, Dataset
from evaluation.datasets import purge
from evaluation.runs.models import Verdict
from tests.evaluation.data.every_table import (
    NOT_PER_DATASET,
    build_dataset,
    build_shared,
    table_counts,
)

# What the broker's result backend and beat's change marker hold: infrastructure, not data.
INFRASTRUCTURE = ("django_celery_results.", "django_celery_beat.PeriodicTasks")


def _differences(before: dict[str, int], after: dict[str, int]) -> dict[str, tuple[int, int]]:
    ignored = NOT_PER_DATASET + INFRASTRUCTURE
    return {
        table: (before[table], after.get(table))
        for table in before
        if before[table] != after.get(table) and not table.startswith(ignored)
    }


def _wait_gone(pk: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while Dataset.objects.filter(pk=pk).exists():
        assert time.monotonic() < deadline, "the worker did not delete the dataset in time"
        time.sleep(0.2)


def test_a_worker_deletes_every_row_of_the_dataset_and_none_of_another(celery_worker):
    from audit.models import HistoricalCriterion  # noqa: F401 (registered by the audit app)

    shared = build_shared()
    kept = build_dataset(shared, "Kept dataset")
    before = table_counts()
    gone = build_dataset(shared, "Deleted dataset")
    built = table_counts()
    # The second dataset added rows to every table that hangs off a dataset.
    for step in purge.STEPS:
        assert step.rows(gone.pk).exists(), step.name
    assert _differences(before, built)
    checklists = list(
        Criterion.objects.filter(checklist__query__dataset=gone).values_list(
            "checklist_id", flat=True
        )
    )

    api = APIClient()
    api.force_authenticate(shared.admin)
    response = api.delete(f"/api/datasets/{gone.pk}/")
    assert response.status_code == 202, response.content
    _wait_gone(gone.pk)

    assert _differences(before, table_counts()) == {}
    assert Dataset.objects.filter(pk=kept.pk, deleting_since=None).exists()
    # The audit history of the deleted dataset's checklists stays (docs/operations.md).
    from simple_history.utils import get_history_model_for_model

    history = get_history_model_for_model(Criterion)
    assert history.objects.filter(checklist_id__in=checklists).exists()


def _marked(shared, name: str) -> Dataset:
    dataset = build_dataset(shared, name)
    Dataset.objects.filter(pk=dataset.pk).update(deleting_since=timezone.now())
    return dataset


def test_a_deletion_stopped_midway_stays_marked_and_running_it_again_finishes(
    db, monkeypatch, eager_refresh
):
    from evaluation.datasets.tasks import purge_dataset

    shared = build_shared()
    build_dataset(shared, "Kept dataset")
    before = table_counts()
    dataset = _marked(shared, "Deleted dataset")
    verdicts = Verdict.objects.filter(run__dataset=dataset).count()

    real = purge.delete_batch
    calls = []

    def dies_after_the_first_verdict_batch(step, dataset_id, batch):
        if step.name == "verdicts" and calls:
            raise RuntimeError("the worker was killed")
        deleted = real(step, dataset_id, batch)
        if step.name == "verdicts":
            calls.append(deleted)
        return deleted

    monkeypatch.setattr(purge, "BATCH", 4)
    monkeypatch.setattr(purge, "delete_batch", dies_after_the_first_verdict_batch)
    result = purge_dataset.apply(args=(dataset.pk,))
    assert result.failed() and "killed" in str(result.result)

    dataset.refresh_from_db()
    assert dataset.deleting_since is not None
    assert calls == [4]
    assert Verdict.objects.filter(run__dataset=dataset).count() == verdicts - 4
    assert Dataset.objects.filter(pk=dataset.pk).exists()

    monkeypatch.setattr(purge, "delete_batch", real)
    assert purge_dataset.apply(args=(dataset.pk,)).successful()
    assert not Dataset.objects.filter(pk=dataset.pk).exists()
    assert _differences(before, table_counts()) == {}
    # Once more on a dataset already gone: nothing to do, no error.
    assert purge.purge(dataset_id=dataset.pk) == {}


def test_the_purge_never_deletes_a_dataset_that_is_not_marked(db):
    shared = build_shared()
    dataset = build_dataset(shared, "Live dataset")
    before = table_counts()
    assert purge.purge(dataset_id=dataset.pk) == {}
    assert table_counts() == before


def test_the_sweep_queues_a_stalled_deletion_again_and_leaves_a_moving_one(db, eager_refresh):
    shared = build_shared()
    live = build_dataset(shared, "Live dataset")
    stalled = _marked(shared, "Stalled deletion")
    moving = _marked(shared, "Moving deletion")
    long_ago = timezone.now() - timedelta(hours=1)
    Dataset.objects.filter(pk=stalled.pk).update(deletion_progress_at=long_ago)
    Dataset.objects.filter(pk=moving.pk).update(deletion_progress_at=timezone.now())

    assert purge.sweep() == 1  # eager: the queued task ran here
    assert not Dataset.objects.filter(pk=stalled.pk).exists()
    assert Dataset.objects.filter(pk=moving.pk).exists()
    assert Dataset.objects.filter(pk=live.pk, deleting_since=None).exists()
    assert purge.sweep() == 0


@pytest.mark.parametrize("batch", [1, 1000])
def test_every_batch_size_deletes_the_same_rows(db, batch):
    shared = build_shared()
    build_dataset(shared, "Kept dataset")
    before = table_counts()
    dataset = _marked(shared, "Deleted dataset")
    verdicts = Verdict.objects.filter(run__dataset=dataset).count()
    criteria = Criterion.objects.filter(checklist__query__dataset=dataset).count()
    deleted = purge.purge(dataset_id=dataset.pk, batch=batch)
    assert (deleted["verdicts"], deleted["criteria"], deleted["dataset"]) == (verdicts, criteria, 1)
    assert _differences(before, table_counts()) == {}

"""Figures kept between requests in the database (AgreementCache rows), shared by every web
process: `remembered(dataset_id, prefix, state, compute)` returns what `compute()` returned
for the same `state`, or computes and stores it. Callers put in `state` everything the
figure depends on (a run's status, attempt and finish time; the dataset's review
revision), so a stored figure is never served after what it was computed from changed; a
new state replaces the rows stored under the same prefix. Values are JSON."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import transaction

from evaluation.models import AgreementCache, Run


def run_state(run: Run) -> str:
    """What moves whenever a run's verdicts may have changed: a run's verdicts are written
    while it runs, and again only when it is resumed, retried or imported again, which
    change its status, attempt or finish time."""
    finished = run.finished_at.isoformat() if run.finished_at else ""
    return f"{run.pk}.{run.status}.{run.attempt}.{finished}"


_reading = threading.local()


@contextmanager
def read_only() -> Iterator[None]:
    """Figures computed inside are not stored: the caller reads in a READ ONLY transaction
    (the dataset export's snapshot), where PostgreSQL refuses any write."""
    before = getattr(_reading, "only", False)
    _reading.only = True
    try:
        yield
    finally:
        _reading.only = before


def writes_refused() -> bool:
    """Inside `read_only()`: the database refuses any write, a temporary table included."""
    return getattr(_reading, "only", False)


def store(dataset_id: int, prefix: str, key: str, cells: Any) -> None:
    """Keep `cells` under `key`, replacing the rows stored under the same prefix; the one
    place figures are written, so that read-only readers skip it."""
    if getattr(_reading, "only", False):
        return
    # One transaction: a reader finds the old row or the new one, never neither (the
    # analytics pages serve the old one while the new one is computed). No savepoint
    # inside a caller's transaction: that one already makes the two writes one.
    with transaction.atomic(savepoint=False):
        stale = AgreementCache.objects.filter(dataset_id=dataset_id, key__startswith=f"{prefix}:")
        stale.exclude(key=key).delete()
        AgreementCache.objects.bulk_create(
            [AgreementCache(dataset_id=dataset_id, key=key, cells=cells)], ignore_conflicts=True
        )


def store_many(dataset_id: int, prefix: str, cells_by_key: dict[str, Any]) -> None:
    """Keep several rows of one figure (each key starting with `prefix:`), replacing every
    other row stored under the prefix. They are inserted together (bulk_create runs its
    batches in one transaction): a reader sees all of them or none."""
    if getattr(_reading, "only", False):
        return
    stale = AgreementCache.objects.filter(dataset_id=dataset_id, key__startswith=f"{prefix}:")
    stale.exclude(key__in=list(cells_by_key)).delete()
    AgreementCache.objects.bulk_create(
        [AgreementCache(dataset_id=dataset_id, key=k, cells=v) for k, v in cells_by_key.items()],
        ignore_conflicts=True,
    )


def key_for(prefix: str, state: str) -> str:
    return f"{prefix}:{hashlib.sha256(state.encode()).hexdigest()}"


def kept(dataset_id: int, prefix: str, state: str) -> Any | None:
    """What is stored for `state`, or None; never computes."""
    return kept_key(dataset_id, key_for(prefix, state))


def kept_key(dataset_id: int, key: str) -> Any | None:
    """What is stored under `key` (from key_for), or None."""
    found = AgreementCache.objects.filter(dataset_id=dataset_id, key=key)
    return next(iter(found.values_list("cells", flat=True)), None)


def kept_keys(dataset_id: int, keys: list[str]) -> dict[str, Any]:
    """The rows stored under `keys`, by key, in one query; missing keys are left out."""
    found = AgreementCache.objects.filter(dataset_id=dataset_id, key__in=keys)
    return dict(found.values_list("key", "cells"))


def remembered(dataset_id: int, prefix: str, state: str, compute: Callable[[], Any]) -> Any:
    value = kept(dataset_id, prefix, state)
    if value is None:
        value = compute()
        store(dataset_id, prefix, key_for(prefix, state), value)
    return value

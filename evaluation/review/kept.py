"""Review queues kept in order between requests (issue 14): the ordered items of a queue, at
one state, as KeptQueueRow rows under an AgreementCache row whose key holds that state.

A queue page then reads one page of rows by position (an index range), its count from the
header, and its filters as conditions on the rows: nothing proportional to the queue's
length happens on a request once the order is kept. The order is computed again when its
state changes (a label, an adjudication, a run), by the first reader.

Never stale: the key is the SHA-256 of everything the order depends on, so a changed state
is a different key and is never answered by the old rows; keeping a new state deletes the
headers and rows of every other state under the same prefix in the same transaction, and
rows left by headers deleted another way (a dataset deleted, the cache emptied). The header
and its rows commit together: a reader sees both or neither. A reader that found a header
just before a writer replaced it reads no rows for it (an empty page, once): the old order
is gone, never shown as if current.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from django.db import IntegrityError, transaction
from django.db.models import Q

from evaluation.kept import figures as figure_cache
from evaluation.models import AgreementCache, KeptQueueRow


def latest(dataset_id: int, prefix: str, base: str) -> AgreementCache | None:
    """The order kept under `prefix` if it was ordered from the same `base` (the runs and
    the policy: everything but the review revision), whatever labels and adjudications
    came since; None otherwise. For moving on to the next item (`selectors.next_item`):
    after each label the kept order is one label old, and ordering the queue again before
    every "next" would make a reviewer wait for a recount at every item. The items it
    gives are still checked live (done by the reader, adjudicated)."""
    found = AgreementCache.objects.filter(dataset_id=dataset_id, key__startswith=f"{prefix}:")
    header = found.order_by("-pk").first()
    if header is None or header.cells.get("base") != base:
        return None
    return header


def kept(
    dataset_id: int,
    prefix: str,
    state: str,
    fill: Callable[[int], dict],
    *,
    cacheable: bool,
    base: str = "",
) -> AgreementCache:
    """The header of the queue kept for `state`, filling it first when it is not kept yet:
    `fill(header_id)` writes the rows and returns the header's figures (total, adjudicated).

    An order that may change without its state moving (a running run's verdicts arrive
    without a new status) is not `cacheable`: it is computed for this request under a key
    of its own, and replaced by the next such request under the same prefix."""
    if not cacheable:
        state = f"{state}|live:{uuid.uuid4().hex}"
    key = figure_cache.key_for(prefix, state)
    found = AgreementCache.objects.filter(dataset_id=dataset_id, key=key).first()
    if found is not None:
        return found
    with transaction.atomic():
        stale = AgreementCache.objects.filter(
            dataset_id=dataset_id, key__startswith=f"{prefix}:"
        ).exclude(key=key)
        KeptQueueRow.objects.filter(
            Q(kept_id__in=stale.values("pk")) | ~Q(kept_id__in=AgreementCache.objects.values("pk"))
        ).delete()
        stale.delete()
        try:
            with transaction.atomic():
                header = AgreementCache.objects.create(dataset_id=dataset_id, key=key, cells={})
        except IntegrityError:
            # A concurrent reader computing the same state: this one waited on the unique
            # key until the other committed, and reads its rows instead of writing them.
            return AgreementCache.objects.get(dataset_id=dataset_id, key=key)
        header.cells = {**fill(header.pk), "base": base}
        header.save(update_fields=["cells"])
    return header

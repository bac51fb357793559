"""Review queues kept in order between requests (issue 14): the ordered items of a queue, at
one state, as KeptQueueRow rows under a KeptFigure row (the header) kept for that state.

A queue page then reads one page of rows by position (an index range), its count from the
header, and its filters as conditions on the rows: nothing proportional to the queue's
length happens on a request once the order is kept. The order is computed again when its
state changes (a label, an adjudication, a run), by the first reader.

Never stale: the header's key is the hash of everything the order depends on
(`evaluation.kept.readers.State`), so a changed state is a different key and is never
answered by the old rows; keeping a new state deletes the headers and rows of every other
state in the queue's slot in the same transaction, and rows left by headers deleted another
way (a dataset deleted, the figures emptied). The header and its rows commit together: a
reader sees both or neither. A reader that found a header just before a writer replaced it
reads no rows for it (an empty page, once): the old order is gone, never shown as if
current.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace

from django.db import IntegrityError, transaction
from django.db.models import Q

from evaluation.kept import counters, readers
from evaluation.kept import figures as kept_figures
from evaluation.kept.readers import Basis, State
from evaluation.models import KeptFigure, KeptQueueRow


def latest(basis: Basis) -> KeptFigure | None:
    """The order kept in the queue's slot if it was ordered from the same `basis` (the runs
    and the policy: everything but the review counters), whatever labels and adjudications
    came since; None otherwise. For moving on to the next item (`filters.next_item`):
    after each label the kept order is one label old, and ordering the queue again before
    every "next" would make a reviewer wait for a recount at every item. The items it
    gives are still checked live (done by the reader, adjudicated)."""
    header = kept_figures.slot(basis).order_by("-pk").first()
    if header is None or header.cells.get("base") != basis.digest:
        return None
    return header


def _newer(state: State) -> KeptFigure | None:
    """The order kept in the slot for the same basis at counters at least as new as
    `state`'s, if any: a label committed between this reader's read of the counters and
    its look-up moved the order past them (review.moves). Serving it is serving the
    current order; filling one at the older counters would throw the moved one away."""
    for header in kept_figures.slot(state).order_by("-pk")[:3]:
        counters = header.cells.get("counters")
        if header.cells.get("base") != state.basis.digest or counters is None:
            continue
        if all(new >= old for new, old in zip(counters, state.counters, strict=True)):
            return header
    return None


def kept(state: State, fill: Callable[[int], dict]) -> KeptFigure:
    """The header of the queue kept for `state`, filling it first when it is not kept yet:
    `fill(header_id)` writes the rows and returns the header's figures (total, adjudicated).

    An order that may change without its state moving (a running run's verdicts arrive
    without a new status) is not cacheable: it is computed for this request under a key of
    its own, and replaced by the next such request in the same slot."""
    base = state.basis.digest
    if not state.cacheable:
        live = f"{state.basis.text}|live:{uuid.uuid4().hex}"
        state = replace(state, basis=replace(state.basis, text=live))
    found = KeptFigure.objects.filter(dataset_id=state.dataset_id, key=state.key).first()
    if found is None and state.cacheable:
        found = _newer(state)
    if found is not None:
        return found
    with transaction.atomic():
        # One filler at a time per slot, and no label committing while it fills: the order
        # it keeps is at the current counters, so the next label moves it (review.moves).
        # Without both, a fill that outlasts the gap between two labels keeps an order
        # that is behind, every later reader fills again, and the fills pile up.
        kept_figures.fill_lock(state)
        if state.cacheable:
            state = readers.state_of(state.basis, counters.held(state.dataset_id))
        found = KeptFigure.objects.filter(dataset_id=state.dataset_id, key=state.key).first()
        if found is not None:  # kept by another reader while this one waited
            return found
        stale = kept_figures.slot(state).exclude(key=state.key)
        KeptQueueRow.objects.filter(
            Q(kept_id__in=stale.values("pk")) | ~Q(kept_id__in=KeptFigure.objects.values("pk"))
        ).delete()
        stale.delete()
        try:
            with transaction.atomic():
                header = kept_figures.row(state, {})
                header.save()
        except IntegrityError:
            # A concurrent reader computing the same state: this one waited on the unique
            # key until the other committed, and reads its rows instead of writing them.
            return KeptFigure.objects.get(dataset_id=state.dataset_id, key=state.key)
        header.cells = {**fill(header.pk), "base": base, "counters": list(state.counters)}
        if state.cacheable:  # what a label's move re-keys it from (review.moves)
            header.cells["basis"] = state.basis.text
        header.save(update_fields=["cells"])
    return header

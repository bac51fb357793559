"""One label's or adjudication's change, applied to the kept review queues: the queue
orders kept at the counters before the write move to the counters after it, with the one
row the item changes, so that no reader orders a queue again after a label.

A labelling row is an answer keyed by its human labels and its draw rank: the answer's
labels are counted again and its key follows (review.order). A disagreement row is an item
of an answer and a criterion: the fill's own statement, narrowed to that item
(disagreement_sql.item_row), says whether it is queued now and with which facts and key;
the old row goes, the new one comes, and the header's totals follow.

Why it stays right: this runs inside the writer's transaction after its bump
(`evaluation.kept.events.bump`), which locks the dataset's counter row until commit, so no
other label or adjudication commits in between; only an order kept at exactly the counters
before this write is moved (its key says so), and its new key is that of the counters
after. An order kept at other counters is left to the next reader to fill. The same
argument as the kept agreement counts' (evaluation.agreement.delta).
"""

from __future__ import annotations

from functools import cache

from evaluation.kept import readers
from evaluation.kept.events import Moved
from evaluation.kept.models import KeptFigure, KeptQueueRow
from evaluation.labels.models import HumanLabel
from evaluation.review import disagreement_sql, order
from evaluation.runs.models import Run

QUEUES = {f.kind: f for f in (readers.LABELLING_QUEUE, readers.DISAGREEMENT_QUEUE)}


def item_moved(moved: Moved, *, answer_id: int, criterion_id: int) -> None:
    """Move the dataset's kept queue orders past the write of one item's label or
    adjudication (`moved`: its bump). A few index look-ups per kept order."""
    before = moved.before
    headers = KeptFigure.objects.filter(
        dataset_id=moved.dataset_id, kind__in=list(QUEUES), revision=before.number
    )
    labels = cache(lambda: HumanLabel.objects.filter(answer_id=answer_id).count())
    for header in headers:
        basis = _basis(header)
        if basis is None or readers.state_of(basis, before).key != header.key:
            continue  # kept at other counters, or for a running run: the next reader fills
        if header.kind == readers.LABELLING_QUEUE.kind:
            _move_labelling(header, answer_id, labels())
        elif not _move_disagreement(header, answer_id, criterion_id):
            continue
        # By its old key: a reader filling the slot may have deleted the header meanwhile
        # (it then waited for this transaction, and its own order takes the slot).
        after = readers.state_of(basis, moved.after)
        KeptFigure.objects.filter(pk=header.pk, key=header.key).update(
            key=after.key, revision=after.revision,
            cells={**header.cells, "counters": list(after.counters)},
        )  # fmt: skip


def _basis(header: KeptFigure) -> readers.Basis | None:
    """The basis the header was kept for (what its key is made of but the counters)."""
    text = header.cells.get("basis")
    if text is None:
        return None
    figure = QUEUES[header.kind]
    return readers.Basis(header.dataset_id, figure, header.run_id, header.part, text, True)


def _move_labelling(header: KeptFigure, answer_id: int, labels: int) -> None:
    """The answer's row (when the policy queued it) takes its new count of labels."""
    row = KeptQueueRow.objects.filter(kept=header, answer_id=answer_id).first()
    if row is None or row.labels == labels:
        return
    row.labels = labels
    row.sort_key = order.labelling_key(labels, order.labelling_draw(row.sort_key))
    row.save(update_fields=["labels", "sort_key"])


def _move_disagreement(header: KeptFigure, answer_id: int, criterion_id: int) -> bool:
    """The item's row as the fill would write it now, in place of the old one, and the
    header's totals after it. False when the header does not say its runs (an order kept
    before they were kept with it): it is left to be filled again."""
    ids = header.cells.get("runs")
    if ids is None:
        return False
    found = Run.objects.in_bulk(ids)
    if len(found) != len(ids):  # a run deleted since: never read again
        return False
    ranked = [found[pk] for pk in ids]
    new = disagreement_sql.item_row(header.dataset_id, ranked, answer_id, criterion_id)
    rows = KeptQueueRow.objects.filter(kept=header, answer_id=answer_id, criterion_id=criterion_id)
    old = rows.first()
    cells = header.cells
    if old is not None:
        rows.delete()
        cells["adjudicated" if old.adjudicated else "total"] -= 1
    if new is not None:
        KeptQueueRow.objects.create(kept=header, **new)
        cells["adjudicated" if new["adjudicated"] else "total"] += 1
    return True

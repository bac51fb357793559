"""Filters of the review queues (system, category, criterion kind, expert, run), applied as
conditions on the kept queue rows; the choices the queue page offers; and the next open
item of a filtered queue ("next item", skipping what the reviewer skipped)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from annotation.access import AnyUser

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db.models import Exists, OuterRef, Q

from annotation.models import Checklist, Criterion, Dataset
from evaluation.answers.models import Answer, System
from evaluation.kept.models import KeptQueueRow
from evaluation.labels.models import Adjudication
from evaluation.review.selectors import (
    LABELLING,
    DisagreementItem,
    KeptQueue,
    LabellingItem,
    disagreement_queue,
    labelling_queue,
)
from evaluation.runs.models import Run


@dataclass(frozen=True)
class QueueFilters:
    """What a reviewer narrowed a queue to. `q` searches the query's text (and, in the
    disagreement queue, the criterion's); `system` keeps one system's answers; `kind` and
    `author` keep criteria of one kind or from one expert's checklist, so they narrow the
    disagreement queue only (a labelling item is a whole answer). `perfect` is not a
    filter but which answers the labelling queue draws from: the systems' (the default) or
    the perfect answers of cross-evaluation; it travels with the filters so that the
    review page's Next stays in the same queue."""

    q: str = ""
    kind: str = ""
    system: int | None = None
    author: int | None = None
    perfect: bool = False

    @property
    def active(self) -> bool:
        return bool(self.q or self.kind or self.system or self.author)

    def params(self) -> dict[str, object]:
        """The non-empty filters as URL parameters."""
        values = {
            "q": self.q, "kind": self.kind, "system": self.system, "author": self.author,
            "answers": "perfect" if self.perfect else "",
        }  # fmt: skip
        return {k: v for k, v in values.items() if v}


def _narrowed(
    items: KeptQueue, dataset: Dataset, filters: QueueFilters, *, criteria: bool
) -> KeptQueue:
    """The items matching every filter, as conditions on the kept rows (subqueries over the
    dataset's answers and criteria, indexed), so that a page still reads only its slice.
    `criteria`: the items are (answer, criterion), so kind, author and the criterion's
    text narrow them too; a labelling item is a whole answer."""
    if not filters.active:
        return items
    rows = items.rows
    answers = Answer.objects.filter(query__dataset=dataset)
    if filters.system:
        rows = rows.filter(answer_id__in=answers.filter(system_id=filters.system).values("pk"))
    if criteria and (filters.kind or filters.author):
        found = Criterion.objects.filter(checklist__query__dataset=dataset)
        if filters.kind:
            found = found.filter(kind=filters.kind)
        if filters.author:
            found = found.filter(checklist__author_id=filters.author)
        rows = rows.filter(criterion_id__in=found.values("pk"))
    if filters.q:
        searched = Q(answer_id__in=answers.filter(query__text__icontains=filters.q).values("pk"))
        if criteria:
            searched |= Q(
                criterion_id__in=Criterion.objects.filter(
                    checklist__query__dataset=dataset, text__icontains=filters.q
                ).values("pk")
            )
        rows = rows.filter(searched)
    if rows is items.rows:
        return items
    return items.narrowed(rows)


def filter_choices(
    dataset: Dataset, *, authors: bool = True, systems: list[int] | None = None
) -> dict[str, list]:
    """The systems with answers in the dataset and (when `authors`: the disagreement queue
    filters by them) the authors of its submitted checklists, for the filter menus. One
    query per list, none over every answer when the caller passes `systems` (the ids kept
    with the queue's order, KeptQueue.systems: a new or deleted answer changes that order's
    state); an author is a user with a submitted checklist in the dataset (EXISTS, not a
    DISTINCT over every checklist)."""

    if systems is None:
        found_systems = System.objects.filter(answers__query__dataset=dataset).distinct()
    else:
        found_systems = System.objects.filter(pk__in=systems)
    found = []
    if authors:
        submitted = Checklist.objects.filter(
            author=OuterRef("pk"), query__dataset=dataset, status=Checklist.Status.SUBMITTED
        )
        found = list(get_user_model().objects.filter(Exists(submitted)).order_by("username"))
    return {"systems": list(found_systems), "authors": found, "kinds": list(Criterion.Kind.choices)}


def filtered_queue(
    dataset: Dataset,
    user: AnyUser,
    *,
    queue: str,
    run: Run | None = None,
    mine: bool = False,
    filters: QueueFilters = QueueFilters(),
    recent: bool = False,
) -> tuple[KeptQueue, int]:
    """A queue's items after the filters, and the count of adjudicated items left out."""
    if queue == LABELLING:
        items = labelling_queue(
            dataset, user, run=run, mine=mine, recent=recent, perfect=filters.perfect
        )
        return _narrowed(items, dataset, filters, criteria=False), 0
    result = disagreement_queue(dataset, user, run=run, mine=mine, recent=recent)
    return _narrowed(result.items, dataset, filters, criteria=True), result.adjudicated


NEXT_BATCH = 50  # rows read at a time while looking for the next open item


def next_item(
    dataset: Dataset,
    user: AnyUser,
    *,
    queue: str,
    current: tuple[int, ...],
    run: Run | None = None,
    mine: bool = False,
    filters: QueueFilters | None = None,
    skipped: frozenset[tuple[int, ...]] = frozenset(),
) -> tuple[LabellingItem | DisagreementItem, tuple[int, int]] | None:
    """The item to review after `current` in the filtered queue, with its position there
    (X of N, 1-based). Labelling: the next answer in queue order that the user has not
    labelled completely. Disagreement: the next item in queue order (adjudicated ones have
    left it). Both wrap around. Items the reviewer skipped come only when nothing else is
    left. The position counts the whole filtered queue, the items done included.

    Read from the kept order a batch of rows at a time from `current` on (then from the
    start), so it usually costs one batch, not the queue. The order may be a few labels
    old (`recent`: the reviewer's own labels are what moved it); each candidate is checked
    live, and an end of the queue is confirmed on the current order."""
    found = _next_item(dataset, user, queue, current, run, mine, filters, skipped, recent=True)
    if found is None:
        found = _next_item(dataset, user, queue, current, run, mine, filters, skipped)
    return found


def _next_item(
    dataset: Dataset,
    user: AnyUser,
    queue: str,
    current: tuple[int, ...],
    run: Run | None,
    mine: bool,
    filters: QueueFilters | None,
    skipped: frozenset[tuple[int, ...]],
    *,
    recent: bool = False,
) -> tuple[LabellingItem | DisagreementItem, tuple[int, int]] | None:
    items, _ = filtered_queue(
        dataset, user, queue=queue, run=run, mine=mine, filters=filters or QueueFilters(),
        recent=recent,
    )  # fmt: skip
    rows = items.rows
    here = None
    if current:
        found = rows.filter(answer_id=current[0])
        if queue != LABELLING:
            found = found.filter(criterion_id=current[1] if len(current) > 1 else None)
        here = found.values_list("sort_key", flat=True).first()
    parts = [rows]
    if here is not None:  # after the current item, then from the start (wrapping round)
        parts = [rows.filter(sort_key__gt=here), rows.filter(sort_key__lt=here)]
    fallback = None  # the first open item, skipped or not: when only skipped ones are left
    for part in parts:
        after = ""  # every key sorts after the empty string
        while True:
            batch = list(part.filter(sort_key__gt=after)[:NEXT_BATCH])
            if not batch:
                break
            after = batch[-1].sort_key if len(batch) == NEXT_BATCH else None
            # A recent order may hold items adjudicated since it was kept: they are done.
            decided = _adjudicated(batch) if recent and queue != LABELLING else set()
            for row, item in zip(batch, items.make(batch), strict=True):
                if queue == LABELLING and item.done_by_me:
                    continue
                if item.key in decided:
                    continue
                if item.key not in skipped:
                    return item, (items.place(row.sort_key), len(items))
                if fallback is None:
                    fallback = item, row.sort_key
            if after is None:  # a short batch was the last of this part
                break
    if fallback is None:
        return None
    return fallback[0], (items.place(fallback[1]), len(items))


def _adjudicated(rows: list[KeptQueueRow]) -> set[tuple[int, int]]:
    found = Adjudication.objects.filter(
        answer_id__in={r.answer_id for r in rows}, criterion_id__in={r.criterion_id for r in rows}
    ).values_list("answer_id", "criterion_id")
    return set(found)

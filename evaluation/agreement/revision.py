"""The review revision of a dataset: bumped by every write that can change an agreement
figure, read to key the cached figures (evaluation.agreement.selectors).

Every save and delete of a human label or an adjudication bumps it by signal, inside the
writer's transaction, so the new number commits with the label: a reader sees both or
neither. Bulk writes send no signal: they call `changed(dataset_id)` themselves
(evaluation.data.review_imports, the test fixtures). Changes to what groups the items
(a criterion's kind or source types, a query's category, a system's, source type's,
category's or judge's name) arrive by signal (`connect()`); renames of site-wide names
bump every dataset. A new system answer changes no figure but joins the labelling queue:
it bumps only `answers`, which the queues are keyed by beside the number (`queues`).
Verdicts need no bump: a run's verdicts only change while it runs, is resumed or retried,
or is imported again, and the cache key holds the run's status, attempt and finish time,
which all of those change.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection
from django.db.models import F
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_delete

from annotation.models import Criterion, Dataset, Query, QueryCategory, SourceType


def changed(dataset_id: int, *, perfect_answers: bool = True, scores: bool = True) -> int | None:
    """Bump the dataset's revision; the new number (None for a dataset that is gone).
    `perfect_answers=False` for a label or adjudication of a system answer, which no
    cross-evaluation figure reads: their own number (`cross_evaluation`) stays.
    `scores=False` for a human label, which no run score reads (`scores` stays)."""
    return _bump(dataset_id, number=1, cross_evaluation=int(perfect_answers), scores=int(scores))


def _bump(
    dataset_id: int, *, number: int, cross_evaluation: int, scores: int, answers: int = 0
) -> int | None:
    """Add to the dataset's counters in one upsert; the new number (None for a dataset
    that is gone). Only for a dataset that still exists: deleting a dataset deletes its
    labels, criteria and queries, whose signals land here, and when the collector cannot
    order the deletion (criteria name their previous versions) some come after the
    dataset's own row. PostgreSQL and SQLite 3.24+ both speak the upsert: a write costs one
    statement more, and two writers of one dataset queue on its row only until they
    commit."""
    steps = [number, cross_evaluation, scores, answers]
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO evaluation_reviewrevision "
            "(dataset_id, number, cross_evaluation, scores, answers) "
            "SELECT id, %s, %s, %s, %s FROM annotation_dataset WHERE id = %s "
            "ON CONFLICT (dataset_id) DO UPDATE SET "
            "number = evaluation_reviewrevision.number + %s, "
            "cross_evaluation = evaluation_reviewrevision.cross_evaluation + %s, "
            "scores = evaluation_reviewrevision.scores + %s, "
            "answers = evaluation_reviewrevision.answers + %s "
            "RETURNING number",
            [*steps, dataset_id, *steps],
        )
        found = cursor.fetchone()
    return found[0] if found else None


def answers_added(dataset_id: int) -> None:
    """A system answer joined the dataset: only the queues' key moves (see `queues`)."""
    _bump(dataset_id, number=0, cross_evaluation=0, scores=0, answers=1)


def queues(dataset_id: int) -> str:
    """What the review queues' kept orders are keyed by: the revision and the count of
    system answers added (one query)."""
    from evaluation.models import ReviewRevision

    found = ReviewRevision.objects.filter(dataset_id=dataset_id).values_list("number", "answers")
    number, answers = next(iter(found), (0, 0))
    return f"{number}.a{answers}"


def all_changed() -> None:
    from evaluation.models import ReviewRevision

    ReviewRevision.objects.update(
        number=F("number") + 1,
        cross_evaluation=F("cross_evaluation") + 1,
        scores=F("scores") + 1,
    )


def current(dataset_id: int) -> int:
    from evaluation.models import ReviewRevision

    found = ReviewRevision.objects.filter(dataset_id=dataset_id).values_list("number", flat=True)
    return next(iter(found), 0)


def scores(dataset_id: int) -> int:
    """The revision less human labels (see `changed`)."""
    from evaluation.models import ReviewRevision

    found = ReviewRevision.objects.filter(dataset_id=dataset_id).values_list("scores", flat=True)
    return next(iter(found), 0)


def cross_evaluation(dataset_id: int) -> int:
    """The revision less system answers' labels and adjudications (see `changed`)."""
    from evaluation.models import ReviewRevision

    found = ReviewRevision.objects.filter(dataset_id=dataset_id).values_list(
        "cross_evaluation", flat=True
    )
    return next(iter(found), 0)


def _criterion_changed(sender, instance, **kwargs) -> None:
    if not isinstance(instance, Criterion):  # source_types changed from the source type side
        all_changed()
        return
    dataset_id = (
        Query.objects.filter(checklists__criteria=instance.pk)
        .values_list("dataset_id", flat=True)
        .first()
    )
    if dataset_id is not None:
        changed(dataset_id)


def _query_changed(sender, instance, **kwargs) -> None:
    changed(instance.dataset_id)


def _names_changed(sender, instance, **kwargs) -> None:
    all_changed()


_moving = threading.local()


@contextmanager
def moved_for(answer_id: int) -> Iterator[None]:
    """Inside, the writes of this answer's labels and adjudications do not bump the
    revision by signal: the caller (evaluation.agreement.delta) bumped it for them."""
    answers = _moving.__dict__.setdefault("answers", set())
    answers.add(answer_id)
    try:
        yield
    finally:
        answers.discard(answer_id)


def _item_changed(sender, instance, **kwargs) -> None:
    """A human label or an adjudication was saved or deleted."""
    if instance.answer_id in getattr(_moving, "answers", ()):
        return
    from evaluation.models import Answer, HumanLabel

    found = Answer.objects.filter(pk=instance.answer_id).values_list(
        "query__dataset_id", "checklist_id"
    )
    for dataset_id, checklist_id in found:
        changed(
            dataset_id,
            perfect_answers=checklist_id is not None,
            scores=not isinstance(instance, HumanLabel),
        )


def _answer_deleted(sender, instance, **kwargs) -> None:
    # Its labels and adjudications go with it.
    found = Query.objects.filter(pk=instance.query_id).values_list("dataset_id", flat=True)
    for dataset_id in found:
        changed(dataset_id)


def _answer_added(sender, instance, created: bool = False, **kwargs) -> None:
    """A new system answer joins the labelling queue (kept in order under `queues`:
    evaluation.review.kept) and changes no figure; a new perfect answer moves the
    cross-evaluation figures, as before. An edited answer changes neither."""
    if created:
        dataset_id = Query.objects.filter(pk=instance.query_id).values_list("dataset_id")[0][0]
        if instance.checklist_id is None:
            answers_added(dataset_id)
        else:
            changed(dataset_id)


def _dataset_deleted(sender, instance, **kwargs) -> None:
    """Deleting a dataset deletes its labels first, and their signals bump its revision:
    an upsert that can create the row after the deletion collected the dataset's rows.
    That row goes here, in the same transaction (foreign keys are checked at commit)."""
    from evaluation.models import ReviewRevision

    ReviewRevision.objects.filter(dataset_id=instance.pk).delete()


def connect() -> None:
    from evaluation.models import Adjudication, Answer, HumanLabel, Judge, System

    post_delete.connect(_dataset_deleted, sender=Dataset, dispatch_uid="rev-dataset-delete")

    for model in (HumanLabel, Adjudication):
        post_save.connect(_item_changed, sender=model, dispatch_uid=f"rev-{model.__name__}")
        post_delete.connect(_item_changed, sender=model, dispatch_uid=f"rev-{model.__name__}-d")

    post_save.connect(_criterion_changed, sender=Criterion, dispatch_uid="rev-criterion")
    pre_delete.connect(_criterion_changed, sender=Criterion, dispatch_uid="rev-criterion-del")
    pre_delete.connect(_answer_deleted, sender=Answer, dispatch_uid="rev-answer-delete")
    post_save.connect(_answer_added, sender=Answer, dispatch_uid="rev-answer-add")
    m2m_changed.connect(
        _criterion_changed, sender=Criterion.source_types.through, dispatch_uid="rev-sources"
    )
    post_save.connect(_query_changed, sender=Query, dispatch_uid="rev-query")
    post_delete.connect(_query_changed, sender=Query, dispatch_uid="rev-query-delete")
    for model in (System, Judge, SourceType, QueryCategory):
        post_save.connect(_names_changed, sender=model, dispatch_uid=f"rev-{model.__name__}")

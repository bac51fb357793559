"""The writes with many writers, said as events by signal receivers (connected in
EvaluationConfig.ready()): criteria, queries, site-wide names and answers are saved by
services, forms, the admin, imports of several kinds and tests, and a receiver is the one
place that sees them all. Each receiver runs in the writer's transaction.

Human labels and adjudications have no receiver: their writers (the review services, the
label and dataset imports) bump explicitly, and cascades reach them only through the
deletion of an answer, a criterion, a query or a dataset, which bump here.
"""

from __future__ import annotations

from django.db.models.signals import (
    m2m_changed,
    post_delete,
    post_init,
    post_save,
    pre_delete,
    pre_save,
)

from annotation.models import (
    Checklist,
    Criterion,
    CriterionGroup,
    Dataset,
    Query,
    QueryCategory,
    SourceType,
)
from evaluation.answers.models import Answer, System
from evaluation.judges.models import Judge
from evaluation.kept.events import Event, bump, bump_all
from evaluation.kept.models import ReviewRevision


def _criterion_changed(sender, instance, **kwargs) -> None:
    if not isinstance(instance, Criterion):  # source_types changed from the source type side
        bump_all(Event.CRITERION_CHANGED)
        return
    dataset_id = (
        Query.objects.filter(checklists__criteria=instance.pk)
        .values_list("dataset_id", flat=True)
        .first()
    )
    if dataset_id is not None:
        bump(dataset_id, Event.CRITERION_CHANGED)


def _group_changed(sender, instance, **kwargs) -> None:
    """A group's weight, parent or title is read by every strategy's score and group score."""
    dataset_id = (
        Query.objects.filter(checklists=instance.checklist_id)
        .values_list("dataset_id", flat=True)
        .first()
    )
    if dataset_id is not None:
        bump(dataset_id, Event.CRITERION_CHANGED)


def _scoring_of(checklist: Checklist) -> tuple:
    return checklist.__dict__.get("scoring"), checklist.__dict__.get("undecided")


def _scoring_loaded(sender, instance, **kwargs) -> None:
    """Remember the strategy and undecided setting a checklist was loaded with, for
    `_scoring_changed` (no query: a checklist is saved on every edit of the editor)."""
    instance._scoring_before = _scoring_of(instance)


def _scoring_changed(sender, instance, created: bool = False, **kwargs) -> None:
    """A checklist's own scoring strategy or undecided setting moves its scores (the
    dataset's are facts of the scores' state: evaluation.runs.scores); its other saves move
    nothing kept."""
    now = _scoring_of(instance)
    if created or getattr(instance, "_scoring_before", now) == now:
        return
    instance._scoring_before = now
    dataset_id = Query.objects.filter(pk=instance.query_id).values_list("dataset_id", flat=True)
    for found in dataset_id:
        bump(found, Event.CRITERION_CHANGED)


def _query_changed(sender, instance, **kwargs) -> None:
    bump(instance.dataset_id, Event.QUERY_CHANGED)


# What the figures show of each site-wide model: the names they group and label by. A save
# that changes none of these (a judge pointed at a new server, a new rate limit) leaves
# every kept figure true, and a new row is in no figure yet.
NAMES = {System: ("name", "version"), Judge: ("name",), SourceType: ("name",),
         QueryCategory: ("name",)}  # fmt: skip


def _names_before(sender, instance, **kwargs) -> None:
    """Remember the names the row had (one query), for `_names_changed` to compare."""
    if instance.pk is not None:
        found = sender.objects.filter(pk=instance.pk).values_list(*NAMES[sender]).first()
        instance._names_before = found


def _names_changed(sender, instance, created: bool = False, **kwargs) -> None:
    if created:
        return
    before = getattr(instance, "_names_before", None)
    if before is not None and tuple(before) == tuple(
        getattr(instance, field) for field in NAMES[sender]
    ):
        return
    bump_all(Event.NAME_CHANGED)


def _answer_deleted(sender, instance, **kwargs) -> None:
    found = Query.objects.filter(pk=instance.query_id).values_list("dataset_id", flat=True)
    for dataset_id in found:
        bump(dataset_id, Event.ANSWER_DELETED)


def _answer_added(sender, instance, created: bool = False, **kwargs) -> None:
    """A new system answer only joins the labelling queue; a new perfect answer moves the
    cross-evaluation figures. An edited answer changes neither."""
    if created:
        dataset_id = Query.objects.filter(pk=instance.query_id).values_list("dataset_id")[0][0]
        if instance.checklist_id is None:
            bump(dataset_id, Event.SYSTEM_ANSWER_ADDED)
        else:
            bump(dataset_id, Event.PERFECT_ANSWER_ADDED)


def _dataset_deleted(sender, instance, **kwargs) -> None:
    """Deleting a dataset deletes its criteria and answers first, and their receivers bump
    its counters: an upsert that can create the row after the deletion collected the
    dataset's rows. That row goes here, in the same transaction (foreign keys are checked
    at commit)."""
    ReviewRevision.objects.filter(dataset_id=instance.pk).delete()


def connect() -> None:
    post_delete.connect(_dataset_deleted, sender=Dataset, dispatch_uid="rev-dataset-delete")
    post_save.connect(_criterion_changed, sender=Criterion, dispatch_uid="rev-criterion")
    pre_delete.connect(_criterion_changed, sender=Criterion, dispatch_uid="rev-criterion-del")
    pre_delete.connect(_answer_deleted, sender=Answer, dispatch_uid="rev-answer-delete")
    post_save.connect(_answer_added, sender=Answer, dispatch_uid="rev-answer-add")
    m2m_changed.connect(
        _criterion_changed, sender=Criterion.source_types.through, dispatch_uid="rev-sources"
    )
    post_save.connect(_group_changed, sender=CriterionGroup, dispatch_uid="rev-group")
    pre_delete.connect(_group_changed, sender=CriterionGroup, dispatch_uid="rev-group-del")
    post_init.connect(_scoring_loaded, sender=Checklist, dispatch_uid="rev-scoring-init")
    post_save.connect(_scoring_changed, sender=Checklist, dispatch_uid="rev-scoring")
    post_save.connect(_query_changed, sender=Query, dispatch_uid="rev-query")
    post_delete.connect(_query_changed, sender=Query, dispatch_uid="rev-query-delete")
    for model in NAMES:
        pre_save.connect(_names_before, sender=model, dispatch_uid=f"rev-{model.__name__}-pre")
        post_save.connect(_names_changed, sender=model, dispatch_uid=f"rev-{model.__name__}")

"""Writing checklists: criteria, citations, ordering, submission and its history.

A draft may break guideline rules while the expert works; submission is refused while any
rule of severity "error" fails. Every change leaves a ChecklistEvent with a snapshot of the
criteria, so the history shows what the checklist looked like at each step.

Concurrency: every write locks the checklist row first and checks its status on the locked
row, so a request racing a submit either lands before it (and is validated with it) or is
refused; one checklist per (query, author) is a unique constraint, so two identical creates
give one checklist and one ChecklistExists.

Reviewers' work is never destroyed by an edit: a criterion carrying human labels,
adjudications or verdicts is archived instead of deleted, and rewording it archives it and
starts a new version, so the labels stay on the wording they judged.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING

from django.db import IntegrityError, transaction
from django.db.models import Count, F, Max, Value
from django.utils import timezone

from annotation import guidelines, hooks, scoring, signals
from annotation.models import (
    Checklist,
    ChecklistEvent,
    Citation,
    Criterion,
    Query,
    SourceType,
)
from annotation.validation import Report

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

# Autosave writes on every pause in typing; one history entry per burst of editing is enough.
EDIT_COALESCE_WINDOW = dt.timedelta(minutes=10)


class ChecklistNotEditable(Exception):
    """The checklist is submitted: reopen it first."""


class ChecklistExists(ChecklistNotEditable):
    """The author already has a checklist for this query (a repeated or concurrent create)."""


class CriterionArchived(ChecklistNotEditable):
    """The criterion was deleted or reworded while it carried reviewers' work: it is kept for
    its history and can no longer change."""


class ChecklistRejected(Exception):
    """Submission refused: the report lists the rules that failed."""

    def __init__(self, report: Report) -> None:
        self.report = report
        super().__init__(f"{len(report.errors)} guideline error(s) block submission")


@dataclass(frozen=True)
class CitationData:
    title: str
    url: str = ""
    source_type: SourceType | None = None
    published_on: dt.date | None = None


@dataclass(frozen=True)
class CriterionData:
    text: str
    kind: str = Criterion.Kind.FACT
    source_types: Sequence[SourceType] = ()
    notes: str = ""
    weight: Decimal = Decimal(1)
    is_core: bool = True
    citations: Sequence[CitationData] = field(default_factory=tuple)


@dataclass(frozen=True)
class CriterionWork:
    """Reviewers' and judges' work that rests on one criterion's wording."""

    labels: int = 0
    adjudications: int = 0
    verdicts: int = 0

    def __bool__(self) -> bool:
        return bool(self.labels or self.adjudications or self.verdicts)

    def describe(self) -> str:
        parts = [
            f"{n} {word}{'s' if n != 1 else ''}"
            for n, word in (
                (self.labels, "label"),
                (self.adjudications, "adjudication"),
                (self.verdicts, "verdict"),
            )
            if n
        ]
        return ", ".join(parts)


WORK_RELATIONS = ("human_labels", "adjudications", "verdicts")  # CriterionWork's fields, in order


def criteria_work(criterion_ids: Iterable[int]) -> dict[int, CriterionWork]:
    """The work resting on each criterion, in one query whatever the number of criteria:
    each relation's rows counted by criterion on its own table (its criterion index, with
    no join to the criteria), the three counts in one UNION ALL. Three grouped joins, one
    per relation, cost the checklist editor 15 ms at 720,000 verdicts."""
    ids = list(criterion_ids)
    if not ids:
        return {}
    counted = [
        Criterion._meta.get_field(relation)
        .related_model.objects.filter(criterion_id__in=ids)
        .order_by()
        .values("criterion_id")
        .annotate(relation=Value(index), n=Count("*"))
        .values_list("criterion_id", "relation", "n")
        for index, relation in enumerate(WORK_RELATIONS)
    ]
    counts = [dict.fromkeys(ids, 0) for _ in WORK_RELATIONS]
    for pk, relation, n in counted[0].union(*counted[1:], all=True):
        counts[relation][pk] = n
    labels, adjudications, verdicts = counts
    return {pk: CriterionWork(labels[pk], adjudications[pk], verdicts[pk]) for pk in ids}


def criterion_work(criterion: Criterion) -> CriterionWork:
    return criteria_work([criterion.pk])[criterion.pk]


def _lock(checklist_id: int) -> Checklist:
    """The checklist, locked for the transaction, or ChecklistNotEditable once submitted.
    The status is read after the lock: a submit that committed meanwhile is seen."""
    checklist = (
        Checklist.objects.select_for_update(of=("self",))
        .select_related("query__dataset")
        .get(pk=checklist_id)
    )
    if not checklist.is_editable:
        raise ChecklistNotEditable("This checklist is submitted. Reopen it to change it.")
    return checklist


def _lock_criterion(criterion: Criterion) -> Criterion:
    """The criterion as stored, with its checklist locked and editable."""
    checklist = _lock(criterion.checklist_id)
    criterion = Criterion.objects.get(pk=criterion.pk)
    if criterion.archived_at is not None:
        raise CriterionArchived(
            "This criterion was archived (deleted or reworded while reviewers' work rested "
            "on it). Reload the checklist."
        )
    criterion.checklist = checklist
    return criterion


def _snapshot(checklist: Checklist) -> list[dict]:
    return snapshots([checklist.pk])[checklist.pk]


def snapshots(checklist_ids: Iterable[int]) -> dict[int, list[dict]]:
    """The criteria of each checklist as they stand, for its history: three queries
    whatever the number of checklists (an import records thousands at once). Plain rows,
    not models with prefetched relations: for a checklist of 2,000 criteria these took
    a quarter of a second, most of it in building related managers."""
    ids = list(checklist_ids)
    out: dict[int, list[dict]] = {pk: [] for pk in ids}
    criteria = (
        Criterion.objects.filter(checklist_id__in=ids)
        .active()
        .order_by("checklist_id", "position", "id")
        .values_list("pk", "checklist_id", "position", "kind", "text")
    )
    of_checklists = {"criterion__checklist_id__in": ids, "criterion__archived_at__isnull": True}
    slugs: dict[int, list[str]] = defaultdict(list)
    through = Criterion.source_types.through
    # In SourceType's own order, as the prefetch gave them.
    for criterion_id, slug in (
        through.objects.filter(**of_checklists)
        .order_by("sourcetype__is_banned", "sourcetype__name")
        .values_list("criterion_id", "sourcetype__slug")
    ):
        slugs[criterion_id].append(slug)
    citations: dict[int, list[dict]] = defaultdict(list)
    for criterion_id, title, url, slug, published_on in (
        Citation.objects.filter(**of_checklists)
        .order_by("criterion_id", "id")
        .values_list("criterion_id", "title", "url", "source_type__slug", "published_on")
    ):
        citations[criterion_id].append(
            {
                "title": title,
                "url": url,
                "source_type": slug or "",
                "published_on": published_on.isoformat() if published_on else None,
            }
        )
    for pk, checklist_id, position, kind, text in criteria:
        out[checklist_id].append(
            {
                "id": pk,
                "position": position,
                "kind": kind,
                "text": text,
                "source_types": slugs.get(pk, []),
                "citations": citations.get(pk, []),
            }
        )
    return out


def _record(checklist: Checklist, by: AbstractBaseUser, action: str, detail: str = "") -> None:
    snapshot = _snapshot(checklist)
    if action == ChecklistEvent.Action.EDITED:
        last = checklist.events.order_by("-at", "-id").first()
        recent = last and timezone.now() - last.at < EDIT_COALESCE_WINDOW
        if recent and last.action == action and last.actor_id == by.pk:
            last.snapshot, last.detail = snapshot, detail
            last.save(update_fields=["snapshot", "detail"])
            return
    ChecklistEvent.objects.create(
        checklist=checklist, actor=by, action=action, detail=detail, snapshot=snapshot
    )
    Checklist.objects.filter(pk=checklist.pk).update(updated_at=timezone.now())


def _touch(checklist: Checklist, by: AbstractBaseUser, detail: str) -> None:
    _record(checklist, by, ChecklistEvent.Action.EDITED, detail)


@transaction.atomic
def checklist_start(*, query: Query, by: AbstractBaseUser) -> Checklist:
    """The expert's checklist for the query, created on first use."""
    checklist, created = Checklist.objects.get_or_create(query=query, author=by)
    if created:
        _record(checklist, by, ChecklistEvent.Action.CREATED)
        if query.status == Query.Status.OPEN:
            Query.objects.filter(pk=query.pk).update(status=Query.Status.IN_PROGRESS)
    return checklist


def _add_citations(criterion: Criterion, citations: Iterable[CitationData]) -> None:
    Citation.objects.bulk_create(
        Citation(
            criterion=criterion,
            title=c.title,
            url=c.url,
            source_type=c.source_type,
            published_on=c.published_on,
        )
        for c in citations
    )


def _create_criterion(checklist: Checklist, data: CriterionData, position: int) -> Criterion:
    criterion = Criterion.objects.create(
        checklist=checklist,
        position=position,
        text=data.text.strip(),
        kind=data.kind,
        notes=data.notes,
        weight=data.weight,
        is_core=data.is_core,
    )
    criterion.source_types.set(data.source_types)
    _add_citations(criterion, data.citations)
    return criterion


@transaction.atomic
def criterion_add(*, checklist: Checklist, by: AbstractBaseUser, data: CriterionData) -> Criterion:
    checklist = _lock(checklist.pk)
    last = checklist.criteria.active().aggregate(last=Max("position"))["last"] or 0
    scoring.validate_criterion_weight(checklist, data.weight, f"criterion {last + 1}")
    criterion = _create_criterion(checklist, data, last + 1)
    _touch(checklist, by, f"added criterion {criterion.position}")
    hooks.formality_request(dataset=checklist.query.dataset, criteria=[criterion])
    return criterion


@transaction.atomic
def criterion_update(
    *,
    criterion: Criterion,
    by: AbstractBaseUser,
    text: str | None = None,
    kind: str | None = None,
    source_types: Sequence[SourceType] | None = None,
    notes: str | None = None,
    weight: Decimal | None = None,
    is_core: bool | None = None,
) -> Criterion:
    """Change only the fields given (None leaves a field as it is). Returns the criterion as
    changed: a new version when the wording of a criterion carrying reviewers' work changed."""
    criterion = _lock_criterion(criterion)
    if weight is not None:
        scoring.validate_criterion_weight(
            criterion.checklist, weight, f"criterion {criterion.position}"
        )
    text = text.strip() if text is not None else None
    detail = f"edited criterion {criterion.position}"
    if text is not None and text != criterion.text and criterion_work(criterion):
        criterion = _new_version(criterion)
        detail = (
            f"reworded criterion {criterion.position} as a new version (the earlier wording "
            "keeps its labels, adjudications and verdicts)"
        )
    changes = {
        name: value
        for name, value in {
            "text": text,
            "kind": kind,
            "notes": notes,
            "weight": weight,
            "is_core": is_core,
        }.items()
        if value is not None
    }
    for name, value in changes.items():
        setattr(criterion, name, value)
    if changes:
        criterion.save(update_fields=list(changes))
    if source_types is not None:
        criterion.source_types.set(source_types)
    _touch(criterion.checklist, by, detail)
    if "text" in changes:
        hooks.formality_request(dataset=criterion.checklist.query.dataset, criteria=[criterion])
    return criterion


def _new_version(old: Criterion) -> Criterion:
    """Archive `old` and put a copy in its place (same position, fields, sources and
    citations) for the caller to change. Labels, adjudications and verdicts stay on `old`.
    The external id (unique in the checklist) moves to the new version, which imports then
    match; the archived one keeps it with its own id appended, e.g. "c-12@57"."""
    external_id = old.external_id
    if external_id:
        old.external_id = f"{external_id}@{old.pk}"[-200:]
        old.save(update_fields=["external_id"])
    new = Criterion.objects.create(
        external_id=external_id,
        checklist=old.checklist,
        position=old.position,
        text=old.text,
        kind=old.kind,
        notes=old.notes,
        weight=old.weight,
        is_core=old.is_core,
        scoring_enabled=old.scoring_enabled,
        previous_version=old,
    )
    new.source_types.set(old.source_types.all())
    Citation.objects.bulk_create(
        Citation(
            criterion=new,
            title=c.title,
            url=c.url,
            source_type_id=c.source_type_id,
            published_on=c.published_on,
        )
        for c in old.citations.all()
    )
    old.archived_at = timezone.now()
    old.save(update_fields=["archived_at"])
    new.checklist = old.checklist
    return new


@transaction.atomic
def criterion_delete(*, criterion: Criterion, by: AbstractBaseUser) -> CriterionWork:
    """Delete the criterion, or archive it when reviewers' work rests on it. Returns that
    work (falsy when the criterion was really deleted)."""
    criterion = _lock_criterion(criterion)
    checklist = criterion.checklist
    position = criterion.position
    work = criterion_work(criterion)
    if work:
        criterion.archived_at = timezone.now()
        criterion.save(update_fields=["archived_at"])
    else:
        criterion.delete()
    checklist.criteria.active().filter(position__gt=position).update(position=F("position") - 1)
    if work:
        _touch(checklist, by, f"archived criterion {position} ({work.describe()} kept)")
    else:
        _touch(checklist, by, f"deleted criterion {position}")
    return work


@transaction.atomic
def criterion_move(*, criterion: Criterion, by: AbstractBaseUser, offset: int) -> Criterion:
    """Move up (offset -1) or down (+1) by swapping with the neighbour; no-op at the ends."""
    criterion = _lock_criterion(criterion)
    checklist = criterion.checklist
    neighbour = checklist.criteria.active().filter(position=criterion.position + offset).first()
    if neighbour is None:
        return criterion
    neighbour.position, criterion.position = criterion.position, neighbour.position
    Criterion.objects.bulk_update([neighbour, criterion], ["position"])
    _touch(checklist, by, f"moved criterion to {criterion.position}")
    return criterion


@transaction.atomic
def citation_add(*, criterion: Criterion, by: AbstractBaseUser, data: CitationData) -> Citation:
    criterion = _lock_criterion(criterion)
    citation = Citation.objects.create(
        criterion=criterion,
        title=data.title,
        url=data.url,
        source_type=data.source_type,
        published_on=data.published_on,
    )
    _touch(criterion.checklist, by, f"cited a source in criterion {criterion.position}")
    return citation


@transaction.atomic
def criterion_replace_citations(
    *, criterion: Criterion, by: AbstractBaseUser, citations: Sequence[CitationData]
) -> None:
    criterion = _lock_criterion(criterion)
    criterion.citations.all().delete()
    _add_citations(criterion, citations)
    _touch(criterion.checklist, by, f"replaced citations of criterion {criterion.position}")


@transaction.atomic
def citation_delete(*, citation: Citation, by: AbstractBaseUser) -> None:
    checklist = _lock_criterion(citation.criterion).checklist
    citation.delete()
    _touch(checklist, by, "removed a citation")


@transaction.atomic
def checklist_create_with_criteria(
    *, query: Query, by: AbstractBaseUser, criteria: Sequence[CriterionData], submit: bool = False
) -> Checklist:
    """One call for a whole checklist (the API's bulk create). All or nothing. A second
    create for the same query and author, even a concurrent one, raises ChecklistExists: the
    unique constraint decides, never a read made before the insert."""
    exists = "You already have a checklist for this query; edit that one."
    if Checklist.objects.filter(query=query, author=by).exists():
        raise ChecklistExists(exists)
    # A new checklist follows its dataset's strategy.
    scoring.validate_scoring(
        scoring.strategy_of(query.dataset.scoring),
        ((f"criteria[{n}]", data.weight) for n, data in enumerate(criteria)),
        field="weight",
    )
    try:
        with transaction.atomic():
            checklist = Checklist.objects.create(query=query, author=by)
    except IntegrityError:  # a concurrent create committed first
        raise ChecklistExists(exists) from None
    _record(checklist, by, ChecklistEvent.Action.CREATED)
    if query.status == Query.Status.OPEN:
        Query.objects.filter(pk=query.pk).update(status=Query.Status.IN_PROGRESS)
    created = [
        _create_criterion(checklist, data, position)
        for position, data in enumerate(criteria, start=1)
    ]
    _touch(checklist, by, f"created with {len(criteria)} criteria")
    hooks.formality_request(dataset=query.dataset, criteria=created)
    if submit:
        checklist_submit(checklist=checklist, by=by)
        checklist.refresh_from_db()
    return checklist


@transaction.atomic
def checklist_set_scoring(
    *,
    checklist: Checklist,
    by: AbstractBaseUser,
    strategy: str | None = None,
    undecided: str | None = None,
) -> Checklist:
    """Set a checklist's own scoring strategy and undecided setting (None: unchanged; "":
    follow the dataset's). A strategy that cannot score one of its criteria' weights is
    refused (scoring.ScoringRefused on `scoring`), an unknown value too (a ValidationError
    naming the field), before anything changes. Its runs' scores follow by themselves
    (evaluation.kept.receivers moves their state)."""
    checklist = (
        Checklist.objects.select_for_update(of=("self",))
        .select_related("query__dataset")
        .get(pk=checklist.pk)
    )
    changes = {
        name: value
        for name, value in (("scoring", strategy), ("undecided", undecided))
        if value is not None and value != getattr(checklist, name)
    }
    if not changes:
        return checklist
    for name, value in changes.items():
        setattr(checklist, name, value)
    checklist.clean_fields(
        exclude=[f.name for f in Checklist._meta.fields if f.name not in changes]
    )
    if "scoring" in changes:
        scoring.validate_checklist_scoring(checklist, checklist.scoring)
    checklist.save(update_fields=[*changes, "updated_at"])
    detail = ", ".join(f"{name} {value or 'as the dataset'}" for name, value in changes.items())
    _touch(checklist, by, f"scoring: {detail}")
    return checklist


@transaction.atomic
def checklist_submit(*, checklist: Checklist, by: AbstractBaseUser) -> Report:
    """Validate under the dataset's guideline and submit, or raise ChecklistRejected."""
    checklist = _lock(checklist.pk)
    guideline = guidelines.guideline_for(checklist.query.dataset)
    report = guidelines.checklist_report(checklist, guidelines.config_of(guideline))
    if report.blocking:
        raise ChecklistRejected(report)
    now = timezone.now()
    checklist.status = Checklist.Status.SUBMITTED
    checklist.guideline = guideline
    checklist.submitted_at = now
    checklist.first_submitted_at = checklist.first_submitted_at or now
    checklist.save(
        update_fields=["status", "guideline", "submitted_at", "first_submitted_at", "updated_at"]
    )
    _record(checklist, by, ChecklistEvent.Action.SUBMITTED)
    transaction.on_commit(
        lambda: signals.checklist_submitted.send(sender=Checklist, checklist=checklist, by=by)
    )
    return report


@transaction.atomic
def checklist_reopen(*, checklist: Checklist, by: AbstractBaseUser) -> Checklist:
    checklist = Checklist.objects.select_for_update(of=("self",)).get(pk=checklist.pk)
    if checklist.status != Checklist.Status.SUBMITTED:
        return checklist
    checklist.status = Checklist.Status.REOPENED
    checklist.save(update_fields=["status", "updated_at"])
    _record(checklist, by, ChecklistEvent.Action.REOPENED)
    return checklist

"""Writes of the review: human labels (set, undo, delete), adjudications with optimistic
concurrency, and queue assignments. Callers check access first (evaluation.review.
access); these functions check the rules of the state change itself.

Undo: `label_set` returns the state the label had before (`LabelChange.previous`: None when
the label is new). The caller keeps it (the review page keeps a short stack per answer in the
session; an API client keeps it itself) and hands it to `label_restore`, which deletes a
label that was new or puts the previous label and note back. Nothing else is stored, so a
label's history is not a table: `updated_at` says when it last changed.

What a label or adjudication write moves besides its row is in one function,
`_item_written`: the bump of the dataset's review counters, the agreement delta and the
queue moves, called in that order in the write's transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction

from annotation import roles
from annotation.access import dataset_permissions
from annotation.models import Criterion
from evaluation.agreement import delta
from evaluation.answers.models import Answer
from evaluation.kept import events, score_moves
from evaluation.labels.models import Adjudication, HumanLabel, Label, ReviewAssignment
from evaluation.review import moves

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

T = TypeVar("T")


class ReviewError(Exception):
    """An illegal review change; the message says why, in words a reviewer understands."""


class AdjudicationConflict(Exception):
    """The item was decided since the reviewer looked: `current` is that decision (None if it
    was removed). Nothing was written; the reviewer may decide again knowingly."""

    def __init__(self, current: Adjudication | None) -> None:
        self.current = current
        if current is None:
            message = "The adjudication you saw no longer exists."
        else:
            who = current.decided_by.get_username() if current.decided_by else "someone"
            message = (
                f"{who} decided {current.label} at {current.decided_at:%Y-%m-%d %H:%M} "
                f"(version {current.version}) after you loaded the item."
            )
        super().__init__(message)


@dataclass(frozen=True)
class LabelState:
    label: str
    note: str


@dataclass(frozen=True)
class LabelChange:
    label: HumanLabel
    previous: LabelState | None  # None: the label did not exist before
    created: bool


def _check_item(answer: Answer, criterion: Criterion) -> None:
    # Views resolve the criterion through permissions.reviewable_criterion; this keeps a
    # service call from elsewhere (API, shell) from labelling a criterion of another query.
    if criterion.checklist.query_id != answer.query_id:
        raise ReviewError("The criterion does not belong to the answer's query.")


def _check_label(label: str) -> None:
    if label not in Label.values:
        raise ReviewError(f"A label is one of {', '.join(Label.values)}, not {label!r}.")


def _item_written(
    answer: Answer | int, criterion_id: int, *, adjudication: bool, write: Callable[[], T]
) -> T:
    """`write()` one item's label (or adjudication), and move with it everything kept of
    the dataset's figures, in the caller's transaction. Every label and adjudication write
    of the review goes through here; the imports bump once for the whole file instead.

    In this order:
    1. the bump (evaluation.kept.events): the dataset's review counters move as the event
       says. An upsert that locks the dataset's counter row until commit, so no other
       label or adjudication commits between the figures read here and those kept.
    2. the agreement delta (evaluation.agreement.delta): the agreement counts kept at the
       counters before the bump move by the item's counts before and after the write. The
       item's counts are read once before the bump, so that the other writers who queue
       on the counter row wait for fewer statements, and again under the lock only when a
       write committed in between.
    3. the queue moves (evaluation.review.moves): the kept queue orders move the item's
       row and take the counters after the bump.
    4. the scores note (evaluation.kept.score_moves): an adjudication notes its answer under
       the `scores` counter it moved to, so that the runs' kept scores are brought up to
       date by counting that answer again, not the whole run.
    """
    dataset_id, event = events.answer_item(answer, adjudication=adjudication)
    answer_id = answer.pk if isinstance(answer, Answer) else answer
    early = delta.count_early(dataset_id, answer_id=answer_id, criterion_id=criterion_id)
    after = events.bump(dataset_id, event)  # 1.
    if after is None:  # the dataset is being deleted: nothing is kept for it
        return write()
    moved = events.Moved(dataset_id, event, after)
    agreement = delta.counts_before(early, moved)  # 2., the item as it was
    written = write()
    delta.apply_after(agreement)  # 2., the item as it is
    moves.item_moved(moved, answer_id=answer_id, criterion_id=criterion_id)  # 3.
    score_moves.note(moved, answer_id=answer_id)  # 4.
    return written


@transaction.atomic
def label_set(
    *,
    answer: Answer,
    criterion: Criterion,
    reviewer: AbstractBaseUser,
    label: str,
    note: str | None = None,
) -> LabelChange:
    """Create or update the reviewer's label on the item (one per rater). A note of None
    keeps the note already there, so labelling from the keyboard never wipes one."""
    _check_label(label)
    _check_item(answer, criterion)
    rater = reviewer.get_username()
    existing = (
        HumanLabel.objects.select_for_update()
        .filter(answer=answer, criterion=criterion, rater=rater)
        .first()
    )
    return _item_written(
        answer, criterion.pk, adjudication=False,
        write=lambda: _write_label(answer, criterion, reviewer, rater, existing, label, note),
    )  # fmt: skip


def _write_label(
    answer: Answer,
    criterion: Criterion,
    reviewer: AbstractBaseUser,
    rater: str,
    existing: HumanLabel | None,
    label: str,
    note: str | None,
) -> LabelChange:
    if existing is None:
        try:
            with transaction.atomic():
                created = HumanLabel.objects.create(
                    answer=answer, criterion=criterion, rater=rater, reviewer=reviewer,
                    label=label, note=note or "", source=HumanLabel.Source.APP,
                )  # fmt: skip
            return LabelChange(label=created, previous=None, created=True)
        except IntegrityError:
            # The same reviewer labelled the item from another tab at the same moment.
            existing = HumanLabel.objects.select_for_update().get(
                answer=answer, criterion=criterion, rater=rater
            )
    previous = LabelState(existing.label, existing.note)
    existing.label = label
    if note is not None:
        existing.note = note
    existing.reviewer = reviewer
    existing.source = HumanLabel.Source.APP
    existing.save(update_fields=["label", "note", "reviewer", "source", "updated_at"])
    return LabelChange(label=existing, previous=previous, created=False)


@transaction.atomic
def label_restore(
    *,
    answer: Answer,
    criterion: Criterion,
    reviewer: AbstractBaseUser,
    previous: LabelState | None,
) -> HumanLabel | None:
    """Undo: put the reviewer's label on the item back to `previous` (delete it when None)."""
    if previous is None:
        mine = HumanLabel.objects.filter(
            answer=answer, criterion=criterion, rater=reviewer.get_username()
        )
        _item_written(answer, criterion.pk, adjudication=False, write=mine.delete)
        return None
    return label_set(
        answer=answer, criterion=criterion, reviewer=reviewer, label=previous.label,
        note=previous.note,
    ).label  # fmt: skip


@transaction.atomic
def label_delete(*, label: HumanLabel, by: AbstractBaseUser) -> None:
    """Reviewers delete their own labels only; imported and others' labels stay."""
    if label.rater != by.get_username():
        raise PermissionDenied("You may delete only your own labels.")
    _item_written(label.answer_id, label.criterion_id, adjudication=False, write=label.delete)


@transaction.atomic
def adjudicate(
    *,
    answer: Answer,
    criterion: Criterion,
    by: AbstractBaseUser,
    label: str,
    reason: str = "",
    expected_version: int | None,
) -> Adjudication:
    """Decide the item's final label against the version the reviewer saw (None: they saw
    no adjudication). A different current version raises AdjudicationConflict carrying the
    current decision; otherwise the decision is written and its version goes up by one.

    The row lock (select_for_update) makes the read-compare-write one step for concurrent
    deciders of an existing adjudication. Two first decisions at once both find no row; the
    unique constraint lets one insert win and the other becomes the conflict.
    """
    _check_label(label)
    _check_item(answer, criterion)
    current = (
        Adjudication.objects.select_for_update(of=("self",))
        .select_related("decided_by")
        .filter(answer=answer, criterion=criterion)
        .first()
    )
    if current is None:
        if expected_version is not None:
            raise AdjudicationConflict(None)
        try:
            with transaction.atomic():
                return _item_written(
                    answer, criterion.pk, adjudication=True,
                    write=lambda: Adjudication.objects.create(
                        answer=answer, criterion=criterion, label=label, reason=reason,
                        decided_by=by, version=1,
                    ),
                )  # fmt: skip
        except IntegrityError:
            winner = (
                Adjudication.objects.select_related("decided_by")
                .filter(answer=answer, criterion=criterion)
                .first()
            )
            raise AdjudicationConflict(winner) from None
    if expected_version != current.version:
        raise AdjudicationConflict(current)
    current.label = label
    current.reason = reason
    current.decided_by = by
    current.version = current.version + 1
    fields = ["label", "reason", "decided_by", "decided_at", "version"]
    _item_written(
        answer, criterion.pk, adjudication=True,
        write=lambda: current.save(update_fields=fields),
    )  # fmt: skip
    return current


def _check_queue_item(queue: str, criterion: Criterion | None) -> None:
    if queue == ReviewAssignment.Queue.LABELLING and criterion is not None:
        raise ReviewError("Labelling-queue items are whole answers: no criterion.")
    if queue == ReviewAssignment.Queue.DISAGREEMENT and criterion is None:
        raise ReviewError("Disagreement-queue items need a criterion.")
    if queue not in ReviewAssignment.Queue.values:
        raise ReviewError(f"Unknown queue {queue!r}.")


@transaction.atomic
def assignment_set(
    *,
    queue: str,
    answer: Answer,
    criterion: Criterion | None = None,
    assignee: AbstractBaseUser,
    by: AbstractBaseUser,
) -> ReviewAssignment:
    """Give a queue item to a reviewer. A dataset admin assigns anyone who may review the
    dataset, replacing any assignee; a reviewer may take an unassigned item for themselves."""
    _check_queue_item(queue, criterion)
    if criterion is not None:
        _check_item(answer, criterion)
    dataset = answer.query.dataset
    perms = dataset_permissions(by, dataset)
    if roles.REVIEW not in dataset_permissions(assignee, dataset):
        raise ReviewError(f"{assignee.get_username()} does not review this dataset.")
    existing = (
        ReviewAssignment.objects.select_for_update(of=("self",))
        .select_related("assignee")
        .filter(queue=queue, answer=answer, criterion=criterion)
        .first()
    )
    if roles.CHANGE not in perms:
        if roles.REVIEW not in perms or assignee.pk != by.pk:
            raise PermissionDenied("Only the dataset's admins assign items to others.")
        if existing is not None and existing.assignee_id != by.pk:
            raise ReviewError(f"Already assigned to {existing.assignee.get_username()}.")
    if existing is None:
        return ReviewAssignment.objects.create(
            queue=queue, answer=answer, criterion=criterion, assignee=assignee, assigned_by=by
        )
    existing.assignee = assignee
    existing.assigned_by = by
    existing.save(update_fields=["assignee", "assigned_by"])
    return existing


@transaction.atomic
def assignment_clear(
    *, queue: str, answer: Answer, criterion: Criterion | None = None, by: AbstractBaseUser
) -> None:
    """Unassign an item: admins any, reviewers their own."""
    _check_queue_item(queue, criterion)
    existing = ReviewAssignment.objects.filter(queue=queue, answer=answer, criterion=criterion)
    is_admin = roles.CHANGE in dataset_permissions(by, answer.query.dataset)
    if not is_admin and existing.exclude(assignee=by).exists():
        raise PermissionDenied("Only the dataset's admins unassign others' items.")
    existing.delete()

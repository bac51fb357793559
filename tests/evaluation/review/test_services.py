"""Review writes: labels with undo, adjudication with optimistic concurrency, assignment."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied

from evaluation.labels.models import Adjudication, HumanLabel, ReviewAssignment
from evaluation.review import services as review
from tests.support.builders import checklisted_query

pytestmark = pytest.mark.django_db


@pytest.fixture
def item(reviewed_dataset):
    made = checklisted_query(reviewed_dataset, criteria=3, answers=1)
    return made.answers[0], made.criteria[0]


def test_a_label_is_one_per_rater_and_keeps_who_and_when(item, reviewer, owner):
    answer, criterion = item
    first = review.label_set(answer=answer, criterion=criterion, reviewer=reviewer, label="pass")
    assert first.created and first.previous is None
    again = review.label_set(
        answer=answer, criterion=criterion, reviewer=reviewer, label="fail", note="No figure."
    )
    assert not again.created and again.previous == review.LabelState("pass", "")
    review.label_set(answer=answer, criterion=criterion, reviewer=owner, label="pass")
    labels = HumanLabel.objects.filter(answer=answer, criterion=criterion).order_by("rater")
    assert [(lbl.rater, lbl.label, lbl.reviewer_id) for lbl in labels] == [
        ("owner", "pass", owner.pk), ("reviewer", "fail", reviewer.pk),
    ]  # fmt: skip
    assert labels[1].created_at is not None and labels[1].note == "No figure."


def test_a_keyboard_label_keeps_the_note(item, reviewer):
    answer, criterion = item
    review.label_set(answer=answer, criterion=criterion, reviewer=reviewer, label="fail", note="x")
    change = review.label_set(answer=answer, criterion=criterion, reviewer=reviewer, label="pass")
    assert change.label.note == "x" and change.previous == review.LabelState("fail", "x")


def test_undo_deletes_a_new_label_and_restores_a_changed_one(item, reviewer):
    answer, criterion = item
    new = review.label_set(answer=answer, criterion=criterion, reviewer=reviewer, label="pass")
    review.label_restore(
        answer=answer, criterion=criterion, reviewer=reviewer, previous=new.previous
    )
    assert not HumanLabel.objects.exists()
    review.label_set(answer=answer, criterion=criterion, reviewer=reviewer, label="pass", note="ok")
    change = review.label_set(answer=answer, criterion=criterion, reviewer=reviewer, label="fail")
    review.label_restore(
        answer=answer, criterion=criterion, reviewer=reviewer, previous=change.previous
    )
    label = HumanLabel.objects.get()
    assert (label.label, label.note) == ("pass", "ok")


def test_bad_labels_and_foreign_criteria_are_refused(item, reviewer, reviewed_dataset):
    answer, criterion = item
    with pytest.raises(review.ReviewError, match="pass, fail"):
        review.label_set(answer=answer, criterion=criterion, reviewer=reviewer, label="Pass")
    other_criteria = checklisted_query(reviewed_dataset, criteria=1, answers=1).criteria
    with pytest.raises(review.ReviewError, match="query"):
        review.label_set(
            answer=answer, criterion=other_criteria[0], reviewer=reviewer, label="pass"
        )
    assert not HumanLabel.objects.exists()


def test_only_the_rater_deletes_a_label(item, reviewer, owner):
    answer, criterion = item
    label = review.label_set(answer=answer, criterion=criterion, reviewer=reviewer, label="pass")
    with pytest.raises(PermissionDenied):
        review.label_delete(label=label.label, by=owner)
    review.label_delete(label=label.label, by=reviewer)
    assert not HumanLabel.objects.exists()


def test_adjudication_versions_and_the_second_decider_gets_a_conflict(item, reviewer, owner):
    answer, criterion = item
    first = review.adjudicate(
        answer=answer, criterion=criterion, by=reviewer, label="fail", reason="Figure wrong.",
        expected_version=None,
    )  # fmt: skip
    assert first.version == 1
    # The owner loaded the item before the reviewer decided: they saw no adjudication.
    with pytest.raises(review.AdjudicationConflict) as conflict:
        review.adjudicate(
            answer=answer, criterion=criterion, by=owner, label="pass", expected_version=None
        )
    current = conflict.value.current
    assert (current.label, current.reason, current.decided_by, current.version) == (
        "fail", "Figure wrong.", reviewer, 1,
    )  # fmt: skip
    assert "reviewer decided fail" in str(conflict.value)
    # Having seen version 1, the owner decides again knowingly.
    second = review.adjudicate(
        answer=answer, criterion=criterion, by=owner, label="pass", reason="Rounded figure.",
        expected_version=1,
    )  # fmt: skip
    assert second.version == 2
    with pytest.raises(review.AdjudicationConflict):
        review.adjudicate(
            answer=answer, criterion=criterion, by=reviewer, label="fail", expected_version=1
        )
    stored = Adjudication.objects.get()
    assert (stored.label, stored.decided_by, stored.version) == ("pass", owner, 2)


def test_assignment_admins_assign_reviewers_take_unassigned_items(
    item, reviewer, second_reviewer, owner, collaborator
):
    answer, criterion = item
    queue = ReviewAssignment.Queue.DISAGREEMENT
    taken = review.assignment_set(
        queue=queue, answer=answer, criterion=criterion, assignee=reviewer, by=reviewer
    )
    assert taken.assignee == reviewer
    with pytest.raises(review.ReviewError, match="Already assigned to reviewer"):
        review.assignment_set(
            queue=queue, answer=answer, criterion=criterion, assignee=second_reviewer,
            by=second_reviewer,
        )  # fmt: skip
    with pytest.raises(PermissionDenied):
        review.assignment_set(
            queue=queue, answer=answer, criterion=criterion, assignee=second_reviewer, by=reviewer
        )
    with pytest.raises(review.ReviewError, match="does not review"):
        review.assignment_set(
            queue=queue, answer=answer, criterion=criterion, assignee=collaborator, by=owner
        )
    moved = review.assignment_set(
        queue=queue, answer=answer, criterion=criterion, assignee=second_reviewer, by=owner
    )
    assert moved.assignee == second_reviewer and ReviewAssignment.objects.count() == 1
    with pytest.raises(PermissionDenied):
        review.assignment_clear(queue=queue, answer=answer, criterion=criterion, by=reviewer)
    review.assignment_clear(queue=queue, answer=answer, criterion=criterion, by=second_reviewer)
    assert not ReviewAssignment.objects.exists()
    with pytest.raises(review.ReviewError, match="whole answers"):
        review.assignment_set(
            queue="labelling", answer=answer, criterion=criterion, assignee=owner, by=owner
        )
    whole = review.assignment_set(queue="labelling", answer=answer, assignee=owner, by=owner)
    assert whole.criterion is None

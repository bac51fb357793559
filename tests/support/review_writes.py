"""Every kind of review write on one item, through the review services, in an order where
each applies (label, change, delete, label with a note, undo, adjudicate, decide again):
for the tests that check that kept figures follow each one."""

from __future__ import annotations

from collections.abc import Callable

from evaluation.labels.models import Adjudication, HumanLabel
from evaluation.review import services as review


def version(answer, criterion) -> int | None:
    """The version of the item's adjudication a reviewer would have seen (None: none)."""
    found = Adjudication.objects.filter(answer=answer, criterion=criterion).first()
    return found.version if found else None


def every_kind_of_write(answer, criterion, reviewer) -> list[Callable[[], object]]:
    rater = reviewer.get_username()
    return [
        lambda: review.label_set(answer=answer, criterion=criterion, reviewer=reviewer,
                                 label="pass"),
        lambda: review.label_set(answer=answer, criterion=criterion, reviewer=reviewer,
                                 label="fail"),
        lambda: review.label_delete(
            label=HumanLabel.objects.get(answer=answer, criterion=criterion, rater=rater),
            by=reviewer),
        lambda: review.label_set(answer=answer, criterion=criterion, reviewer=reviewer,
                                 label="pass", note="Back."),
        lambda: review.label_restore(answer=answer, criterion=criterion, reviewer=reviewer,
                                     previous=None),
        lambda: review.adjudicate(answer=answer, criterion=criterion, by=reviewer, label="fail",
                                  expected_version=version(answer, criterion)),
        lambda: review.adjudicate(answer=answer, criterion=criterion, by=reviewer, label="pass",
                                  expected_version=version(answer, criterion)),
    ]  # fmt: skip

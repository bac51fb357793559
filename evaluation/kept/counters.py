"""The review counters of a dataset (ReviewRevision), as readers see them.

Each counter goes up when something some figures read changes, and is left alone by what
those figures never read (which events move which counter: `events.MOVES`; which figure
reads which counter: `readers`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from django.db import connection

from evaluation.kept.models import ReviewRevision


class Counter(StrEnum):
    """A counter, named by its ReviewRevision column."""

    # Everything any figure reads, but new system answers: labels, adjudications, criteria,
    # queries, names, answers deleted, perfect answers added, imports.
    NUMBER = "number"
    # NUMBER less the labels and adjudications of system answers: the cross-evaluation
    # figures read perfect answers only.
    CROSS_EVALUATION = "cross_evaluation"
    # NUMBER less human labels: run scores read verdicts and adjudications, never a label.
    SCORES = "scores"
    # System answers added: they change no figure, but join the labelling queue.
    ANSWERS = "answers"
    # Human labels of perfect answers: read only by the cross-evaluation figures counted
    # from reviewers' labels (source "human"), beside CROSS_EVALUATION; the figures from the
    # judges' grades (the page's default) read no label, so reviewers labelling perfect
    # answers do not make their next reader recount them (3 s at the full preset).
    PERFECT_LABELS = "perfect_labels"


@dataclass(frozen=True)
class Counters:
    """The counters of one dataset at one moment (all zero before its first write)."""

    number: int = 0
    cross_evaluation: int = 0
    scores: int = 0
    answers: int = 0
    perfect_labels: int = 0

    def __getitem__(self, counter: Counter) -> int:
        return getattr(self, counter.value)


def held(dataset_id: int) -> Counters:
    """The dataset's counters, held until the transaction ends (PostgreSQL: FOR SHARE):
    no writer's bump, and so no label or adjudication, commits meanwhile. For a reader
    that counts a figure afresh: what it keeps is then the figure at these counters, which
    are still the current ones when it is kept, and the next label moves it by its delta
    (evaluation.agreement.delta, evaluation.review.moves) instead of finding it behind and
    leaving every later reader to count again. Writers wait for the count (seconds, once
    after an import or a criterion change), readers do not."""
    columns = ", ".join(Counter)
    share = " FOR SHARE" if connection.vendor == "postgresql" else ""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {columns} FROM evaluation_reviewrevision WHERE dataset_id = %s{share}",  # noqa: S608
            [dataset_id],
        )  # only the Counter names go into the text
        found = cursor.fetchone()
    return Counters(*found) if found else Counters()


def counters(dataset_id: int) -> Counters:
    """The dataset's counters now: one query."""
    found = ReviewRevision.objects.filter(dataset_id=dataset_id).values_list(*Counter)
    return next((Counters(*row) for row in found), Counters())

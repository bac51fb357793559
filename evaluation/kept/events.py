"""What happened to a dataset, and which review counters it moves: `bump(dataset_id,
event)` is the one way a counter moves, and `MOVES` the one table of which event moves
which counter.

Call `bump` inside the writer's transaction, as its first write when the writer reads kept
figures after it (evaluation.agreement.delta): the upsert locks the dataset's counter row
until the transaction ends, so no other writer's bump, and so no other write that moves a
figure, commits in between, and a reader sees the new counters with the write or neither.
A writer outside any transaction bumps after its write: a reader between the two keeps
figures under the old counters, which nobody reads again.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum
from types import MappingProxyType

from django.db import connection
from django.db.models import F

from evaluation.answers.models import Answer
from evaluation.kept.counters import Counter, Counters
from evaluation.kept.models import ReviewRevision


class Event(Enum):
    """What happened. Bulk writers, which send no signal, say it themselves; so do the
    review services for each label and adjudication. Criteria, queries, names and answers
    have many writers: receivers say it for them (evaluation.kept.receivers)."""

    LABEL = "a human label of a system answer was saved or deleted"
    PERFECT_ANSWER_LABEL = "a human label of a perfect answer was saved or deleted"
    ADJUDICATION = "an adjudication of a system answer was saved or deleted"
    PERFECT_ANSWER_ADJUDICATION = "an adjudication of a perfect answer was saved or deleted"
    SYSTEM_ANSWER_ADDED = "a system answer was added"
    PERFECT_ANSWER_ADDED = "a perfect answer was added"
    ANSWER_DELETED = "an answer was deleted, with its labels and adjudications"
    CRITERION_CHANGED = "a criterion was saved or deleted, or its source types changed"
    QUERY_CHANGED = "a query was saved or deleted"
    NAME_CHANGED = "a system, judge, source type or category was renamed (site-wide)"
    LABELS_IMPORTED = "human labels (and adjudications) were written in bulk"
    DATASET_IMPORTED = "a dataset file was imported into the dataset"


# Every figure's counters: what a change of structure (criteria, queries, names) or a bulk
# write moves. Imports move all three although a label alone leaves SCORES: an import may
# write any table, and its readers recount once.
_EVERY_FIGURE = frozenset(
    {Counter.NUMBER, Counter.CROSS_EVALUATION, Counter.SCORES, Counter.PERFECT_LABELS}
)

MOVES: MappingProxyType[Event, frozenset[Counter]] = MappingProxyType({
    # Run scores never read a label; cross-evaluation reads perfect answers' labels only
    # when counted from reviewers' labels (PERFECT_LABELS), never from judges' grades.
    Event.LABEL: frozenset({Counter.NUMBER}),
    Event.PERFECT_ANSWER_LABEL: frozenset({Counter.NUMBER, Counter.PERFECT_LABELS}),
    Event.ADJUDICATION: frozenset({Counter.NUMBER, Counter.SCORES}),
    Event.PERFECT_ANSWER_ADJUDICATION: _EVERY_FIGURE,
    # A system answer carries no label, adjudication or verdict of a finished run: only
    # the queues, which list it, read it.
    Event.SYSTEM_ANSWER_ADDED: frozenset({Counter.ANSWERS}),
    Event.PERFECT_ANSWER_ADDED: _EVERY_FIGURE,
    Event.ANSWER_DELETED: _EVERY_FIGURE,
    Event.CRITERION_CHANGED: _EVERY_FIGURE,
    Event.QUERY_CHANGED: _EVERY_FIGURE,
    Event.NAME_CHANGED: _EVERY_FIGURE,
    Event.LABELS_IMPORTED: _EVERY_FIGURE,
    Event.DATASET_IMPORTED: _EVERY_FIGURE,
})  # fmt: skip


def item_event(*, perfect_answer: bool, adjudication: bool) -> Event:
    """The event of one label or adjudication write on an answer of either kind."""
    if adjudication:
        return Event.PERFECT_ANSWER_ADJUDICATION if perfect_answer else Event.ADJUDICATION
    return Event.PERFECT_ANSWER_LABEL if perfect_answer else Event.LABEL


def answer_item(answer: Answer | int, *, adjudication: bool) -> tuple[int, Event]:
    """The dataset of an answer and the event of a label (or adjudication) written on it:
    no query for an answer whose query is loaded (the review's views load it to check
    access), one for an id. Neither an answer's query nor its dataset ever changes."""
    if isinstance(answer, Answer) and Answer.query.is_cached(answer):
        dataset_id, checklist_id = answer.query.dataset_id, answer.checklist_id
    else:
        answer_id = answer.pk if isinstance(answer, Answer) else answer
        found = Answer.objects.filter(pk=answer_id).values_list("query__dataset_id", "checklist_id")
        dataset_id, checklist_id = found.get()
    return dataset_id, item_event(
        perfect_answer=checklist_id is not None, adjudication=adjudication
    )


def _steps(event: Event) -> list[int]:
    """What the event adds to each counter, in Counter order."""
    return [int(counter in MOVES[event]) for counter in Counter]


def bump(dataset_id: int, event: Event) -> Counters | None:
    """Move the dataset's counters as `event` says; the counters after (None for a dataset
    that is gone).

    One upsert, only for a dataset that still exists: deleting a dataset deletes its
    criteria and queries, whose receivers land here, and when the collector cannot order
    the deletion (criteria name their previous versions) some come after the dataset's own
    row. PostgreSQL and SQLite 3.24+ both speak the upsert: a write costs one statement
    more, and two writers of one dataset queue on its row only until they commit."""
    steps = _steps(event)
    columns = ", ".join(Counter)
    values = ", ".join("%s" for _ in Counter)
    moved = ", ".join(f"{c} = evaluation_reviewrevision.{c} + %s" for c in Counter)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO evaluation_reviewrevision (dataset_id, {columns}) "  # noqa: S608
            f"SELECT id, {values} FROM annotation_dataset WHERE id = %s "
            f"ON CONFLICT (dataset_id) DO UPDATE SET {moved} RETURNING {columns}",
            [*steps, dataset_id, *steps],
        )  # only the Counter names go into the text; every value is a parameter
        found = cursor.fetchone()
    return Counters(*found) if found else None


def bump_all(event: Event) -> None:
    """Move every dataset's counters as `event` says: a site-wide name changed."""
    ReviewRevision.objects.update(
        **{counter.value: F(counter.value) + 1 for counter in MOVES[event]}
    )


def before(counters: Counters, event: Event) -> Counters:
    """The counters as they were before `bump` moved them to `counters` for `event`."""
    return replace(counters, **{counter.value: counters[counter] - 1 for counter in MOVES[event]})


@dataclass(frozen=True)
class Moved:
    """A write's bump: the dataset, the event and the counters after it."""

    dataset_id: int
    event: Event
    after: Counters

    @property
    def before(self) -> Counters:
        return before(self.after, self.event)

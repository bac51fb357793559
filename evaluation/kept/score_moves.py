"""Which answers' scores moved between two values of a dataset's `scores` counter.

Run scores are kept per state, and their state holds the `scores` counter, which every
adjudication moves: nightly runs grade the same answers, so one adjudication left every
hot run's kept scores behind, and each was counted again whole (30 runs at 21.6 million
verdicts: 26 counts, 62 s of a worker, in a load of 120 s with 19 adjudications). An
adjudication changes the scores of its own answer only. So its writer notes here the
counter value its bump gave and the answer (`note`, in the adjudication's transaction,
after the bump), and a refresh that finds scores kept at counter O when the counter is at
N counts again only the answers noted in between (`moved_between`), when every value in
(O, N] has its note: a value with none was moved by something else (a criterion edited,
an import, a renamed system), and the whole run is counted again.

Why the notes are complete: the bump locks the dataset's counter row until commit, so the
note of value V commits with the write that moved the counter to V, and a reader that sees
the counter at N sees every note up to N.
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from evaluation.kept.counters import Counter
from evaluation.kept.events import MOVES, Moved
from evaluation.kept.models import ScoresMove

# Notes older than this go (`prune`): scores kept at a counter older than the notes left are
# counted again whole, which is what happened to them before the notes existed.
KEPT_FOR = timedelta(days=7)


def note(moved: Moved, *, answer_id: int) -> None:
    """Note that `moved` (a label's or adjudication's bump) moved the scores of one answer:
    one insert, only for events that move the `scores` counter (adjudications)."""
    if Counter.SCORES in MOVES[moved.event]:
        # An upsert: a note left under the same value (counters that started again from
        # zero) is replaced, never a reason for the adjudication to fail.
        note_ = ScoresMove(
            dataset_id=moved.dataset_id, scores=moved.after.scores, answer_id=answer_id
        )
        ScoresMove.objects.bulk_create(
            [note_], update_conflicts=True, unique_fields=["dataset", "scores"],
            update_fields=["answer_id", "moved_at"],
        )  # fmt: skip


def moved_between(dataset_id: int, kept_at: int, now: int) -> set[int] | None:
    """The answers whose scores moved after counter `kept_at`, up to `now`; None when some
    value in between has no note (the move was not one answer's: count everything again).
    One query."""
    if now < kept_at:
        return None
    found = ScoresMove.objects.filter(
        dataset_id=dataset_id, scores__gt=kept_at, scores__lte=now
    ).values_list("scores", "answer_id")
    values, answers = set(), set()
    for value, answer_id in found:
        values.add(value)
        answers.add(answer_id)
    return answers if len(values) == now - kept_at else None


def prune(dataset_id: int) -> int:
    """Delete the dataset's notes older than KEPT_FOR; how many went."""
    old = ScoresMove.objects.filter(dataset_id=dataset_id, moved_at__lt=timezone.now() - KEPT_FOR)
    return old.delete()[0]

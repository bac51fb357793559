"""After adjudications, a run's kept scores are brought up to date by counting again only
the adjudicated answers (evaluation.kept.score_moves, runs.scores._patched), and what is
kept then equals a count of every answer, row for row; whatever else moved the scores in
between (a criterion edited, a threshold, a method, an import, notes pruned) makes the
refresh count every answer, as before."""

from __future__ import annotations

import random
from dataclasses import asdict
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation import services
from annotation.models import Criterion
from evaluation.kept.counters import counters
from evaluation.kept.models import KeptFigure, ScoresMove
from evaluation.labels.models import Adjudication
from evaluation.review import services as review
from evaluation.runs import scores
from evaluation.runs.models import Run, Verdict
from tests.evaluation.agreement.labelled import build_labelled
from tests.support.builders import written
from tests.support.review_writes import version

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def small_pieces(monkeypatch):
    # Pieces of 2 answers: an adjudication rewrites one piece and moves the others.
    monkeypatch.setattr(scores, "CHUNK", 2)


@pytest.fixture
def runs(reviewed_dataset):
    """Two nightly runs grading the same answers with the same votes (the second a copy of
    the first, but for one query's answers, which it did not judge), scores kept."""
    first = build_labelled(reviewed_dataset, queries=4, criteria=5, systems=3, seed=3).run
    second = Run.objects.create(
        dataset=reviewed_dataset, panel=first.panel, status=Run.Status.DONE,
        started_at=first.started_at, finished_at=first.finished_at + timedelta(days=1),
        snapshot=first.snapshot,
    )  # fmt: skip
    skipped = Verdict.objects.filter(run=first).order_by("answer__query_id")[0].answer.query_id
    Verdict.objects.bulk_create(
        Verdict(
            run=second, answer_id=v.answer_id, criterion_id=v.criterion_id, judge_id=v.judge_id,
            sample=v.sample, outcome=v.outcome, rationale=v.rationale,
            cache_key=f"{second.pk}-{v.pk}",
        )
        for v in Verdict.objects.filter(run=first).exclude(answer__query_id=skipped)
    )  # fmt: skip
    for run in (first, second):
        scores.keep_scores(run)
    return first, second


def every_figure(run: Run) -> dict:
    """Everything the kept scores show: every answer's row, the systems, reliability."""
    run = Run.objects.select_related("dataset").get(pk=run.pk)
    kept = scores.run_scores(run)
    assert not kept.updating
    return {
        "answers": [asdict(a) for a in kept[0 : kept.count]],
        "systems": [asdict(s) for s in kept.systems],
        "reliability": kept.reliability,
        "briefs": [asdict(b) for b in kept.briefs()],
    }


def counted_afresh(run: Run) -> dict:
    scores.keep_scores(Run.objects.select_related("dataset").get(pk=run.pk))
    return every_figure(run)


def refreshed(run: Run) -> int:
    return scores.refresh_scores(Run.objects.select_related("dataset").get(pk=run.pk))


def adjudicate(reviewer, verdict: Verdict, label: str) -> None:
    answer, criterion = verdict.answer, verdict.criterion
    review.adjudicate(
        answer=answer, criterion=criterion, by=reviewer, label=label,
        expected_version=version(answer, criterion),
    )  # fmt: skip


def unadjudicated(run: Run, n: int) -> list[Verdict]:
    """n verdicts of distinct answers whose item has no adjudication yet."""
    found, answers = [], set()
    for verdict in Verdict.objects.filter(run=run).select_related("answer", "criterion"):
        decided = Adjudication.objects.filter(
            answer_id=verdict.answer_id, criterion_id=verdict.criterion_id
        ).exists()
        if verdict.answer_id not in answers and not decided:
            found.append(verdict)
            answers.add(verdict.answer_id)
    return random.Random(5).sample(found, n)


def test_an_adjudication_counts_its_answer_again_and_equals_a_full_count(runs, reviewer):
    first, second = runs
    (verdict,) = unadjudicated(first, 1)
    before = every_figure(first)
    adjudicate(reviewer, verdict, "fail" if verdict.outcome == "pass" else "pass")
    assert refreshed(first) == 1
    patched = every_figure(first)
    assert patched != before  # the adjudication moved a score
    assert patched == counted_afresh(first)
    # The second run judged that answer too: its scores move the same way.
    assert refreshed(second) == 1
    assert every_figure(second) == counted_afresh(second)


def test_many_adjudications_and_their_changes_are_counted_once_each(runs, reviewer):
    first, second = runs
    verdicts = unadjudicated(first, 4)
    for verdict in verdicts:
        adjudicate(reviewer, verdict, "pass")
    adjudicate(reviewer, verdicts[0], "fail")  # decided again: the same answer
    assert refreshed(first) == 4
    assert every_figure(first) == counted_afresh(first)
    assert refreshed(second) <= 4
    assert every_figure(second) == counted_afresh(second)
    # Nothing moved since: nothing is counted.
    assert refreshed(first) == 0


def test_an_answer_the_run_did_not_judge_counts_nothing(runs, reviewer):
    first, second = runs
    (verdict,) = [v for v in unadjudicated(first, 6) if v.answer.query_id == skipped(runs)][:1]
    before = every_figure(first), every_figure(second)
    adjudicate(reviewer, verdict, "fail" if verdict.outcome == "pass" else "pass")
    assert refreshed(second) == 0  # kept again for the new counter, unchanged
    assert every_figure(second) == before[1] == counted_afresh(second)
    assert refreshed(first) == 1
    assert every_figure(first) != before[0]


def test_a_criterion_edited_between_two_adjudications_counts_every_answer(runs, reviewer):
    first, _ = runs
    answers = Verdict.objects.filter(run=first).values("answer_id").distinct().count()
    one, other = unadjudicated(first, 2)
    adjudicate(reviewer, one, "pass")
    Criterion.objects.filter(pk=other.criterion_id).update(weight=3)
    other.criterion.refresh_from_db()
    other.criterion.save()  # the editor's save: its receiver moves every counter
    adjudicate(reviewer, other, "fail")
    assert refreshed(first) == answers
    assert every_figure(first) == counted_afresh(first)


def test_a_write_that_notes_nothing_counts_every_answer(runs, reviewer):
    """An import (here a test writing straight to the table) moves the counter without a
    note: the run cannot know which answers moved."""
    first, _ = runs
    answers = Verdict.objects.filter(run=first).values("answer_id").distinct().count()
    (verdict,) = unadjudicated(first, 1)
    Adjudication.objects.create(
        answer=verdict.answer, criterion=verdict.criterion, label="fail", decided_by=reviewer
    )
    written(verdict.answer_id, adjudication=True)
    assert refreshed(first) == answers
    assert every_figure(first) == counted_afresh(first)


def test_notes_older_than_a_week_go_and_the_scores_kept_before_them_count_again(runs, reviewer):
    first, second = runs
    answers = Verdict.objects.filter(run=second).values("answer_id").distinct().count()
    one, other = [v for v in unadjudicated(first, 6) if v.answer.query_id != skipped(runs)][:2]
    adjudicate(reviewer, one, "pass")
    ScoresMove.objects.update(moved_at=timezone.now() - timedelta(days=8))
    adjudicate(reviewer, other, "fail")
    # The first run's refresh patches (both notes are there) and prunes the old one...
    assert refreshed(first) == 2
    assert list(ScoresMove.objects.values_list("answer_id", flat=True)) == [other.answer_id]
    # ... so the second run, still kept from before both, counts every answer.
    assert refreshed(second) == answers
    assert every_figure(second) == counted_afresh(second)


def test_a_new_threshold_counts_every_answer(runs, reviewer, reviewed_dataset):
    first, _ = runs
    answers = Verdict.objects.filter(run=first).values("answer_id").distinct().count()
    (verdict,) = unadjudicated(first, 1)
    adjudicate(reviewer, verdict, "pass")
    services.dataset_update(dataset=reviewed_dataset, pass_threshold=0.5)
    assert refreshed(first) == answers
    assert every_figure(first) == counted_afresh(first)


def skipped(runs) -> int:
    """The query whose answers the second run did not judge."""
    first, second = runs
    judged = Verdict.objects.filter(run=second).values("answer__query_id")
    return Verdict.objects.filter(run=first).exclude(answer__query_id__in=judged)[0].answer.query_id


def test_pieces_replaced_meanwhile_count_every_answer(runs, reviewer):
    first, _ = runs
    answers = Verdict.objects.filter(run=first).values("answer_id").distinct().count()
    (verdict,) = unadjudicated(first, 1)
    adjudicate(reviewer, verdict, "pass")
    # Another writer's keep left the slot without one of the pieces the patch moves.
    pieces = KeptFigure.objects.filter(kind="run-scores", run_id=first.pk, part="")
    assert pieces.count() > 4
    other = [
        piece for piece in pieces
        if isinstance(piece.cells, list)
        and verdict.answer_id not in {row["answer_id"] for row in piece.cells}
    ]  # fmt: skip
    other[0].delete()
    assert refreshed(first) == answers
    assert every_figure(first) == counted_afresh(first)


def test_a_refused_adjudication_notes_nothing(runs, reviewer):
    first, _ = runs
    (verdict,) = unadjudicated(first, 1)
    adjudicate(reviewer, verdict, "pass")
    assert ScoresMove.objects.count() == 1
    with pytest.raises(review.AdjudicationConflict):
        review.adjudicate(
            answer=verdict.answer, criterion=verdict.criterion, by=reviewer, label="fail",
            expected_version=None,
        )  # fmt: skip
    with pytest.raises(review.ReviewError):
        review.adjudicate(
            answer=verdict.answer, criterion=verdict.criterion, by=reviewer, label="maybe",
            expected_version=1,
        )  # fmt: skip
    assert ScoresMove.objects.count() == 1
    # A label moves no score and notes nothing.
    review.label_set(answer=verdict.answer, criterion=verdict.criterion, reviewer=reviewer,
                     label="fail")  # fmt: skip
    assert ScoresMove.objects.count() == 1


def test_a_note_left_under_the_same_value_never_fails_an_adjudication(
    runs, reviewer, reviewed_dataset
):
    """Counters that start again from zero find old notes under their values: the new note
    replaces the old one, and the adjudication is saved."""
    first, _ = runs
    (verdict,) = unadjudicated(first, 1)
    next_value = counters(reviewed_dataset.pk).scores + 1
    ScoresMove.objects.create(dataset=reviewed_dataset, scores=next_value, answer_id=0)
    adjudicate(reviewer, verdict, "pass")
    assert Adjudication.objects.filter(answer=verdict.answer, criterion=verdict.criterion).exists()
    assert ScoresMove.objects.get(scores=next_value).answer_id == verdict.answer_id

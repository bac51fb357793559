"""The kept figures' write path and keys (evaluation/kept): each event moves exactly the
counters its row of MOVES names, every label and adjudication write through the review
services bumps once, a figure's state moves with the counters it reads and only with them,
and keeping a state replaces the rows of its own slot only."""

from __future__ import annotations

import pytest

from annotation.models import Dataset
from evaluation.answers.models import Answer
from evaluation.kept import figures, readers
from evaluation.kept.counters import Counter, Counters, counters
from evaluation.kept.events import (
    MOVES,
    Event,
    answer_item,
    before,
    bump,
    bump_all,
    item_event,
)
from evaluation.kept.models import KeptFigure
from evaluation.review import services as review
from tests.factories import DatasetFactory, PanelFactory, external_judges
from tests.support.builders import checklisted_query, finished_run

pytestmark = pytest.mark.django_db


def moved(after: Counters, earlier: Counters) -> set[Counter]:
    return {c for c in Counter if after[c] != earlier[c]}


@pytest.mark.parametrize("event", list(Event))
def test_every_event_moves_exactly_its_counters_by_one(reviewed_dataset, event):
    bump(reviewed_dataset.pk, Event.QUERY_CHANGED)  # a row to move
    earlier = counters(reviewed_dataset.pk)
    after = bump(reviewed_dataset.pk, event)
    assert after == counters(reviewed_dataset.pk)
    assert moved(after, earlier) == MOVES[event]
    assert all(after[c] - earlier[c] == 1 for c in MOVES[event])
    assert before(after, event) == earlier


def test_every_event_is_in_the_table():
    assert set(MOVES) == set(Event)
    assert all(MOVES[e] for e in Event)


def test_a_site_wide_event_moves_every_dataset(reviewed_dataset):
    other = DatasetFactory()
    for dataset in (reviewed_dataset, other):
        bump(dataset.pk, Event.LABEL)
    earlier = {d.pk: counters(d.pk) for d in (reviewed_dataset, other)}
    bump_all(Event.NAME_CHANGED)
    for dataset in (reviewed_dataset, other):
        assert moved(counters(dataset.pk), earlier[dataset.pk]) == MOVES[Event.NAME_CHANGED]


def test_a_dataset_that_is_gone_is_not_bumped():
    gone = DatasetFactory()
    pk = gone.pk
    Dataset.objects.filter(pk=pk).delete()
    assert bump(pk, Event.LABEL) is None
    assert counters(pk) == Counters()


def test_each_review_write_bumps_once_with_its_event(reviewed_dataset, reviewer):
    """The review services are the writers of single labels and adjudications: no receiver
    bumps behind them, so each write moves the counters by its event exactly once."""
    made = checklisted_query(reviewed_dataset, criteria=2, answers=1)
    criterion, (system_answer,) = made.criteria[0], made.answers
    perfect = Answer.objects.create(
        query=system_answer.query, system=system_answer.system, text="Perfect.",
        checklist=criterion.checklist, run_label="perfect",
    )  # fmt: skip
    writes = []
    for answer in (system_answer, perfect):
        writes += [
            (answer, False, lambda a=answer: review.label_set(
                answer=a, criterion=criterion, reviewer=reviewer, label="pass")),
            (answer, False, lambda a=answer: review.label_restore(
                answer=a, criterion=criterion, reviewer=reviewer, previous=None)),
            (answer, False, lambda a=answer: review.label_set(
                answer=a, criterion=criterion, reviewer=reviewer, label="fail")),
            (answer, False, lambda a=answer: review.label_delete(
                label=a.human_labels.get(rater="reviewer"), by=reviewer)),
            (answer, True, lambda a=answer: review.adjudicate(
                answer=a, criterion=criterion, by=reviewer, label="fail",
                expected_version=None)),
            (answer, True, lambda a=answer: review.adjudicate(
                answer=a, criterion=criterion, by=reviewer, label="pass", expected_version=1)),
        ]  # fmt: skip
    for answer, adjudication, write in writes:
        event = item_event(
            perfect_answer=answer.checklist_id is not None, adjudication=adjudication
        )
        earlier = counters(reviewed_dataset.pk)
        write()
        after = counters(reviewed_dataset.pk)
        assert moved(after, earlier) == MOVES[event], event
        assert before(after, event) == earlier, event


def test_a_write_on_an_answer_loaded_with_its_query_asks_nothing_more(
    reviewed_dataset, django_assert_num_queries
):
    """The review's views load the answer with its query to check access: a label's write
    takes its dataset and event from there, and from the database only given an id."""
    made = checklisted_query(reviewed_dataset, criteria=1, answers=1)
    perfect = Answer.objects.create(
        query=made.answers[0].query, system=made.answers[0].system, text="Perfect.",
        checklist=made.criteria[0].checklist, run_label="perfect",
    )  # fmt: skip
    for answer, event in (
        (made.answers[0], Event.ADJUDICATION),
        (perfect, Event.PERFECT_ANSWER_ADJUDICATION),
    ):
        loaded = Answer.objects.select_related("query").get(pk=answer.pk)
        with django_assert_num_queries(0):
            assert answer_item(loaded, adjudication=True) == (reviewed_dataset.pk, event)
        with django_assert_num_queries(1):
            assert answer_item(answer.pk, adjudication=True) == (reviewed_dataset.pk, event)
        alone = Answer.objects.get(pk=answer.pk)  # without its query: read as an id
        with django_assert_num_queries(1):
            assert answer_item(alone, adjudication=True) == (reviewed_dataset.pk, event)


FIGURES = [
    readers.AGREEMENT, readers.LABELLING_QUEUE, readers.DISAGREEMENT_QUEUE,
    readers.SCORE_COUNTS, readers.RUN_SCORES, readers.CROSS_EVALUATION, readers.ANALYTICS,
    readers.QUEUE_UNCERTAINTY, readers.PROGRESS, readers.TOKENS, readers.ERRORS,
    readers.VERDICT_TOKENS, readers.AGREEMENT_DEFAULT_RUN,
]  # fmt: skip


@pytest.mark.parametrize("figure", FIGURES, ids=lambda f: f.kind)
def test_a_figures_state_moves_with_the_counters_it_reads_only(reviewed_dataset, figure):
    run = finished_run(reviewed_dataset, PanelFactory(judges=external_judges(1)), {})
    for event in Event:
        earlier = readers.state(reviewed_dataset.pk, figure, run=run)
        bump(reviewed_dataset.pk, event)
        now = readers.state(reviewed_dataset.pk, figure, run=run)
        if set(figure.reads) & MOVES[event]:
            assert now.key != earlier.key, event
            assert now.revision == counters(reviewed_dataset.pk)[figure.reads[0]]
        else:
            assert now == earlier, event


def test_a_run_still_going_is_not_cacheable_and_its_state_names_its_method(reviewed_dataset):
    panel = PanelFactory(judges=external_judges(1))
    done = finished_run(reviewed_dataset, panel, {})
    going = finished_run(reviewed_dataset, panel, {}, status="running")
    assert readers.state(reviewed_dataset.pk, readers.PROGRESS, run=done).cacheable
    assert not readers.state(
        reviewed_dataset.pk, readers.QUEUE_UNCERTAINTY, runs=[done, going]
    ).cacheable
    other = readers.state(reviewed_dataset.pk, readers.PROGRESS, run=done)
    done.snapshot = {**done.snapshot, "method": "unanimity"}
    assert readers.state(reviewed_dataset.pk, readers.PROGRESS, run=done).key != other.key


def test_keeping_a_state_replaces_its_own_slot_only(reviewed_dataset):
    panel = PanelFactory(judges=external_judges(1))
    first, second = (
        finished_run(reviewed_dataset, panel, {}),
        finished_run(reviewed_dataset, panel, {}),
    )

    def state(run, part="", fact="a"):
        return readers.state(
            reviewed_dataset.pk, readers.ANALYTICS, run=run, part=part, facts=[fact]
        )

    figures.store(state(first), {"n": 1})
    figures.store(state(first, "health"), {"n": 2})
    figures.store(state(second), {"n": 3})
    figures.store(state(first, fact="b"), {"n": 4})  # a new state of the first slot
    assert figures.kept(state(first)) is None
    assert figures.kept(state(first, fact="b")) == {"n": 4}
    assert figures.kept(state(first, "health")) == {"n": 2}
    assert figures.kept(state(second)) == {"n": 3}
    row = KeptFigure.objects.get(key=state(first, fact="b").key)
    assert (row.kind, row.run_id, row.part) == ("analytics", first.pk, "")
    assert row.revision == counters(reviewed_dataset.pk).number
    # Pieces of one state: all kept together, the state's other rows replaced.
    figures.store_pieces(state(second, fact="c"), {"": {"n": 5}, "0": [1], "1": [2]})
    assert figures.kept(state(second)) is None
    assert figures.kept_pieces(state(second, fact="c"), ["1", "0", "9"]) == {"0": [1], "1": [2]}
    with figures.read_only():
        figures.store(state(first, fact="d"), {"n": 6})
    assert figures.kept(state(first, fact="d")) is None
    assert figures.kept(state(first, fact="b")) == {"n": 4}


def test_keeping_many_slots_at_once_replaces_each_slot_only_in_one_transaction(
    reviewed_dataset, django_assert_max_num_queries
):
    """`store_all` (a run's analytics refresh: its parts and the criterion health's
    chunks) does what one `store` per slot does, in one transaction of few statements."""
    panel = PanelFactory(judges=external_judges(1))
    first, second = (finished_run(reviewed_dataset, panel, {}) for _ in range(2))

    def state(run, part, fact="a"):
        return readers.state(
            reviewed_dataset.pk, readers.ANALYTICS, run=run, part=part, facts=[fact]
        )

    figures.store(state(first, "page"), {"n": 1})
    figures.store(state(first, "chunk-0"), {"n": 2})
    figures.store(state(first, "untouched"), {"n": 3})
    figures.store(state(second, "page"), {"n": 4})
    kept = [
        (state(first, "page", "b"), {"n": 5}),
        (state(first, "chunk-0", "b"), {"n": 6}),
        (state(first, "chunk-1", "b"), {"n": 7}),
        (state(second, "page", "b"), {"n": 8}),
    ]
    with django_assert_max_num_queries(3):  # a DELETE for each run, one INSERT
        figures.store_all(kept)
    assert [figures.kept(state(first, p)) for p in ("page", "chunk-0")] == [None, None]
    assert figures.kept(state(second, "page")) is None
    assert [figures.kept(state(first, p, "b")) for p in ("page", "chunk-0", "chunk-1")] == [
        {"n": 5}, {"n": 6}, {"n": 7},
    ]  # fmt: skip
    assert figures.kept(state(second, "page", "b")) == {"n": 8}
    assert figures.kept(state(first, "untouched")) == {"n": 3}  # not in the call: left
    figures.store_all([(state(first, "page", "b"), {"n": 5})])  # kept already: the same row
    assert KeptFigure.objects.filter(key=state(first, "page", "b").key).count() == 1
    with figures.read_only():
        figures.store_all([(state(first, "page", "c"), {"n": 9})])
    assert figures.kept(state(first, "page", "b")) == {"n": 5}


def test_only_a_rename_of_a_site_wide_name_moves_every_dataset(reviewed_dataset):
    """The figures show the names of systems, judges, source types and categories: a
    rename moves every dataset's counters; a new row (in no figure yet) or a change of
    anything else (a judge's server, its rate limit) keeps every kept figure."""
    from evaluation.answers.models import System
    from evaluation.judges.models import Judge

    bump(reviewed_dataset.pk, Event.LABEL)
    judge = Judge.objects.create(name="judge to move", model="m", base_url="http://a")
    system = System.objects.create(name="sys", version="1")
    earlier = counters(reviewed_dataset.pk)
    judge.base_url, judge.rpm_limit = "http://b", 60
    judge.save()
    Judge.objects.update_or_create(name="judge to move", defaults={"timeout": 5})
    assert counters(reviewed_dataset.pk) == earlier
    judge.name = "judge renamed"
    judge.save()
    assert moved(counters(reviewed_dataset.pk), earlier) == MOVES[Event.NAME_CHANGED]
    earlier = counters(reviewed_dataset.pk)
    system.version = "2"
    system.save()
    assert moved(counters(reviewed_dataset.pk), earlier) == MOVES[Event.NAME_CHANGED]


def test_entries_of_kept_rows_are_picked_in_the_database(
    reviewed_dataset, django_assert_num_queries
):
    """`kept_entries` answers what decoding the whole row would (an object's members by
    name, an array's elements by position, None where there is none), in one query, on
    both databases; rows not kept are left out."""
    panel = PanelFactory(judges=external_judges(1))
    run = finished_run(reviewed_dataset, panel, {})

    def state(part):
        return readers.state(reviewed_dataset.pk, readers.RUN_SCORES, run=run, part=part)

    index = {"1467": 16, "12": 0, "7": {"nested": [1, 2]}}
    figures.store(state("index"), index)
    figures.store(state("rows"), [{"answer_id": 12, "score": "0.5"}, None, [3, "x"]])
    key = state("index").key
    with django_assert_num_queries(1):
        found = figures.kept_entries(reviewed_dataset.pk, [key, "no such key"], ["1467", "7", "99"])
    assert found == {key: [16, {"nested": [1, 2]}, None]}
    rows = figures.kept_entries(reviewed_dataset.pk, [state("rows").key], [2, 0, 5])
    assert rows == {state("rows").key: [[3, "x"], {"answer_id": 12, "score": "0.5"}, None]}
    assert figures.kept_entries(reviewed_dataset.pk, [], ["1"]) == {}
    # No paths: which rows are kept, nothing of theirs read.
    with django_assert_num_queries(1) as read:
        assert figures.kept_entries(reviewed_dataset.pk, [key, "no such key"], []) == {key: []}
    assert "cells" not in read.captured_queries[0]["sql"]

"""The queues on a dataset whose every vote is known: the disagreement queue lists exactly the
disagreeing items, split votes first, from the latest finished run (or the chosen one)."""

from __future__ import annotations

import pytest

from evaluation.review import filters as queue_filters
from evaluation.review import sampling, selectors
from tests.evaluation.review.queue_order import by_priority, keys

pytestmark = pytest.mark.django_db


def test_the_disagreement_queue_lists_exactly_the_disagreeing_items_split_first(
    workload, reviewed_dataset, reviewer
):
    a1, a2, c = workload["a1"], workload["a2"], workload["c"]
    result = selectors.disagreement_queue(reviewed_dataset, reviewer)
    assert keys(result.items) == [
        (a1.pk, c[2].pk),  # split 1–1
        (a2.pk, c[0].pk),  # split 1–2 with a human disagreeing
        (a1.pk, c[1].pk),  # split 2–1
        (a2.pk, c[1].pk),  # unanimous pass, two humans say fail
        (a1.pk, c[3].pk),  # unanimous fail, one human says pass
    ]
    assert [i.facts.split for i in result.items] == [True, True, True, False, False]
    assert result.adjudicated == 1
    assert {i.run.pk for i in result.items} == {workload["latest"].pk}


def test_a_chosen_run_replaces_the_latest(workload, reviewed_dataset, reviewer):
    a1, a2, c = workload["a1"], workload["a2"], workload["c"]
    result = selectors.disagreement_queue(reviewed_dataset, reviewer, run=workload["old"])
    # Old run: a1·c0 split 1–2; a2·c4 split 1–1 (the unparseable vote is not counted).
    assert keys(result.items) == [(a2.pk, c[4].pk), (a1.pk, c[0].pk)]


def test_labelling_queue_policies(workload, reviewed_dataset, reviewer, share_alone):
    a1, a2 = workload["a1"], workload["a2"]
    reviewed_dataset.label_policy = "all"
    items = selectors.labelling_queue(reviewed_dataset, reviewer)
    # a1 has 2 human labels, a2 has 4: fewest first.
    assert [i.answer_id for i in items] == [a1.pk, a2.pk]
    assert (items[0].facts.criteria, items[0].mine, items[1].mine) == (7, 2, 1)
    # Uncertainty, mean over judged criteria of 1 - |passes - fails| / valid votes:
    # a1: 2–1, 1–1, 2–1 and four unanimous → (2/3 + 1 + 2/3) / 7 = 1/3;
    # a2: 1–2 and two unanimous (the all-unparseable criterion is skipped) → (2/3) / 3 = 2/9.
    assert [i.facts.uncertainty for i in items] == [pytest.approx(1 / 3), pytest.approx(2 / 9)]
    reviewed_dataset.label_policy, reviewed_dataset.label_share = "uncertain", 0.5
    items = selectors.labelling_queue(reviewed_dataset, reviewer)
    # Half of two answers: the one drawn first by priority (a1: 7 judged criteria, a2: 3).
    first = by_priority(reviewed_dataset, {a1: (1 / 3, 7), a2: (2 / 9, 3)})[0]
    assert [i.answer_id for i in items] == [first]
    reviewed_dataset.label_policy, reviewed_dataset.label_share = "random", 0.5
    chosen = [
        a.pk
        for a in (a1, a2)
        if sampling.in_random_share(dataset_id=reviewed_dataset.pk, answer_id=a.pk, share=0.5)
    ]
    items = selectors.labelling_queue(reviewed_dataset, reviewer)
    assert sorted(i.answer_id for i in items) == sorted(chosen)


def test_assigned_to_me_and_next_item(workload, reviewed_dataset, reviewer, owner):
    from evaluation.review import services

    a1, a2, c = workload["a1"], workload["a2"], workload["c"]
    services.assignment_set(
        queue="disagreement", answer=a1, criterion=c[1], assignee=reviewer, by=reviewer
    )
    mine = selectors.disagreement_queue(reviewed_dataset, reviewer, mine=True).items
    assert keys(mine) == [(a1.pk, c[1].pk)]
    assert list(selectors.disagreement_queue(reviewed_dataset, owner, mine=True).items) == []
    following, _position = queue_filters.next_item(
        reviewed_dataset, reviewer, queue="disagreement", current=(a2.pk, c[0].pk)
    )
    assert following.key == (a1.pk, c[1].pk)
    reviewed_dataset.label_policy = "all"
    following, position = queue_filters.next_item(
        reviewed_dataset, reviewer, queue="labelling", current=(a1.pk,)
    )
    assert following.key == (a2.pk,)
    assert position[0] == [i.key for i in selectors.labelling_queue(
        reviewed_dataset, reviewer
    )].index((a2.pk,)) + 1  # fmt: skip

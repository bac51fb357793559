"""The queues on a dataset whose every vote is known: the disagreement queue lists exactly the
disagreeing items, split votes first, from the latest finished run (or the chosen one)."""

from __future__ import annotations

import hashlib
import math

import pytest

from evaluation.models import Adjudication, HumanLabel, Run
from evaluation.review import queues, selectors
from tests.support.builders import checklist_query, finished_run, panel_of

pytestmark = pytest.mark.django_db


def label(answer, criterion, rater, value):
    HumanLabel.objects.create(answer=answer, criterion=criterion, rater=rater, label=value)


@pytest.fixture
def workload(reviewed_dataset, reviewer, owner):
    _query, c, (a1, a2) = checklist_query(reviewed_dataset, criteria=7, answers=2)
    panel = panel_of(3)
    p, f, u, e = "pass", "fail", "unparseable", "error"
    old = finished_run(reviewed_dataset, panel, {(a1, c[0]): (f, f, p), (a2, c[4]): (p, f, u)})
    latest = finished_run(
        reviewed_dataset,
        panel,
        {
            (a1, c[0]): (p, p, p),  # agreement, no human: out
            (a1, c[1]): (p, p, f),  # split 2–1
            (a1, c[2]): (p, f, u),  # split 1–1, the most even
            (a1, c[3]): (f, f, f),  # a human says pass
            (a1, c[4]): (p, p, p),  # a human agrees
            (a1, c[5]): (p, u, e),  # invalid votes are never fails: out
            (a1, c[6]): (f, f, p),  # adjudicated: out
            (a2, c[0]): (p, f, f),  # split 1–2, and a human disagrees
            (a2, c[1]): (p, p, p),  # two humans say fail
            (a2, c[2]): (u, u, u),  # no valid vote: nothing to contradict
            (a2, c[3]): (p, p, p),  # agreement, no human: out
        },
    )
    # A newer run that has not finished does not count by default.
    finished_run(reviewed_dataset, panel, {(a1, c[0]): (f, f, f)}, status=Run.Status.RUNNING)
    label(a1, c[3], "reviewer", "pass")
    label(a1, c[4], "reviewer", "pass")
    label(a2, c[0], "owner", "pass")
    label(a2, c[1], "reviewer", "fail")
    label(a2, c[1], "owner", "fail")
    label(a2, c[2], "owner", "fail")
    Adjudication.objects.create(answer=a1, criterion=c[6], label="fail", decided_by=owner)
    return {"a1": a1, "a2": a2, "c": c, "old": old, "latest": latest}


def keys(items):
    return [i.key for i in items]


def by_priority(dataset, facts: dict) -> list[int]:
    """Answers in the "least certain" draw's order, computed here from its definition
    (evaluation/review/sampling.py): sqrt(judged criteria × (uncertainty / 2 + 0.05)) over
    a uniform draw from SHA-256("dataset:answer"). `facts`: answer -> (uncertainty, judged)."""

    def priority(answer):
        uncertainty, judged = facts[answer]
        digest = hashlib.sha256(f"{dataset.pk}:{answer.pk}".encode()).digest()
        draw = (int.from_bytes(digest[:8], "big") + 0.5) / 2**64
        return math.sqrt(judged * (uncertainty / 2 + 0.05)) / draw

    return [a.pk for a in sorted(facts, key=lambda a: -priority(a))]


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


def test_labelling_queue_policies(workload, reviewed_dataset, reviewer):
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
        if queues.in_random_share(dataset_id=reviewed_dataset.pk, answer_id=a.pk, share=0.5)
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
    following, _position = selectors.next_item(
        reviewed_dataset, reviewer, queue="disagreement", current=(a2.pk, c[0].pk)
    )
    assert following.key == (a1.pk, c[1].pk)
    reviewed_dataset.label_policy = "all"
    following, position = selectors.next_item(
        reviewed_dataset, reviewer, queue="labelling", current=(a1.pk,)
    )
    assert following.key == (a2.pk,)
    assert position[0] == [i.key for i in selectors.labelling_queue(
        reviewed_dataset, reviewer
    )].index((a2.pk,)) + 1  # fmt: skip

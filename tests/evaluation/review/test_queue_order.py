"""The queues' order in the database (evaluation/review/order.py: one sort key per item) is
the order their definitions say, written in Python in tests/support/queues.py: both
computed from the same labels, votes and adjudications, and compared item by item."""

from __future__ import annotations

import random

import pytest

from evaluation.labels.models import Adjudication, HumanLabel
from evaluation.metrics.aggregation import Vote, aggregate
from evaluation.review import queues, selectors
from evaluation.runs.models import Verdict
from tests.evaluation.review.queue_order import keys
from tests.factories import PanelFactory, UserFactory, external_judges
from tests.support import queues as python_order
from tests.support.builders import checklisted_query, finished_run, human_label

pytestmark = pytest.mark.django_db

OUTCOMES = ("pass", "pass", "fail", "fail", "unparseable")


@pytest.fixture
def two_checklists(reviewed_dataset, owner):
    """One query checklisted by two experts (the first with three criteria, the second with
    two, so that position and criterion id alone would interleave them), a second query,
    eight answers, a run with random votes, labels and adjudications."""
    rng = random.Random(3)
    first = checklisted_query(reviewed_dataset, criteria=3, answers=5)
    second = checklisted_query(
        query=first.query, criteria=2, author=UserFactory(username="second-expert")
    )
    other = checklisted_query(reviewed_dataset, criteria=2, answers=3)
    items = [(a, c) for a in first.answers for c in first.criteria + second.criteria]
    items += [(a, c) for a in other.answers for c in other.criteria]
    votes = {item: tuple(rng.choice(OUTCOMES) for _ in range(3)) for item in items}
    run = finished_run(reviewed_dataset, PanelFactory(judges=external_judges(3)), votes)
    for answer, criterion in items:
        for rater in ("reviewer", "owner"):
            if rng.random() < 0.3:
                human_label(answer, criterion, rater, rng.choice(("pass", "fail")))
        if rng.random() < 0.1:
            Adjudication.objects.create(
                answer=answer, criterion=criterion, label="pass", decided_by=owner
            )
    return run


def _item_facts(run) -> list[queues.ItemFacts]:
    """Every item the run judged, from its votes, labels and adjudications."""
    votes: dict[tuple[int, int], list[Vote]] = {}
    found = Verdict.objects.filter(run=run).values_list(
        "answer_id", "criterion_id", "judge_id", "sample", "outcome", "criterion__checklist_id",
        "criterion__position",
    )  # fmt: skip
    placed = {}
    for answer_id, criterion_id, judge_id, sample, outcome, checklist_id, position in found:
        votes.setdefault((answer_id, criterion_id), []).append(Vote(str(judge_id), sample, outcome))
        placed[answer_id, criterion_id] = (checklist_id, position)
    labels: dict[tuple[int, int], list[str]] = {}
    for answer_id, criterion_id, label in HumanLabel.objects.values_list(
        "answer_id", "criterion_id", "label"
    ):
        labels.setdefault((answer_id, criterion_id), []).append(label)
    decided = set(Adjudication.objects.values_list("answer_id", "criterion_id"))
    return [
        queues.ItemFacts(
            answer_id=a, criterion_id=c, position=placed[a, c][1],
            verdict=aggregate(v, run.panel_method, threshold=run.panel_threshold),
            human_labels=tuple(labels.get((a, c), ())), adjudicated=(a, c) in decided,
            checklist_id=placed[a, c][0],
        )
        for (a, c), v in votes.items()
    ]  # fmt: skip


def test_the_disagreement_queue_in_the_database_is_the_order_of_its_definition(
    two_checklists, reviewed_dataset, reviewer
):
    in_database = keys(selectors.disagreement_queue(reviewed_dataset, reviewer).items)
    in_python = python_order.disagreement_queue(_item_facts(two_checklists))
    assert in_database == [(i.answer_id, i.criterion_id) for i in in_python]
    assert len(in_database) > 10
    # Ties between the two experts' criteria of one answer are ordered by checklist.
    checklists = [i.checklist_id for i in in_python]
    for n in range(1, len(in_python)):
        one, two = in_python[n - 1], in_python[n]
        tied = python_order.evenness(one) == python_order.evenness(two) and (
            one.split,
            one.human_disagreements,
            one.answer_id,
        ) == (two.split, two.human_disagreements, two.answer_id)
        if tied:
            assert checklists[n - 1] <= checklists[n]


def _answer_facts(run) -> list[queues.AnswerFacts]:
    """Every answer of the run's dataset, with its labels and the judges' uncertainty."""
    by_answer: dict[int, list] = {}
    for item in _item_facts(run):
        by_answer.setdefault(item.answer_id, []).append(item.verdict)
    labels: dict[int, int] = {}
    for answer_id in HumanLabel.objects.values_list("answer_id", flat=True):
        labels[answer_id] = labels.get(answer_id, 0) + 1
    return [
        queues.AnswerFacts(
            answer_id=a, criteria=0, labels=labels.get(a, 0),
            uncertainty=python_order.uncertainty(verdicts),
            judged=sum(1 for v in verdicts if v.pass_share is not None),
        )
        for a, verdicts in sorted(by_answer.items())
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("policy", "share"), [("all", 1.0), ("random", 0.5), ("uncertain", 0.5), ("uncertain", 1.0)]
)
def test_the_labelling_queue_in_the_database_is_the_order_of_its_definition(
    two_checklists, reviewed_dataset, reviewer, share_alone, policy, share
):
    reviewed_dataset.label_policy, reviewed_dataset.label_share = policy, share
    in_database = [i.answer_id for i in selectors.labelling_queue(reviewed_dataset, reviewer)]
    in_python = python_order.labelling_queue(
        _answer_facts(two_checklists), policy=policy, share=share, dataset_id=reviewed_dataset.pk
    )
    assert in_database == [a.answer_id for a in in_python]
    assert in_database

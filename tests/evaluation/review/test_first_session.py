"""A reviewer's first session on a small dataset counts (issue 28, item 5): under the default
policy (least certain, a fifth of the answers) the labelling queue offers every system answer
of a dataset of 14, never a perfect answer of cross-evaluation (which no agreement figure
compares); the perfect answers have a queue of their own."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Dataset
from evaluation.answers.models import Answer
from evaluation.cross_evaluation.services import perfect_answer_save
from evaluation.review import filters as queue_filters
from evaluation.review import queues, selectors
from evaluation.runs.models import Run
from tests.factories import PanelFactory, UserFactory, external_judges
from tests.support.builders import checklisted_query, finished_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def small_team(reviewed_dataset):
    """Seven queries, two systems' answers each (14), graded by a finished run; the first
    query has two experts' checklists with perfect answers, graded by a cross-evaluation."""
    panel = PanelFactory(judges=external_judges(3))
    votes, made = {}, []
    for n in range(7):
        built = checklisted_query(
            reviewed_dataset, criteria=5, answers=2, author=UserFactory(username=f"expert-{n}")
        )
        made += built.answers
        for i, answer in enumerate(built.answers):
            for j, criterion in enumerate(built.criteria):
                votes[answer, criterion] = (
                    ("pass", "fail", "pass") if (i + j) % 3 else ("pass",) * 3
                )
        if n == 0:
            first = built
    finished_run(reviewed_dataset, panel, votes)
    second = checklisted_query(
        query=first.query, criteria=5, author=UserFactory(username="second-expert")
    )
    perfect = [
        perfect_answer_save(checklist=c.checklist, text="All of it.", by=c.checklist.author)
        for c in (first, second)
    ]
    # The cross-evaluation splits its judges most: under the old queue the least-certain
    # draw put a perfect answer first.
    cross = finished_run(
        reviewed_dataset, panel,
        {(p, c): ("pass", "fail", "fail") for p in perfect
         for c in first.criteria + second.criteria},
    )  # fmt: skip
    cross.kind = Run.Kind.CROSS_EVALUATION
    cross.save(update_fields=["kind"])
    return {"system": made, "perfect": perfect}


def test_the_default_policy_offers_every_system_answer_of_a_small_dataset(
    small_team, reviewed_dataset, reviewer
):
    dataset = Dataset.objects.get(pk=reviewed_dataset.pk)
    assert (dataset.label_policy, dataset.label_share) == ("uncertain", 0.2)
    offered = [i.answer_id for i in selectors.labelling_queue(dataset, reviewer)]
    # A fifth of 14 would be 3; the floor offers all 14, and never a perfect answer.
    assert sorted(offered) == sorted(a.pk for a in small_team["system"])
    assert not set(offered) & {a.pk for a in small_team["perfect"]}


def test_perfect_answers_have_their_own_queue(small_team, reviewed_dataset, reviewer):
    dataset = Dataset.objects.get(pk=reviewed_dataset.pk)
    offered = selectors.labelling_queue(dataset, reviewer, perfect=True)
    assert sorted(i.answer_id for i in offered) == sorted(a.pk for a in small_team["perfect"])
    assert {i.run.kind for i in offered} == {Run.Kind.CROSS_EVALUATION}
    # The system answers' queue is kept apart: reading one does not replace the other.
    assert len(selectors.labelling_queue(dataset, reviewer)) == 14
    assert len(selectors.labelling_queue(dataset, reviewer, perfect=True)) == 2


def test_the_queue_page_lists_system_answers_and_next_stays_in_the_chosen_queue(
    small_team, reviewed_dataset, reviewer, client
):
    client.force_login(reviewer)
    url = reverse("review-queue", args=[reviewed_dataset.pk])
    html = client.get(url).content.decode()
    assert "14 items." in html and "at least 20" in html
    for answer in small_team["perfect"]:
        assert reverse("answer-review", args=[answer.pk]) + "?" not in html
    html = client.get(url, {"answers": "perfect"}).content.decode()
    assert "Perfect answers (cross-evaluation): 2 items." in html
    assert "answers=perfect" in html  # the review links carry the queue
    following, _position = queue_filters.next_item(
        reviewed_dataset, reviewer, queue="labelling", current=(small_team["perfect"][0].pk,),
        filters=queue_filters.QueueFilters(perfect=True),
    )  # fmt: skip
    assert following.answer_id == small_team["perfect"][1].pk


def test_the_api_queue_leaves_perfect_answers_out_unless_asked(
    small_team, reviewed_dataset, reviewer
):
    from rest_framework.test import APIClient

    api = APIClient()
    api.force_authenticate(reviewer)
    url = "/api/review-queue/"
    found = api.get(url, {"dataset": reviewed_dataset.pk, "page_size": 100}).json()
    rows = found["results"] if isinstance(found, dict) else found
    assert len(rows) == 14
    found = api.get(url, {"dataset": reviewed_dataset.pk, "answers": "perfect"}).json()
    rows = found["results"] if isinstance(found, dict) else found
    assert len(rows) == 2
    assert api.get(url, {"dataset": reviewed_dataset.pk, "answers": "x"}).status_code == 400


def test_a_label_on_a_perfect_answer_moves_neither_queue_out_of_order(
    small_team, reviewed_dataset, reviewer
):
    from evaluation.review.services import label_set

    perfect = small_team["perfect"][0]
    criterion = perfect.checklist.criteria.first()
    label_set(answer=perfect, criterion=criterion, reviewer=reviewer, label="pass")
    dataset = Dataset.objects.get(pk=reviewed_dataset.pk)
    assert len(selectors.labelling_queue(dataset, reviewer)) == 14
    queue = selectors.labelling_queue(dataset, reviewer, perfect=True)
    # The labelled one goes behind the unlabelled one.
    assert [i.answer_id for i in queue] == [small_team["perfect"][1].pk, perfect.pk]
    assert Answer.objects.filter(checklist__isnull=False).count() == 2


def _facts(n: int, uncertainty: float | None = 0.5) -> list[queues.AnswerFacts]:
    return [
        queues.AnswerFacts(answer_id=i, criteria=5, labels=0, uncertainty=uncertainty, judged=5)
        for i in range(1, n + 1)
    ]


@pytest.mark.parametrize("policy", ["random", "uncertain"])
def test_the_floor_goes_on_down_the_same_draw(policy):
    many = _facts(200)
    share = queues.drawn(many, policy=policy, share=0.05, dataset_id=9)
    floored = queues.drawn(many, policy=policy, share=0.05, dataset_id=9, at_least=30)
    assert len(share) < 30 and len(floored) == 30
    # The share's answers come first, in the same order: the floor only adds answers.
    assert floored[: len(share)] == share
    every = queues.drawn(many, policy=policy, share=1.0, dataset_id=9)
    assert floored == every[:30]  # a head of the full draw: the same design
    few = _facts(14)
    assert len(queues.drawn(few, policy=policy, share=0.2, dataset_id=9, at_least=20)) == 14
    # A share larger than the floor is the share.
    assert len(queues.drawn(many, policy=policy, share=0.5, dataset_id=9, at_least=20)) > 50

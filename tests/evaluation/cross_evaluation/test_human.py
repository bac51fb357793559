"""Cross-evaluation graded by human reviewers instead of a panel: ?source=human takes each
item's adjudication, else the majority of its human labels; a tie is undecided, never a
fail. Checked in the API and on the query's heatmap page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import roles
from annotation import services as annotation_services
from evaluation.labels.models import Adjudication, HumanLabel
from tests.evaluation.cross_evaluation.two_queries import two_queries

pytestmark = pytest.mark.django_db


def label(answer, criterion, rater: str, value: str) -> None:
    HumanLabel.objects.create(answer=answer, criterion=criterion, rater=rater, label=value)


@pytest.fixture
def labelled(dataset, owner, reviewer):
    annotation_services.dataset_set_role(
        dataset=dataset, user=reviewer, role=roles.DatasetRole.REVIEWER
    )
    lists = two_queries(dataset, owner)
    a_answer = lists["A"].perfect_answer
    b1, b2, b3, b4 = lists["B"].criteria.order_by("position")
    # A's perfect answer against B's four criteria, by hand:
    label(a_answer, b1, "r1", "pass")  # pass (one label)
    label(a_answer, b2, "r1", "pass")  # fail: the majority of three says fail
    label(a_answer, b2, "r2", "fail")
    label(a_answer, b2, "r3", "fail")
    label(a_answer, b3, "r1", "pass")  # tie: undecided, not a fail
    label(a_answer, b3, "r2", "fail")
    label(a_answer, b4, "r1", "fail")  # the labels say fail, the adjudication says pass
    label(a_answer, b4, "r2", "fail")
    Adjudication.objects.create(answer=a_answer, criterion=b4, label="pass", decided_by=owner)
    return lists


def test_human_source_in_the_api(labelled, reviewer_api):
    a, b = labelled["A"], labelled["B"]
    body = reviewer_api.get("/api/overlaps/", {"query": a.query_id, "source": "human"}).json()
    assert body["source"] == "human"
    cell = next(c for c in body["cells"] if (c["a"], c["b"]) == (a.pk, b.pk))
    assert (cell["passed"], cell["failed"], cell["undecided"]) == (2, 1, 1)
    assert cell["overlap"] == pytest.approx(2 / 3)
    # Nobody labelled B's answer against A's criteria: nothing decided, no overlap.
    reverse_cell = next(c for c in body["cells"] if (c["a"], c["b"]) == (b.pk, a.pk))
    assert reverse_cell["passed"] + reverse_cell["failed"] == 0
    assert reverse_cell["overlap"] is None
    assert body["n_pairs"] == 1 and body["mean"] == pytest.approx(2 / 3)


def test_human_source_on_the_heatmap(labelled, client, reviewer):
    a, b = labelled["A"], labelled["B"]
    client.force_login(reviewer)
    page = client.get(reverse("query-overlaps", args=[a.query_id]), {"source": "human"})
    assert page.status_code == 200
    html = page.content.decode()
    assert (
        f'data-cell="{a.pk}-{b.pk}" data-overlap="0.6667" data-passed="2" data-decided="3" '
        f'data-undecided="1"'
    ) in html

"""/api/review-assignments/: admins assign queue items to any reviewer of the dataset and
clear them; reviewers take unassigned items for themselves and release their own; experts
get 403, outsiders 404."""

from __future__ import annotations

import pytest

from evaluation.labels.models import ReviewAssignment
from tests.support.builders import checklisted_query

pytestmark = pytest.mark.django_db
URL = "/api/review-assignments/"


@pytest.fixture
def items(reviewed_dataset):
    made = checklisted_query(reviewed_dataset, criteria=2, answers=1)
    return made.answers[0], made.criteria


def test_admin_assigns_anyone_who_reviews_and_lists_by_assignee(
    items, owner_api, reviewer_api, collaborator_api, reviewed_dataset
):
    answer, crits = items
    item = {"queue": "disagreement", "answer": answer.pk, "criterion": crits[0].pk}
    created = owner_api.post(URL, {**item, "assignee": "reviewer"})
    assert created.status_code == 201, created.content
    body = created.json()
    assert (body["assignee"], body["assigned_by"], body["dataset"]) == (
        "reviewer", "owner", reviewed_dataset.pk,
    )  # fmt: skip
    # Not a reviewer of the dataset: refused by name, nothing written.
    refused = owner_api.post(URL, {**item, "assignee": "collaborator"})
    assert refused.status_code == 400 and "does not review" in str(refused.json())
    unknown = owner_api.post(URL, {**item, "assignee": "nobody"})
    assert unknown.status_code == 400 and "assignee" in unknown.json()
    assert ReviewAssignment.objects.get().assignee.username == "reviewer"

    mine = reviewer_api.get(URL, {"mine": "true", "dataset": reviewed_dataset.pk}).json()
    assert [a["criterion"] for a in mine["results"]] == [crits[0].pk]
    assert collaborator_api.get(URL, {"dataset": reviewed_dataset.pk}).status_code == 403


def test_reviewers_take_free_items_and_release_only_their_own(
    items, reviewer_api, second_reviewer_api, owner_api
):
    answer, _crits = items
    item = {"queue": "labelling", "answer": answer.pk}
    taken = reviewer_api.post(URL, item)
    assert taken.status_code == 201 and taken.json()["assignee"] == "reviewer"
    # Someone else's item cannot be taken over, nor can a reviewer assign others.
    assert second_reviewer_api.post(URL, item).status_code == 400
    assert second_reviewer_api.post(URL, {**item, "assignee": "reviewer"}).status_code == 403
    pk = taken.json()["id"]
    assert second_reviewer_api.delete(f"{URL}{pk}/").status_code == 403
    assert reviewer_api.delete(f"{URL}{pk}/").status_code == 204
    assert not ReviewAssignment.objects.exists()
    # An admin clears anybody's.
    pk = second_reviewer_api.post(URL, item).json()["id"]
    assert owner_api.delete(f"{URL}{pk}/").status_code == 204


def test_outsiders_see_nothing_and_items_are_checked(items, outsider_api, owner_api, owner):
    answer, crits = items
    item = {"queue": "labelling", "answer": answer.pk}
    assert outsider_api.post(URL, item).status_code == 404
    pk = owner_api.post(URL, {**item, "assignee": "reviewer"}).json()["id"]
    assert outsider_api.get(f"{URL}{pk}/").status_code == 404
    assert outsider_api.get(URL).json()["count"] == 0
    # A labelling item has no criterion; a disagreement item needs one.
    bad = owner_api.post(URL, {**item, "criterion": crits[0].pk})
    assert bad.status_code == 400
    assert owner_api.post(URL, {"queue": "disagreement", "answer": answer.pk}).status_code == 400

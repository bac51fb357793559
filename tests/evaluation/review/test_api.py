"""/api/labels/, /api/adjudications/ and /api/review-queue/ with owner, collaborator (expert),
reviewer and outsider: reviewers and admins read and write, experts get 403, outsiders 404."""

from __future__ import annotations

import pytest

from evaluation.labels.models import Adjudication, HumanLabel
from tests.factories import PanelFactory, external_judges
from tests.support.builders import checklisted_query, finished_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def items(reviewed_dataset):
    made = checklisted_query(reviewed_dataset, criteria=3, answers=1)
    crits, (answer,) = made.criteria, made.answers
    finished_run(
        reviewed_dataset,
        PanelFactory(judges=external_judges(3)),
        {(answer, crits[0]): ("pass", "pass", "fail"), (answer, crits[1]): ("fail",) * 3,
         (answer, crits[2]): ("pass",) * 3},
    )  # fmt: skip
    return answer, crits


def test_labels_by_role(
    items, reviewed_dataset, owner_api, reviewer_api, collaborator_api, outsider_api
):
    answer, crits = items
    data = {"answer": answer.pk, "criterion": crits[0].pk, "label": "fail", "note": "No figure."}
    created = reviewer_api.post("/api/labels/", data)
    assert created.status_code == 201, created.content
    body = created.json()
    assert (body["rater"], body["reviewer"], body["label"], body["source"]) == (
        "reviewer", "reviewer", "fail", "app",
    )  # fmt: skip
    assert reviewer_api.post("/api/labels/", {**data, "label": "pass"}).status_code == 200
    assert owner_api.post("/api/labels/", data).status_code == 201
    assert collaborator_api.post("/api/labels/", data).status_code == 403
    assert outsider_api.post("/api/labels/", data).status_code == 404
    assert HumanLabel.objects.count() == 2

    listed = reviewer_api.get("/api/labels/", {"dataset": reviewed_dataset.pk, "rater": "owner"})
    assert [row["rater"] for row in listed.json()["results"]] == ["owner"]
    assert len(reviewer_api.get("/api/labels/", {"criterion": crits[0].pk}).json()["results"]) == 2
    assert collaborator_api.get("/api/labels/").json()["results"] == []
    assert collaborator_api.get("/api/labels/", {"dataset": reviewed_dataset.pk}).status_code == 403
    assert outsider_api.get("/api/labels/", {"dataset": reviewed_dataset.pk}).status_code == 404

    mine = body["id"]
    theirs = HumanLabel.objects.get(rater="owner").pk
    assert reviewer_api.get(f"/api/labels/{theirs}/").status_code == 200
    assert collaborator_api.get(f"/api/labels/{mine}/").status_code == 403
    assert outsider_api.get(f"/api/labels/{mine}/").status_code == 404
    assert (
        reviewer_api.patch(f"/api/labels/{mine}/", {"label": "fail"}).json()["note"] == "No figure."
    )
    assert reviewer_api.patch(f"/api/labels/{theirs}/", {"label": "fail"}).status_code == 403
    assert reviewer_api.delete(f"/api/labels/{theirs}/").status_code == 403
    assert outsider_api.delete(f"/api/labels/{mine}/").status_code == 404
    assert reviewer_api.delete(f"/api/labels/{mine}/").status_code == 204
    assert list(HumanLabel.objects.values_list("rater", flat=True)) == ["owner"]


def test_label_input_errors_name_the_field(items, reviewer_api, reviewed_dataset):
    answer, crits = items
    bad = reviewer_api.post(
        "/api/labels/", {"answer": answer.pk, "criterion": crits[0].pk, "label": "yes"}
    )
    assert bad.status_code == 400 and "label" in bad.json()
    other = checklisted_query(reviewed_dataset, criteria=1, answers=1).criteria
    foreign = {"answer": answer.pk, "criterion": other[0].pk, "label": "pass"}
    assert reviewer_api.post("/api/labels/", foreign).status_code == 404
    assert not HumanLabel.objects.exists()


def test_adjudications_conflict_409_with_the_current_decision(
    items, reviewed_dataset, owner_api, reviewer_api, collaborator_api, outsider_api
):
    answer, crits = items
    data = {"answer": answer.pk, "criterion": crits[0].pk, "label": "fail", "reason": "Wrong."}
    first = reviewer_api.post("/api/adjudications/", data)
    assert first.status_code == 201 and first.json()["version"] == 1
    stale = owner_api.post("/api/adjudications/", {**data, "label": "pass", "version": None})
    assert stale.status_code == 409
    current = stale.json()["current"]
    assert (current["label"], current["reason"], current["decided_by"], current["version"]) == (
        "fail", "Wrong.", "reviewer", 1,
    )  # fmt: skip
    assert "reviewer decided fail" in stale.json()["detail"]
    again = owner_api.post("/api/adjudications/", {**data, "label": "pass", "version": 1})
    assert again.status_code == 200 and again.json()["version"] == 2
    assert Adjudication.objects.get().label == "pass"
    assert collaborator_api.post("/api/adjudications/", {**data, "version": 2}).status_code == 403
    assert outsider_api.post("/api/adjudications/", {**data, "version": 2}).status_code == 404
    pk = first.json()["id"]
    assert reviewer_api.get(f"/api/adjudications/{pk}/").json()["decided_by"] == "owner"
    assert collaborator_api.get(f"/api/adjudications/{pk}/").status_code == 403
    assert outsider_api.get(f"/api/adjudications/{pk}/").status_code == 404
    listed = reviewer_api.get("/api/adjudications/", {"dataset": reviewed_dataset.pk})
    assert [row["label"] for row in listed.json()["results"]] == ["pass"]
    assert outsider_api.get("/api/adjudications/").json()["results"] == []
    assert Adjudication.objects.get().version == 2  # refused calls wrote nothing


def test_review_queue_by_role(
    items, reviewed_dataset, owner_api, reviewer_api, collaborator_api, outsider_api
):
    answer, crits = items
    HumanLabel.objects.create(answer=answer, criterion=crits[2], rater="owner", label="fail")
    params = {"dataset": reviewed_dataset.pk, "queue": "disagreement"}
    rows = reviewer_api.get("/api/review-queue/", params).json()["results"]
    assert [(r["criterion"], r["split"], r["human_labels"]) for r in rows] == [
        (crits[0].pk, True, []), (crits[2].pk, False, ["fail"]),
    ]  # fmt: skip
    assert rows[0]["reason"] == "judges split 2–1" and rows[0]["position"] == 1
    reviewed_dataset.label_policy = "all"
    reviewed_dataset.save()
    labelling = owner_api.get("/api/review-queue/", {"dataset": reviewed_dataset.pk}).json()
    assert [(r["answer"], r["criteria"], r["labels"]) for r in labelling["results"]] == [
        (answer.pk, 3, 1)
    ]
    assert collaborator_api.get("/api/review-queue/", params).status_code == 403
    assert outsider_api.get("/api/review-queue/", params).status_code == 404
    assert reviewer_api.get("/api/review-queue/", {"queue": "labelling"}).status_code == 400
    bad = reviewer_api.get("/api/review-queue/", {**params, "queue": "other"})
    assert bad.status_code == 400 and "queue" in bad.json()

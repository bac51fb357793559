"""A checklist's own scoring (issue 40): its strategy and undecided setting, set by its
author or a dataset admin in the editor and through PATCH /api/checklists/{id}/, checked
as every scoring choice (annotation.scoring), refused with the field named and nothing
changed; a reviewer gets a 403, an outsider a 404. The dataset's undecided setting goes
through its settings page and API; a dataset holding a weight its strategy cannot score
still saves its other settings. Positive weights show beside penalties once submitted."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from annotation import services
from annotation.models import Checklist, Criterion, Dataset
from tests.factories import valid_criteria

pytestmark = pytest.mark.django_db


@pytest.fixture
def checklist(query, collaborator):
    return services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria()
    )


def url(checklist: Checklist) -> str:
    return f"/api/checklists/{checklist.pk}/"


def test_the_author_sets_and_clears_the_checklists_scoring(collaborator_api, checklist):
    response = collaborator_api.patch(
        url(checklist), {"scoring": "tree", "undecided": "not_met"}, format="json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["scoring"], body["undecided"]) == ("tree", "not_met")
    checklist.refresh_from_db()
    assert (checklist.scoring, checklist.undecided) == ("tree", "not_met")
    assert checklist.events.filter(detail__contains="scoring").exists()
    # Empty: the dataset's again; a field left out keeps its value.
    response = collaborator_api.patch(url(checklist), {"undecided": ""}, format="json")
    assert response.status_code == 200 and response.json()["undecided"] == ""
    checklist.refresh_from_db()
    assert (checklist.scoring, checklist.undecided) == ("tree", "")


def test_a_dataset_admin_sets_it_too(owner_api, checklist):
    response = owner_api.patch(url(checklist), {"scoring": "points"}, format="json")
    assert response.status_code == 200
    checklist.refresh_from_db()
    assert checklist.scoring == "points"


def test_bad_values_and_other_fields_are_refused_naming_the_field(collaborator_api, checklist):
    for body, field in (
        ({"scoring": "median"}, "scoring"),
        ({"undecided": "zero"}, "undecided"),
        ({"status": "draft"}, "status"),
    ):
        response = collaborator_api.patch(url(checklist), body, format="json")
        assert response.status_code == 400, body
        assert field in response.json(), response.json()
    checklist.refresh_from_db()
    assert (checklist.scoring, checklist.undecided) == ("", "")


def test_tree_over_a_penalty_is_refused_naming_the_criterion(collaborator_api, checklist):
    criterion = checklist.criteria.get(position=2)
    Criterion.objects.filter(pk=criterion.pk).update(weight=Decimal("-1"))
    response = collaborator_api.patch(
        url(checklist), {"scoring": "tree", "undecided": "not_met"}, format="json"
    )
    assert response.status_code == 400
    (message,) = response.json()["scoring"]
    assert f"criterion 2 (id {criterion.pk})" in message and "tree" in message
    checklist.refresh_from_db()
    assert (checklist.scoring, checklist.undecided) == ("", "")  # nothing changed


def test_a_reviewer_may_not_and_an_outsider_does_not_see_it(
    reviewer_api, outsider_api, reviewed_dataset, checklist
):
    services.checklist_submit(checklist=checklist, by=checklist.author)
    assert reviewer_api.patch(url(checklist), {"scoring": "tree"}, format="json").status_code == 403
    assert outsider_api.patch(url(checklist), {"scoring": "tree"}, format="json").status_code == 404
    checklist.refresh_from_db()
    assert checklist.scoring == ""


def test_the_editor_sets_it_and_shows_a_refusal(
    client, collaborator, reviewer, reviewed_dataset, checklist
):
    client.force_login(collaborator)
    page = client.get(reverse("checklist-detail", args=[checklist.pk]))
    assert b'name="undecided"' in page.content and b"As the dataset (" in page.content
    action = reverse("checklist-scoring", args=[checklist.pk])
    response = client.post(action, {"scoring": "aspect", "undecided": "not_met"}, follow=True)
    assert b"Scoring saved" in response.content
    checklist.refresh_from_db()
    assert (checklist.scoring, checklist.undecided) == ("aspect", "not_met")
    Criterion.objects.filter(pk=checklist.criteria.get(position=1).pk).update(weight=0)
    response = client.post(action, {"scoring": "tree", "undecided": "not_met"}, follow=True)
    assert b"Scoring not changed" in response.content
    checklist.refresh_from_db()
    assert checklist.scoring == "aspect"
    # A reviewer reads the choice and has no control.
    services.checklist_submit(checklist=checklist, by=collaborator)
    client.force_login(reviewer)
    page = client.get(reverse("checklist-detail", args=[checklist.pk]))
    assert b"data-scoring-facts" in page.content and b'name="undecided"' not in page.content
    assert client.post(action, {"scoring": "share"}).status_code == 403


def test_the_datasets_undecided_setting_through_the_api(owner_api, dataset):
    response = owner_api.patch(f"/api/datasets/{dataset.pk}/", {"undecided": "not_met"})
    assert response.status_code == 200 and response.json()["undecided"] == "not_met"
    response = owner_api.patch(f"/api/datasets/{dataset.pk}/", {"undecided": "zero"})
    assert response.status_code == 400 and "undecided" in response.json()
    dataset.refresh_from_db()
    assert dataset.undecided == "not_met"


def test_a_tree_dataset_holding_a_bad_weight_still_saves_its_other_settings(
    owner_api, dataset, checklist
):
    Dataset.objects.filter(pk=dataset.pk).update(scoring="tree")
    Criterion.objects.filter(pk=checklist.criteria.get(position=1).pk).update(weight=-1)
    response = owner_api.patch(
        f"/api/datasets/{dataset.pk}/", {"scoring": "tree", "undecided": "not_met"}
    )
    assert response.status_code == 200, response.content
    dataset.refresh_from_db()
    assert dataset.undecided == "not_met"


def test_a_positive_weight_shows_once_submitted(client, collaborator, checklist):
    Criterion.objects.filter(pk=checklist.criteria.get(position=1).pk).update(weight=3)
    services.checklist_submit(checklist=checklist, by=collaborator)
    client.force_login(collaborator)
    for page in (
        client.get(reverse("checklist-detail", args=[checklist.pk])),
        client.get(reverse("query-detail", args=[checklist.query_id])),
    ):
        assert b"data-weight" in page.content and b"Weight 3.00" in page.content

"""Experts create and edit queries (issue 15, item 1), subject to the dataset setting
`experts_create_queries`; the assignment and progress lists show the expert role only."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import roles, services
from annotation.models import Query
from tests.factories import QueryFactory, UserFactory

NEW_QUERY = {
    "text": "What was Harbor Freight's FY2025 operating margin?",
    "query_date": "2026-03-01",
    "complexity": "moderate",
    "tags": "logistics, margins",
}


@pytest.fixture
def other_dataset(outsider):
    """A dataset where `outsider` is an expert; `collaborator` is not a member."""
    owner = UserFactory(username="other-owner")
    dataset = services.dataset_create(name="Other dataset", by=owner)
    services.dataset_set_role(dataset=dataset, user=outsider, role=roles.DatasetRole.EXPERT)
    return dataset


def test_the_setting_is_on_by_default(dataset):
    assert dataset.experts_create_queries is True


def test_an_expert_adds_a_query_on_the_page(client, collaborator, dataset):
    client.force_login(collaborator)
    page = client.get(reverse("dataset-detail", args=[dataset.pk])).content.decode()
    assert reverse("query-create", args=[dataset.pk]) in page  # the New query button
    response = client.post(reverse("query-create", args=[dataset.pk]), NEW_QUERY)
    query = Query.objects.get()
    assert response["Location"] == reverse("query-detail", args=[query.pk])
    assert (query.created_by, query.complexity) == (collaborator, "moderate")
    assert str(query.query_date) == "2026-03-01"
    assert sorted(query.tags.values_list("name", flat=True)) == ["logistics", "margins"]
    detail = client.get(response["Location"]).content.decode()
    assert reverse("query-edit", args=[query.pk]) in detail
    assert "Moderate: a few facts put together" in detail


def test_an_expert_edits_their_own_query_only(client, collaborator, dataset, owner):
    mine = QueryFactory(dataset=dataset, created_by=collaborator)
    theirs = QueryFactory(dataset=dataset, created_by=owner)
    client.force_login(collaborator)
    url = reverse("query-edit", args=[mine.pk])
    assert client.get(url).status_code == 200
    data = {**NEW_QUERY, "text": "What was Harbor Freight's FY2024 margin?", "complexity": ""}
    assert client.post(url, data).status_code == 302
    mine.refresh_from_db()
    assert (mine.text, mine.complexity) == ("What was Harbor Freight's FY2024 margin?", "")
    assert client.get(reverse("query-edit", args=[theirs.pk])).status_code == 403
    assert client.post(reverse("query-edit", args=[theirs.pk]), data).status_code == 403
    theirs.refresh_from_db()
    assert theirs.text != data["text"]
    detail = client.get(reverse("query-detail", args=[theirs.pk])).content.decode()
    assert reverse("query-edit", args=[theirs.pk]) not in detail


def test_bad_input_names_the_field_and_changes_nothing(client, collaborator, dataset):
    query = QueryFactory(dataset=dataset, created_by=collaborator)
    before = (query.text, query.query_date)
    client.force_login(collaborator)
    response = client.post(
        reverse("query-edit", args=[query.pk]),
        {**NEW_QUERY, "query_date": "30/02/2026", "complexity": "galactic"},
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert "Enter a valid date." in page and "galactic is not one of the available" in page
    query.refresh_from_db()
    assert (query.text, query.query_date) == before


def test_the_setting_off_leaves_queries_to_admins(client, collaborator, owner, dataset):
    services.dataset_update(dataset=dataset, experts_create_queries=False)
    mine = QueryFactory(dataset=dataset, created_by=collaborator)
    client.force_login(collaborator)
    page = client.get(reverse("dataset-detail", args=[dataset.pk])).content.decode()
    assert reverse("query-create", args=[dataset.pk]) not in page
    assert client.get(reverse("query-create", args=[dataset.pk])).status_code == 403
    assert client.post(reverse("query-create", args=[dataset.pk]), NEW_QUERY).status_code == 403
    # Queries they added earlier are frozen too: the admins curate the dataset now.
    assert client.get(reverse("query-edit", args=[mine.pk])).status_code == 403
    assert not Query.objects.exclude(pk=mine.pk).exists()
    client.force_login(owner)
    assert client.get(reverse("query-edit", args=[mine.pk])).status_code == 200


def test_a_reviewer_cannot_create_or_edit_queries(client, reviewer, reviewed_dataset, owner):
    query = QueryFactory(dataset=reviewed_dataset, created_by=owner)
    client.force_login(reviewer)
    assert client.get(reverse("query-create", args=[reviewed_dataset.pk])).status_code == 403
    response = client.post(reverse("query-create", args=[reviewed_dataset.pk]), NEW_QUERY)
    assert response.status_code == 403
    assert client.get(reverse("query-edit", args=[query.pk])).status_code == 403
    assert Query.objects.count() == 1


def test_an_expert_of_another_dataset_gets_404(client, outsider, dataset, other_dataset):
    query = QueryFactory(dataset=dataset, created_by=None)
    client.force_login(outsider)
    assert client.get(reverse("query-create", args=[dataset.pk])).status_code == 404
    assert client.post(reverse("query-create", args=[dataset.pk]), NEW_QUERY).status_code == 404
    assert client.get(reverse("query-edit", args=[query.pk])).status_code == 404
    assert client.get(reverse("query-create", args=[other_dataset.pk])).status_code == 200


def test_the_api_follows_the_same_rules(
    collaborator_api, outsider_api, reviewer_api, owner_api, reviewed_dataset, other_dataset
):
    dataset = reviewed_dataset
    data = {"dataset": dataset.pk, **NEW_QUERY, "tags": ["margins"]}
    created = collaborator_api.post("/api/queries/", data)
    assert created.status_code == 201, created.json()
    body = created.json()
    assert (body["created_by"], body["complexity"]) == ("collaborator", "moderate")
    url = f"/api/queries/{body['id']}/"
    patched = collaborator_api.patch(url, {"complexity": "complex", "dataset": dataset.pk})
    assert patched.status_code == 200 and patched.json()["complexity"] == "complex"
    # Moving a query to another dataset needs admin rights on both.
    assert collaborator_api.patch(url, {"dataset": other_dataset.pk}).status_code == 403
    assert reviewer_api.post("/api/queries/", data).status_code == 403
    assert reviewer_api.patch(url, {"complexity": "simple"}).status_code == 403
    assert outsider_api.post("/api/queries/", data).status_code == 404
    assert outsider_api.patch(url, {"complexity": "simple"}).status_code == 404
    assert collaborator_api.delete(url).status_code == 403  # deleting stays with admins
    bad = collaborator_api.post("/api/queries/", {**data, "complexity": "galactic"})
    assert bad.status_code == 400 and "complexity" in bad.json()
    admins = owner_api.post("/api/queries/", data).json()
    assert (
        collaborator_api.patch(
            f"/api/queries/{admins['id']}/", {"complexity": "simple"}
        ).status_code
        == 403
    )
    assert Query.objects.get(pk=body["id"]).complexity == "complex"
    owner_api.patch(f"/api/datasets/{dataset.pk}/", {"experts_create_queries": False})
    assert collaborator_api.post("/api/queries/", data).status_code == 403
    assert collaborator_api.patch(url, {"complexity": "simple"}).status_code == 403


def test_the_setting_is_on_the_settings_page(client, owner, dataset):
    client.force_login(owner)
    url = reverse("dataset-edit", args=[dataset.pk])
    assert "Experts create queries" in client.get(url).content.decode()


def test_assignment_and_progress_list_experts_only(client, owner, collaborator, dataset):
    second_admin = UserFactory(username="second-admin")
    services.dataset_set_role(dataset=dataset, user=second_admin, role=roles.DatasetRole.ADMIN)
    query = QueryFactory(dataset=dataset)
    client.force_login(owner)
    detail = client.get(reverse("query-detail", args=[query.pk])).content.decode()
    assign = detail[detail.index("Assign experts") :]
    assert "collaborator" in assign
    assert "owner" not in assign and "second-admin" not in assign
    progress = client.get(reverse("dataset-progress", args=[dataset.pk])).content.decode()
    per_expert = progress[progress.index("Per expert") : progress.index("Per query")]
    assert "<td>collaborator</td>" in per_expert
    assert "<td>owner</td>" not in per_expert and "second-admin" not in per_expert

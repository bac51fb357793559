"""Uploading answers by page and API: the dataset's admins only, whole file checked first,
errors listed by file, line and field, nothing written on error."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation import roles, services
from evaluation.answers.models import Answer
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def upload(name: str, *rows: dict) -> SimpleUploadedFile:
    content = "\n".join(json.dumps(r) for r in rows).encode()
    return SimpleUploadedFile(name, content, content_type="application/jsonl")


def test_upload_page_imports_and_lists(client, owner, query, dataset):
    client.force_login(owner)
    url = reverse("dataset-answers", args=[dataset.pk])
    response = client.post(
        url, {"file": upload("n.jsonl", {"query": query.pk, "system": "Atlas", "text": "A"})}
    )
    assert response.status_code == 302
    page = client.get(url).content.decode()
    assert "Imported n.jsonl: 1 new answers" in page and "Atlas" in page


def test_upload_page_lists_row_errors_and_imports_nothing(client, owner, query, dataset):
    client.force_login(owner)
    response = client.post(
        reverse("dataset-answers", args=[dataset.pk]),
        {
            "file": upload(
                "n.jsonl",
                {"query": query.pk, "system": "Atlas", "text": "A"},
                {"query": query.pk, "text": "no system"},
            )
        },
    )
    assert response.status_code == 400
    assert "n.jsonl:2: field &#x27;system&#x27; is required" in response.content.decode()
    assert not Answer.objects.exists()


def test_upload_page_permissions(client, collaborator, outsider, dataset):
    reviewer = UserFactory(username="reviewer")
    services.dataset_set_role(dataset=dataset, user=reviewer, role=roles.DatasetRole.REVIEWER)
    url = reverse("dataset-answers", args=[dataset.pk])
    client.force_login(reviewer)
    assert client.get(url).status_code == 200
    assert client.post(url, {"file": upload("n.jsonl", {})}).status_code == 403
    client.force_login(collaborator)
    assert client.get(url).status_code == 403
    client.force_login(outsider)
    assert client.get(url).status_code == 404


def test_api_import_and_list(owner_api, collaborator_api, outsider_api, query, dataset):
    file = upload("n.jsonl", {"query": query.pk, "system": "Atlas", "text": "A"})
    refused = collaborator_api.post(
        "/api/answers/import/", {"dataset": dataset.pk, "file": file}, format="multipart"
    )
    assert refused.status_code == 403
    file = upload("n.jsonl", {"query": query.pk, "system": "Atlas", "text": "A"})
    created = owner_api.post(
        "/api/answers/import/", {"dataset": dataset.pk, "file": file}, format="multipart"
    )
    assert created.status_code == 201 and created.json()["created"] == 1
    bad = upload("bad.jsonl", {"query": 0, "system": "Atlas", "text": "A"})
    rejected = owner_api.post(
        "/api/answers/import/", {"dataset": dataset.pk, "file": bad}, format="multipart"
    )
    assert rejected.status_code == 400
    assert rejected.json()["file"] == [
        f"bad.jsonl:1: field 'query': no query 0 in dataset {dataset.pk}"
    ]
    assert [a["text"] for a in collaborator_api.get("/api/answers/").json()["results"]] == ["A"]
    assert outsider_api.get("/api/answers/").json()["results"] == []
    answer = Answer.objects.get()
    assert outsider_api.get(f"/api/answers/{answer.pk}/").status_code == 404
    assert owner_api.get("/api/systems/").json()["results"][0]["name"] == "Atlas"
    assert collaborator_api.post("/api/systems/", {"name": "Mine"}).status_code == 403
    assert owner_api.post("/api/systems/", {"name": "Mine", "version": "2"}).status_code == 201


def test_rows_may_name_their_query_by_external_id(client, owner, query, dataset, owner_api):
    """A system's answers file names queries as the export and the reward API do, by
    external id; the ids it named are then fixed (a later rename is refused, saying why)."""
    query.refresh_from_db()
    assert query.external_id == f"query-{query.pk}" and not query.external_id_fixed_by
    client.force_login(owner)
    url = reverse("dataset-answers", args=[dataset.pk])
    row = {"query_external_id": query.external_id, "system": "Atlas", "text": "A"}
    assert client.post(url, {"file": upload("n.jsonl", row)}).status_code == 302
    answer = Answer.objects.get()
    assert answer.query_id == query.pk
    query.refresh_from_db()
    assert query.external_id_fixed_by == "answers"
    renamed = owner_api.patch(
        f"/api/queries/{query.pk}/", {"external_id": "renamed"}, format="json"
    )
    assert renamed.status_code == 400
    assert "answers were imported naming the query by it" in json.dumps(renamed.json())

    # The API: `query_external_id` with the dataset's id.
    posted = owner_api.post(
        "/api/answers/",
        {"dataset": dataset.pk, "query_external_id": query.external_id, "system": "Bolt",
         "text": "B"},
        format="json",
    )  # fmt: skip
    assert posted.status_code == 201, posted.json()
    assert posted.json()["query"] == query.pk


NO_SUCH = "field 'query_external_id': no query with external id 'nope'"
BOTH = "give 'query' or 'query_external_id', not both"


@pytest.mark.parametrize(
    ("row", "error"),
    [
        ({"query_external_id": "nope"}, NO_SUCH),
        ({"query_external_id": "{ext}", "query": "{pk}"}, BOTH),
        ({}, "field 'query' (or 'query_external_id') is required"),
    ],
)
def test_a_bad_query_reference_is_named_and_nothing_written(
    client, owner, query, dataset, row, error
):
    row = {k: v.format(ext=query.external_id, pk=query.pk) for k, v in row.items()}
    client.force_login(owner)
    good = {"query": query.pk, "system": "Atlas", "text": "A"}
    response = client.post(
        reverse("dataset-answers", args=[dataset.pk]),
        {
            "file": upload(
                "n.jsonl", good, {**row, "system": "Atlas", "text": "B", "run_label": "2"}
            )
        },
    )
    assert response.status_code == 400
    assert f"n.jsonl:2: {error}".replace("'", "&#x27;") in response.content.decode()
    assert not Answer.objects.exists()
    query.refresh_from_db()
    assert not query.external_id_fixed_by


def test_api_by_external_id_checks_the_dataset(
    owner_api, collaborator_api, outsider_api, query, dataset
):
    body = {"query_external_id": query.external_id, "system": "Bolt", "text": "B"}
    missing = owner_api.post("/api/answers/", body, format="json")
    assert missing.status_code == 400 and "dataset" in missing.json()
    both = owner_api.post(
        "/api/answers/", {**body, "dataset": dataset.pk, "query": query.pk}, format="json"
    )
    assert both.status_code == 400 and "not both" in json.dumps(both.json())
    other = services.dataset_create(name="Other", by=UserFactory(username="other-owner"))
    mismatched = owner_api.post(
        "/api/answers/",
        {"query": query.pk, "dataset": other.pk, "system": "B", "text": "B"},
        format="json",
    )
    assert mismatched.status_code == 400
    assert (
        collaborator_api.post(
            "/api/answers/", {**body, "dataset": dataset.pk}, format="json"
        ).status_code
        == 403
    )
    assert (
        outsider_api.post(
            "/api/answers/", {**body, "dataset": dataset.pk}, format="json"
        ).status_code
        == 404
    )
    assert not Answer.objects.exists()

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

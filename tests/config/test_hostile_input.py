"""No 500 on any input (issue 13, point 4): malformed ids, Unicode digits, deep JSON, NUL
bytes, huge fields, huge uploads; the same limits in forms, API and imports; bounded errors.

Every case here answered 500 (or stored what it should refuse) before: each is named after
the probe's finding. The route-by-route sweep lives in test_permission_matrix.py.
"""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation import services
from annotation.models import Checklist, Criterion
from config import limits
from evaluation.answers.models import Answer
from evaluation.labels.models import HumanLabel
from tests.factories import valid_criteria
from tests.support.builders import checklisted_query

pytestmark = pytest.mark.django_db

API_DETAIL_PREFIXES = [
    "datasets", "queries", "checklists", "criteria", "source-types", "guidelines", "judges",
    "panels", "runs", "verdicts", "systems", "answers", "perfect-answers", "overlaps",
    "labels", "adjudications", "review-assignments",
]  # fmt: skip
BAD_IDS = ["abc", "²", "٣", "1.5", "-1", "1e3", "%00", "99999999999999999999999"]


@pytest.mark.parametrize("prefix", API_DETAIL_PREFIXES)
def test_malformed_ids_in_api_detail_routes_are_404(owner_api, prefix):
    for bad in BAD_IDS:
        response = owner_api.get(f"/api/{prefix}/{bad}/")
        assert response.status_code == 404, (prefix, bad, response.status_code)


def test_unicode_digits_in_query_parameters(client, owner_api, owner, reviewed_dataset, dataset):
    client.force_login(owner)
    made = checklisted_query(reviewed_dataset, criteria=2, answers=1)
    query, (answer,) = made.query, made.answers
    pages = [
        reverse("review-queue", args=[dataset.pk]),
        reverse("review-next", args=[dataset.pk]),
        reverse("answer-review", args=[answer.pk]),
        reverse("dataset-agreement", args=[dataset.pk]),
        reverse("dataset-cross-evaluation", args=[dataset.pk]),
        reverse("query-overlaps", args=[query.pk]),
        reverse("dataset-detail", args=[dataset.pk]),
    ]
    params = {"run": "²", "page": "²", "answer": "²", "criterion": "٣", "a": "²", "b": "²",
              "source": "run:²", "queue": "²", "user": "²"}  # fmt: skip
    for url in pages:
        assert client.get(url, params).status_code in (200, 400, 404), url
    for url in ["/api/queries/", "/api/verdicts/", "/api/labels/", "/api/answers/"]:
        assert owner_api.get(url, {"dataset": "²", "run": "²", "page": "²"}).status_code in (
            200, 400, 404
        )  # fmt: skip


def test_json_nested_1000_deep_is_a_400(collaborator_api, query):
    deep = "[" * 1000 + "]" * 1000
    body = f'{{"query": {query.pk}, "criteria": {deep}}}'
    response = collaborator_api.post("/api/checklists/", body, content_type="application/json")
    assert response.status_code == 400
    assert "nested deeper than" in response.json()["detail"]


def test_nul_bytes_are_refused_everywhere(client, collaborator_api, reviewer, reviewed_dataset):
    made = checklisted_query(reviewed_dataset, criteria=2, answers=1)
    query, criteria, (answer,) = made.query, made.criteria, made.answers
    client.force_login(reviewer)
    page = client.post(
        reverse("answer-review-label", args=[answer.pk]),
        {"criterion": criteria[0].pk, "label": "pass", "note": "a\x00b"},
    )
    assert page.status_code == 400
    adjudicate = client.post(
        reverse("answer-review-adjudicate", args=[answer.pk]),
        {"criterion": criteria[0].pk, "label": "pass", "reason": "a\x00b", "version": ""},
    )
    assert adjudicate.status_code == 400
    assert not HumanLabel.objects.exists()
    api = collaborator_api.post(
        "/api/checklists/",
        {"query": query.pk, "criteria": [{"text": "States \x00 it.", "kind": "fact"}]},
        format="json",
    )
    assert api.status_code == 400
    assert client.get("/datasets/", {"q": "\x00"}).status_code in (400, 404)


def upload(name: str, content: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="text/plain")


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("a.jsonl", b'{"query": 1, "system": "S", "text": "a\x00b"}', "NUL character"),
        ("a.csv", b"query,system,text\n1,S," + b"x" * 140_000 + b"\n", "not valid CSV"),
        ("a.jsonl", b'{"query": 1, "system": "S", "text": ' + b"[" * 1000, "nested deeper"),
    ],
)
def test_imports_refuse_nul_huge_fields_and_deep_nesting(
    owner_api, dataset, name, content, message
):
    response = owner_api.post(
        "/api/answers/import/",
        {"dataset": dataset.pk, "file": upload(name, content)},
        format="multipart",
    )
    assert response.status_code == 400, response.content[:300]
    assert message in json.dumps(response.json())


def test_the_same_lengths_in_forms_api_and_imports(
    client, collaborator, collaborator_api, owner_api, query, dataset
):
    checklist = services.checklist_start(query=query, by=collaborator)
    client.force_login(collaborator)
    huge = "States " + "x" * 1_000_000
    client.post(reverse("criterion-create", args=[checklist.pk]), {"text": huge, "kind": "fact"})
    assert not Criterion.objects.exists()  # the page form stored a million characters before
    criterion = services.criterion_add(
        checklist=checklist, by=collaborator, data=valid_criteria()[1]
    )
    form = {"text": criterion.text, "kind": "fact", "weight": "1", "notes": "n" * 1_000_000}
    client.post(reverse("criterion-update", args=[criterion.pk]), form)
    criterion.refresh_from_db()
    assert criterion.notes == ""
    api = collaborator_api.patch(
        f"/api/criteria/{criterion.pk}/", {"notes": "n" * (limits.CRITERION_NOTES + 1)},
        format="json",
    )  # fmt: skip
    assert api.status_code == 400
    row = {"query": query.pk, "system": "S", "text": "a" * (limits.ANSWER_TEXT + 1)}
    response = owner_api.post(
        "/api/answers/import/",
        {"dataset": dataset.pk, "file": upload("big.jsonl", json.dumps(row).encode())},
        format="multipart",
    )
    assert response.status_code == 400
    assert f"longer than {limits.ANSWER_TEXT}" in json.dumps(response.json())
    assert not Answer.objects.exists()


def test_uploads_have_a_size_cap_with_a_clear_error(owner_api, client, owner, dataset, settings):
    settings.IMPORT_MAX_BYTES = 10_000
    big = upload("big.jsonl", b" " * 20_000)
    response = owner_api.post(
        "/api/answers/import/", {"dataset": dataset.pk, "file": big}, format="multipart"
    )
    assert response.status_code == 400
    assert "files are accepted up to" in json.dumps(response.json())
    client.force_login(owner)
    page = client.post(
        reverse("dataset-answers", args=[dataset.pk]), {"file": upload("big.jsonl", b" " * 20_000)}
    )
    # The page shows the form's error (evaluation/runs/views.py answers 200 for it).
    assert "files are accepted up to" in page.content.decode()
    assert not Answer.objects.exists()
    # A body past the request cap is refused before it is read.
    huge = client.post(
        "/api/answers/import/", b"x", content_type="application/octet-stream",
        CONTENT_LENGTH=str(limits.request_max_bytes() + 1),
    )  # fmt: skip
    assert huge.status_code == 413


def test_import_error_responses_are_bounded(owner_api, dataset):
    rows = "\n".join(json.dumps({"query": "x" * 1000}) for _ in range(10_000))
    response = owner_api.post(
        "/api/answers/import/",
        {"dataset": dataset.pk, "file": upload("bad.jsonl", rows.encode())},
        format="multipart",
    )
    assert response.status_code == 400
    errors = response.json()["file"]
    assert len(errors) == limits.ERRORS_LISTED + 1
    assert errors[-1].startswith("… and ")
    assert len(response.content) < 100_000  # 19 MB before


def test_a_submitted_checklist_create_race_never_500s(collaborator_api, query):
    # The 500 the probe saw was an uncaught ChecklistRejected; it now answers 400 or 409.
    body = {"query": query.pk, "criteria": [{"text": "x", "kind": "fact"}], "submit": True}
    assert collaborator_api.post("/api/checklists/", body, format="json").status_code == 400
    assert not Checklist.objects.exists()

"""A query made on the New query page is addressable everywhere by one external id (issue
40): the id it gets on creation, or the one its admin gives it on its page, is what the
export writes, what the reward API and a labels import take, and what an import of the
export keeps. Once any of those has used it, it can no longer change, and a change is
refused saying why."""

from __future__ import annotations

import io

import pytest
from django.urls import reverse

from annotation.models import Query
from evaluation.datasets.export import export_chunks
from evaluation.datasets.import_checks import ImportOptions
from evaluation.datasets.importer import import_dataset
from evaluation.datasets.review_imports import import_labels, import_verdicts
from evaluation.labels.models import HumanLabel
from tests.evaluation.data.zips import jsonl
from tests.support.builders import checklisted_query

pytestmark = pytest.mark.django_db

NEW_QUERY = {
    "text": "What was Harbor Freight's FY2025 operating margin?",
    "query_date": "2026-03-01",
}


def made_on_the_page(client, dataset) -> Query:
    response = client.post(reverse("query-create", args=[dataset.pk]), NEW_QUERY)
    assert response.status_code == 302
    return Query.objects.get(dataset=dataset)


def test_a_query_made_on_the_page_is_named_by_one_id_by_export_rewards_and_labels(
    owner_client, owner_api, dataset, offline_panel, tmp_path
):
    query = made_on_the_page(owner_client, dataset)
    assert query.external_id == f"query-{query.pk}"
    page = owner_client.get(reverse("query-detail", args=[query.pk])).content.decode()
    assert f'<code id="query-external-id">query-{query.pk}</code>' in page

    # Its admin renames it on its page while nothing outside holds it.
    response = owner_client.post(
        reverse("query-external-id", args=[query.pk]), {"external_id": "hf-margin-2025"}
    )
    assert response.status_code == 302
    query.refresh_from_db()
    assert query.external_id == "hf-margin-2025" and query.external_id_fixed_by == ""

    built = checklisted_query(query=query, criteria=2, answers=1)
    answer, criterion = built.answers[0], built.criteria[0]

    # The reward API takes it.
    body = {
        "dataset": dataset.pk, "panel": offline_panel.pk,
        "items": [{"query": "hf-margin-2025", "completion": "The operating margin was 9%."}],
    }  # fmt: skip
    response = owner_api.post("/api/rewards/", body, format="json")
    assert response.status_code == 200, response.content
    assert len(response.json()["items"]) == 1

    # A labels import names the query by it too.
    labels = (
        "system,query,run_label,criterion,rater,label\r\n"
        f"{answer.system.name},hf-margin-2025,{answer.run_label},{criterion.pk},dr-a,pass\r\n"
    )
    upload = io.BytesIO(labels.encode())
    upload.name = "labels.csv"
    response = owner_api.post(
        "/api/imports/labels/", {"dataset": dataset.pk, "file": upload}, format="multipart"
    )
    assert response.status_code == 201, response.content
    assert HumanLabel.objects.get(answer=answer, criterion=criterion).label == "pass"

    # The export writes it, in every table that names the query.
    data = b"".join(export_chunks(dataset))
    assert [row["external_id"] for row in jsonl(data, "queries.jsonl")] == ["hf-margin-2025"]
    assert {row["query"] for row in jsonl(data, "answers.jsonl")} == {"hf-margin-2025"}
    assert {row["query"] for row in jsonl(data, "labels.jsonl")} == {"hf-margin-2025"}

    # An import of that export keeps it.
    path = tmp_path / "export.zip"
    path.write_bytes(data)
    copy = import_dataset(path, ImportOptions(as_copy="Harbor copy")).dataset
    assert list(copy.queries.values_list("external_id", flat=True)) == ["hf-margin-2025"]

    # The reward API used it first: it is fixed, and a change is refused with the reason.
    query.refresh_from_db()
    assert query.external_id_fixed_by == "rewards"
    response = owner_client.post(
        reverse("query-external-id", args=[query.pk]), {"external_id": "another"}
    )
    assert response.status_code == 400
    assert "rewards were requested for it" in response.content.decode()
    response = owner_api.patch(f"/api/queries/{query.pk}/", {"external_id": "another"})
    assert response.status_code == 400
    assert "rewards were requested for it" in response.json()["external_id"][0]
    query.refresh_from_db()
    assert query.external_id == "hf-margin-2025"


@pytest.mark.parametrize(
    ("use", "fixed_by"),
    [("export", "export"), ("labels", "labels"), ("verdicts", "verdicts"), ("import", "import")],
)
def test_each_use_outside_fixes_the_id(owner, owner_api, dataset, use, fixed_by, tmp_path):
    built = checklisted_query(dataset, criteria=1, answers=1, external_id="q-7")
    query = built.query
    if use == "export":
        b"".join(export_chunks(dataset))
    elif use == "labels":
        answer = built.answers[0]
        import_labels(
            dataset=dataset, name="labels.jsonl",
            content=f'{{"system": "{answer.system.name}", "query": "q-7", "run_label": '
            f'"{answer.run_label}", "criterion": {built.criteria[0].pk}, "rater": "r", '
            '"label": "fail"}\n',
        )  # fmt: skip
    elif use == "verdicts":
        answer = built.answers[0]
        import_verdicts(
            dataset=dataset, name="verdicts.jsonl", panel="Outside judges",
            content=f'{{"system": "{answer.system.name}", "query": "q-7", "run_label": '
            f'"{answer.run_label}", "criterion": {built.criteria[0].pk}, "judge": "ext", '
            '"outcome": "pass"}\n',
        )  # fmt: skip
    else:
        path = tmp_path / "export.zip"
        path.write_bytes(b"".join(export_chunks(dataset)))
        copy = import_dataset(path, ImportOptions(as_copy="Copy", by=owner)).dataset
        query = copy.queries.get()
    query.refresh_from_db()
    assert query.external_id_fixed_by == fixed_by and query.external_id_fixed_at is not None
    response = owner_api.patch(f"/api/queries/{query.pk}/", {"external_id": "q-8"})
    assert response.status_code == 400 and "external_id" in response.json()

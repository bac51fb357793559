"""Exporting a dataset: the zip's tables in three formats, CSV made safe for spreadsheets,
the data card, loading with Hugging Face `datasets`, who may export, and the blind rule."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.utils import timezone

from annotation import roles, services
from annotation.models import Checklist
from bench.data_io.generate import generate
from evaluation.datasets.export import ExportOptions, export_chunks, visible_checklists
from tests.evaluation.data.zips import jsonl, members, unzip, zip_bytes
from tests.factories import ChecklistFactory, CriterionFactory, QueryFactory


@pytest.fixture
def generated(owner):
    return generate("Generated set", admin=owner)


def _export(dataset, **options) -> bytes:
    return b"".join(export_chunks(dataset, ExportOptions.parse(**options) if options else None))


def test_export_has_every_table_in_three_formats_a_data_card_and_schema_version(generated):
    files = members(_export(generated))
    for table in (
        "queries",
        "checklists",
        "criteria",
        "citations",
        "perfect_answers",
        "answers",
        "verdicts",
        "labels",
        "adjudications",
        "scores",
        "overlaps",
        "runs",
        "judges",
    ):
        for fmt in ("jsonl", "csv", "parquet"):
            assert f"{table}.{fmt}" in files
    meta = json.loads(files["dataset.json"])
    manifest = json.loads(files["manifest.json"])
    assert meta["schema_version"] == manifest["schema_version"] == 1
    assert meta["licence"] == "CC BY 4.0"
    assert (
        manifest["tables"]["verdicts"]["rows"] == 3 * 2 * 8 * 3
    )  # queries×systems×criteria×judges
    card = files["README.md"].decode()
    assert "CC BY 4.0" in card and "| `verdicts` | 144 |" in card and "How it was made" in card


def test_rows_name_each_other_by_external_keys(generated):
    data = _export(generated)
    query = jsonl(data, "queries.jsonl")[0]
    assert query["external_id"] == "Q00000" and query["query_date"] == "2026-10-01"
    criterion = jsonl(data, "criteria.jsonl")[1]
    assert (criterion["query"], criterion["author"], criterion["external_id"]) == (
        "Q00000", "expert-0", "C2",
    )  # fmt: skip
    assert criterion["source_types"] == ["earnings-release"] and criterion["weight"] == 1.0
    verdict = jsonl(data, "verdicts.jsonl")[0]
    keys = ("system", "system_version", "query", "run_label", "author")
    assert {k: verdict[k] for k in keys} == {
        "system": "System 0", "system_version": "2026.11", "query": "Q00000",
        "run_label": "nightly", "author": "expert-0",
    }  # fmt: skip
    assert verdict["judge_params"]["model"] == "model-0"  # nested in JSONL, not JSON text
    perfect = jsonl(data, "perfect_answers.jsonl")
    assert [(p["query"], p["author"]) for p in perfect] == [
        ("Q00000", "expert-0"),
        ("Q00000", "expert-1"),
    ]


def test_csv_cells_that_spreadsheets_would_run_are_neutralised(generated):
    files = members(_export(generated, include=["verdicts"], formats=["csv"]))
    criteria = list(csv.DictReader(io.StringIO(files["criteria.csv"].decode())))
    assert criteria[0]["text"].startswith("'-Uses the Q3 call")
    verdicts = list(csv.DictReader(io.StringIO(files["verdicts.csv"].decode())))
    assert {v["rationale"] for v in verdicts if "hedges" in v["rationale"]} == {
        "'=The answer hedges; a reader cannot tell which figure it means."
    }
    assert "\n" in next(
        a["text"] for a in csv.DictReader(io.StringIO(files["answers.csv"].decode()))
    )  # quoted newlines survive


def test_the_unzipped_export_loads_with_hugging_face_datasets(generated, tmp_path):
    datasets = pytest.importorskip("datasets")
    folder = unzip(_export(generated), tmp_path)
    cache = str(tmp_path / "hf-cache")
    verdicts = datasets.load_dataset(
        "parquet", data_files=str(folder / "verdicts.parquet"), split="train", cache_dir=cache
    )
    assert verdicts.num_rows == 144
    assert set(verdicts.column_names) >= {"run", "query", "criterion", "judge", "outcome"}
    criteria = datasets.load_dataset(
        "json", data_files=str(folder / "criteria.jsonl"), split="train", cache_dir=cache
    )
    assert criteria.num_rows == 3 * 2 * 4
    assert criteria[0]["source_types"] == []
    queries = datasets.load_dataset(
        "csv", data_files=str(folder / "queries.csv"), split="train", cache_dir=cache
    )
    assert queries[0]["external_id"] == "Q00000"


def test_only_the_datasets_admins_export(client, dataset, owner, collaborator, outsider, reviewer):
    services.dataset_set_role(dataset=dataset, user=reviewer, role=roles.DatasetRole.REVIEWER)
    QueryFactory(dataset=dataset)
    url = f"/datasets/{dataset.pk}/export/"
    for user, page, api in ((collaborator, 403, 403), (reviewer, 403, 403), (outsider, 404, 404)):
        client.force_login(user)
        assert client.get(url).status_code == page
        assert client.post(url, {"formats": ["jsonl"]}).status_code == page
        assert client.get(f"/api/datasets/{dataset.pk}/export/").status_code == api
    client.force_login(owner)
    assert client.get(url).status_code == 200
    response = client.post(url, {"formats": ["jsonl"], "include": ["answers"]})
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert "queries.jsonl" in members(zip_bytes(response))
    api = client.get(f"/api/datasets/{dataset.pk}/export/?formats=csv&include=labels")
    assert api.status_code == 200 and "labels.csv" in members(zip_bytes(api))
    assert client.get(f"/api/datasets/{dataset.pk}/export/?formats=xml").status_code == 400


def test_exports_read_checklists_through_the_blind_rule(dataset, owner, collaborator, reviewer):
    """Admins read every checklist, drafts included; the rows come from the same selector as
    every page, so anyone else would never get another expert's unsubmitted checklist."""
    services.dataset_set_role(dataset=dataset, user=reviewer, role=roles.DatasetRole.REVIEWER)
    query = QueryFactory(dataset=dataset)
    draft = ChecklistFactory(query=query, author=collaborator)
    CriterionFactory(checklist=draft, text="A draft criterion nobody else may read.")
    submitted = ChecklistFactory(
        query=query, status=Checklist.Status.SUBMITTED, first_submitted_at=timezone.now()
    )
    assert set(visible_checklists(dataset, owner)) == {draft, submitted}
    assert set(visible_checklists(dataset, reviewer)) == {submitted}
    data = b"".join(export_chunks(dataset, user=reviewer))
    assert "nobody else" not in members(data)["criteria.jsonl"].decode()
    assert [c["status"] for c in jsonl(data, "checklists.jsonl")] == ["submitted"]
    data = b"".join(export_chunks(dataset, user=owner))
    assert "nobody else" in members(data)["criteria.jsonl"].decode()


def test_each_criterion_has_its_own_source_types(generated):
    """The criteria table reads the source types beside the criteria and merges the two
    reads (nothing held for every criterion): each row has its own, sorted, and a criterion
    with none has none, wherever it falls between the others."""
    from annotation.models import Criterion, SourceType

    slugs = list(SourceType.objects.order_by("-slug").values_list("slug", flat=True)[:3])
    criteria = list(Criterion.objects.filter(checklist__query__dataset=generated).order_by("pk"))
    for i, criterion in enumerate(criteria):
        criterion.source_types.set(SourceType.objects.filter(slug__in=slugs[: i % 4]))
    rows = jsonl(_export(generated, include=[], formats=["jsonl"]), "criteria.jsonl")
    assert [row["id"] for row in rows] == [c.pk for c in criteria]
    assert [row["source_types"] for row in rows] == [
        sorted(slugs[: i % 4]) for i in range(len(rows))
    ]

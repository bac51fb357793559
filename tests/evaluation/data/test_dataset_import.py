"""Importing a dataset: checked before anything is written, errors naming file, row and field,
CSV with or without a byte-order mark, a clear refusal of other encodings, the guideline at
import (warn or refuse), the same file twice, two imports at once, and who may import."""

from __future__ import annotations

import threading

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from annotation.models import Checklist, ChecklistEvent, Criterion, Dataset, Guideline, Query
from evaluation.answers.models import Answer
from evaluation.datasets.import_target import NameTaken
from evaluation.datasets.importer import ImportOptions, ImportRejected, import_dataset
from tests.evaluation.data.imports import META, checklist_files, write, zipped


def answers_csv(rows: int, bad: int | None = None, bom: bool = False) -> bytes:
    lines = ["system,system_version,query,run_label,external_id,text"]
    for n in range(rows):
        query = "nope" if n == bad else "q1"
        lines.append(f'Atlas,1,{query},run-{n},a{n},"Revenue was $4.{n} billion,\nup 3%."')
    return ("\ufeff" if bom else "").encode() + "\r\n".join(lines).encode() + b"\r\n"


@pytest.mark.django_db
def test_ten_thousand_rows_with_one_bad_row_write_nothing_and_name_that_row(tmp_path):
    folder = write(
        tmp_path / "in", {**checklist_files(), "answers.csv": answers_csv(10_000, 6_789)}
    )
    with pytest.raises(ImportRejected) as rejected:
        import_dataset(folder)
    # The header is line 1 and each record spans two lines (a quoted newline).
    assert rejected.value.errors == ["answers.csv:13580: field 'query': no query 'nope'"]
    assert not Dataset.objects.filter(name="Imported benchmark").exists()
    assert Answer.objects.count() == 0 and Query.objects.count() == 0


@pytest.mark.django_db
def test_a_csv_with_a_byte_order_mark_imports_and_a_second_import_changes_nothing(tmp_path):
    folder = write(
        tmp_path / "in", {**checklist_files(), "answers.csv": answers_csv(10_000, bom=True)}
    )
    result = import_dataset(folder)
    assert result.dataset_created and result.created["answers"] == 10_000
    answer = Answer.objects.get(run_label="run-7")
    assert answer.text == "Revenue was $4.7 billion,\nup 3%." and answer.system.name == "Atlas"
    again = import_dataset(folder, ImportOptions(dataset=result.dataset))
    assert not again.changed and again.unchanged["answers"] == 10_000


@pytest.mark.django_db
def test_a_file_that_is_not_utf8_is_refused_naming_the_encoding(tmp_path):
    latin = "external_id,text,query_date\nq1,Qu'a déclaré Northwind ?,2026-10-01\n".encode("cp1252")
    folder = write(tmp_path / "in", {"dataset.json": META, "queries.csv": latin})
    with pytest.raises(ImportRejected) as rejected:
        import_dataset(folder)
    (error,) = rejected.value.errors
    assert error.startswith("queries.csv: not UTF-8 text (byte 0xe9)")
    assert not Dataset.objects.filter(name="Imported benchmark").exists()


@pytest.mark.django_db
def test_errors_name_file_row_and_field_for_every_bad_row(tmp_path):
    files = checklist_files()
    files["criteria.jsonl"] += [
        {"query": "q1", "author": "ann", "external_id": "c9", "text": "X", "kind": "opinion"},
        {"query": "q2", "author": "ann", "external_id": "c1", "text": "Y", "kind": "fact"},
        {"query": "q1", "author": "ann", "external_id": "c1", "text": "Z", "kind": "fact"},
    ]
    files["labels.jsonl"] = [{"system": "S", "query": "q1", "author": "ann", "criterion": "c1",
                              "rater": "r", "label": "maybe"}]  # fmt: skip
    with pytest.raises(ImportRejected) as rejected:
        import_dataset(write(tmp_path / "in", files))
    assert rejected.value.errors == [
        "criteria.jsonl:2: field 'kind' must be one of methodology, format, fact",
        "criteria.jsonl:3: field 'author': no checklist of 'ann' for query 'q2' in checklists "
        "or the dataset",
        "criteria.jsonl:4: same query, author and external_id as criteria.jsonl:1; one row each",
        "labels.jsonl:1: field 'label' must be one of pass, fail",
    ]
    assert Query.objects.count() == 0


@pytest.mark.django_db
def test_checklists_that_break_the_guideline_are_imported_with_warnings_or_refused(tmp_path):
    folder = write(tmp_path / "in", checklist_files(texts=("the revenue", "States margin.")))
    finance = Guideline.objects.get(name="Finance")
    with pytest.raises(ImportRejected) as rejected:
        import_dataset(folder, ImportOptions(guideline=finance, on_guideline_errors="refuse"))
    assert (
        "checklists.jsonl:1: checklist of 'ann' for query 'q1' breaks Finance v1: "
        in (rejected.value.errors[0])
    )
    assert "action-verb (criterion 1, c1)" in rejected.value.errors[0]  # row number, key
    assert not Checklist.objects.exists()

    result = import_dataset(folder, ImportOptions(guideline=finance))
    assert len(result.warnings) == 1 and "action-verb (criterion 1, c1)" in result.warnings[0]
    checklist = Checklist.objects.get()
    assert checklist.status == "submitted" and result.dataset.guideline == finance
    event = ChecklistEvent.objects.get(checklist=checklist)
    assert "breaks Finance v1: action-verb (criterion 1, c1)" in event.detail


@pytest.mark.django_db
def test_a_criterion_with_labels_keeps_its_text(tmp_path):
    folder = write(tmp_path / "in", {
        **checklist_files(), "answers.jsonl": [{"system": "S", "query": "q1", "text": "A."}],
        "labels.jsonl": [{"system": "S", "query": "q1", "author": "ann", "criterion": "c1",
                          "rater": "r", "label": "pass"}],
    })  # fmt: skip
    into = ImportOptions(dataset=import_dataset(folder).dataset)
    changed = checklist_files(texts=("States the revenue instead.",))
    write(folder, {"criteria.jsonl": changed["criteria.jsonl"]})
    with pytest.raises(ImportRejected) as rejected:
        import_dataset(folder, into)
    assert rejected.value.errors == [
        "criteria.jsonl:1: field 'text': criterion 'c1' carries verdicts, labels or "
        "adjudications here; its text cannot change by import"
    ]
    assert Criterion.objects.get().text == "States revenue."


def _at_once(folder, options: ImportOptions) -> tuple[list, list]:
    """Two imports of the folder in two threads, each on its own connection."""
    results, failures = [], []

    def run() -> None:
        try:
            results.append(import_dataset(folder, options))
        except Exception as exc:
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results, failures


@pytest.mark.django_db(transaction=True)
def test_two_imports_of_the_same_file_into_a_dataset_at_once_give_the_result_of_one(tmp_path):
    dataset = import_dataset(write(tmp_path / "first", checklist_files())).dataset
    folder = write(tmp_path / "in", {**checklist_files(), "answers.csv": answers_csv(2_000)})
    results, failures = _at_once(folder, ImportOptions(dataset=dataset))
    assert failures == []
    assert [r.dataset_created for r in results] == [False, False]
    assert sorted(r.created.get("answers", 0) for r in results) == [0, 2_000]
    assert Dataset.objects.filter(name="Imported benchmark").count() == 1
    assert Answer.objects.count() == 2_000 and Criterion.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_imports_as_the_same_new_dataset_at_once_make_one_and_refuse_the_other(tmp_path):
    """Both may pass the check before either commits: the import's lock on the name makes
    the second wait, and it then finds the name taken and writes nothing."""
    folder = write(tmp_path / "in", {**checklist_files(), "answers.csv": answers_csv(2_000)})
    results, failures = _at_once(folder, ImportOptions(as_copy="Twice at once"))
    assert [r.dataset_created for r in results] == [True]
    assert [type(f) for f in failures] == [NameTaken] and failures[0].as_copy
    assert Dataset.objects.filter(name="Twice at once").count() == 1
    assert Answer.objects.count() == 2_000 and Criterion.objects.count() == 1


def test_who_may_import_through_the_page_and_the_api(
    client, owner, collaborator, outsider, dataset, tmp_path
):
    data = zipped(write(tmp_path / "in", {**checklist_files(), "dataset.json": {
        **META, "name": dataset.name}}))  # fmt: skip
    for user in (collaborator, outsider):
        client.force_login(user)
        assert client.get("/datasets/import/").status_code == 403
        for chosen in ({}, {"dataset": dataset.pk}, {"as_copy": "Mine now"}):
            upload = SimpleUploadedFile("set.zip", data)
            response = client.post("/api/datasets/import/", {"file": upload, **chosen})
            assert response.status_code in (403, 404), (user, chosen, response.content)
    client.force_login(owner)
    page = client.get("/datasets/import/")
    assert page.status_code == 200
    response = client.post(
        "/datasets/import/",
        {"file": SimpleUploadedFile("set.zip", data), "target": "into",
         "dataset": dataset.pk, "on_guideline_errors": "warn"},
    )  # fmt: skip
    assert response.status_code == 200 and b"Updated" in response.content
    assert Query.objects.filter(dataset=dataset, external_id="q1").exists()
    api = client.post(
        "/api/datasets/import/",
        {"file": SimpleUploadedFile("set.zip", data), "dataset": dataset.pk},
    )
    assert api.status_code == 200 and api.json()["unchanged"]["queries"] == 1
    assert api.json()["changed"] is False
    bad = client.post("/api/datasets/import/", {"file": SimpleUploadedFile("x.zip", b"nope")})
    assert bad.status_code == 400 and "not a zip file" in bad.json()["file"][0]


@pytest.mark.django_db
def test_every_imported_checklist_gets_one_history_entry_when_made_in_batches(
    tmp_path, monkeypatch
):
    """History entries are made a batch of checklists at a time (memory stays flat): each
    checklist still gets exactly one, with its own criteria."""
    from evaluation.datasets import importer

    monkeypatch.setattr(importer, "EVENT_BATCH", 2)
    files = checklist_files()
    files["checklists.jsonl"] = [
        {"query": "q1", "author": author, "status": "submitted"} for author in "abcde"
    ]
    files["criteria.jsonl"] = [
        {"query": "q1", "author": author, "external_id": "c1", "position": 1,
         "text": f"States revenue for {author}.", "kind": "fact"}
        for author in "abcde"
    ]  # fmt: skip
    import_dataset(write(tmp_path / "in", files))
    for checklist in Checklist.objects.select_related("author"):
        (event,) = ChecklistEvent.objects.filter(checklist=checklist)
        assert [c["text"] for c in event.snapshot] == [
            f"States revenue for {checklist.author.username}."
        ]

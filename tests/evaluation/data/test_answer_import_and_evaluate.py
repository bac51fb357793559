"""Importing answers (checked whole first, atomic, idempotent) and the `evaluate` command."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation import services
from evaluation.answers.models import Answer, System
from evaluation.answers.upload import ImportRejected, import_answers
from tests.factories import valid_criteria


def jsonl(*rows: dict) -> str:
    return "\n".join(json.dumps(r) for r in rows) + "\n"


@pytest.mark.django_db
def test_import_creates_then_updates_the_same_answers(dataset, query):
    rows = [
        {
            "query": query.pk,
            "system": "Atlas",
            "system_version": "1",
            "text": "A",
            "run_label": "n1",
        },
        {"query": query.pk, "system": "Baseline", "text": "B", "run_label": "n1"},
    ]
    first = import_answers(dataset=dataset, name="nightly.jsonl", content=jsonl(*rows))
    assert (first.created, first.updated, first.systems_created) == (2, 0, 2)
    rows[0]["text"] = "A, corrected"
    again = import_answers(dataset=dataset, name="nightly.jsonl", content=jsonl(*rows))
    assert (again.created, again.updated) == (0, 2)
    assert Answer.objects.count() == 2
    assert Answer.objects.get(system__name="Atlas").text == "A, corrected"


@pytest.mark.django_db
def test_csv_works_too(dataset, query):
    content = f'query,system,text\n{query.pk},Atlas,"Revenue was $4.1bn, up 3%."\n'
    assert import_answers(dataset=dataset, name="a.csv", content=content).created == 1
    assert Answer.objects.get().text == "Revenue was $4.1bn, up 3%."


@pytest.mark.django_db
def test_a_bad_file_names_file_row_and_field_and_imports_nothing(dataset, query):
    other_query = query.pk + 1000
    content = jsonl(
        {"query": query.pk, "system": "Atlas", "text": "fine"},
        {"query": query.pk, "system": "", "text": "no system"},
        {"query": other_query, "system": "Atlas", "text": "elsewhere"},
        {"query": "first", "system": "Atlas", "text": "x"},
        {"query": query.pk, "system": "Atlas", "text": "duplicate of line 1"},
    )
    with pytest.raises(ImportRejected) as rejected:
        import_answers(dataset=dataset, name="nightly.jsonl", content=content)
    assert rejected.value.errors == [
        "nightly.jsonl:2: field 'system' is required",
        f"nightly.jsonl:3: field 'query': no query {other_query} in dataset {dataset.pk}",
        "nightly.jsonl:4: field 'query' must be a query id (a number), not 'first'",
        "nightly.jsonl:5: same system, query, run label and sample as line 1; one answer each",
    ]
    assert not Answer.objects.exists() and not System.objects.exists()


@pytest.mark.django_db
def test_broken_json_names_the_line(dataset):
    with pytest.raises(ImportRejected, match=r"nightly.jsonl:2: not valid JSON"):
        import_answers(dataset=dataset, name="nightly.jsonl", content='{"a": 1}\n{"b": \n')


def test_evaluate_imports_runs_waits_and_summarises(
    celery_worker, dataset, query, collaborator, offline_panel, tmp_path, capsys
):
    services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria(), submit=True
    )
    answers = tmp_path / "nightly.jsonl"
    answers.write_text(
        jsonl(
            {
                "query": query.pk,
                "system": "Atlas",
                "text": "Revenue: **$4.12 billion**.",
                "run_label": "2026-11-22",
            },
            {
                "query": query.pk,
                "system": "Baseline",
                "text": "Revenue rose.",
                "run_label": "2026-11-22",
            },
        )
    )
    dataset.pass_threshold = 0.5
    dataset.save(update_fields=["pass_threshold"])
    call_command(
        "evaluate", dataset=dataset.pk, panel="Offline panel", answers=answers,
        run_label="2026-11-22", timeout=60,
    )  # fmt: skip
    out = capsys.readouterr().out
    assert "estimated cost 0" in out  # the offline judge costs nothing
    assert "% pass" in out  # against the dataset's threshold
    assert "Answers: 2 new, 0 updated (2 new systems)." in out
    assert "12/12 verdicts" in out and "0 errors" in out
    assert "Atlas: mean score" in out and "Baseline: mean score" in out


@pytest.mark.django_db
def test_evaluate_refuses_bad_input_with_status_2(dataset, offline_panel, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(jsonl({"query": 999999, "system": "Atlas", "text": "x"}))
    with pytest.raises(CommandError) as error:
        call_command("evaluate", dataset=dataset.pk, panel="Offline panel", answers=bad)
    assert error.value.returncode == 2 and "bad.jsonl:1: field 'query'" in str(error.value)
    with pytest.raises(CommandError) as error:
        call_command("evaluate", dataset=dataset.pk, panel="No such panel")
    assert error.value.returncode == 2
    assert not Answer.objects.exists()


@pytest.mark.django_db
def test_an_excel_csv_with_a_bom_imports_and_a_legacy_encoding_is_refused_by_name(
    dataset, query, tmp_path
):
    """Issue 11's "CSV done right" for the answers, labels and verdicts imports, which
    read files through the same decoding: Excel's "CSV UTF-8" (byte-order mark, CRLF, a
    quoted newline) imports; a Windows-1252 file is refused with the encoding named."""
    from evaluation.answers.upload import import_answers_file
    from evaluation.datasets.review_imports import import_labels_file, import_verdicts_file

    excel = tmp_path / "answers.csv"
    excel.write_bytes(
        "\ufeffquery,system,text\r\n".encode()
        + f'{query.pk},Atlas,"Revenue was €4.1bn,\r\nup 3%."\r\n'.encode()
    )
    assert import_answers_file(dataset=dataset, path=excel).created == 1
    assert Answer.objects.get().text == "Revenue was €4.1bn,\r\nup 3%."
    legacy = tmp_path / "legacy.csv"
    legacy.write_bytes(
        f'query,system,text\r\n{query.pk},Atlas,"Revenue was €4.1bn."\r\n'.encode("cp1252")
    )
    for read in (
        import_answers_file,
        import_labels_file,
        lambda **kwargs: import_verdicts_file(panel="any", **kwargs),
    ):
        with pytest.raises(ImportRejected) as rejected:
            read(dataset=dataset, path=legacy)
        assert "not UTF-8" in str(rejected.value.errors) and "Windows-1252" in str(
            rejected.value.errors
        ), rejected.value.errors
    assert Answer.objects.count() == 1

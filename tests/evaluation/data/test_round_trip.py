"""Round trip: export → import into an empty database → export gives the same files, apart
from the documented fields (`id` columns, and the export time in README.md and
manifest.json). On the demo dataset and on a generated one with answers, verdicts, labels
and adjudications. `manage.py demo` and `bench.data_io.generate` make them."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from annotation.models import Dataset
from bench.data_io.generate import generate
from evaluation.datasets.export import export_chunks
from evaluation.datasets.importer import ImportOptions, import_dataset
from evaluation.judges.models import Judge
from tests.evaluation.data.imports import empty_the_database
from tests.evaluation.data.zips import members

pytestmark = pytest.mark.django_db


def _comparable(files: dict[str, bytes]) -> dict[str, object]:
    """Every file, with the documented differences taken out."""
    out: dict[str, object] = {}
    for name, data in files.items():
        if name == "README.md":
            out[name] = [line for line in data.decode().splitlines() if "| Exported |" not in line]
        elif name == "manifest.json":
            out[name] = {k: v for k, v in json.loads(data).items() if k != "exported_at"}
        elif name.endswith(".jsonl"):
            rows = [json.loads(line) for line in data.decode().splitlines()]
            out[name] = [{k: v for k, v in r.items() if k != "id"} for r in rows]
        elif name.endswith(".csv"):
            lines = data.decode().split("\r\n")
            header = lines[0].split(",")
            out[name] = (header, "id" in header, len(lines))
        else:
            out[name] = data if not name.endswith(".parquet") else len(data) > 0
    return out


def _round_trip(dataset: Dataset, tmp_path: Path) -> tuple[dict, dict]:
    first = b"".join(export_chunks(dataset))
    path = tmp_path / "first.zip"
    path.write_bytes(first)
    empty_the_database()
    # A restore into a fresh installation asks for the members' roles (issue 38: an import
    # grants none unless asked), so that members.csv comes back the same.
    result = import_dataset(path, ImportOptions(copy_members=True))
    assert result.dataset_created
    second = b"".join(export_chunks(result.dataset))
    again = import_dataset(path, ImportOptions(dataset=result.dataset))
    assert not again.changed, again.rows
    return members(first), members(second)


def test_round_trip_of_a_generated_dataset_with_verdicts_labels_and_adjudications(tmp_path):
    dataset = generate("Round trip", queries=4, systems=3, criteria=5, judges=3, samples=2)
    first, second = _round_trip(dataset, tmp_path)
    assert json.loads(first["manifest.json"])["tables"]["verdicts"]["rows"] == 4 * 3 * 10 * 3 * 2
    assert json.loads(first["manifest.json"])["tables"]["labels"]["rows"] > 0
    assert json.loads(first["manifest.json"])["tables"]["adjudications"]["rows"] == 12
    assert _comparable(first) == _comparable(second)
    # Files without an id column are identical byte for byte, in every format.
    for name in (
        "verdicts.jsonl",
        "verdicts.csv",
        "verdicts.parquet",
        "labels.csv",
        "adjudications.jsonl",
        "scores.jsonl",
        "citations.parquet",
        "dataset.json",
    ):
        assert first[name] == second[name], name


def test_round_trip_of_the_demo_dataset(tmp_path):
    call_command("demo", stdout=io.StringIO())
    first, second = _round_trip(Dataset.objects.get(name="Finance demo"), tmp_path)
    assert _comparable(first) == _comparable(second)
    assert first["checklists.csv"].count(b"\r\n") == 15  # header and fourteen checklists


def _flip_labels(data: bytes) -> bytes:
    """The same export with every human label in labels.jsonl turned over."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            content = source.read(item)
            if item.filename.endswith("labels.jsonl"):
                rows = [json.loads(line) for line in content.decode().splitlines() if line]
                for row in rows:
                    row["label"] = "fail" if row["label"] == "pass" else "pass"
                content = "".join(json.dumps(r) + "\n" for r in rows).encode()
            target.writestr(item, content)
    return out.getvalue()


def test_an_import_that_changes_labels_refreshes_the_cached_agreement(tmp_path):
    """Imports write labels in bulk, without signals: they bump the dataset's review
    revision themselves, or the agreement page would keep serving the old figures."""
    from evaluation.agreement.selectors import agreement_report
    from evaluation.agreement.serialize import report_data
    from tests.evaluation.agreement import oracle as agreement_oracle

    dataset = generate("Relabelled", queries=4, systems=3, criteria=5, judges=3, samples=1)
    run = dataset.runs.get()
    before = report_data(agreement_report(dataset, run.pk))  # counted, then cached
    path = tmp_path / "flipped.zip"
    path.write_bytes(_flip_labels(b"".join(export_chunks(dataset))))
    assert import_dataset(path, ImportOptions(dataset=dataset)).changed
    after = report_data(agreement_report(dataset, run.pk))
    assert after != before
    assert after == report_data(agreement_oracle.agreement_report(dataset, run.pk))


def test_round_trip_keeps_archived_criteria_and_their_versions(tmp_path):
    """A criterion reworded or deleted after it was judged is archived, not lost: the export
    says so (archived_at, previous_version) and the import restores it as it was, so the
    archived wording stays out of the checklist and the new one stays linked to it."""
    from annotation.models import Criterion
    from annotation.services.checklists import (
        checklist_reopen,
        criterion_delete,
        criterion_update,
    )

    dataset = generate("Archive trip", queries=2, systems=2, criteria=4, judges=1, samples=1)
    author = get_user_model().objects.get(username="expert-0")
    judged = Criterion.objects.filter(
        checklist__query__dataset=dataset, checklist__author=author, verdicts__isnull=False
    )
    reworded, deleted = judged.distinct().order_by("pk")[:2]
    checklist_reopen(checklist=reworded.checklist, by=author)
    if deleted.checklist_id != reworded.checklist_id:
        checklist_reopen(checklist=deleted.checklist, by=author)
    criterion_update(criterion=reworded, by=author, text="States the revised figure.")
    criterion_delete(criterion=deleted, by=author)
    first, second = _round_trip(dataset, tmp_path)
    assert _comparable(first) == _comparable(second)
    rows = [json.loads(line) for line in first["criteria.jsonl"].splitlines()]
    new_row = next(r for r in rows if r["text"] == "States the revised figure.")
    assert new_row["archived_at"] is None
    (old_row,) = [
        r
        for r in rows
        if (r["query"], r["author"], r["external_id"])
        == (new_row["query"], new_row["author"], new_row["previous_version"])
    ]
    assert old_row["text"] == reworded.text and old_row["archived_at"]
    assert sum(1 for r in rows if r["archived_at"]) == 2

    imported = Criterion.objects.filter(checklist__query__dataset__name="Archive trip")
    copy = imported.get(text="States the revised figure.")
    assert copy.archived_at is None
    assert copy.previous_version.text == reworded.text
    assert copy.previous_version.archived_at is not None
    assert imported.filter(text=deleted.text, archived_at__isnull=False).count() == 1
    assert imported.filter(archived_at__isnull=False).count() == 2
    assert imported.active().count() == imported.count() - 2


def test_round_trip_keeps_the_grades_of_a_graded_run(tmp_path):
    """A graded panel's 1–5 ratings (GradedScore) go out in grades.* and come back."""
    from evaluation.answers.models import Answer
    from evaluation.runs.models import GradedScore

    dataset = generate("Graded trip", queries=2, systems=2, criteria=3, judges=2, samples=1)
    run = dataset.runs.get()
    judge = Judge.objects.order_by("name").first()
    answers = Answer.objects.filter(query__dataset=dataset, checklist__isnull=True).order_by("pk")
    for i, answer in enumerate(answers):
        scored = i % 3 != 2
        GradedScore.objects.create(
            run=run, answer=answer, judge=judge, sample=0,
            outcome="scored" if scored else "unparseable", score=1 + i % 5 if scored else None,
            reasoning=f"Reasoning {i}, with “quotes”.", raw_output=f"Score: {1 + i % 5}",
            cache_key=f"k{i}", judge_params={"model": "m", "temperature": 0.0},
        )  # fmt: skip
    first, second = _round_trip(dataset, tmp_path)
    assert json.loads(first["manifest.json"])["tables"]["grades"]["rows"] == answers.count()
    for name in ("grades.jsonl", "grades.csv", "grades.parquet"):
        assert first[name] == second[name], name
    copy = GradedScore.objects.filter(run__dataset__name="Graded trip")
    assert sorted(copy.values_list("score", flat=True), key=str) == sorted(
        [1 + i % 5 if i % 3 != 2 else None for i in range(answers.count())], key=str
    )


def test_round_trip_keeps_which_runs_are_canaries_and_stability_passes(tmp_path):
    """A judge canary and a stability pass come back as what they were, of the run they
    checked, with the canary's result and its previous canary named by the new ids: else
    the import showed them as runs of their own (in the score trend, the run lists)."""
    from evaluation.runs.models import Run

    dataset = generate("Canary trip", queries=2, systems=2, criteria=3, judges=2, samples=1)
    run = dataset.runs.get()
    made = {"dataset": dataset, "panel": run.panel, "kind": run.kind,
            "status": Run.Status.DONE, "snapshot": run.snapshot}  # fmt: skip
    judges = {"judge-a": {"n": 12, "agree": 10, "rate": 0.83, "low": 0.55, "high": 0.95}}
    first = Run.objects.create(
        name="canary 1", canary_for=run, canary_result={"judges": judges, "previous": None}, **made
    )
    Run.objects.create(
        name="canary 2", canary_for=run, **made,
        canary_result={"judges": judges, "previous": first.pk, "changed": ["judge-a"]},
    )  # fmt: skip
    Run.objects.create(name="stability pass", stability_for=run, **made)
    before, after = _round_trip(dataset, tmp_path)
    assert before["runs.jsonl"] == after["runs.jsonl"]
    copy = Run.objects.filter(dataset__name="Canary trip")
    checked = copy.get(name=run.name)
    canaries = {r.name: r for r in copy.filter(canary_for=checked)}
    assert sorted(canaries) == ["canary 1", "canary 2"]
    assert canaries["canary 2"].canary_result == {
        "judges": judges,
        "previous": canaries["canary 1"].pk,
        "changed": ["judge-a"],
    }
    assert canaries["canary 1"].canary_result["previous"] is None
    assert list(copy.filter(stability_for=checked).values_list("name", flat=True)) == [
        "stability pass"
    ]
    assert list(copy.not_checks().values_list("name", flat=True)) == [run.name]


def test_a_grade_out_of_range_is_refused_with_its_file_line_and_field(tmp_path):
    from evaluation.answers.models import Answer
    from evaluation.datasets.importer import ImportRejected
    from evaluation.runs.models import GradedScore

    dataset = generate("Bad grade", queries=1, systems=1, criteria=2, judges=1, samples=1)
    answer = Answer.objects.filter(query__dataset=dataset, checklist__isnull=True).first()
    GradedScore.objects.create(
        run=dataset.runs.get(), answer=answer, judge=Judge.objects.first(), outcome="scored",
        score=4, cache_key="k",
    )  # fmt: skip
    data = b"".join(export_chunks(dataset))
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            content = source.read(item)
            if item.filename.endswith("grades.jsonl"):
                content = content.replace(b'"score": 4', b'"score": 7')
            if not item.filename.endswith(("grades.csv", "grades.parquet")):
                target.writestr(item, content)
    path = tmp_path / "bad.zip"
    path.write_bytes(out.getvalue())
    empty_the_database()
    with pytest.raises(ImportRejected) as rejected:
        import_dataset(path)
    assert any(
        "grades.jsonl:1: field 'score' must be from 1 to 5" in e for e in rejected.value.errors
    ), rejected.value.errors
    assert not Dataset.objects.exists()


def test_round_trip_keeps_query_authors_complexity_and_the_experts_setting(tmp_path):
    from annotation.models import Query

    dataset = generate("Authored trip", queries=2, systems=1, criteria=2, judges=1, samples=1)
    dataset.experts_create_queries = False
    dataset.save(update_fields=["experts_create_queries"])
    author = get_user_model().objects.get(username="expert-0")
    first_query = Query.objects.filter(dataset=dataset).order_by("pk").first()
    Query.objects.filter(pk=first_query.pk).update(complexity="complex", created_by=author)
    first, second = _round_trip(dataset, tmp_path)
    assert _comparable(first) == _comparable(second)
    imported = Dataset.objects.get(name="Authored trip")
    assert imported.experts_create_queries is False
    copy = Query.objects.get(dataset=imported, external_id=first_query.external_id)
    assert (copy.complexity, copy.created_by.username) == ("complex", "expert-0")

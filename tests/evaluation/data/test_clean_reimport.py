"""Issue 28, item 4: an export imported back into its own dataset changes nothing and says
so; an imported run shows its real verdict counts (it ran no task here, and says that
instead of "0 / 0 tasks"); the import's guideline check honours the override notes the
editor honours, through the editor's own input builder."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation import guidelines
from annotation.models import Criterion
from evaluation.datasets.export import ExportOptions, export_chunks
from evaluation.datasets.importer import ImportOptions, import_dataset
from evaluation.labels.models import Adjudication, HumanLabel
from evaluation.runs.models import Run, RunTask, Verdict
from tests.evaluation.data.tables import changed_tables, demo_after_a_run, every_row

pytestmark = pytest.mark.django_db
COPY = "Finance demo (copy)"


@pytest.fixture
def demo(db):
    return demo_after_a_run()


def export_to(dataset, path: Path, change=None) -> Path:
    """The dataset's export (JSON Lines), with `change(table, rows)` applied to its tables."""
    data = b"".join(export_chunks(dataset, ExportOptions.parse(None, ["jsonl"])))
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            content = source.read(item)
            table = Path(item.filename).name.removesuffix(".jsonl")
            if change and item.filename.endswith(".jsonl"):
                rows = [json.loads(line) for line in content.decode().splitlines() if line]
                change(table, rows)
                content = "".join(json.dumps(r) + "\n" for r in rows).encode()
            target.writestr(item, content)
    path.write_bytes(out.getvalue())
    return path


def test_the_demo_exported_after_a_run_and_imported_back_changes_nothing(demo, tmp_path):
    path = tmp_path / "finance-demo.zip"
    path.write_bytes(b"".join(export_chunks(demo)))  # every part, every format
    before = every_row()
    # Verdicts of the offline (no-LLM) judge made no call: attempts 0, which the import
    # used to turn into 1, reporting every verdict "changed".
    assert Verdict.objects.filter(run__dataset=demo, attempts=0).exists()

    result = import_dataset(path, ImportOptions(dataset=demo))

    assert not result.changed
    assert not any(result.created.values()) and not any(result.updated.values()), result.rows
    assert result.unchanged["verdicts"] == Verdict.objects.filter(run__dataset=demo).count()
    assert result.unchanged["labels"] == 2 and result.unchanged["adjudications"] == 1
    # The demo's criterion with an `override fact-anchor:` note breaks nothing here either.
    assert result.warnings == []
    # Not a row of any table changed: no history entry, no counter bumped, no updated_at.
    assert changed_tables(before, every_row()) == []

    out = io.StringIO()
    call_command("import_dataset", str(path), "--dataset", demo.name, stdout=out)
    assert "Nothing changed in dataset" in out.getvalue()
    assert "Nothing changed: everything was already there." in out.getvalue()
    assert changed_tables(before, every_row()) == []


def test_a_copy_keeps_the_verdicts_attempts_labels_and_adjudications(demo, tmp_path):
    result = import_dataset(export_to(demo, tmp_path / "x.zip"), ImportOptions(as_copy=COPY))
    keys = (
        "answer__query__text", "answer__system__name", "criterion__checklist__author__username",
        "criterion__text", "judge__name", "sample",
    )  # fmt: skip
    fields = ("outcome", "rationale", "attempts", "cache_hit", "raw_output", "judge_params")

    def verdicts(dataset) -> list[tuple]:
        rows = Verdict.objects.filter(run__dataset=dataset).values_list(*keys, *fields)
        return sorted((*row[:-1], json.dumps(row[-1], sort_keys=True)) for row in rows)

    assert verdicts(result.dataset) == verdicts(demo)
    assert HumanLabel.objects.filter(answer__query__dataset=result.dataset).count() == 2
    assert Adjudication.objects.filter(answer__query__dataset=result.dataset).count() == 1


def test_an_imported_run_shows_its_real_counts_on_the_run_page_and_in_the_api(
    demo, tmp_path, client
):
    from django.contrib.auth import get_user_model

    original = Run.objects.get(dataset=demo)
    result = import_dataset(export_to(demo, tmp_path / "x.zip"), ImportOptions(as_copy=COPY))
    run = Run.objects.get(dataset=result.dataset)
    held = Verdict.objects.filter(run=run).count()
    assert run.status == Run.Status.DONE and run.expected == held == original.expected

    client.force_login(get_user_model().objects.get(username="admin"))
    page = client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert f"<strong data-done>{held}</strong> / {held} verdicts (100.0%)" in page
    assert "Imported: its verdicts were made elsewhere, no task ran here" in page
    assert "0 / 0 tasks" not in page
    # The run that ran here still counts its tasks.
    tasks = RunTask.objects.filter(run=original).count()
    page = client.get(reverse("run-detail", args=[original.pk])).content.decode()
    assert f"{tasks} / {tasks} tasks" in page and "no task ran here" not in page

    api = client.get(f"/api/runs/{run.pk}/progress/").json()
    assert (api["expected"], api["done"], api["percent"]) == (held, held, 100.0)
    assert (api["tasks"], api["tasks_done"], api["imported"]) == (0, 0, True)
    api = client.get(f"/api/runs/{original.pk}/progress/").json()
    assert (api["tasks"], api["tasks_done"], api["imported"]) == (tasks, tasks, False)


def test_a_run_from_an_export_without_expected_expects_the_verdicts_it_holds(demo, tmp_path):
    """Exports made before `expected` was a column of runs: the run expects what it holds."""

    def drop_expected(table, rows):
        if table == "runs":
            for row in rows:
                del row["expected"]

    path = export_to(demo, tmp_path / "old.zip", drop_expected)
    result = import_dataset(path, ImportOptions(as_copy=COPY))
    run = Run.objects.get(dataset=result.dataset)
    assert run.expected == Verdict.objects.filter(run=run).count() > 0


def _with_notes(notes: str):
    def change(table, rows):
        if table == "criteria":
            for row in rows:
                if row["notes"].startswith("override fact-anchor:"):
                    row["notes"] = notes

    return change


def test_the_import_honours_an_override_note_as_the_editor_does(demo, tmp_path):
    """A demo criterion ("Explains that data-centre demand drove the revenue beat.") names no
    figure, date or entity; its notes justify that (`override fact-anchor: …`). The import
    reads the notes as the editor does: no warning with them, the editor's finding without
    them, and the editor's "justify the override" finding with a reason too short."""
    original = Criterion.objects.get(
        checklist__query__dataset=demo, checklist__status="submitted",
        notes__startswith="override fact-anchor:",
    )  # fmt: skip
    key = f"criterion-{original.pk}"  # its key in the files: the demo sets no external id
    number = list(original.checklist.criteria.active().order_by("position")).index(original) + 1
    justified = import_dataset(export_to(demo, tmp_path / "a.zip"), ImportOptions(as_copy=COPY))
    assert justified.warnings == []

    cases = {"no note": "", "too short": "override fact-anchor: obvious"}
    for n, (case, notes) in enumerate(cases.items()):
        path = export_to(demo, tmp_path / f"{n}.zip", _with_notes(notes))
        result = import_dataset(path, ImportOptions(as_copy=f"{COPY} {n}"))
        (warning,) = result.warnings
        # The demo's dataset.json names no guideline: the default's, said to be the default.
        default = "Finance v1 (the default guideline: dataset.json names none)"
        assert warning.endswith(f"breaks {default}: fact-anchor (criterion {number}, {key})"), (
            case,
            warning,
        )
        # The editor, on the checklist as stored, finds the same and nothing else.
        criterion = Criterion.objects.get(
            checklist__query__dataset=result.dataset, checklist__status="submitted",
            text=original.text,
        )  # fmt: skip
        report = guidelines.checklist_report(criterion.checklist)
        assert [(f.rule_id, f.criterion_number) for f in report.errors] == [("fact-anchor", number)]
        if notes:
            assert "Justify the override" in report.errors[0].message

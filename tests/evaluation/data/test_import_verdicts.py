"""Verdicts are checked while they are written (read once, not twice): a bad row still
writes nothing, and the error names its file, line and field."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from annotation.models import Criterion, Dataset, Query
from bench.data_io.generate import generate
from evaluation.answers.models import Answer
from evaluation.datasets.export import ExportOptions, export_chunks
from evaluation.datasets.importer import ImportOptions, ImportRejected, import_dataset
from evaluation.labels.models import HumanLabel
from evaluation.runs.models import Verdict
from tests.evaluation.data.imports import empty_the_database

pytestmark = pytest.mark.django_db


def _export_with(tmp_path: Path, change) -> Path:
    """An export of a generated dataset with `change(rows)` applied to verdicts.jsonl."""
    dataset = generate("Checked once", queries=3, systems=2, criteria=4, judges=2, samples=1)
    options = ExportOptions.parse(["answers", "verdicts", "labels"], ["jsonl"])
    data = b"".join(export_chunks(dataset, options))
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            content = source.read(item)
            if item.filename.endswith("verdicts.jsonl"):
                rows = [json.loads(line) for line in content.splitlines()]
                change(rows)
                content = "".join(json.dumps(r) + "\n" for r in rows).encode()
            target.writestr(item, content)
    path = tmp_path / "export.zip"
    path.write_bytes(out.getvalue())
    empty_the_database()
    return path


def test_a_bad_verdict_late_in_the_file_writes_nothing_at_all(tmp_path):
    def spoil(rows):
        rows[40]["criterion"] = "no-such-criterion"
        rows[41]["judge"] = "Nobody"
        rows[42]["sample"] = 5000

    path = _export_with(tmp_path, spoil)
    with pytest.raises(ImportRejected) as rejected:
        import_dataset(path)
    errors = rejected.value.errors
    assert any(e.startswith("verdicts.jsonl:41: field 'criterion'") for e in errors), errors
    assert any(e.startswith("verdicts.jsonl:42: field 'judge'") for e in errors), errors
    assert any(e.startswith("verdicts.jsonl:43: field 'sample'") for e in errors), errors
    # The structure, answers and labels written before the verdicts were rolled back.
    assert not Dataset.objects.exists()
    assert not Query.objects.exists() and not Criterion.objects.exists()
    assert not Answer.objects.exists() and not HumanLabel.objects.exists()
    assert not Verdict.objects.exists()


def test_a_duplicated_verdict_writes_nothing_and_names_both_lines(tmp_path):
    path = _export_with(tmp_path, lambda rows: rows.append(dict(rows[3])))
    with pytest.raises(ImportRejected) as rejected:
        import_dataset(path)
    assert any(
        "same run, answer, criterion, judge and sample as line 4" in e
        for e in rejected.value.errors
    ), rejected.value.errors
    assert not Dataset.objects.exists() and not Verdict.objects.exists()


def test_good_verdicts_are_all_written_once(tmp_path):
    count = []
    path = _export_with(tmp_path, lambda rows: count.append(len(rows)))
    result = import_dataset(path)
    assert result.created["verdicts"] == count[0] == Verdict.objects.count()
    assert not import_dataset(path, ImportOptions(dataset=result.dataset)).changed


def test_new_rows_are_inserted_plainly_and_a_row_stored_meanwhile_falls_back_to_the_upsert(
    tmp_path, monkeypatch
):
    """A new run's verdicts go in with a plain INSERT (no row of the file is stored yet).
    Should a row be stored after all by the time of the INSERT (another transaction's,
    committed after the check), the plain INSERT is undone and the upsert writes instead:
    no error, no duplicate, nothing rewritten."""
    from evaluation.datasets import bulk

    path = _export_with(tmp_path, lambda rows: None)
    into = ImportOptions(dataset=import_dataset(path).dataset)
    before = sorted(Verdict.objects.values_list("pk", "updated_at"))
    plain = []
    monkeypatch.setattr(bulk, "_existing", lambda *args: 0)  # as if none were stored
    real = bulk._plain_insert
    monkeypatch.setattr(
        bulk, "_plain_insert", lambda *args: plain.append(done := real(*args)) or done
    )
    import_dataset(path, into)
    assert False in plain  # the plain INSERT met the stored rows and was undone
    assert sorted(Verdict.objects.values_list("pk", "updated_at")) == before

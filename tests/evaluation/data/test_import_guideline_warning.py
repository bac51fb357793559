"""The import's guideline findings name the guideline the checklists were checked against,
and where it comes from, when dataset.json names none: the target dataset's own guideline
(not the default's rules), else the default one, said to be the default."""

from __future__ import annotations

import pytest

from annotation.models import Guideline
from annotation.services.guidelines import guideline_create
from evaluation.datasets.importer import ImportOptions, ImportRejected, import_dataset
from tests.evaluation.data.imports import checklist_files, write

pytestmark = pytest.mark.django_db

BREAKS_FINANCE = ("the revenue", "States margin.")  # no action verb: Finance's action-verb


def test_a_new_dataset_is_checked_against_the_default_guideline_said_to_be_the_default(
    tmp_path,
):
    assert "guideline" not in checklist_files()["dataset.json"]
    default = Guideline.objects.filter(name="Finance").order_by("-version").first()
    result = import_dataset(write(tmp_path / "in", checklist_files(texts=BREAKS_FINANCE)))
    (warning,) = result.warnings
    assert (
        f"breaks {default} (the default guideline: dataset.json names none): "
        "action-verb (criterion 1, c1)"
    ) in warning


def test_an_existing_dataset_is_checked_against_its_own_guideline_named(tmp_path, dataset):
    """A dataset held to a guideline that requires groups: the import's checklist (no
    groups, wording Finance would refuse) is checked against that guideline, and only it."""
    grouped = guideline_create(
        name="Grouped rubrics", preset="generic",
        config={"rules": {"criterion-in-group": {"enabled": True, "severity": "error"}}},
    )  # fmt: skip
    dataset.guideline = grouped
    dataset.save(update_fields=["guideline"])
    folder = write(tmp_path / "in", checklist_files(texts=BREAKS_FINANCE))
    with pytest.raises(ImportRejected) as rejected:
        import_dataset(folder, ImportOptions(dataset=dataset, on_guideline_errors="refuse"))
    (error,) = rejected.value.errors
    assert (
        "checklists.jsonl:1: checklist of 'ann' for query 'q1' breaks Grouped rubrics v1, "
        "the guideline of dataset 'Owner dataset': criterion-in-group"
    ) in error
    assert "action-verb" not in error and "Finance" not in error
    assert not dataset.queries.exists()  # refused: nothing written

"""The guideline rules of groups and penalties apply at import as in the editor (issue 23):
a guideline that requires groups refuses an ungrouped criterion's checklist, and a penalty
worded as an avoidance is named, with file, row and criterion."""

from __future__ import annotations

import pytest

from annotation.services.guidelines import guideline_config, guideline_create
from evaluation.datasets.importer import ImportOptions, ImportRejected, import_dataset
from tests.evaluation.data.test_rubric_import import files, write

pytestmark = pytest.mark.django_db


def test_group_and_penalty_rules_apply_at_import(tmp_path):
    strict = guideline_create(
        name="Grouped rubrics",
        preset="generic",
        config={"rules": {"criterion-in-group": {"enabled": True},
                          "penalty-wording": {"severity": "error"}}},
    )  # fmt: skip
    assert guideline_config(strict.config, preset="generic").setting("criterion-in-group").enabled
    tables = files(scoring="points")
    tables["criteria"][4] = {**tables["criteria"][4], "weight": -1,
                             "text": "Does not state fact c5."}  # fmt: skip
    with pytest.raises(ImportRejected) as rejected:
        import_dataset(
            write(tmp_path, tables), ImportOptions(guideline=strict, on_guideline_errors="refuse")
        )
    message = " ".join(rejected.value.errors)
    assert "criterion-in-group (criterion 6, c6)" in message  # the one criterion in no group
    assert "penalty-wording (criterion 5, c5)" in message
    result = import_dataset(write(tmp_path, files(scoring="points")), ImportOptions(
        guideline=strict))  # fmt: skip
    assert len(result.warnings) == 1 and "penalty-wording" not in result.warnings[0]

"""A trial leaves in a dataset export as completely as it came in: its scope, its baseline
(by the baseline's run key) and the estimate taken at start come back on import."""

from __future__ import annotations

import pytest

from evaluation.datasets.export import export_chunks
from evaluation.datasets.importer import ImportOptions, import_dataset
from evaluation.runs.models import Run

pytestmark = pytest.mark.django_db


def test_a_trial_round_trips_with_its_baseline_and_estimate(compared, tmp_path):
    Run.objects.filter(pk=compared.trial.pk).update(estimate={"calls": 5, "cost": "0.001"})
    path = tmp_path / "export.zip"
    path.write_bytes(b"".join(export_chunks(compared.trial.dataset)))
    result = import_dataset(path, ImportOptions(as_copy="Copy of the trials"))
    assert result.dataset_created
    runs = {r.name: r for r in Run.objects.filter(dataset=result.dataset)}
    trial = next(r for r in runs.values() if r.scope == Run.Scope.LABELLED)
    assert trial.baseline is not None and trial.baseline.dataset_id == result.dataset.pk
    assert trial.baseline.scope == Run.Scope.ALL
    assert trial.estimate == {"calls": 5, "cost": "0.001"}

"""Which run a trial is compared with: the default baseline, and why a run named as one
cannot be. Run creation checks them (runs.services.run_create); the trial pages read them."""

from __future__ import annotations

from annotation.models import Dataset
from evaluation.runs.models import Run


def default_baseline(dataset: Dataset) -> Run | None:
    """The current judge's run a trial is compared with when none is named: the dataset's
    latest finished run of system answers (graded here or imported) that is not a trial."""
    return (
        dataset.runs.filter(status__in=Run.FINISHED, scope=Run.Scope.ALL)
        .exclude(kind=Run.Kind.CROSS_EVALUATION)
        .order_by("-finished_at", "-created_at", "-pk")
        .first()
    )


def baseline_problem(dataset: Dataset, baseline: Run) -> str | None:
    """Why a run cannot be a trial's baseline, or None."""
    if baseline.dataset_id != dataset.pk:
        return f"Run {baseline.pk} is not a run of dataset “{dataset.name}”."
    if baseline.kind == Run.Kind.CROSS_EVALUATION:
        return f"Run {baseline.pk} grades perfect answers: no labelled item is among them."
    if baseline.status not in Run.FINISHED:
        return f"Run {baseline.pk} has not finished: compare with a finished run."
    return None

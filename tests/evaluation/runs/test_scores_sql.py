"""A run's scores counted in SQL equal those of the previous code, which aggregated every
vote in Python (tests/evaluation/runs/scores_oracle.py), for every panel method, with weights,
core and disabled criteria, adjudications and multi-sample judges."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from annotation.models import Criterion
from evaluation.runs import scores
from tests.evaluation.agreement.labelled import build_labelled
from tests.evaluation.runs import scores_oracle
from tests.support.compare import same


@pytest.mark.parametrize(
    ("method", "threshold"),
    [("majority", 0.5), ("unanimity", 0.5), ("mean_threshold", 0.7)],
)
def test_sql_scores_equal_the_python_oracle(reviewed_dataset, method, threshold):
    data = build_labelled(reviewed_dataset, queries=4, criteria=6, systems=3, seed=23)
    criteria = list(Criterion.objects.filter(pk__in=data.kinds).order_by("pk"))
    for n, criterion in enumerate(criteria):
        criterion.weight = (0, 1, 2.5, 0.25)[n % 4]
        criterion.is_core = n % 3 != 0
        criterion.scoring_enabled = n % 5 != 0
    Criterion.objects.bulk_update(criteria, ["weight", "is_core", "scoring_enabled"])
    reviewed_dataset.pass_threshold = 0.5
    reviewed_dataset.save()
    run = data.run
    run.snapshot = {**run.snapshot, "method": method, "threshold": threshold}
    run.save(update_fields=["snapshot"])
    run.refresh_from_db()
    same(asdict(scores_oracle.run_report(run)), asdict(scores.run_report(run)))


def test_cached_scores_follow_adjudications_and_criteria(reviewed_dataset, reviewer):
    from evaluation.labels.models import Adjudication
    from evaluation.review import services as review

    data = build_labelled(reviewed_dataset, queries=3, criteria=5, systems=2, seed=29)
    run = data.run
    same(asdict(scores_oracle.run_report(run)), asdict(scores.run_report(run)))
    (answer_id, criterion_id) = next(iter(data.votes))
    current = Adjudication.objects.filter(answer_id=answer_id, criterion_id=criterion_id).first()
    criterion = Criterion.objects.get(pk=criterion_id)
    from evaluation.answers.models import Answer

    review.adjudicate(
        answer=Answer.objects.get(pk=answer_id), criterion=criterion, by=reviewer,
        label="fail" if current and current.label == "pass" else "pass",
        expected_version=current.version if current else None,
    )  # fmt: skip
    same(asdict(scores_oracle.run_report(run)), asdict(scores.run_report(run)))
    criterion.weight, criterion.is_core = 3, False
    criterion.save()
    same(asdict(scores_oracle.run_report(run)), asdict(scores.run_report(run)))
    criterion.scoring_enabled = False
    criterion.save()
    same(asdict(scores_oracle.run_report(run)), asdict(scores.run_report(run)))

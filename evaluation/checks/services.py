from __future__ import annotations

from django.db import transaction

from annotation.models import Criterion
from evaluation.checks import trajectory
from evaluation.checks.models import CriterionCheck


@transaction.atomic
def criterion_check_save(
    *, criterion: Criterion, kind: str, params: dict, threshold: float | None, evidence: str
) -> CriterionCheck | None:
    """Set (or, with no check and no evidence, remove) a criterion's check. Verdicts already
    made keep the check they were made with (Verdict.judge_params). A sequence check is
    saved with its scoring named: pass/fail unless `"scoring": "partial"` is given, so
    partial credit is always asked for, never inferred from a threshold below 1."""
    if kind and (problems := trajectory.check_params(kind, params, threshold)):
        raise ValueError("; ".join(problems))
    if not kind and not evidence:
        CriterionCheck.objects.filter(criterion=criterion).delete()
        return None
    check, _ = CriterionCheck.objects.update_or_create(
        criterion=criterion,
        defaults={"kind": kind, "params": trajectory.with_scoring(kind, params) if kind else {},
                  "threshold": threshold,
                  "evidence": evidence},
    )  # fmt: skip
    return check

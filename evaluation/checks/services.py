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
    made keep the check they were made with (Verdict.judge_params)."""
    if kind and (problems := trajectory.check_params(kind, params, threshold)):
        raise ValueError("; ".join(problems))
    if not kind and not evidence:
        CriterionCheck.objects.filter(criterion=criterion).delete()
        return None
    check, _ = CriterionCheck.objects.update_or_create(
        criterion=criterion,
        defaults={"kind": kind, "params": params if kind else {}, "threshold": threshold,
                  "evidence": evidence},
    )  # fmt: skip
    return check

"""A reworded criterion keeps its check: rewording a criterion that carries verdicts archives
it and starts a new version (annotation.services.checklists), which copies its fields; this
copies its evaluation-side check too. Connected in EvaluationConfig.ready()."""

from __future__ import annotations

from django.db.models.signals import post_save
from django.dispatch import receiver

from annotation.models import Criterion
from evaluation.checks.models import CriterionCheck


@receiver(post_save, sender=Criterion, dispatch_uid="criterion-check-follows-new-version")
def copy_check_to_new_version(
    sender: type, instance: Criterion, created: bool, **kwargs: object
) -> None:
    if not created or instance.previous_version_id is None or kwargs.get("raw"):
        return
    old = CriterionCheck.objects.filter(criterion_id=instance.previous_version_id).first()
    if old is not None:
        CriterionCheck.objects.get_or_create(
            criterion=instance,
            defaults={"kind": old.kind, "params": old.params, "threshold": old.threshold,
                      "evidence": old.evidence},
        )  # fmt: skip

from __future__ import annotations

from django.db import models

from annotation.models import Criterion
from evaluation.formality.prompt import ASPECT_LABELS
from evaluation.judges.models import Judge


class FormalityAdvice(models.Model):
    """An LLM's advice on one wording of a criterion. Never blocks anything.

    Keyed by the text's hash: an unchanged criterion is never asked about twice, and an
    edited one gets fresh advice.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DONE = "done", "Done"
        ERROR = "error", "Error"

    criterion = models.ForeignKey(
        Criterion, on_delete=models.CASCADE, related_name="formality_advice"
    )
    text_hash = models.CharField(max_length=64)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    judge = models.ForeignKey(Judge, null=True, on_delete=models.SET_NULL, related_name="+")
    prompt_version = models.CharField(max_length=40, blank=True)
    specific = models.BooleanField(null=True)
    deterministic = models.BooleanField(null=True)
    self_contained = models.BooleanField(null=True)
    yes_no = models.BooleanField(null=True)
    reason = models.TextField(blank=True)
    raw_output = models.TextField(blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["criterion", "text_hash"], name="one_advice_per_wording"
            )
        ]

    def __str__(self) -> str:
        return f"Formality advice on criterion {self.criterion_id}: {self.status}"

    @property
    def ok(self) -> bool:
        return bool(self.specific and self.deterministic and self.self_contained and self.yes_no)

    @property
    def failed_aspects(self) -> list[str]:

        return [label for aspect, label in ASPECT_LABELS.items() if getattr(self, aspect) is False]

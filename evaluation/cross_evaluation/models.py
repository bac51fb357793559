from __future__ import annotations

from django.db import models

from annotation.models import Dataset
from evaluation.judges.models import Panel


class CrossEvaluationSettings(models.Model):
    """How a dataset's perfect answers are cross-graded, and whether that happens on its own
    when a query gets a new submitted checklist."""

    dataset = models.OneToOneField(
        Dataset, on_delete=models.CASCADE, related_name="cross_evaluation_settings"
    )
    panel = models.ForeignKey(
        Panel, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    automatic = models.BooleanField(
        default=False,
        help_text="Cross-evaluate a query's perfect answers again whenever it gets a new "
        "submitted checklist.",
    )

    class Meta:
        verbose_name_plural = "cross-evaluation settings"

    def __str__(self) -> str:
        return f"Cross-evaluation of {self.dataset}"

"""A criterion's evaluation settings: a deterministic check, and the evidence a judge uses.

Imported into evaluation.models (the app's model registry). One row per criterion that has
either; a criterion without a row is graded as always (no-LLM heuristics or the LLM judge
against the answer alone).
"""

from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from annotation.models import Criterion
from evaluation.checks import trajectory


class CriterionCheck(models.Model):
    class Kind(models.TextChoices):
        NONE = "", "None (the criterion's text is judged)"
        TOOL_SET = "tool_set", "Tool set: the expected tools were called, no others"
        TOOL_SEQUENCE = "tool_sequence", "Tool sequence: the expected calls, in a mode"
        STEP_ORDER = "step_order", "Step order: the agent's steps in the expected order"
        KEYWORD_SHARE = "keyword_share", "Keyword share: the listed keywords in the answer"
        ROUGE1 = "rouge1", "ROUGE-1 F1 against the reference answer"

    class Evidence(models.TextChoices):
        NONE = "", "The answer alone"
        CONTEXT = "context", "Grounded in the answer's retrieved context"
        REFERENCE = "reference", "Equivalent to the query's reference answer"

    criterion = models.OneToOneField(
        Criterion, on_delete=models.CASCADE, related_name="evaluation_check"
    )
    kind = models.CharField(max_length=20, choices=Kind.choices, blank=True, default="")
    params = models.JSONField(default=dict, blank=True)
    threshold = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Pass at this score or more; empty for the kind's default.",
    )
    evidence = models.CharField(
        max_length=10,
        choices=Evidence.choices,
        blank=True,
        default="",
        help_text="What an LLM judge decides the criterion against (docs/judging.md).",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(kind__in=["", *trajectory.KINDS]),
                name="criterion_check_kind_known",
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind or 'evidence ' + self.evidence} on criterion {self.criterion_id}"

    @property
    def deterministic(self) -> bool:
        return bool(self.kind)

    def as_json(self) -> dict | None:
        """The export's `check` cell: None when the criterion has no deterministic check."""
        if not self.kind:
            return None
        return {"kind": self.kind, "params": self.params, "threshold": self.threshold}

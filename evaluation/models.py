"""Systems and their answers, LLM judges, and the formality advice on criteria.

The judging issue adds panels, runs and verdicts.
"""

from __future__ import annotations

from django.db import models

from annotation.models import Criterion, Query


class System(models.Model):
    """A question-answering system whose answers are graded."""

    name = models.CharField(max_length=200)
    version = models.CharField(max_length=100, blank=True)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "version"]
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="system_name_version_unique")
        ]

    def __str__(self) -> str:
        return f"{self.name} {self.version}".strip()


class Answer(models.Model):
    system = models.ForeignKey(System, on_delete=models.PROTECT, related_name="answers")
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="answers")
    text = models.TextField(help_text="Markdown.")
    external_id = models.CharField(max_length=200, blank=True)
    run_label = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["query_id", "system_id", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["system", "query", "run_label"], name="answer_per_system_query_run"
            )
        ]

    def __str__(self) -> str:
        return f"{self.system} on query {self.query_id}"


class Judge(models.Model):
    """An OpenAI-compatible endpoint and model with its call parameters.

    The API key is never stored: `api_key_env` names the environment variable that holds
    it, on every machine that runs workers.
    """

    name = models.CharField(max_length=100, unique=True)
    base_url = models.URLField("Base URL", help_text="For example https://api.openai.com/v1")
    model = models.CharField(max_length=200)
    api_key_env = models.CharField(
        "API key variable",
        max_length=100,
        blank=True,
        help_text="Name of the environment variable that holds the API key (not the key).",
    )
    temperature = models.FloatField(default=0.0)
    max_tokens = models.PositiveIntegerField(default=512)
    seed = models.IntegerField(null=True, blank=True)
    timeout = models.FloatField(default=60.0, help_text="Seconds per request.")
    is_formality_judge = models.BooleanField(
        default=False, help_text="Used for the formality check of criteria."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.model})"


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
        from evaluation.judging.formality import ASPECT_LABELS

        return [label for aspect, label in ASPECT_LABELS.items() if getattr(self, aspect) is False]

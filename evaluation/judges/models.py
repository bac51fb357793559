from __future__ import annotations

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models

from evaluation.judging.prompts import VERDICT_PROMPT_VERSION


class Judge(models.Model):
    """An OpenAI-compatible endpoint and model with its call parameters.

    The API key is never stored: `api_key_env` names the environment variable that holds
    it, on every machine that runs workers.
    """

    class Kind(models.TextChoices):
        LLM = "llm", "LLM (OpenAI-compatible endpoint)"
        NO_LLM = "no_llm", "No-LLM checks (figures, keywords, format)"
        EXTERNAL = "external", "External (imported verdicts, never called)"

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.LLM)
    base_url = models.URLField(
        "Base URL", blank=True, help_text="For example https://api.openai.com/v1"
    )
    model = models.CharField(max_length=200, blank=True)
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
    rpm_limit = models.PositiveIntegerField(
        "Requests per minute",
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],  # 0 would block every call forever
        help_text="Shared by every worker; empty for no limit.",
    )
    tpm_limit = models.PositiveIntegerField(
        "Tokens per minute",
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Shared by every worker; empty for no limit.",
    )
    prompt_version = models.CharField(max_length=40, default=VERDICT_PROMPT_VERSION)
    context_tokens = models.PositiveIntegerField(
        "Evidence budget (tokens)",
        default=8000,
        validators=[MinValueValidator(100)],
        help_text="The most retrieved context, or earlier conversation, put in one prompt; "
        "the rest is cut by the stated rule and the verdict records it (docs/judging.md).",
    )
    prompt_price = models.DecimalField(
        "Price per million prompt tokens",
        max_digits=10,
        decimal_places=4,
        null=True,
        blank=True,
        help_text="In your billing currency; empty when unknown (no cost estimate).",
    )
    completion_price = models.DecimalField(
        "Price per million completion tokens",
        max_digits=10,
        decimal_places=4,
        null=True,
        blank=True,
    )
    cached_prompt_price = models.DecimalField(
        "Price per million cached prompt tokens",
        max_digits=10,
        decimal_places=4,
        null=True,
        blank=True,
        help_text="When the provider bills prompt tokens read from its cache at another "
        "price; empty: the prompt price.",
    )

    # --- How calls are made (issue 25).
    class TokenParameter(models.TextChoices):
        MAX_TOKENS = "max_tokens", "max_tokens"
        MAX_COMPLETION_TOKENS = "max_completion_tokens", "max_completion_tokens (reasoning models)"

    class ResponseFormat(models.TextChoices):
        AUTO = "auto", "Structured outputs, JSON mode if refused"
        JSON_SCHEMA = "json_schema", "Structured outputs (JSON schema)"
        JSON_OBJECT = "json_object", "JSON mode (no schema)"

    class ReasoningEffort(models.TextChoices):
        NONE = "", "Not sent"
        MINIMAL = "minimal", "Minimal"
        LOW = "low", "Low"
        MEDIUM = "medium", "Medium"
        HIGH = "high", "High"

    criteria_per_call = models.PositiveSmallIntegerField(
        "Criteria per call",
        default=1,
        help_text="1: one call per criterion; k: up to k criteria of one answer per call; "
        "0: the whole checklist in one call.",
    )
    token_parameter = models.CharField(
        max_length=24, choices=TokenParameter.choices, default=TokenParameter.MAX_TOKENS
    )
    response_format = models.CharField(
        max_length=12, choices=ResponseFormat.choices, default=ResponseFormat.AUTO
    )
    reasoning_effort = models.CharField(
        max_length=8, choices=ReasoningEffort.choices, default="", blank=True
    )
    is_formality_judge = models.BooleanField(
        default=False, help_text="Used for the formality check of criteria."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.model or self.get_kind_display()})"


class JudgeTuning(models.Model):
    """What one dataset adds to a judge's prompt: instructions and worked examples.

    A judge is a site-wide object that holds configuration only; its tuning is the content
    of a dataset (examples are that dataset's criteria, answer excerpts and adjudication
    reasons), so it belongs to the dataset: read and edited under the dataset's
    permissions, and sent only in the prompts of that dataset's runs, trials and rewards.
    A judge shared by two datasets grades each with that dataset's tuning, or none.
    """

    dataset = models.ForeignKey(
        "annotation.Dataset", on_delete=models.CASCADE, related_name="judge_tunings"
    )
    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="tunings")
    instructions = models.TextField(
        blank=True,
        help_text="Added to the system prompt: domain rules, how exact a figure must be, "
        "what counts as a source (docs/judging.md#instructions).",
    )
    examples = models.JSONField(
        default=list,
        blank=True,
        help_text="Worked examples shown to the judge before the answer to grade.",
    )
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["dataset", "judge"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "judge"], name="one_tuning_per_judge")
        ]

    def __str__(self) -> str:
        return f"{self.judge.name} on dataset {self.dataset_id}"


class JudgeVersion(models.Model):
    """The instructions and examples a judge had on one dataset under one prompt version,
    kept forever so that the prompt a verdict was made with can be rebuilt from the version
    it records. A change of instructions or examples is a new row, never an edit of an old
    one. The dataset owns the row: its content is that dataset's."""

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="versions")
    dataset = models.ForeignKey(
        "annotation.Dataset", on_delete=models.CASCADE, related_name="judge_versions"
    )
    version = models.CharField(max_length=80)
    instructions = models.TextField(blank=True)
    examples = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["judge", "-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["judge", "dataset", "version"], name="one_row_per_dataset_judge_version"
            )
        ]

    def __str__(self) -> str:
        return f"{self.judge.name} {self.version} (dataset {self.dataset_id})"


class Panel(models.Model):
    """Judges and how their votes become one verdict per criterion.

    Several models voting: one member per model, one sample each. One model sampled N
    times: one member with samples=N and, optionally, a temperature per sample.
    """

    class Method(models.TextChoices):
        MAJORITY = "majority", "Majority"
        UNANIMITY = "unanimity", "Unanimity"
        MEAN_THRESHOLD = "mean_threshold", "Mean over a threshold"

    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    method = models.CharField(max_length=20, choices=Method.choices, default=Method.MAJORITY)
    threshold = models.FloatField(default=0.5, help_text="For the mean-over-threshold method.")
    graded = models.BooleanField(
        default=False,
        help_text="Also rate each answer 1–5 for correctness against the query's reference "
        "(G-Eval style), beside the checklist score.",
    )

    class Conversation(models.TextChoices):
        LAST_TURN = "last_turn", "The last assistant turn"
        CUMULATIVE = "cumulative", "All assistant turns: met once in the conversation"
        AVERAGE = "average", "All assistant turns: the average of the turns"

    conversation = models.CharField(
        "Conversations",
        max_length=12,
        choices=Conversation.choices,
        default=Conversation.LAST_TURN,
        help_text="For answers with turns: which assistant turns each criterion is graded "
        "on (docs/judging.md#conversations). Plain answers have one turn.",
    )
    judges = models.ManyToManyField(Judge, through="PanelMember", related_name="panels")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class PanelMember(models.Model):
    panel = models.ForeignKey(Panel, on_delete=models.CASCADE, related_name="members")
    judge = models.ForeignKey(Judge, on_delete=models.PROTECT, related_name="memberships")
    samples = models.PositiveSmallIntegerField(default=1)
    temperatures = models.JSONField(
        default=list,
        blank=True,
        help_text="One temperature per sample (e.g. [0, 0.5, 1]); empty uses the judge's.",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["panel", "judge"], name="judge_once_per_panel")
        ]

    def __str__(self) -> str:
        return f"{self.judge} ×{self.samples} in {self.panel}"

    def temperature(self, sample: int) -> float:
        if sample < len(self.temperatures):
            return float(self.temperatures[sample])
        return self.judge.temperature

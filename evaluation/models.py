"""Systems and their answers; judges and panels; runs and their verdicts; formality advice.

A verdict is one judge's vote, for one sample, on one (answer, criterion) in one run. The
panel turns a criterion's votes into one verdict (evaluation.metrics.aggregation), and the
criteria verdicts into the answer's score (evaluation.metrics.scoring).
"""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models

from annotation.models import Criterion, Query
from evaluation.judging.prompts import VERDICT_PROMPT_VERSION


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

    class Kind(models.TextChoices):
        LLM = "llm", "LLM (OpenAI-compatible endpoint)"
        NO_LLM = "no_llm", "No-LLM checks (figures, keywords, format)"

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
    is_formality_judge = models.BooleanField(
        default=False, help_text="Used for the formality check of criteria."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.model or self.get_kind_display()})"


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


class Run(models.Model):
    """Grading answers of a dataset's queries against their submitted checklists."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        CANCELLED = "cancelled", "Cancelled"

    dataset = models.ForeignKey("annotation.Dataset", on_delete=models.CASCADE, related_name="runs")
    panel = models.ForeignKey(Panel, on_delete=models.PROTECT, related_name="runs")
    name = models.CharField(max_length=200, blank=True)
    queries = models.ManyToManyField(
        Query, blank=True, related_name="+", help_text="Empty: every query of the dataset."
    )
    systems = models.ManyToManyField(
        System, blank=True, related_name="+", help_text="Empty: every system."
    )
    answer_run_label = models.CharField(
        max_length=100, blank=True, help_text="Only answers with this run label (empty: all)."
    )
    concurrency = models.PositiveSmallIntegerField(
        default=16, help_text="Judge calls in flight per worker task."
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    expected = models.PositiveIntegerField(default=0, help_text="Verdicts the run will hold.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.name or f"Run {self.pk}"


class Verdict(models.Model):
    """One judge's vote on one criterion for one answer, one sample, in one run.

    Unique on those keys: redelivered or repeated tasks upsert, never double. Everything
    needed to trace it is kept: the judge's parameters are in the cache key inputs, the raw
    output, tokens and latency here.
    """

    class Outcome(models.TextChoices):
        PASS = "pass", "Pass"
        FAIL = "fail", "Fail"
        UNPARSEABLE = "unparseable", "Unparseable"
        ERROR = "error", "Error"

    class FailureKind(models.TextChoices):
        MISSING = "missing", "Missing"
        INCORRECT = "incorrect", "Incorrect"
        AMBIGUOUS = "ambiguous", "Ambiguous"
        INCOMPLETE = "incomplete", "Incomplete"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="verdicts")
    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="verdicts")
    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="verdicts")
    judge = models.ForeignKey(Judge, on_delete=models.PROTECT, related_name="verdicts")
    sample = models.PositiveSmallIntegerField(default=0)
    outcome = models.CharField(max_length=12, choices=Outcome.choices)
    failure_kind = models.CharField(max_length=12, choices=FailureKind.choices, blank=True)
    rationale = models.TextField(blank=True)
    raw_output = models.TextField(blank=True)
    error_kind = models.CharField(max_length=40, blank=True)
    error = models.TextField(blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    latency_ms = models.PositiveIntegerField(default=0)
    attempts = models.PositiveSmallIntegerField(default=1)
    cache_hit = models.BooleanField(default=False)
    cache_key = models.CharField(max_length=64, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["run", "answer", "criterion", "judge", "sample"],
                name="one_verdict_per_vote",
            )
        ]
        indexes = [models.Index(fields=["run", "outcome"])]

    def __str__(self) -> str:
        return f"{self.outcome} by judge {self.judge_id} on criterion {self.criterion_id}"

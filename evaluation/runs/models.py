from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from annotation.models import Criterion, Dataset, Query
from evaluation.answers.models import Answer, System
from evaluation.judges.models import Judge, Panel


class RunQuerySet(models.QuerySet):
    def not_checks(self) -> RunQuerySet:
        """Runs graded for their own sake: neither a judge canary (`canary_for`) nor a
        stability pass (`stability_for`), which grade another run's items again to check
        its judges and show on that run. The one rule every list of runs that systems are
        scored, compared or alerted on applies (analytics, agreement, regressions)."""
        return self.filter(canary_for__isnull=True, stability_for__isnull=True)


class Run(models.Model):
    """Grading answers of a dataset's queries against their submitted checklists."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        DONE_WITH_ERRORS = "done_with_errors", "Done with errors"
        CANCELLED = "cancelled", "Cancelled"
        FAILED = "failed", "Failed"

    # A run in one of these has ended; every run reaches one (evaluation.runs.lifecycle).
    ENDED = (Status.DONE, Status.DONE_WITH_ERRORS, Status.CANCELLED, Status.FAILED)
    # A run in one of these graded every answer it was asked to: its figures are final. One
    # that ended with errors counts: its verdicts are real, and its failed calls are error
    # votes, excluded from every figure and counted (docs/metrics.md).
    FINISHED = (Status.DONE, Status.DONE_WITH_ERRORS)

    class Kind(models.TextChoices):
        SYSTEMS = "systems", "System answers"
        CROSS_EVALUATION = "cross_evaluation", "Cross-evaluation of perfect answers"
        IMPORTED = "imported", "Imported verdicts"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="runs")
    panel = models.ForeignKey(Panel, on_delete=models.PROTECT, related_name="runs")
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.SYSTEMS)
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

    class Scope(models.TextChoices):
        ALL = "all", "Every answer"
        LABELLED = "labelled", "Only items with human labels or adjudications (a trial)"
        # A stability pass's sample, or a judge canary's sample of the labelled items: the
        # items are listed in RunItem when the run is created (evaluation.runs.sampling).
        LISTED = "listed", "Only the items listed for it (a sample)"

    # What a person or a start request may ask for; "listed" runs are made by services.
    STARTED_SCOPES = (Scope.ALL, Scope.LABELLED)

    scope = models.CharField(max_length=10, choices=Scope.choices, default=Scope.ALL)
    # A trial run is compared with this run of the current judge on the same items.
    baseline = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="trials"
    )
    # A judge canary (docs/judging.md#judge-canary): a run of the labelled items, its calls
    # past the cache, started beside the scheduled run it checks the judges of. Its
    # agreement with the human reference, and whether a judge dropped below the previous
    # canary's interval, are kept in `canary_result` when it ends (evaluation.agreement.canary).
    canary_for = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="canaries"
    )
    canary_result = models.JSONField(default=dict, blank=True)
    # A stability pass (docs/judging.md#stability-pass): a sample of this run's items graded
    # k times by one judge of its panel, every call past the cache, asked for by an admin
    # once the run ended. Its verdicts give the run's judge stability figures
    # (evaluation.runs.stability).
    stability_for = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="stability_passes"
    )
    # The calls, tokens and cost estimated before the run started (evaluation.runs.costs).
    estimate = models.JSONField(default=dict, blank=True)
    concurrency = models.PositiveSmallIntegerField(
        default=16, help_text="Judge calls in flight per worker task."
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    expected = models.PositiveIntegerField(default=0, help_text="Verdicts the run will hold.")
    reason = models.TextField(
        blank=True, help_text="Why the run failed, or a summary of its errors."
    )
    # Bumped by each resume and retry: a task queued for an earlier attempt cannot finish
    # (or close) a later one (evaluation.runs.lifecycle).
    attempt = models.PositiveIntegerField(default=1)
    # The panel as it was at start: method, threshold, graded, members with their samples
    # and temperatures (evaluation.runs.snapshot). Every figure of the run reads this, so
    # editing the panel later never changes a run's results.
    snapshot = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Set while the run's verdicts are archived to Parquet (RunArchive): its pages serve the
    # figures kept when it was archived, and nothing counts its (absent) verdicts again.
    archived_at = models.DateTimeField(null=True, blank=True)

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.name or f"Run {self.pk}"

    # How the run's votes become one verdict per criterion: from the snapshot, never from
    # the panel's current settings (no query).
    @property
    def panel_method(self) -> str:
        return self.snapshot.get("method") or Panel.Method.MAJORITY

    @property
    def panel_threshold(self) -> float:
        return float(self.snapshot.get("threshold", 0.5))

    @property
    def graded(self) -> bool:
        return bool(self.snapshot.get("graded"))

    @property
    def ended(self) -> bool:
        return self.status in self.ENDED

    @property
    def past_the_cache(self) -> bool:
        """A judge canary or a stability pass asks its judges again: every call it makes
        misses the cached verdicts of other runs (evaluation.judging.plan, `fresh`)."""
        return self.canary_for_id is not None or self.stability_for_id is not None


class JudgeCall(models.Model):
    """What every recorded judge call keeps, whatever it asked (a verdict, a grade): the raw
    output, how it failed, what it cost, its cache key and the parameters it was made with."""

    # Written from the engine's result of the call (evaluation.runs.calls.call_record).
    RECORD_FIELDS = (
        "raw_output", "error_kind", "error", "prompt_tokens", "completion_tokens", "latency_ms",
        "attempts", "cache_hit", "cache_key",
    )  # fmt: skip

    raw_output = models.TextField(blank=True)
    error_kind = models.CharField(max_length=40, blank=True)
    error = models.TextField(blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    latency_ms = models.PositiveIntegerField(default=0)
    attempts = models.PositiveSmallIntegerField(default=1)
    cache_hit = models.BooleanField(default=False)
    # Of the tokens above, as the provider reports them: prompt tokens read from its cache,
    # completion tokens spent reasoning.
    # A database default too: bulk paths that COPY rows name only the columns they fill.
    cached_tokens = models.PositiveIntegerField(default=0, db_default=0)
    reasoning_tokens = models.PositiveIntegerField(default=0, db_default=0)
    # Indexed in each table's Meta (a plain index: `db_index` would add a second,
    # varchar_pattern_ops one on PostgreSQL for LIKE, which nothing here asks).
    cache_key = models.CharField(max_length=64)
    # What the call was made with (base URL, model, prompt version, temperature, max tokens,
    # seed), copied at write time so that editing the judge later does not rewrite history.
    judge_params = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class Verdict(JudgeCall):
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

    # No index of its own: the unique constraint and verdict_run_item_outcome both start with
    # the run, and every index costs a million-verdict import time.
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="verdicts", db_index=False)
    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="verdicts")
    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="verdicts")
    judge = models.ForeignKey(Judge, on_delete=models.PROTECT, related_name="verdicts")
    sample = models.PositiveSmallIntegerField(default=0)
    outcome = models.CharField(max_length=12, choices=Outcome.choices)
    failure_kind = models.CharField(max_length=12, choices=FailureKind.choices, blank=True)
    rationale = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["run", "answer", "criterion", "judge", "sample"],
                name="one_verdict_per_vote",
            )
        ]
        indexes = [
            models.Index(fields=["run", "outcome"]),
            # Scores, queues and agreement count a run's votes per (answer, criterion): with
            # the outcome and judge in the index, PostgreSQL reads them in order from the
            # index alone (no heap visit, no hash): 1.35 s → 0.73 s for a million votes
            # (docs/benchmarks.md#pages-at-scale). SQLite ignores INCLUDE.
            models.Index(
                fields=["run", "answer", "criterion"],
                include=["outcome", "judge"],
                name="verdict_run_item_outcome",
            ),
            models.Index(fields=["cache_key"], name="verdict_cache_key"),
            # A run's verdicts in id order (the verdicts API's pages): without it PostgreSQL
            # walks the primary key from the oldest run's ids, filtering, to reach a new
            # run's first page (11.8 s at 21.6 million verdicts; docs/benchmarks.md).
            models.Index(fields=["run", "id"], name="verdict_run_in_id_order"),
        ]

    def __str__(self) -> str:
        return f"{self.outcome} by judge {self.judge_id} on criterion {self.criterion_id}"


class GradedScore(JudgeCall):
    """One judge's 1–5 rating of one answer against a reference, for one sample (G-Eval style).

    The graded view sits beside the checklist score; it never changes it.
    """

    class Outcome(models.TextChoices):
        SCORED = "scored", "Scored"
        UNPARSEABLE = "unparseable", "Unparseable"
        ERROR = "error", "Error"
        NO_REFERENCE = "no_reference", "No reference answer"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="graded_scores")
    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="graded_scores")
    judge = models.ForeignKey(Judge, on_delete=models.PROTECT, related_name="graded_scores")
    sample = models.PositiveSmallIntegerField(default=0)
    outcome = models.CharField(max_length=12, choices=Outcome.choices)
    score = models.PositiveSmallIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1), MaxValueValidator(5)]
    )
    reasoning = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["run", "answer", "judge", "sample"], name="one_graded_score_per_vote"
            )
        ]
        indexes = [models.Index(fields=["cache_key"], name="gradedscore_cache_key")]

    def __str__(self) -> str:
        return f"{self.score or self.outcome} by judge {self.judge_id} on answer {self.answer_id}"


class RunTask(models.Model):
    """One (answer × judge) task of a run, and whether it has finished.

    A run is done when all its tasks are, whatever the verdicts add up to: a checklist
    reopened or a criterion disabled in the middle of a run changes how many verdicts the
    remaining tasks write, and a count fixed at start would then never be reached.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="tasks")
    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="+")
    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="+")
    done_at = models.DateTimeField(null=True, blank=True)
    # The run attempt the task was last queued for: only a delivery of that attempt claims
    # and finishes it.
    attempt = models.PositiveIntegerField(default=1)
    # A lease: the delivery working on the task now, kept alive by its worker's heartbeat.
    # A lease whose heartbeat stopped belongs to a lost worker; the sweep requeues it.
    lease = models.CharField(max_length=32, blank=True)
    worker = models.CharField(max_length=200, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    queued_at = models.DateTimeField(null=True, blank=True)
    requeues = models.PositiveSmallIntegerField(
        default=0, help_text="Times the sweep queued it again after a lost worker or message."
    )
    error = models.TextField(blank=True, help_text="Why the task failed, if it did.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "answer", "judge"], name="one_task_per_item")
        ]
        indexes = [
            models.Index(fields=["run", "done_at"]),
            # The sweep looks at unfinished tasks only.
            models.Index(
                fields=["heartbeat_at"],
                condition=models.Q(done_at__isnull=True),
                name="runtask_open",
            ),
        ]

    def __str__(self) -> str:
        return f"Run {self.run_id}: answer {self.answer_id} × judge {self.judge_id}"


class RunItem(models.Model):
    """An (answer, criterion) item a run of scope "listed" grades: its sample, drawn once
    when the run is created (evaluation.runs.sampling), so that its tasks, its estimate and
    a resume all grade the same items."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="items")
    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="+")
    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "answer", "criterion"], name="one_run_item")
        ]

    def __str__(self) -> str:
        return f"Run {self.run_id}: answer {self.answer_id} × criterion {self.criterion_id}"


class RunArchive(models.Model):
    """An ended run whose verdicts left the verdict table for a Parquet file (issue 44,
    retention; evaluation.archive): where the file is, what it holds (count and checksum
    of the rows as they were, to restore them exactly), and the run's scores frozen when it
    was archived, which its pages and charts serve instead of counting absent verdicts.
    The row goes when the run is restored."""

    run = models.OneToOneField(Run, on_delete=models.CASCADE, primary_key=True, related_name="+")
    # Relative to settings.RUN_ARCHIVE_DIR.
    path = models.CharField(max_length=300)
    verdicts = models.PositiveBigIntegerField()
    # evaluation.archive.services.checksum of the run's verdict rows: order-free, over every
    # column's text form; the same after a restore, or the restore is refused.
    checksum = models.CharField(max_length=40)
    size = models.PositiveBigIntegerField(default=0)  # the file's bytes
    # The run's scores when archived (runs.scores.frozen_scores): threshold, systems and
    # every answer's row, with the shape they were written in.
    scores = models.JSONField(default=dict)
    archived_at = models.DateTimeField(auto_now_add=True)
    archived_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )  # fmt: skip

    def __str__(self) -> str:
        return f"Archive of run {self.run_id} ({self.verdicts} verdicts)"

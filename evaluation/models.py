"""Systems and their answers; judges and panels; runs and their verdicts; formality advice.

A verdict is one judge's vote, for one sample, on one (answer, criterion) in one run. The
panel turns a criterion's votes into one verdict (evaluation.metrics.aggregation), and the
criteria verdicts into the answer's score (evaluation.metrics.scoring).
"""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from annotation.models import Checklist, Criterion, Dataset, Query
from evaluation.judging.prompts import VERDICT_PROMPT_VERSION


class System(models.Model):
    """A question-answering system whose answers are graded."""

    name = models.CharField(max_length=200)
    version = models.CharField(max_length=100, blank=True)
    description = models.TextField(blank=True)
    is_reference = models.BooleanField(
        default=False,
        help_text="Holds perfect answers written for checklists (cross-evaluation); never "
        "graded as a system.",
    )
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
    # Set on perfect answers only (cross-evaluation): the checklist whose criteria the answer
    # was written to satisfy, and who or what wrote it.
    checklist = models.OneToOneField(
        Checklist,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="perfect_answer",
        help_text="For a perfect answer: the checklist it satisfies.",
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The person who wrote or last edited the answer in the app.",
    )
    drafted_by = models.ForeignKey(
        "Judge",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The LLM that drafted it, if one did.",
    )
    draft_prompt_version = models.CharField(max_length=40, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

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
    graded = models.BooleanField(
        default=False,
        help_text="Also rate each answer 1–5 for correctness against the query's reference "
        "(G-Eval style), beside the checklist score.",
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


class Label(models.TextChoices):
    PASS = "pass", "Pass"
    FAIL = "fail", "Fail"


class HumanLabel(models.Model):
    """One reviewer's pass/fail on one criterion for one answer. Several reviewers may label
    the same item; each keeps one label per item, updated in place.

    `rater` is who labelled, as agreement statistics group it: the reviewer's username for
    labels made in the app, the name given in the file for imported ones (reviewer is then
    empty, unless the name matched a user).
    """

    class Source(models.TextChoices):
        APP = "app", "Labelled in the app"
        IMPORT = "import", "Imported"

    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="human_labels")
    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="human_labels")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="human_labels",
    )
    rater = models.CharField(max_length=150)
    label = models.CharField(max_length=4, choices=Label.choices)
    note = models.TextField(blank=True)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.APP)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["answer_id", "criterion_id", "rater"]
        constraints = [
            models.UniqueConstraint(
                fields=["answer", "criterion", "rater"], name="one_label_per_rater_and_item"
            )
        ]
        indexes = [models.Index(fields=["criterion", "answer"])]

    def __str__(self) -> str:
        return f"{self.label} by {self.rater} on criterion {self.criterion_id}"


class Adjudication(models.Model):
    """The final label of one (answer, criterion). Where present it decides the score; the
    judges' votes and the human labels stay as they are.

    `version` counts decisions: a reviewer saves against the version they saw, so two
    reviewers deciding at once cannot silently overwrite each other (the second gets a
    conflict and sees the first's decision).
    """

    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="adjudications")
    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="adjudications")
    label = models.CharField(max_length=4, choices=Label.choices)
    reason = models.TextField(blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(auto_now=True)
    version = models.PositiveIntegerField(default=1)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["answer", "criterion"], name="one_adjudication_per_item"
            )
        ]

    def __str__(self) -> str:
        return f"{self.label} (adjudicated) on criterion {self.criterion_id}"


class ReviewAssignment(models.Model):
    """An item of a review queue given to one reviewer: a whole answer (labelling queue) or
    one criterion of an answer (disagreement queue)."""

    class Queue(models.TextChoices):
        LABELLING = "labelling", "Labelling"
        DISAGREEMENT = "disagreement", "Disagreement"

    queue = models.CharField(max_length=20, choices=Queue.choices)
    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="assignments")
    criterion = models.ForeignKey(
        Criterion, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="review_assignments"
    )
    assigned_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["queue", "answer"],
                condition=models.Q(criterion__isnull=True),
                name="one_assignment_per_answer",
            ),
            models.UniqueConstraint(
                fields=["queue", "answer", "criterion"],
                condition=models.Q(criterion__isnull=False),
                name="one_assignment_per_item",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_queue_display()} item for {self.assignee}"


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


class ReviewRevision(models.Model):
    """A number that goes up whenever something an agreement figure is computed from
    changes in the dataset: a human label, an adjudication, a criterion's kind or source
    types, a query's category, a system's or judge's name (evaluation.agreement.revision).
    Cached figures are keyed by it, so they are never served after such a change."""

    dataset = models.OneToOneField(
        Dataset, on_delete=models.CASCADE, primary_key=True, related_name="review_revision"
    )
    number = models.BigIntegerField(default=0)
    # The same, less the labels and adjudications of system answers: what the
    # cross-evaluation figures (which read perfect answers only) are keyed by, so that
    # reviewers labelling system answers do not make the next reader recount them.
    cross_evaluation = models.BigIntegerField(default=0)
    # The same, less human labels (adjudications count): what run scores are keyed by. A
    # score reads verdicts and adjudications, never a label, so reviewers labelling all day
    # do not make the next reader of a run page count its votes again.
    scores = models.BigIntegerField(default=0)
    # New system answers, which change no figure (they carry no label, adjudication or
    # verdict of a finished run) but join the labelling queue: the queues are keyed by it
    # beside `number`, so that answers arriving one by one do not make every agreement and
    # analytics reader recount.
    answers = models.BigIntegerField(default=0, db_default=0)  # raw upserts leave it out

    def __str__(self) -> str:
        return f"Review revision {self.number} of dataset {self.dataset_id}"


class AgreementCache(models.Model):
    """The counted cells of a dataset's agreement figures for one run, as computed at one
    revision of its labels (`key`: the run, its state and method, and the revision). A
    later change makes a new key; old rows are replaced (evaluation.agreement.selectors)."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=200)
    cells = models.JSONField()
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["dataset", "key"], name="one_agreement_cache_per_key")
        ]

    def __str__(self) -> str:
        return f"Agreement cells of dataset {self.dataset_id} ({self.key})"


class KeptQueueRow(models.Model):
    """One item of a review queue in the order computed at one state: `kept` is the
    AgreementCache row whose key holds everything the order depends on (the runs' states and
    methods, the label policy, the dataset's review revision), so a page reads
    one index range of positions instead of ordering the whole queue on every request. A new
    state makes a new key; keeping it deletes the old header and its rows, so a stale order
    is never read (evaluation.review.kept)."""

    # No cascade by Django: it would make every figure cache deletion collect first (two
    # queries more per stored figure). evaluation.review.kept deletes the rows of the
    # headers it replaces, and rows whose header went another way (a dataset deleted, the
    # cache emptied) on its next write; ids are never reused (PostgreSQL sequences, SQLite
    # AUTOINCREMENT), so such rows are never read. Not indexed alone: it leads both indexes.
    kept = models.ForeignKey(
        AgreementCache, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False,
        related_name="+",
    )  # fmt: skip
    # 1-based and gapless among the open items (adjudicated ones are numbered apart), so
    # that an unfiltered queue's "item X of N" is the position itself.
    position = models.PositiveIntegerField()
    adjudicated = models.BooleanField(default=False)
    # Plain ids, not foreign keys: the rows are a derived copy, replaced whenever what they
    # were computed from changes, and must not slow the deletion of answers or criteria.
    answer_id = models.BigIntegerField()
    criterion_id = models.BigIntegerField(null=True)
    run_id = models.BigIntegerField(null=True)
    # Disagreement items: the counted votes and human labels of the item.
    outcome = models.CharField(max_length=16, blank=True)
    passes = models.PositiveIntegerField(default=0)
    fails = models.PositiveIntegerField(default=0)
    invalid = models.PositiveIntegerField(default=0)
    human_pass = models.PositiveIntegerField(default=0)
    human_fail = models.PositiveIntegerField(default=0)
    # Labelling items: the answer's human labels (all raters) and the judges' uncertainty.
    labels = models.PositiveIntegerField(default=0)
    uncertainty = models.FloatField(null=True)

    class Meta:
        indexes = [
            models.Index(fields=["kept", "adjudicated", "position"], name="kept_queue_order"),
            models.Index(fields=["kept", "answer_id"], name="kept_queue_answer"),
        ]

    def __str__(self) -> str:
        return f"Queue item {self.position} of {self.kept_id}"


# Kept beside the code that writes it (evaluation/data/); imported here so Django sees it.
from evaluation.data.models import DatasetExport  # noqa: E402

__all__ = ["DatasetExport"]
from evaluation.analytics.models import AlertEvent, RegressionAlert, RunSchedule  # noqa: E402

__all__ += ["AlertEvent", "RegressionAlert", "RunSchedule"]

"""Datasets, queries, guidelines, source types, checklists, criteria and citations.

Permissions live on the dataset, the root object: everything below it is reached through its
dataset (annotation.access). Models hold fields, constraints and small derived
properties; writes go through annotation.services, reads through annotation.selectors.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from guardian.models import GroupObjectPermissionBase, UserObjectPermissionBase

from annotation.query_ids import FIXED_CHOICES, default_external_id
from annotation.validation import GuidelineConfig
from config import limits


class QueryCategory(models.Model):
    """A managed taxonomy of question types (point-fact retrieval, event digest, ...)."""

    name = models.CharField(max_length=100, unique=True)
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["position", "name"]
        verbose_name_plural = "query categories"

    def __str__(self) -> str:
        return self.name


class DomainTag(models.Model):
    name = models.CharField(max_length=60, unique=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class SourceType(models.Model):
    """Where a fact may come from. Banned types (AI tools) are refused by validation."""

    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=100, unique=True)
    is_banned = models.BooleanField(default=False, help_text="Criteria may not rely on it.")
    description = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["is_banned", "name"]

    def __str__(self) -> str:
        return self.name


class Guideline(models.Model):
    """A versioned set of rule settings (annotation.validation.GuidelineConfig as JSON).

    Versions are immutable once a checklist was submitted under them: change the rules by
    adding a version, so every submitted checklist keeps the rules it was validated under.
    """

    name = models.CharField(max_length=100)
    version = models.PositiveIntegerField(default=1)
    description = models.TextField(blank=True)
    config = models.JSONField(help_text="Rule settings, see docs/guidelines.md.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="guideline_name_version")
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"

    def clean(self) -> None:

        try:
            GuidelineConfig.from_dict(self.config)
        except (ValueError, TypeError) as exc:
            raise ValidationError({"config": str(exc)}) from exc
        if self.pk and self.checklists.exists():
            stored = Guideline.objects.filter(pk=self.pk).values_list("config", flat=True).first()
            if stored != self.config:
                raise ValidationError(
                    {
                        "config": "Checklists were submitted under this version: add a new "
                        "version instead of changing it."
                    }
                )


class LabelPolicy(models.TextChoices):
    """Which answers a dataset's labelling queue offers to reviewers."""

    ALL = "all", "All answers"
    RANDOM = "random", "A random share of answers"
    UNCERTAIN = "uncertain", "The answers the judges are least certain about"


class Scoring(models.TextChoices):
    """How a checklist's verdicts become its score (evaluation.metrics.rubrics,
    docs/metrics.md#scoring-strategies)."""

    SHARE = "share", "Share of criteria passed"
    WEIGHTED = "weighted", "Weighted share"
    CONCEPT = "concept", "Concept: criteria met / all criteria"
    ASPECT = "aspect", "Aspect: groups fully met / all groups"
    BLEND = "blend", "Blend of concept and aspect"
    TREE = "tree", "Weighted tree of groups"
    POINTS = "points", "Points with penalties"


class Undecided(models.TextChoices):
    """What a criterion with no valid vote (an undecided one) counts as in a checklist's
    score (evaluation.metrics.rubrics.satisfied, docs/metrics.md#undecided-criteria)."""

    EXCLUDED = "excluded", "Left out of the score"
    NOT_MET = "not_met", "Counted as not met"


def dimensions_problem(dimensions: object) -> str | None:
    """What is wrong with a dataset's declared dimensions ({name: [allowed values]}; an
    empty list allows any value), or None."""
    if not isinstance(dimensions, dict):
        return 'Expected an object such as {"answer_type": ["number", "text"]}.'
    for name, values in dimensions.items():
        if not name or len(name) > 60:
            return "A dimension's name has 1 to 60 characters."
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            return f"Dimension {name!r}: expected a list of allowed values (text)."
    return None


def query_dimensions_problem(declared: dict, values: object) -> str | None:
    """What is wrong with a query's dimension values against its dataset's declared ones."""
    if not isinstance(values, dict):
        return 'Expected an object such as {"answer_type": "number"}.'
    for name, value in values.items():
        if name not in declared:
            known = ", ".join(sorted(declared)) or "none"
            return f"Unknown dimension {name!r}; the dataset declares: {known}."
        if not isinstance(value, str):
            return f"Dimension {name!r}: the value is text."
        if declared[name] and value not in declared[name]:
            return f"Dimension {name!r}: {value!r} is not one of {', '.join(declared[name])}."
    return None


class Dataset(models.Model):
    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True, max_length=limits.DATASET_DESCRIPTION)
    licence = models.CharField(
        max_length=200,
        blank=True,
        help_text="Under which terms the dataset may be shared (e.g. CC BY 4.0); written "
        "into the data card of every export.",
    )
    guideline = models.ForeignKey(
        Guideline,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="datasets",
        help_text="The rules checklists are validated against (the newest finance version "
        "when empty).",
    )
    experts_per_query = models.PositiveSmallIntegerField(
        default=2, help_text="How many experts annotate each query independently."
    )
    show_submitted_checklists = models.BooleanField(
        default=False,
        help_text="After submitting their own checklist for a query, experts may read the "
        "other submitted checklists of that query.",
    )
    experts_create_queries = models.BooleanField(
        # On by default: the tool is for domain experts who write their own queries with a
        # fixed query date; an admin who curates the queries alone switches it off.
        default=True,
        verbose_name="Experts create queries",
        help_text="Experts of the dataset may add queries and edit the queries they added; "
        "when off, only dataset admins may.",
    )
    formality_check = models.BooleanField(
        default=False,
        help_text="Ask an LLM whether each criterion is specific and answerable yes or no "
        "(advice only, never blocks).",
    )
    pass_threshold = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="An answer passes when its score (share of criteria passed, 0–1) reaches "
        "this value; empty for no pass/fail line.",
    )
    scoring = models.CharField(
        max_length=20,
        choices=Scoring.choices,
        default=Scoring.SHARE,
        help_text="How a checklist's verdicts become its score; a checklist may override it.",
    )
    undecided = models.CharField(
        max_length=20,
        choices=Undecided.choices,
        default=Undecided.EXCLUDED,
        help_text="What a criterion with no valid vote counts as: left out of the score "
        "(numerator and denominator), or not met (as Axion, PaperBench and HealthBench "
        "count it); a checklist may override it.",
    )
    blend_weight = models.FloatField(
        default=0.7,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="For the blend strategy: w in w × concept + (1 - w) × aspect.",
    )
    # The named dimensions queries are described along (file type, answer type, ...), each
    # with its allowed values: {"answer_type": ["number", "text"], "sources": []}; an empty
    # list allows any value. Analytics break scores down by each (docs/metrics.md).
    dimensions = models.JSONField(default=dict, blank=True)
    label_policy = models.CharField(
        max_length=20,
        choices=LabelPolicy.choices,
        default=LabelPolicy.UNCERTAIN,
        help_text="Which answers the labelling queue asks reviewers to label.",
    )
    label_share = models.FloatField(
        default=0.2,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="For the random and least-certain policies: the share of answers to label.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Set when an admin deletes the dataset: from then on it is gone for every user (access
    # helpers answer 404, lists leave it out) while a Celery task deletes its rows in
    # batches (evaluation.datasets.purge); the row itself goes last.
    deleting_since = models.DateTimeField(null=True, blank=True, editable=False)
    # The deleting task's last sign of life: a mark with no progress for RUNS_LEASE_TIMEOUT
    # lost its worker, and the workers' sweep queues it again.
    deletion_progress_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["name", "id"]
        permissions = [
            ("annotate_dataset", "Write checklists in the dataset"),
            ("review_dataset", "Label and adjudicate in the dataset"),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if self.dimensions is None:  # an empty field of the settings form
            self.dimensions = {}
        problem = dimensions_problem(self.dimensions)
        if problem:
            raise ValidationError({"dimensions": problem})


# Direct foreign-key permission tables: guardian joins on an integer column instead of a
# generic (content type, text id) pair, which keeps permission filters fast on big tables.
class DatasetUserObjectPermission(UserObjectPermissionBase):
    content_object = models.ForeignKey(Dataset, on_delete=models.CASCADE)


class DatasetGroupObjectPermission(GroupObjectPermissionBase):
    content_object = models.ForeignKey(Dataset, on_delete=models.CASCADE)


class Query(models.Model):
    class Status(models.TextChoices):
        OPEN = "open", "Open"
        IN_PROGRESS = "in_progress", "In progress"
        DONE = "done", "Done"

    class Complexity(models.TextChoices):
        SIMPLE = "simple", "Simple: one fact or figure"
        MODERATE = "moderate", "Moderate: a few facts put together"
        COMPLEX = "complex", "Complex: analysis across sources or periods"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="queries")
    # The query's name outside the app, unique in its dataset: exports write it, imports,
    # the reward API and the review imports find queries by it, so that files and trainers
    # never need the app's ids. Every query has one from its creation (see save() and
    # annotation.query_ids); blank only for the moment between the insert and that update.
    external_id = models.CharField(max_length=200, blank=True)
    # What may hold the external id outside the app (annotation.query_ids.FIXED_BY), and
    # since when; empty while the id may still change.
    external_id_fixed_by = models.CharField(max_length=10, choices=FIXED_CHOICES, blank=True)
    external_id_fixed_at = models.DateTimeField(null=True, blank=True)
    text = models.TextField(max_length=limits.QUERY_TEXT)
    query_date = models.DateField(
        help_text="Every cited source must have been public on or before this date."
    )
    category = models.ForeignKey(
        QueryCategory, null=True, blank=True, on_delete=models.PROTECT, related_name="queries"
    )
    complexity = models.CharField(
        max_length=10,
        choices=Complexity.choices,
        blank=True,
        help_text="How much work a full answer takes, as the query's author judges it.",
    )
    tags = models.ManyToManyField(DomainTag, blank=True, related_name="queries")
    reference_answer = models.TextField(
        blank=True,
        max_length=limits.REFERENCE_ANSWER,
        help_text="Markdown. An answer known to be right, for the graded (1–5) view; when "
        "empty, the graded view uses the query's perfect answers.",
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.OPEN)
    # The query's value on each of its dataset's dimensions, as text: {"answer_type": "number"}.
    dimensions = models.JSONField(default=dict, blank=True)
    assigned_experts = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="assigned_queries"
    )
    # Who added the query: an expert may edit the queries they added (when the dataset lets
    # experts create queries), never another's.
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="created_queries",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["dataset_id", "id"]
        verbose_name_plural = "queries"
        indexes = [models.Index(fields=["dataset", "status"])]
        constraints = [
            models.UniqueConstraint(
                fields=["dataset", "external_id"],
                condition=~models.Q(external_id=""),
                name="query_external_id_unique_in_dataset",
            )
        ]

    def __str__(self) -> str:
        return self.text[:80]

    def save(self, *args, **kwargs) -> None:
        super().save(*args, **kwargs)
        if not self.external_id:
            # Every query gets its external id when it is created, whatever made it (a page,
            # the API, the demo, an import, a script): its default needs the row's id, so
            # it is set right after the insert, in the same transaction when there is one.
            self.external_id = self.free_default_external_id()
            Query.objects.filter(pk=self.pk).update(external_id=self.external_id)

    def free_default_external_id(self) -> str:
        """`query-<pk>`, or the first `query-<pk>-<n>` no other query of the dataset holds."""
        taken = set(
            Query.objects.filter(
                dataset_id=self.dataset_id, external_id__startswith=default_external_id(self.pk)
            )
            .exclude(pk=self.pk)
            .values_list("external_id", flat=True)
        )
        attempt = 1
        while default_external_id(self.pk, attempt) in taken:
            attempt += 1
        return default_external_id(self.pk, attempt)

    @property
    def external_id_fixed(self) -> bool:
        return bool(self.external_id_fixed_by)

    def clean(self) -> None:
        if self.dimensions and self.dataset_id:
            problem = query_dimensions_problem(self.dataset.dimensions, self.dimensions)
            if problem:
                raise ValidationError({"dimensions": problem})


class Checklist(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        SUBMITTED = "submitted", "Submitted"
        REOPENED = "reopened", "Reopened"

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="checklists")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="checklists"
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.DRAFT)
    guideline = models.ForeignKey(
        Guideline,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="checklists",
        help_text="The guideline version the checklist was last validated under on submit.",
    )
    scoring = models.CharField(
        max_length=20,
        choices=Scoring.choices,
        blank=True,
        help_text="How this checklist is scored; empty: the dataset's strategy.",
    )
    undecided = models.CharField(
        max_length=20,
        choices=Undecided.choices,
        blank=True,
        help_text="What its undecided criteria count as; empty: the dataset's setting.",
    )
    first_submitted_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["query_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["query", "author"], name="one_checklist_per_expert")
        ]
        indexes = [models.Index(fields=["query", "status"])]

    def __str__(self) -> str:
        return f"Checklist {self.pk} by {self.author_id} for query {self.query_id}"

    @property
    def is_editable(self) -> bool:
        return self.status != self.Status.SUBMITTED


class ChecklistEvent(models.Model):
    """The history of a checklist: who did what, when, with the criteria as they then were."""

    class Action(models.TextChoices):
        CREATED = "created", "Created"
        EDITED = "edited", "Edited"
        SUBMITTED = "submitted", "Submitted"
        REOPENED = "reopened", "Reopened"

    checklist = models.ForeignKey(Checklist, on_delete=models.CASCADE, related_name="events")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    action = models.CharField(max_length=20, choices=Action.choices)
    detail = models.CharField(max_length=300, blank=True)
    snapshot = models.JSONField(default=list, blank=True)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["checklist_id", "at", "id"]

    def __str__(self) -> str:
        return (
            f"{self.get_action_display()} checklist {self.checklist_id} at {self.at:%Y-%m-%d %H:%M}"
        )


class CriterionGroup(models.Model):
    """A group of a checklist's criteria (an aspect, or a node of a weighted rubric tree).
    Groups nest to any depth through `parent`, always within one checklist (refused
    otherwise by annotation.services.groups and the import); a criterion is in at most one
    group. Scoring reads the tree (evaluation.metrics.rubrics)."""

    checklist = models.ForeignKey(Checklist, on_delete=models.CASCADE, related_name="groups")
    # Your own id for the group, unique in its checklist (see Query.external_id).
    external_id = models.CharField(max_length=200, blank=True)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="children"
    )
    title = models.CharField(max_length=300)
    description = models.TextField(blank=True, max_length=limits.CRITERION_NOTES)
    weight = models.DecimalField(
        max_digits=6,
        decimal_places=2,
        default=1,
        help_text="Its weight among its siblings (the tree strategy); always positive.",
    )
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["checklist_id", "position", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["checklist", "external_id"],
                condition=~models.Q(external_id=""),
                name="group_external_id_unique_in_checklist",
            ),
            models.CheckConstraint(condition=models.Q(weight__gt=0), name="group_weight_positive"),
        ]

    def __str__(self) -> str:
        return self.title[:80]


class CriterionQuerySet(models.QuerySet):
    def active(self) -> CriterionQuerySet:
        """Criteria as the checklist stands now: archived ones (deleted or reworded while they
        carried reviewers' work) are kept for their history but left out of the editor, the
        API's checklist, validation, new runs and overlaps."""
        return self.filter(archived_at__isnull=True)


class Criterion(models.Model):
    """One criterion. A criterion that carries human labels, adjudications or verdicts is
    never hard-deleted nor reworded in place (annotation.services.checklists): deleting
    archives it, rewording archives it and starts a new version (`previous_version`), so
    reviewers' work stays attached to the text it was about."""

    class Kind(models.TextChoices):
        METHODOLOGY = "methodology", "Methodology"
        FORMAT = "format", "Format"
        FACT = "fact", "Fact"

    checklist = models.ForeignKey(Checklist, on_delete=models.CASCADE, related_name="criteria")
    # Your own id for the criterion, unique in its checklist (see Query.external_id).
    external_id = models.CharField(max_length=200, blank=True)
    position = models.PositiveIntegerField()
    # max_length on a TextField: enforced by forms and serializers, not by the database.
    text = models.TextField(max_length=limits.CRITERION_TEXT)
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.FACT)
    source_types = models.ManyToManyField(SourceType, blank=True, related_name="criteria")
    notes = models.TextField(blank=True, max_length=limits.CRITERION_NOTES)
    # Negative for a penalty: a pitfall the answer should avoid ("Recommends a drug the
    # patient is allergic to"); met when the answer does it, like any criterion.
    weight = models.DecimalField(max_digits=6, decimal_places=2, default=1)
    group = models.ForeignKey(
        CriterionGroup,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="criteria",
        help_text="The group (aspect) the criterion belongs to; empty for none.",
    )
    is_core = models.BooleanField(default=True, help_text="Core, or supplementary.")
    scoring_enabled = models.BooleanField(
        default=True, help_text="Disabled criteria stay in the checklist but are not scored."
    )
    archived_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Set when the criterion was deleted or reworded while it carried labels, "
        "adjudications or verdicts: kept with its history, hidden from the checklist.",
    )
    previous_version = models.OneToOneField(
        "self",
        null=True,
        blank=True,
        # RESTRICT, not PROTECT: an archived wording cannot be deleted on its own while a
        # newer version names it, but deleting the checklist or dataset takes both.
        on_delete=models.RESTRICT,
        related_name="next_version",
        help_text="The archived wording this criterion replaced.",
    )

    objects = CriterionQuerySet.as_manager()

    class Meta:
        ordering = ["checklist_id", "position", "id"]
        verbose_name_plural = "criteria"
        indexes = [models.Index(fields=["checklist", "archived_at"])]
        constraints = [
            models.UniqueConstraint(
                fields=["checklist", "external_id"],
                condition=~models.Q(external_id=""),
                name="criterion_external_id_unique_in_checklist",
            )
        ]

    def __str__(self) -> str:
        return self.text[:80]

    @property
    def is_penalty(self) -> bool:
        return self.weight < 0


class Citation(models.Model):
    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="citations")
    title = models.CharField(max_length=300)
    url = models.CharField(
        "URL or document identifier", max_length=500, blank=True
    )  # filings are often cited by accession number, not by URL
    source_type = models.ForeignKey(
        SourceType, null=True, blank=True, on_delete=models.PROTECT, related_name="citations"
    )
    published_on = models.DateField(null=True, blank=True)

    class Meta:
        ordering = ["criterion_id", "id"]

    def __str__(self) -> str:
        return self.title

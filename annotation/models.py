"""Datasets, queries, checklists and criteria.

The foundation keeps these minimal; the authoring issue grows them (taxonomies, source types,
guidelines, citations). Permissions live on the dataset, the root object: everything below
it is reached through its dataset.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from guardian.models import GroupObjectPermissionBase, UserObjectPermissionBase


class Dataset(models.Model):
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    experts_per_query = models.PositiveSmallIntegerField(
        default=2, help_text="How many experts annotate each query independently."
    )
    show_submitted_checklists = models.BooleanField(
        default=False,
        help_text="After submitting their own checklist, experts may read the others'.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]
        permissions = [
            ("annotate_dataset", "Write checklists in the dataset"),
            ("review_dataset", "Label and adjudicate in the dataset"),
        ]
        constraints = [models.UniqueConstraint(fields=["name"], name="dataset_name_unique")]

    def __str__(self) -> str:
        return self.name


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

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="queries")
    text = models.TextField()
    query_date = models.DateField(
        help_text="Every cited source must have been public on or before this date."
    )
    category = models.CharField(max_length=100, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.OPEN)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["dataset_id", "id"]
        verbose_name_plural = "queries"

    def __str__(self) -> str:
        return self.text[:80]


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
    submitted_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["query_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["query", "author"], name="one_checklist_per_expert")
        ]

    def __str__(self) -> str:
        return f"Checklist {self.pk} by {self.author_id} for query {self.query_id}"


class Criterion(models.Model):
    class Kind(models.TextChoices):
        METHODOLOGY = "methodology", "Methodology"
        FORMAT = "format", "Format"
        FACT = "fact", "Fact"

    checklist = models.ForeignKey(Checklist, on_delete=models.CASCADE, related_name="criteria")
    position = models.PositiveIntegerField()
    text = models.TextField()
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.FACT)

    class Meta:
        ordering = ["checklist_id", "position", "id"]
        verbose_name_plural = "criteria"

    def __str__(self) -> str:
        return self.text[:80]

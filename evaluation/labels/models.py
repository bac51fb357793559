from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.models import Criterion
from evaluation.answers.models import Answer


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

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.models import Dataset


class RunSchedule(models.Model):
    """A dataset's scheduled run (every night on a system's newest answers, say), set by its
    admins in a page. Beat's own PeriodicTask (django-celery-beat) says when and calls
    `evaluation.scheduled_run`; this row says whose it is, so that a dataset's admins see
    and change only their dataset's schedules. Deleting the task in the site administration
    deletes this row with it."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="run_schedules")
    task = models.OneToOneField(
        "django_celery_beat.PeriodicTask", on_delete=models.CASCADE, related_name="run_schedule"
    )
    name = models.CharField(max_length=120)
    system = models.ForeignKey("evaluation.System", on_delete=models.CASCADE, related_name="+")
    panel = models.ForeignKey("evaluation.Panel", on_delete=models.CASCADE, related_name="+")
    canary = models.BooleanField(
        "Judge canary",
        default=False,
        help_text="With each run, grade the dataset's labelled items again, past the cache, "
        "and warn when a judge agrees with the human labels less than last time.",
    )
    # The canary's size: a fixed sample of the labelled items (evaluation.runs.sampling,
    # the same items every night while the labels stay); blank, every labelled item.
    canary_items = models.PositiveIntegerField(
        "Canary items",
        null=True,
        blank=True,
        help_text="How many labelled items the canary grades: a fixed sample, the same "
        "every night. Blank: all of them.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "evaluation"
        constraints = [
            models.UniqueConstraint(
                fields=["dataset", "name"], name="one_schedule_name_per_dataset"
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.dataset})"

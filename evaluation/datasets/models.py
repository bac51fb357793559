"""Dataset exports made by a worker: what was asked, how far it got, where the file is.

Imported into evaluation.models (the app's model registry) so that Django and migrations
see it; it lives here, beside the code that writes it.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from annotation.models import Dataset


class DatasetExport(models.Model):
    """One export of a dataset run as a Celery job, and its download.

    The download URL carries `token` (unguessable) and the view checks, at download time,
    that the user still administers the dataset; a file past `expires_at` is gone.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for a worker"
        RUNNING = "running", "Writing"
        DONE = "done", "Ready"
        FAILED = "failed", "Failed"

    token = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="exports")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    include = models.JSONField(default=list, help_text="Optional tables asked for.")
    formats = models.JSONField(default=list)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    rows_total = models.PositiveBigIntegerField(default=0)
    rows_done = models.PositiveBigIntegerField(default=0)
    file_name = models.CharField(max_length=300, blank=True)
    size = models.PositiveBigIntegerField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"Export {self.pk} of dataset {self.dataset_id}: {self.status}"

    @property
    def progress(self) -> float:
        return min(1.0, self.rows_done / self.rows_total) if self.rows_total else 0.0

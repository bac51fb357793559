from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.models import Dataset


class RegressionAlert(models.Model):
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="alerts")
    system = models.ForeignKey(
        "evaluation.System",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        help_text="Empty: every system of the run.",
    )
    threshold = models.FloatField(
        default=0.05, help_text="Alert when the mean score drops by at least this much (0–1)."
    )
    emails = models.TextField(blank=True, help_text="Addresses to tell, one per line.")
    webhook_url = models.URLField(blank=True, help_text="Receives a JSON POST.")
    # The shared secret is never stored: this names the environment variable holding it on
    # the machines that run workers, as judges' API keys do.
    secret_env = models.CharField(
        "Secret variable",
        max_length=100,
        blank=True,
        help_text="Environment variable holding the HMAC-SHA256 secret for the webhook.",
    )
    active = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "evaluation"

    def __str__(self) -> str:
        return f"Alert on {self.dataset} (drop ≥ {self.threshold:g})"


class AlertEvent(models.Model):
    """One regression found: the run, the previous run it was compared with, the figures,
    and what was sent. Unique per alert, run and system, so a redelivered task never sends
    twice."""

    alert = models.ForeignKey(RegressionAlert, on_delete=models.CASCADE, related_name="events")
    run = models.ForeignKey("evaluation.Run", on_delete=models.CASCADE, related_name="+")
    previous = models.ForeignKey("evaluation.Run", on_delete=models.CASCADE, related_name="+")
    system = models.ForeignKey("evaluation.System", on_delete=models.CASCADE, related_name="+")
    before = models.FloatField()
    after = models.FloatField()
    difference = models.FloatField()
    sign_p = models.FloatField(null=True)
    bootstrap_p = models.FloatField(null=True)
    payload = models.JSONField()
    emailed = models.BooleanField(default=False)
    webhook_status = models.PositiveSmallIntegerField(null=True)
    webhook_error = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "evaluation"
        constraints = [
            models.UniqueConstraint(
                fields=["alert", "run", "system"], name="one_alert_event_per_run_system"
            )
        ]

    def __str__(self) -> str:
        return f"Run {self.run_id}: system {self.system_id} dropped {-self.difference:.3f}"

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
    and how its email and webhook went. Unique per alert, run and system, so a redelivered
    task never records it twice; each send is claimed in its state before it is made, so no
    delivery sends it twice either (evaluation/alerts/delivery.py)."""

    class Delivery(models.TextChoices):
        NONE = "", "not asked"  # no address, or no webhook
        PENDING = "pending", "queued"
        SENDING = "sending", "sending"
        RETRYING = "retrying", "waiting to try again"  # webhooks only
        DELIVERED = "delivered", "delivered"
        FAILED = "failed", "failed"

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
    # The email: tried once (SMTP errors are recorded, not retried).
    email_state = models.CharField(
        max_length=10, choices=Delivery.choices, blank=True, default=Delivery.NONE
    )
    email_error = models.CharField(max_length=300, blank=True)
    emailed_at = models.DateTimeField(null=True, blank=True)
    # The webhook: every attempt is counted and logged, the last one's HTTP status or error
    # kept apart; `webhook_retry_at` is when the next attempt is due while retrying.
    webhook_state = models.CharField(
        max_length=10, choices=Delivery.choices, blank=True, default=Delivery.NONE
    )
    webhook_attempts = models.PositiveSmallIntegerField(default=0)
    webhook_status = models.PositiveSmallIntegerField(null=True)
    webhook_error = models.CharField(max_length=300, blank=True)
    webhook_attempted_at = models.DateTimeField(null=True, blank=True)
    webhook_retry_at = models.DateTimeField(null=True, blank=True)
    webhook_delivered_at = models.DateTimeField(null=True, blank=True)
    # One {"at", "status", "error"} per attempt, oldest first.
    webhook_log = models.JSONField(default=list, blank=True)
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

"""Invitations to a dataset and personal API tokens. Neither row holds its key: only the
key's SHA-256 (accounts.keys), so a copy of the database opens nothing."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone

from annotation.roles import DatasetRole

ROLE_CHOICES = [(role.value, role.value.title()) for role in DatasetRole]


class Invitation(models.Model):
    """An email address invited to a dataset with a role. The link holds the key; the row
    holds its digest. Usable once, until `expires_at`, unless revoked."""

    dataset = models.ForeignKey(
        "annotation.Dataset", on_delete=models.CASCADE, related_name="invitations"
    )
    email = models.EmailField()
    role = models.CharField(max_length=20, choices=ROLE_CHOICES)
    key_digest = models.CharField(max_length=64, unique=True)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    # Fixed when sent, from INVITATION_EXPIRY_DAYS: the email states the date, and changing
    # the setting later must not shorten or stretch links already out.
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            # Inviting an address again replaces its open invitation (accounts.services).
            models.UniqueConstraint(
                Lower("email"),
                "dataset",
                condition=models.Q(accepted_at__isnull=True, revoked_at__isnull=True),
                name="one_open_invitation_per_address",
            )
        ]

    def __str__(self) -> str:
        return f"{self.email} as {self.role}"

    @property
    def is_expired(self) -> bool:
        return timezone.now() >= self.expires_at


class ApiToken(models.Model):
    """A personal API key: sent as `Authorization: Token <key>`, shown once when made.

    It reaches what its person may reach, narrowed by its scope, by `datasets` when any are
    chosen (none: every dataset the person is a member of) and by `expires_at` when set.
    accounts.authentication enforces all three on every request."""

    class Scope(models.TextChoices):
        READ = "read", "Read only"
        WRITE = "write", "Read and write"
        # For RL trainers: the reward endpoints (/api/rewards/) of its datasets, and nothing
        # else; made by a dataset admin for chosen datasets (accounts.services.tokens).
        REWARDS = "rewards", "Rewards only"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    scope = models.CharField(max_length=10, choices=Scope.choices, default=Scope.READ)
    prefix = models.CharField(max_length=16, help_text="The key's first characters, in clear.")
    key_digest = models.CharField(max_length=64, unique=True)
    datasets = models.ManyToManyField(
        "annotation.Dataset",
        blank=True,
        related_name="+",
        help_text="The datasets it is limited to; none: every dataset of its person.",
    )
    expires_at = models.DateTimeField(
        null=True, blank=True, help_text="When it stops working; empty: never."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Moved at most once a minute (accounts.authentication): not a write per request.
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["user", "name"], name="token_names_unique_per_user")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def read_only(self) -> bool:
        return self.scope == self.Scope.READ

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and timezone.now() >= self.expires_at

"""What reward traffic leaves behind: one compact row per request (RewardBatch), the full
verdicts of a sampled share of items for audit (RewardAudit), and the reward cache
(RewardVerdict). Reward calls never write to the verdicts table: a training loop asks for
millions of rewards, and runs' tables, pages and figures must not carry them."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.models import Dataset, Query


class RewardBatch(models.Model):
    """One reward request: who, when, what it cost. Written before the calls (the quota
    counts its items from then on) and completed after them; `latency_ms` stays empty when
    the request died on the way."""

    class Shape(models.TextChoices):
        NATIVE = "native", "Native"
        OPENRLHF = "openrlhf", "OpenRLHF"
        VERIFY = "verify", "NeMo-Gym verify"

    created_at = models.DateTimeField(auto_now_add=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The personal API token used, by id (accounts.ApiToken): kept as a number so that the
    # quota and the history outlive a revoked token. Empty for a session or an older token.
    token_id = models.PositiveBigIntegerField(null=True, blank=True)
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="reward_batches")
    panel = models.ForeignKey(
        "evaluation.Panel", null=True, on_delete=models.SET_NULL, related_name="reward_batches"
    )
    shape = models.CharField(max_length=10, choices=Shape.choices, default=Shape.NATIVE)
    items = models.PositiveIntegerField()
    failed_items = models.PositiveIntegerField(default=0)
    calls = models.PositiveIntegerField(default=0, help_text="Judge calls made.")
    cache_hits = models.PositiveIntegerField(
        default=0, help_text="Votes answered by a cache, without a call."
    )
    checks = models.PositiveIntegerField(default=0, help_text="Votes of no-LLM checks (free).")
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    # Empty when an LLM judge of the panel has no price (evaluation.metrics.cost).
    cost = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        app_label = "evaluation"
        ordering = ["-created_at", "-pk"]
        indexes = [
            models.Index(fields=["token_id", "created_at"], name="rewardbatch_token_time"),
            models.Index(fields=["user", "created_at"], name="rewardbatch_user_time"),
            models.Index(fields=["dataset", "created_at"], name="rewardbatch_dataset_time"),
        ]

    def __str__(self) -> str:
        return f"{self.items} rewards on dataset {self.dataset_id} at {self.created_at:%H:%M:%S}"


class RewardAudit(models.Model):
    """One sampled item of a batch with its every vote (REWARDS_AUDIT_SAMPLE)."""

    batch = models.ForeignKey(RewardBatch, on_delete=models.CASCADE, related_name="audits")
    item = models.PositiveIntegerField(help_text="The item's index in its request.")
    query = models.ForeignKey(Query, null=True, on_delete=models.SET_NULL, related_name="+")
    completion = models.TextField()
    reward = models.FloatField(null=True, blank=True)
    failed = models.BooleanField(default=False)
    # [{"criterion", "outcome", "votes": [{"judge", "sample", "outcome", "rationale",
    #   "source", "prompt_version"}]}], source being "call", "cache", "check" or "refused"
    #   (a criterion judged against a reference the query lacks); prompt_version, for the
    #   votes of LLM judges, the version of the prompt (the dataset's pinned tuning).
    verdicts = models.JSONField(default=list)

    class Meta:
        app_label = "evaluation"
        ordering = ["batch_id", "item"]

    def __str__(self) -> str:
        return f"Item {self.item} of reward batch {self.batch_id}"


class RewardVerdict(models.Model):
    """The reward cache: a decided vote by its cache key (evaluation.judging.prompts), kept
    compact (no raw output, no tokens). A training loop that samples the same completion
    again gets its votes from here without a call."""

    cache_key = models.CharField(max_length=64, unique=True)
    outcome = models.CharField(max_length=10)  # pass or fail: nothing else is cached
    failure_kind = models.CharField(max_length=20, blank=True)
    rationale = models.TextField(blank=True)
    made_at = models.DateTimeField()

    class Meta:
        app_label = "evaluation"
        indexes = [models.Index(fields=["made_at"], name="rewardverdict_made_at")]

    def __str__(self) -> str:
        return f"{self.outcome} ({self.cache_key[:12]})"

"""A pairwise session, its pairs and the votes on them.

A session compares two *sides* of one dataset: a side is a system and a run label (two
systems, or two runs of one system when the labels differ). Each query with an answer from
both sides is a pair. Sides are called A and B in the database and never on the reviewer's
page: there the pair is "Answer 1 / Answer 2", and `PairwiseVote.first_is_a` records which
side was shown first to that reviewer, so a vote can always be read back as a preference
for A, B or neither.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.models import Dataset, Query
from evaluation.answers.models import Answer, System
from evaluation.judges.models import Judge


class Preference(models.TextChoices):
    A = "a", "A is better"
    B = "b", "B is better"
    TIE = "tie", "Tie"


class PairwiseSession(models.Model):
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="pairwise_sessions")
    name = models.CharField(max_length=200)
    system_a = models.ForeignKey(System, on_delete=models.PROTECT, related_name="+")
    run_label_a = models.CharField(max_length=100, blank=True)
    system_b = models.ForeignKey(System, on_delete=models.PROTECT, related_name="+")
    run_label_b = models.CharField(max_length=100, blank=True)
    reviewers_per_pair = models.PositiveSmallIntegerField(
        default=3, help_text="How many reviewers should vote on each pair."
    )
    show_checklist = models.BooleanField(
        default=False, help_text="Show the query's submitted checklists beside the answers."
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(
                    system_a=models.F("system_b"), run_label_a=models.F("run_label_b")
                ),
                name="pairwise_session_two_sides",
            ),
            models.CheckConstraint(
                condition=models.Q(reviewers_per_pair__gte=1, reviewers_per_pair__lte=50),
                name="pairwise_session_reviewers_range",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class PairwisePair(models.Model):
    """Two answers to one query, A's and B's."""

    session = models.ForeignKey(PairwiseSession, on_delete=models.CASCADE, related_name="pairs")
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="+")
    answer_a = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="+")
    answer_b = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="+")

    class Meta:
        ordering = ["session_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["session", "query"], name="one_pair_per_session_query")
        ]

    def __str__(self) -> str:
        return f"pair {self.pk} of session {self.session_id}"


class PairwiseVote(models.Model):
    """One rater's vote on one pair. The row is made when the pair is first shown to a
    reviewer (its position is drawn then and kept, so a reload shows the same order) and
    `preference` is empty until they vote; undo empties it again.

    `rater` is who voted, as agreement statistics group it: the reviewer's username in the
    app, the name given in the file for imported votes. `first_is_a` is null for imported
    votes, whose position is unknown.
    """

    class Source(models.TextChoices):
        APP = "app", "Voted in the app"
        IMPORT = "import", "Imported"

    pair = models.ForeignKey(PairwisePair, on_delete=models.CASCADE, related_name="votes")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    rater = models.CharField(max_length=150)
    first_is_a = models.BooleanField(null=True)
    preference = models.CharField(max_length=3, choices=Preference.choices, blank=True)
    reason = models.TextField(blank=True)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.APP)
    shown_at = models.DateTimeField(auto_now_add=True)
    voted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["pair_id", "rater"]
        constraints = [
            models.UniqueConstraint(fields=["pair", "rater"], name="one_pairwise_vote_per_rater"),
        ]
        indexes = [models.Index(fields=["reviewer", "voted_at"])]

    def __str__(self) -> str:
        return f"{self.preference or 'open'} by {self.rater} on pair {self.pair_id}"


class PairwiseJudgeVote(models.Model):
    """One judge's reply on one pair, for one sample in one order ("ab": A's answer shown
    as Answer 1). `preference` is the reply read back as a side; empty when the output did
    not parse or the call failed (`outcome` says which), never counted as a preference.
    Traceable like a verdict: the call's parameters, raw output, tokens and latency."""

    class Outcome(models.TextChoices):
        VOTED = "voted", "Voted"
        UNPARSEABLE = "unparseable", "Unparseable"
        ERROR = "error", "Error"

    pair = models.ForeignKey(PairwisePair, on_delete=models.CASCADE, related_name="judge_votes")
    judge = models.ForeignKey(Judge, on_delete=models.PROTECT, related_name="+")
    sample = models.PositiveSmallIntegerField(default=0)
    order = models.CharField(max_length=2, choices=[("ab", "A first"), ("ba", "B first")])
    outcome = models.CharField(max_length=12, choices=Outcome.choices)
    preference = models.CharField(max_length=3, choices=Preference.choices, blank=True)
    rationale = models.TextField(blank=True)
    raw_output = models.TextField(blank=True)
    error_kind = models.CharField(max_length=40, blank=True)
    error = models.TextField(blank=True)
    cache_key = models.CharField(max_length=64, db_index=True)
    prompt_version = models.CharField(max_length=200, blank=True)
    judge_params = models.JSONField(default=dict, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    latency_ms = models.PositiveIntegerField(default=0)
    attempts = models.PositiveSmallIntegerField(default=0)
    cache_hit = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["pair_id", "judge_id", "sample", "order"]
        constraints = [
            models.UniqueConstraint(
                fields=["pair", "judge", "sample", "order"], name="one_pairwise_judge_reply"
            )
        ]

    def __str__(self) -> str:
        return f"{self.preference or self.outcome} by judge {self.judge_id} on pair {self.pair_id}"

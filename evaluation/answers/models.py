"""The systems whose answers are graded, and their answers (one per system, query, run label and
sample index).

Imported into evaluation.models (the app's model registry) so that Django and migrations see
them; they sit below runs, review and kept, which all point at an answer.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.models import Checklist, Query


class System(models.Model):
    """A question-answering system whose answers are graded."""

    name = models.CharField(max_length=200)
    version = models.CharField(max_length=100, blank=True)
    description = models.TextField(blank=True)
    is_reference = models.BooleanField(
        default=False,
        help_text="Holds perfect answers written for checklists (cross-evaluation); never "
        "graded as a system.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "version"]
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="system_name_version_unique")
        ]

    def __str__(self) -> str:
        return f"{self.name} {self.version}".strip()


class Answer(models.Model):
    system = models.ForeignKey(System, on_delete=models.PROTECT, related_name="answers")
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="answers")
    text = models.TextField(help_text="Markdown.")
    external_id = models.CharField(max_length=200, blank=True)
    run_label = models.CharField(max_length=100, blank=True)
    # Several answers of one system to one query (an agent asked k times) are samples
    # 0..k-1 of the same run label: pass^k and worst-of-k are read across them
    # (evaluation.metrics.reliability). A system answering once has sample 0.
    sample = models.PositiveSmallIntegerField(
        default=0, help_text="The answer's sample index among the system's answers to the query."
    )
    # Set on perfect answers only (cross-evaluation): the checklist whose criteria the answer
    # was written to satisfy, and who or what wrote it.
    checklist = models.OneToOneField(
        Checklist,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="perfect_answer",
        help_text="For a perfect answer: the checklist it satisfies.",
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The person who wrote or last edited the answer in the app.",
    )
    drafted_by = models.ForeignKey(
        "Judge",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The LLM that drafted it, if one did.",
    )
    draft_prompt_version = models.CharField(max_length=40, blank=True)
    # An agent's answer: the conversation that led to `text` (turns with tool calls and
    # tool results), the passages it retrieved and what it reports about itself. Checked
    # and bounded by evaluation.answers.agent_fields; empty for a plain answer.
    turns = models.JSONField(default=list, blank=True)
    context = models.JSONField(default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["query_id", "system_id", "id"]
        indexes = [
            # The Answers page's counts per system and run label, its count and its id
            # order, read from this index alone (the rows hold long texts and trajectories).
            models.Index(
                fields=["query", "system", "run_label", "id"],
                condition=models.Q(checklist__isnull=True),
                name="answer_systems_listing",
            )
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["system", "query", "run_label", "sample"],
                name="answer_per_system_query_run_sample",
            )
        ]

    def __str__(self) -> str:
        return f"{self.system} on query {self.query_id}"

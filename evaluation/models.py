"""Systems and their answers. The judging issue adds judges, panels, runs and verdicts."""

from __future__ import annotations

from django.db import models

from annotation.models import Query


class System(models.Model):
    """A question-answering system whose answers are graded."""

    name = models.CharField(max_length=200)
    version = models.CharField(max_length=100, blank=True)
    description = models.TextField(blank=True)
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
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["query_id", "system_id", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["system", "query", "run_label"], name="answer_per_system_query_run"
            )
        ]

    def __str__(self) -> str:
        return f"{self.system} on query {self.query_id}"

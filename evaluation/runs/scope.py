"""What a run covers: its answers and, per query, the criteria that are graded."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from django.db.models import QuerySet

from annotation.models import Checklist, Criterion
from evaluation.models import Answer, Run


def run_answers(run: Run) -> QuerySet[Answer]:
    answers = Answer.objects.filter(query__dataset=run.dataset_id)
    if run.kind == Run.Kind.CROSS_EVALUATION:
        answers = answers.filter(checklist__isnull=False)
    else:  # perfect answers are never graded as a system's
        answers = answers.filter(system__is_reference=False)
    query_ids = list(run.queries.values_list("pk", flat=True))
    if query_ids:
        answers = answers.filter(query__in=query_ids)
    system_ids = list(run.systems.values_list("pk", flat=True))
    if system_ids:
        answers = answers.filter(system__in=system_ids)
    if run.answer_run_label:
        answers = answers.filter(run_label=run.answer_run_label)
    return answers.order_by("pk")


def scored_criteria() -> QuerySet[Criterion]:
    """Criteria that runs grade: enabled, not archived, in submitted checklists."""
    return Criterion.objects.active().filter(
        checklist__status=Checklist.Status.SUBMITTED, scoring_enabled=True
    )


def criteria_of(query_ids: Sequence[int]) -> dict[int, list[Criterion]]:
    """The scored criteria of each query: those of its submitted checklists."""
    criteria = scored_criteria().filter(checklist__query__in=query_ids)
    by_query: dict[int, list[Criterion]] = defaultdict(list)
    for criterion in criteria.select_related("checklist").order_by("checklist_id", "position"):
        by_query[criterion.checklist.query_id].append(criterion)
    return by_query

"""What a run covers: its answers and, per query, the criteria that are graded.

A run's scope is "all" (every scored criterion of every matching answer), "labelled" (a
trial, issue 25): only the (answer, criterion) items that carry a human label or an
adjudication; an answer with no such item is not graded at all, or "listed": only the items
listed for the run in RunItem when it was created (a stability pass's sample, a judge
canary's sample of the labelled items: evaluation.runs.sampling). Deterministic checks
decide their criteria as usual in all three.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import Exists, F, OuterRef, QuerySet

from annotation.models import Checklist, Criterion
from evaluation.answers.models import Answer
from evaluation.labels.models import Adjudication, HumanLabel
from evaluation.runs.models import Run, RunItem


@dataclass(frozen=True)
class Selection:
    """Which answers a run grades, as its fields say: read from a run, or from a start
    request before any run exists (the cost estimate, evaluation.runs.estimate)."""

    dataset_id: int
    kind: str = Run.Kind.SYSTEMS
    query_ids: tuple[int, ...] = ()
    system_ids: tuple[int, ...] = ()
    answer_run_label: str = ""
    scope: str = Run.Scope.ALL
    run_id: int | None = None  # a run of scope "listed": whose RunItem rows

    @classmethod
    def of(cls, run: Run) -> Selection:
        return cls(
            dataset_id=run.dataset_id,
            kind=run.kind,
            query_ids=tuple(run.queries.values_list("pk", flat=True)),
            system_ids=tuple(run.systems.values_list("pk", flat=True)),
            answer_run_label=run.answer_run_label,
            scope=run.scope,
            run_id=run.pk,
        )

    @property
    def labelled(self) -> bool:
        return self.scope == Run.Scope.LABELLED

    @property
    def listed(self) -> bool:
        return self.scope == Run.Scope.LISTED


def run_answers(run: Run) -> QuerySet[Answer]:
    return answers_of(Selection.of(run))


def answers_of(selection: Selection) -> QuerySet[Answer]:
    answers = Answer.objects.filter(query__dataset=selection.dataset_id)
    if selection.kind == Run.Kind.CROSS_EVALUATION:
        answers = answers.filter(checklist__isnull=False)
    else:  # perfect answers are never graded as a system's
        answers = answers.filter(system__is_reference=False)
    if selection.query_ids:
        answers = answers.filter(query__in=selection.query_ids)
    if selection.system_ids:
        answers = answers.filter(system__in=selection.system_ids)
    if selection.answer_run_label:
        answers = answers.filter(run_label=selection.answer_run_label)
    if selection.listed:
        answers = answers.filter(
            pk__in=RunItem.objects.filter(run=selection.run_id).values("answer_id")
        )
    if selection.labelled:
        answer = OuterRef("pk")
        answers = answers.filter(
            Exists(_on_scored_criteria(HumanLabel.objects.filter(answer=answer)))
            | Exists(_on_scored_criteria(Adjudication.objects.filter(answer=answer)))
        )
    return answers.order_by("pk")


def _on_scored_criteria(rows: QuerySet) -> QuerySet:
    """Labels or adjudications on a scored criterion of their answer's own query."""
    return rows.filter(
        criterion__in=scored_criteria(), criterion__checklist__query=F("answer__query")
    )


def labelled_items(selection: Selection) -> set[tuple[int, int]]:
    """The (answer id, criterion id) items of the selection's answers that carry a human
    label or an adjudication, on scored criteria. Two queries; as many rows as items,
    which people labelled one by one, so a trial's set stays within what Python holds."""
    answers = answers_of(selection).values("pk")
    items: set[tuple[int, int]] = set()
    for model in (HumanLabel, Adjudication):
        rows = _on_scored_criteria(model.objects.filter(answer__in=answers))
        items.update(rows.values_list("answer_id", "criterion_id").distinct().order_by())
    return items


def listed_items(run_id: int) -> set[tuple[int, int]]:
    """The (answer id, criterion id) items listed for a run of scope "listed" (one query)."""
    return set(RunItem.objects.filter(run=run_id).values_list("answer_id", "criterion_id"))


def items_of(selection: Selection) -> set[tuple[int, int]] | None:
    """The items a run of scope "labelled" or "listed" grades; None for scope "all" (every
    scored criterion of its answers, counted per query instead)."""
    if selection.listed:
        return listed_items(selection.run_id) if selection.run_id is not None else set()
    if selection.labelled:
        return labelled_items(selection)
    return None


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


def answer_criteria(run: Run, answer: Answer) -> list[Criterion]:
    """The criteria the run grades on this answer: its query's scored criteria, and in a
    labelled run only those the answer has a label or an adjudication on."""
    criteria = criteria_of([answer.query_id]).get(answer.query_id, [])
    if run.scope == Run.Scope.LISTED:
        listed = set(
            RunItem.objects.filter(run=run, answer=answer).values_list("criterion_id", flat=True)
        )
        return [c for c in criteria if c.pk in listed]
    if run.scope != Run.Scope.LABELLED:
        return criteria
    labelled = set(
        HumanLabel.objects.filter(answer=answer).values_list("criterion_id", flat=True)
    ) | set(Adjudication.objects.filter(answer=answer).values_list("criterion_id", flat=True))
    return [c for c in criteria if c.pk in labelled]

"""The test data every concept builds on: a query with one submitted checklist (and answers),
and a finished run holding exactly the votes a test spells out. The scenarios of each
concept (tests/evaluation/<concept>/) are made of these."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.utils import timezone

from annotation.models import Checklist, Criterion, Dataset, Query
from evaluation.answers.models import Answer
from evaluation.judges.models import Panel
from evaluation.kept.events import answer_item, bump
from evaluation.labels.models import HumanLabel
from evaluation.runs import snapshot
from evaluation.runs.models import Run, Verdict
from tests.factories import AnswerFactory, QueryFactory, UserFactory


@dataclass(frozen=True)
class Checklisted:
    query: Query
    checklist: Checklist
    criteria: list[Criterion]  # in position order
    answers: list[Answer]


def checklisted_query(
    dataset: Dataset | None = None,
    *,
    criteria: int | Sequence[str | tuple[str, str]],
    answers: int = 0,
    author=None,
    query: Query | None = None,
    first_position: int = 1,
    timestamps: bool = True,
    save_each: bool = False,
    **query_fields,
) -> Checklisted:
    """A query of `dataset` (or `query`, already made) with one submitted checklist.

    - criteria: how many ("States figure {i} of the query.", of the model's default kind), or
      their texts, or (text, kind) pairs; at positions from `first_position` on.
    - answers: how many, each by a system of its own ("Answer {n}: revenue was ...").
    - author: the checklist's author; by default a user "checklist-author".
    - timestamps: stamp `submitted_at` and `first_submitted_at` as submitting does; without
      them the checklist is submitted with neither, as an imported one can be.
    - save_each: save the criteria one by one (history rows, revision signals), as the
      editor does, instead of in one insert.
    - query_fields: QueryFactory's fields for a new query (text, category, reference_answer).
    """
    if query is None:
        query = QueryFactory(dataset=dataset, **query_fields)
    now = timezone.now() if timestamps else None
    checklist = Checklist.objects.create(
        query=query,
        author=author or UserFactory(username="checklist-author"),
        status=Checklist.Status.SUBMITTED,
        submitted_at=now,
        first_submitted_at=now,
    )
    if isinstance(criteria, int):
        criteria = [f"States figure {i} of the query." for i in range(criteria)]
    rows = []
    for n, spec in enumerate(criteria):
        text, kind = spec if isinstance(spec, tuple) else (spec, None)
        fields = {"kind": kind} if kind else {}
        rows.append(
            Criterion(checklist=checklist, position=first_position + n, text=text, **fields)
        )
    if save_each:
        for row in rows:
            row.save()
    else:
        rows = Criterion.objects.bulk_create(rows)
    made = [
        AnswerFactory(query=query, text=f"Answer {n}: revenue was **$4.{n} billion**.")
        for n in range(answers)
    ]
    return Checklisted(query, checklist, rows, made)


def finished_run(
    dataset,
    panel: Panel,
    votes: dict[tuple[Answer, Criterion], Sequence[str]],
    *,
    status: str = Run.Status.DONE,
) -> Run:
    """A run holding exactly these votes: one outcome per panel judge, in member order."""
    run = Run.objects.create(
        dataset=dataset, panel=panel, status=status, kind=Run.Kind.IMPORTED,
        finished_at=timezone.now() if status == Run.Status.DONE else None,
        snapshot=snapshot.take(panel),
    )  # fmt: skip
    judges = [m.judge for m in panel.members.select_related("judge").order_by("pk")]
    Verdict.objects.bulk_create(
        Verdict(
            run=run, answer=answer, criterion=criterion, judge=judges[i], outcome=outcome,
            rationale=f"{judges[i].name} says {outcome}.", cache_key=f"{run.pk}-{i}",
        )
        for (answer, criterion), outcomes in votes.items()
        for i, outcome in enumerate(outcomes)
    )  # fmt: skip
    run.expected = sum(len(o) for o in votes.values())
    run.save(update_fields=["expected"])
    return run


def human_label(answer, criterion, rater: str, value: str) -> HumanLabel:
    """A reviewer's label, written directly (as an import would): no review service, but
    the kept figures are told, as an import tells them (`written`)."""
    label = HumanLabel.objects.create(answer=answer, criterion=criterion, rater=rater, label=value)
    written(answer.pk)
    return label


def written(answer_id: int, *, adjudication: bool = False) -> None:
    """A test wrote a label (or an adjudication) of the answer straight to the database:
    say so, as the review services do (evaluation.kept.events), so that kept figures move."""
    bump(*answer_item(answer_id, adjudication=adjudication))

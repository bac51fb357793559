"""Review workloads with known votes: a query with a submitted checklist, answers, a panel
of external judges and finished runs whose verdicts the test spells out."""

from __future__ import annotations

from collections.abc import Sequence

from django.utils import timezone

from annotation.models import Checklist, Criterion
from evaluation.models import Answer, Judge, Panel, PanelMember, Run, Verdict
from evaluation.runs import snapshot
from tests.factories import AnswerFactory, QueryFactory, UserFactory


def panel_of(judges: int = 3, method: str = "majority") -> Panel:
    number = Panel.objects.count() + 1
    panel = Panel.objects.create(
        name=f"Review panel {number} of {judges} ({method})", method=method
    )
    for j in range(judges):
        judge, _ = Judge.objects.get_or_create(
            name=f"Reviewed judge {j}", defaults={"kind": Judge.Kind.EXTERNAL}
        )
        PanelMember.objects.create(panel=panel, judge=judge)
    return panel


def checklist_query(dataset, *, criteria: int, author=None, answers: int = 1):
    """A query with one submitted checklist of `criteria` criteria and `answers` answers."""
    author = author or UserFactory(username="review-author")
    query = QueryFactory(dataset=dataset)
    checklist = Checklist.objects.create(
        query=query, author=author, status=Checklist.Status.SUBMITTED,
        first_submitted_at=timezone.now(), submitted_at=timezone.now(),
    )  # fmt: skip
    Criterion.objects.bulk_create(
        Criterion(checklist=checklist, position=i + 1, text=f"States figure {i} of the query.")
        for i in range(criteria)
    )
    made = [
        AnswerFactory(query=query, text=f"Answer {n}: revenue was **$4.{n} billion**.")
        for n in range(answers)
    ]
    return query, list(checklist.criteria.order_by("position")), made


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

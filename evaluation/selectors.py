"""Reads of the evaluation app."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Q

from annotation.models import Criterion
from evaluation import scores
from evaluation.judging.formality import text_hash
from evaluation.metrics.aggregation import CriterionVerdict, Vote, aggregate
from evaluation.models import Answer, FormalityAdvice, Run, Verdict


def current_advice(criterion: Criterion) -> FormalityAdvice | None:
    """The formality advice on the criterion's present wording, if any.

    Reads `criterion.formality_advice.all()`: prefetch it when listing criteria.
    """
    wording = text_hash(criterion.text)
    return next((a for a in criterion.formality_advice.all() if a.text_hash == wording), None)


@dataclass(frozen=True)
class AnswerResult:
    answer_id: int
    query_id: int
    system: str
    score: float | None  # mean over the query's checklists of the share of criteria passed
    weighted: float | None
    core: float | None
    undecided: int
    split: int  # criteria on which the judges' valid votes disagreed


def run_scores(run: Run) -> list[AnswerResult]:
    """Per answer: the panel's verdict per criterion (an adjudication, where present, decides
    it instead), the share per checklist, averaged over the query's checklists. The full
    report, with per-checklist scores, pass/fail and graded means, is scores.run_report."""
    return [
        AnswerResult(
            answer_id=r.answer_id,
            query_id=r.query_id,
            system=r.system_name,
            score=r.score,
            weighted=r.weighted,
            core=r.core,
            undecided=r.undecided,
            split=r.split,
        )
        for r in scores.run_report(run).answers
        if r.checklists  # answers with verdicts; graded-only rows are in the full report
    ]


@dataclass(frozen=True)
class CriterionVotes:
    criterion: Criterion
    votes: list[Verdict]
    verdict: CriterionVerdict


def answer_verdicts(run: Run, answer: Answer) -> list[tuple[str, list[CriterionVotes]]]:
    """Per checklist (by author), each criterion with its votes in this run and the panel's
    verdict. Two queries: the criteria, and the votes with their judges."""
    # The checklist as it stands, plus any archived criterion this run judged (a run keeps
    # what it was started with: its verdicts on an old wording stay visible).
    criteria = (
        Criterion.objects.filter(
            Q(archived_at__isnull=True) | Q(verdicts__run=run),
            checklist__query=answer.query_id,
            checklist__status="submitted",
            scoring_enabled=True,
        )
        .distinct()
        .select_related("checklist__author")
        .order_by("checklist_id", "position", "id")
    )
    votes: dict[int, list[Verdict]] = defaultdict(list)
    for verdict in (
        Verdict.objects.filter(run=run, answer=answer)
        .select_related("judge")
        .order_by("judge__name", "sample")
    ):
        votes[verdict.criterion_id].append(verdict)
    by_checklist: dict[str, list[CriterionVotes]] = {}
    for criterion in criteria:
        own = votes.get(criterion.pk, [])
        verdict = aggregate(
            [Vote(str(v.judge_id), v.sample, v.outcome) for v in own],
            run.panel.method,
            threshold=run.panel.threshold,
        )
        author = criterion.checklist.author.get_username()
        by_checklist.setdefault(author, []).append(CriterionVotes(criterion, own, verdict))
    return list(by_checklist.items())

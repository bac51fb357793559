"""Reads of the evaluation app."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from annotation.models import Criterion
from evaluation.judging.formality import text_hash
from evaluation.metrics.aggregation import CriterionVerdict, Vote, aggregate
from evaluation.metrics.scoring import AnswerScore, ScoredCriterion, mean_score, score_answer
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
    """Aggregate a run's votes per criterion (its panel's method), then score each answer:
    the share per checklist, averaged over the query's checklists. Three queries in all."""
    votes: dict[tuple[int, int], list[Vote]] = defaultdict(list)
    rows = Verdict.objects.filter(run=run).values_list(
        "answer_id", "criterion_id", "judge_id", "sample", "outcome"
    )
    for answer_id, criterion_id, judge_id, sample, outcome in rows:
        votes[answer_id, criterion_id].append(Vote(str(judge_id), sample, outcome))
    criteria = {
        c["pk"]: c
        for c in Criterion.objects.filter(pk__in={c for _, c in votes}).values(
            "pk", "checklist_id", "weight", "is_core", "scoring_enabled"
        )
    }
    answers = Answer.objects.filter(pk__in={a for a, _ in votes}).values_list(
        "pk", "query_id", "system__name"
    )
    per_checklist: dict[tuple[int, int], list[ScoredCriterion]] = defaultdict(list)
    splits: dict[int, int] = defaultdict(int)
    for (answer_id, criterion_id), answer_votes in votes.items():
        verdict = aggregate(answer_votes, run.panel.method, threshold=run.panel.threshold)
        splits[answer_id] += verdict.split
        info = criteria[criterion_id]
        per_checklist[answer_id, info["checklist_id"]].append(
            ScoredCriterion(
                key=str(criterion_id),
                outcome=verdict.outcome,
                weight=info["weight"],
                core=info["is_core"],
                enabled=info["scoring_enabled"],
            )
        )
    scores: dict[int, list[AnswerScore]] = defaultdict(list)
    for (answer_id, _checklist), scored in per_checklist.items():
        scores[answer_id].append(score_answer(scored))
    return [
        AnswerResult(
            answer_id=pk,
            query_id=query_id,
            system=system,
            score=mean_score(scores[pk]),
            weighted=mean_score(scores[pk], "weighted_share"),
            core=mean_score(scores[pk], "core_share"),
            undecided=sum(s.undecided for s in scores[pk]),
            split=splits[pk],
        )
        for pk, query_id, system in answers.order_by("query_id", "system__name")
    ]


@dataclass(frozen=True)
class CriterionVotes:
    criterion: Criterion
    votes: list[Verdict]
    verdict: CriterionVerdict


def answer_verdicts(run: Run, answer: Answer) -> list[tuple[str, list[CriterionVotes]]]:
    """Per checklist (by author), each criterion with its votes in this run and the panel's
    verdict. Two queries: the criteria, and the votes with their judges."""
    criteria = (
        Criterion.objects.filter(
            checklist__query=answer.query_id,
            checklist__status="submitted",
            scoring_enabled=True,
        )
        .select_related("checklist__author")
        .order_by("checklist_id", "position")
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

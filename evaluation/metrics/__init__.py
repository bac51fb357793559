"""Scores and vote aggregation: pure Python, no Django, tested without a database.

    from evaluation.metrics import Method, Vote, aggregate, score_answer, ScoredCriterion
    verdict = aggregate([Vote("gpt", 0, "pass"), Vote("claude", 0, "unparseable")], Method.MAJORITY)
    score = score_answer([ScoredCriterion("c1", verdict.outcome)])

See docs/metrics.md for every formula.
"""

from __future__ import annotations

from evaluation.metrics.aggregation import (
    INVALID_OUTCOMES,
    OUTCOMES,
    CriterionVerdict,
    Method,
    Outcome,
    Vote,
    aggregate,
)
from evaluation.metrics.scoring import (
    SCORE_ATTRIBUTES,
    AnswerScore,
    ScoredCriterion,
    mean_grade,
    mean_score,
    passes_threshold,
    score_answer,
)

__all__ = [
    "INVALID_OUTCOMES",
    "OUTCOMES",
    "SCORE_ATTRIBUTES",
    "AnswerScore",
    "CriterionVerdict",
    "Method",
    "Outcome",
    "ScoredCriterion",
    "Vote",
    "aggregate",
    "mean_grade",
    "mean_score",
    "passes_threshold",
    "score_answer",
]

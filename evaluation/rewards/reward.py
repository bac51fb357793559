"""From a completion's votes to its reward. Plain Python; see docs/rewards.md#the-reward.

Per criterion, the panel's votes become one verdict (evaluation.metrics.aggregation, with
the panel's method); per checklist, the verdicts become a score under the dataset's scoring
strategy (evaluation.metrics.scoring); the completion's score is the plain mean over the
query's submitted checklists, each counting once whatever its length, as a run scores an
answer. Undecided criteria leave every denominator and are counted.

A vote whose call failed (an error, or an output still unparseable after the retries) makes
the whole completion *failed*: its score is None, never a number made up from the votes
that did come back, so a flaky judge cannot teach a policy anything.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from evaluation.metrics.aggregation import INVALID_OUTCOMES, Vote, aggregate
from evaluation.metrics.scoring import AnswerScore, ScoredCriterion, score_answer

# A scoring strategy turns one checklist's AnswerScore into its score. Issue 23's strategies
# (aspects, trees, points with penalties) plug in here by name.
Strategy = Callable[[AnswerScore], float | None]
STRATEGIES: dict[str, Strategy] = {
    "share": lambda score: score.share,
    "weighted_share": lambda score: score.weighted_share,
    "core_share": lambda score: score.core_share,
}
DEFAULT_STRATEGY = "share"


def strategy_named(name: str) -> Strategy:
    try:
        return STRATEGIES[name]
    except KeyError:
        known = sorted(STRATEGIES)
        raise ValueError(f"unknown scoring strategy {name!r}; known: {known}") from None


@dataclass(frozen=True)
class CastVote:
    """One vote with what the judge (or the check) said: its rationale, or the error."""

    vote: Vote
    rationale: str = ""


@dataclass(frozen=True)
class CriterionVotes:
    criterion_id: int
    checklist_id: int
    text: str
    votes: tuple[CastVote, ...]
    weight: float | Decimal = 1.0
    core: bool = True


@dataclass(frozen=True)
class CriterionResult:
    criterion_id: int
    text: str
    outcome: str  # pass, fail, undecided
    rationale: str
    invalid: int  # votes whose call failed


@dataclass(frozen=True)
class ItemReward:
    score: float | None  # None when failed or when nothing was decided
    failed: bool
    undecided: int
    criteria: tuple[CriterionResult, ...]


def item_reward(
    criteria: Sequence[CriterionVotes], *, method: str, threshold: float, strategy: Strategy
) -> ItemReward:
    results: list[CriterionResult] = []
    by_checklist: dict[int, list[ScoredCriterion]] = defaultdict(list)
    failed = False
    for criterion in criteria:
        verdict = aggregate([c.vote for c in criterion.votes], method, threshold=threshold)
        failed = failed or verdict.invalid > 0
        results.append(
            CriterionResult(
                criterion.criterion_id,
                criterion.text,
                verdict.outcome,
                _rationale(criterion.votes, verdict.outcome),
                verdict.invalid,
            )
        )
        by_checklist[criterion.checklist_id].append(
            ScoredCriterion(
                str(criterion.criterion_id), verdict.outcome, criterion.weight, criterion.core
            )
        )
    undecided = sum(1 for r in results if r.outcome == "undecided")
    if failed:
        return ItemReward(None, True, undecided, tuple(results))
    scores = [strategy(score_answer(c)) for c in by_checklist.values()]
    decided = [s for s in scores if s is not None]
    score = sum(decided) / len(decided) if decided else None
    return ItemReward(score, False, undecided, tuple(results))


def _rationale(votes: Sequence[CastVote], outcome: str) -> str:
    """The rationale of the first vote that agrees with the verdict; else of the first valid
    vote; else the first error."""
    agreeing = [v for v in votes if v.vote.outcome == outcome]
    valid = [v for v in votes if v.vote.outcome not in INVALID_OUTCOMES]
    for candidates in (agreeing, valid, votes):
        if candidates:
            return candidates[0].rationale
    return ""

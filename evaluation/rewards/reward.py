"""From a completion's votes to its reward. Plain Python; see docs/rewards.md#the-reward.

Per criterion, the panel's votes become one verdict (evaluation.metrics.aggregation, with
the panel's method); per checklist, the verdicts become a score under the dataset's scoring
strategy (evaluation.metrics.rubrics, as a run scores them); the completion's score is the
plain mean over the query's submitted checklists, each counting once whatever its length,
as a run scores an answer. Undecided criteria leave every denominator and are counted.

A vote whose call failed (an error, or an output still unparseable after the retries) makes
the whole completion *failed*: its score is None, never a number made up from the votes
that did come back, so a flaky judge cannot teach a policy anything.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from evaluation.metrics import rubrics
from evaluation.metrics.aggregation import INVALID_OUTCOMES, Vote, aggregate
from evaluation.metrics.rubrics import EMPTY_TREE, RubricCriterion, Tree


@dataclass(frozen=True)
class ChecklistVerdicts:
    """One checklist's verdicts on a completion, with its groups: what a strategy scores."""

    criteria: tuple[RubricCriterion, ...]
    core: tuple[bool, ...]
    tree: Tree = EMPTY_TREE


# A scoring strategy turns one checklist's verdicts into its score: the rubric strategies of
# evaluation.metrics.rubrics (issue 23) by name, and the core share.
Strategy = Callable[[ChecklistVerdicts], float | None]
DEFAULT_STRATEGY = rubrics.DEFAULT_STRATEGY
# Names the reward service took before the dataset setting existed.
_ALIASES = {"weighted_share": "weighted"}


def _core_share(checked: ChecklistVerdicts) -> float | None:
    core = [c for c, is_core in zip(checked.criteria, checked.core, strict=True) if is_core]
    return rubrics.score_rubric(core, EMPTY_TREE, "share").value


def strategy_named(
    name: str,
    *,
    blend_weight: float = rubrics.DEFAULT_BLEND_WEIGHT,
    undecided: str = rubrics.DEFAULT_UNDECIDED,
) -> Strategy:
    """The strategy `name`, its undecided criteria counted as `undecided` says (the
    dataset's setting, else a checklist's own: docs/metrics.md#undecided-criteria)."""
    if name == "core_share":
        return _core_share
    name = _ALIASES.get(name, name)
    try:
        rubrics.check_strategy(name)
    except ValueError:
        known = sorted([*rubrics.STRATEGIES, "core_share", *_ALIASES])
        raise ValueError(f"unknown scoring strategy {name!r}; known: {known}") from None

    def strategy(checked: ChecklistVerdicts) -> float | None:
        return rubrics.score_rubric(
            checked.criteria, checked.tree, name, blend_weight=blend_weight, undecided=undecided
        ).value

    return strategy


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
    weight: float | Decimal = 1.0  # negative: a penalty
    core: bool = True
    group: str | None = None  # the key of its group in the checklist's tree


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
    criteria: Sequence[CriterionVotes],
    *,
    method: str,
    threshold: float,
    strategy: Strategy,
    overrides: Mapping[int, Strategy] | None = None,
    trees: Mapping[int, Tree] | None = None,
) -> ItemReward:
    """`strategy` scores each checklist, unless `overrides` names its own (by checklist id);
    `trees` holds the checklists' groups (none: the checklist has no group)."""
    results: list[CriterionResult] = []
    by_checklist: dict[int, list[CriterionVotes]] = defaultdict(list)
    outcomes: dict[int, str] = {}
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
        by_checklist[criterion.checklist_id].append(criterion)
        outcomes[criterion.criterion_id] = verdict.outcome
    undecided = sum(1 for r in results if r.outcome == "undecided")
    if failed:
        return ItemReward(None, True, undecided, tuple(results))
    overrides, trees = overrides or {}, trees or {}
    scores = [
        overrides.get(checklist_id, strategy)(
            ChecklistVerdicts(
                tuple(RubricCriterion(outcomes[c.criterion_id], c.weight, c.group) for c in listed),
                tuple(c.core for c in listed),
                trees.get(checklist_id, EMPTY_TREE),
            )
        )
        for checklist_id, listed in by_checklist.items()
    ]
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

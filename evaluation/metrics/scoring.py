"""Answer scores: the share of a checklist's criteria an answer passes, and its variants.

Input is one verdict per criterion (after vote aggregation). See docs/metrics.md.

"Undecided" criteria (no valid judge vote, or a tied panel) are excluded from every
denominator by default and reported in `AnswerScore.undecided`: an unparseable judge output
must never lower a score, and must not raise it either. A dataset (or a checklist) may count
them as not met instead (`share_score(..., undecided="not_met")`, the reading of Axion,
PaperBench and HealthBench: evaluation.metrics.rubrics.satisfied). Disabled criteria
(scoring_enabled off) are ignored entirely, as if they were not in the checklist.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal, get_args

from evaluation.metrics.rubrics import DEFAULT_UNDECIDED, EMPTY_TREE, GroupCounts, value_counted

VerdictOutcome = Literal["pass", "fail", "undecided"]
_VERDICT_OUTCOMES = frozenset(get_args(VerdictOutcome))

# The AnswerScore attributes that mean_score may average.
SCORE_ATTRIBUTES = ("share", "weighted_share", "core_share")

# Shares are ratios of small integers, but a mean of several shares can land a hair below a
# threshold it meets exactly (0.7 vs 0.69999…); this tolerance absorbs float noise only.
_EPSILON = 1e-9


@dataclass(frozen=True)
class ScoredCriterion:
    """One criterion of a checklist with its aggregated verdict on one answer."""

    key: str
    outcome: VerdictOutcome
    weight: float | Decimal = 1.0  # Criterion.weight is a DecimalField; both are accepted
    core: bool = True
    enabled: bool = True

    def __post_init__(self) -> None:
        if self.outcome not in _VERDICT_OUTCOMES:
            raise ValueError(f"unknown verdict outcome {self.outcome!r} for criterion {self.key}")
        weight = float(self.weight)
        if not math.isfinite(weight) or weight < 0:
            raise ValueError(f"criterion {self.key} has an invalid weight {self.weight!r}")


@dataclass(frozen=True)
class AnswerScore:
    """An answer's score against one checklist.

    `total` counts enabled criteria (passed + failed + undecided). Each share is None when
    nothing it is computed over was decided.
    """

    passed: int
    failed: int
    undecided: int
    total: int
    share: float | None
    weighted_share: float | None
    core_share: float | None

    @property
    def decided(self) -> int:
        return self.passed + self.failed


def score_answer(criteria: Sequence[ScoredCriterion]) -> AnswerScore:
    """Score one answer against one checklist.

    share          = passed / (passed + failed)
    weighted_share = Σ weight(passed) / Σ weight(passed or failed)
    core_share     = share over the enabled core criteria only
    """
    enabled = [c for c in criteria if c.enabled]
    passed = sum(1 for c in enabled if c.outcome == "pass")
    failed = sum(1 for c in enabled if c.outcome == "fail")
    return AnswerScore(
        passed=passed,
        failed=failed,
        undecided=len(enabled) - passed - failed,
        total=len(enabled),
        share=_share(enabled),
        weighted_share=_weighted_share(enabled),
        core_share=_share(c for c in enabled if c.core),
    )


def share_score(
    whole: GroupCounts, core: GroupCounts, undecided: str = DEFAULT_UNDECIDED
) -> AnswerScore:
    """A checklist's shares from its counts (what a database GROUP BY gives): `whole` over
    its enabled criteria, `core` over its enabled core criteria, the undecided ones counted
    as `undecided` says (rubrics.GroupCounts.read_as). A criterion counts as passed when it
    is satisfied (rubrics.satisfied: a penalty when avoided), so the shares are the `share`
    and `weighted` strategies' values (rubrics.value_counted) on the same counts; without a
    penalty and under `excluded` they are score_answer()'s. `passed`, `failed` and
    `undecided` count the criteria as they were decided, whatever the setting."""
    loose = {None: whole}
    return AnswerScore(
        passed=whole.satisfied,
        failed=whole.unsatisfied,
        undecided=whole.undecided,
        total=whole.decided + whole.undecided,
        share=value_counted(loose, EMPTY_TREE, "share", undecided=undecided),
        weighted_share=value_counted(loose, EMPTY_TREE, "weighted", undecided=undecided),
        core_share=value_counted({None: core}, EMPTY_TREE, "share", undecided=undecided),
    )


def _share(criteria: Iterable[ScoredCriterion]) -> float | None:
    passed = decided = 0
    for criterion in criteria:
        if criterion.outcome == "undecided":
            continue
        decided += 1
        passed += criterion.outcome == "pass"
    return passed / decided if decided else None


def _weighted_share(criteria: Sequence[ScoredCriterion]) -> float | None:
    # Float sums are fine: weights have two decimals, so the rounding error is far below
    # anything a report shows.
    passed = sum(float(c.weight) for c in criteria if c.outcome == "pass")
    decided = sum(float(c.weight) for c in criteria if c.outcome != "undecided")
    # Decided criteria that all weigh 0 carry no information: no score rather than 0/0.
    return passed / decided if decided > 0 else None


def mean_score(scores: Sequence[AnswerScore], attr: str = "share") -> float | None:
    """Mean of one share over several scores (a query's checklists), ignoring None.

    An answer is graded against every expert's checklist for the query; its query score is
    the plain mean over those checklists, each checklist counting once whatever its length.
    None when no checklist produced a share.
    """
    if attr not in SCORE_ATTRIBUTES:
        raise ValueError(f"attr must be one of {SCORE_ATTRIBUTES}, got {attr!r}")
    values = [value for s in scores if (value := getattr(s, attr)) is not None]
    return sum(values) / len(values) if values else None


def passes_threshold(score: float | None, threshold: float) -> bool | None:
    """Whether a score meets a pass threshold (score >= threshold); None for no score."""
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must lie in [0, 1], got {threshold!r}")
    if score is None:
        return None
    return score >= threshold - _EPSILON


def mean_grade(grades: Sequence[int | None]) -> float | None:
    """Mean of G-Eval style 1–5 grades over judge samples, ignoring None (unparseable).

    Raises ValueError on a grade that is not an integer from 1 to 5: a 0 or a 7 means the
    caller parsed the judge output wrongly, and averaging it would hide that.
    """
    valid: list[int] = []
    for grade in grades:
        if grade is None:
            continue
        if isinstance(grade, bool) or not isinstance(grade, int) or not 1 <= grade <= 5:
            raise ValueError(f"a grade must be an integer from 1 to 5, got {grade!r}")
        valid.append(grade)
    return sum(valid) / len(valid) if valid else None

"""How stable a judge is: the same (answer, criterion) graded several times by the same
judge (a panel member's samples), read per criterion and over all items.

- flip rate of a criterion: the share of its items whose valid verdicts disagree (at least
  one pass and one fail among the judge's k calls), with a Wilson score interval (Wilson
  1927; Agresti and Coull 1998), which stays inside [0, 1] for the small counts a
  criterion has;
- test–retest κ: Fleiss' κ (Fleiss 1971) over the items, each item's k calls being its
  ratings (k may vary between items: each item's agreement is over its own pairs of
  calls), the chance agreement from the pooled pass and fail shares.

An invalid vote (unparseable, error) is no rating: an item needs two valid verdicts to
count. Plain Python; evaluation.runs.stability counts the verdicts in SQL and hands the
counts in. docs/metrics.md#judge-stability gives the formulas.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from evaluation.metrics import intervals
from evaluation.metrics.agreement import Z_95
from evaluation.metrics.preference import fleiss_kappa


@dataclass(frozen=True)
class RepeatedItem:
    """One (answer, criterion) graded several times by one judge: its valid verdicts."""

    criterion_id: int
    judge_id: int
    passes: int
    fails: int

    @property
    def calls(self) -> int:
        return self.passes + self.fails

    @property
    def flipped(self) -> bool:
        return self.passes > 0 and self.fails > 0


@dataclass(frozen=True)
class Rate:
    count: int  # items that flipped
    items: int  # items with two valid verdicts or more
    rate: float | None
    low: float | None
    high: float | None

    def as_dict(self) -> dict:
        return {
            "count": self.count, "items": self.items, "rate": self.rate, "low": self.low,
            "high": self.high,
        }  # fmt: skip


@dataclass(frozen=True)
class CriterionStability:
    criterion_id: int
    flips: Rate

    def as_dict(self) -> dict:
        return {"criterion_id": self.criterion_id, "flips": self.flips.as_dict()}


@dataclass(frozen=True)
class Stability:
    items: int
    flips: Rate  # over every item
    kappa: float | None  # test–retest κ; None: no item, or every verdict the same
    criteria: tuple[CriterionStability, ...]  # by flip rate, highest first

    def as_dict(self) -> dict:
        return {
            "items": self.items, "flips": self.flips.as_dict(), "kappa": self.kappa,
            "criteria": [c.as_dict() for c in self.criteria],
        }  # fmt: skip


def wilson(count: int, total: int, *, z: float = Z_95) -> Rate:
    """count/total with its Wilson score interval (intervals.wilson); no items: no rate."""
    return Rate(count, total, *intervals.wilson(count, total, z=z))


def retest_kappa(items: Iterable[RepeatedItem]) -> float | None:
    """Fleiss' κ (preference.fleiss_kappa) over items graded two times or more, each call a
    rater of pass or fail. None without an item, or when every verdict is the same."""
    return fleiss_kappa({"pass": item.passes, "fail": item.fails} for item in items)


def stability(items: Iterable[RepeatedItem]) -> Stability:
    """Flip rates per criterion and overall, and the test–retest κ, of the items graded
    two times or more."""
    repeated = [i for i in items if i.calls >= 2]
    by_criterion: dict[int, list[RepeatedItem]] = defaultdict(list)
    for item in repeated:
        by_criterion[item.criterion_id].append(item)
    criteria = [
        CriterionStability(pk, wilson(sum(i.flipped for i in own), len(own)))
        for pk, own in by_criterion.items()
    ]
    criteria.sort(key=lambda c: (-(c.flips.rate or 0.0), c.criterion_id))
    return Stability(
        items=len(repeated),
        flips=wilson(sum(i.flipped for i in repeated), len(repeated)),
        kappa=retest_kappa(repeated),
        criteria=tuple(criteria),
    )


def unstable(criterion: CriterionStability, *, floor: float = 0.1) -> bool:
    """A criterion whose flip rate is surely above `floor`: its interval's low end is."""
    return criterion.flips.low is not None and criterion.flips.low > floor

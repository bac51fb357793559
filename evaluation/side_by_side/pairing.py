"""The side-by-side comparison's rules, in plain Python (no Django): which answers face each
other (one per query and side), which pairs a filter keeps and in what order, and how a
criterion's outcomes on the two sides compare and order.

Whether a criterion is met is never decided here: the callers pass
`evaluation.metrics.rubrics.satisfied` of each side's outcome (the one rule every score
reads), so a criterion shown as "A meets, B misses" is one the scores count that way."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol, TypeVar

# A criterion's outcome on one side: the run's verdict (or the adjudication replacing it).
OUTCOMES = ("pass", "fail", "undecided")

# How a criterion's two sides compare, in the order the page lists them: what one side
# lost against the other first, then what cannot be compared (undecided or not judged on
# one side), then the criteria both sides share.
A_MEETS = "a_meets"  # A meets it, B misses it
B_MEETS = "b_meets"  # A misses it, B meets it
UNCOMPARED = "uncompared"  # undecided or not judged on at least one side
SAME = "same"  # both meet it, or both miss it
DIFFERENCES = (A_MEETS, B_MEETS, UNCOMPARED, SAME)
DIFFERENCE_LABELS = {
    A_MEETS: "A meets, B misses",
    B_MEETS: "A misses, B meets",
    UNCOMPARED: "Undecided or not judged on a side",
    SAME: "Same on both",
}

# The orders of the pairs: key -> (label, description).
SORTS = {
    "difference": "Largest difference first",
    "regressions": "B below A first",
    "gains": "B above A first",
    "query": "By query",
}
DEFAULT_SORT = "difference"


class Scored(Protocol):
    """An answer's scores, as the run scores keep them (evaluation.runs.scores.AnswerBrief)."""

    @property
    def answer_id(self) -> int: ...
    @property
    def query_id(self) -> int: ...
    @property
    def value(self) -> float | None: ...
    @property
    def undecided(self) -> int: ...


@dataclass(frozen=True)
class Pair:
    """One query's answer on each side, with their scores (under each checklist's scoring
    strategy, averaged over the query's checklists)."""

    query_id: int
    a: Scored
    b: Scored

    @property
    def difference(self) -> float | None:
        """B's score minus A's; None when either has no score."""
        if self.a.value is None or self.b.value is None:
            return None
        return self.b.value - self.a.value


@dataclass(frozen=True)
class Paired:
    pairs: list[Pair]  # in query order
    only_a: int  # queries answered on side A only
    only_b: int


def one_per_query(answers: Iterable[Scored]) -> dict[int, Scored]:
    """The answer that stands for its side on each query: the first (lowest id) when a run
    graded several answers of the system to one query (two run labels), as the run
    comparison links its queries (analytics' query_scores)."""
    chosen: dict[int, Scored] = {}
    for answer in answers:
        held = chosen.get(answer.query_id)
        if held is None or answer.answer_id < held.answer_id:
            chosen[answer.query_id] = answer
    return chosen


def pair_by_query(a: Iterable[Scored], b: Iterable[Scored]) -> Paired:
    """The queries both sides answered, each with its two answers; the others counted. An
    answer never faces itself (the same run and system on both sides pairs nothing new, but
    two runs of one system pair the same answer graded twice, which is the point)."""
    side_a, side_b = one_per_query(a), one_per_query(b)
    both = sorted(set(side_a) & set(side_b))
    return Paired(
        [Pair(q, side_a[q], side_b[q]) for q in both],
        len(side_a.keys() - side_b.keys()),
        len(side_b.keys() - side_a.keys()),
    )


def select_pairs(
    pairs: Iterable[Pair],
    *,
    min_difference: float | None = None,
    queries: set[int] | None = None,
    sort: str = DEFAULT_SORT,
) -> list[Pair]:
    """The pairs a filter keeps, in the order asked for (ties by query id, so pages never
    overlap). `min_difference`: only pairs whose scores differ by more than it (either
    way; a pair without both scores is left out). `queries`: only these queries (a
    category's, a dimension value's); None: every query."""
    kept = [
        p
        for p in pairs
        if (queries is None or p.query_id in queries)
        and (min_difference is None or _differs_by_more(p, min_difference))
    ]
    return sorted(kept, key=_ORDERS.get(sort, _ORDERS[DEFAULT_SORT]))


def _differs_by_more(pair: Pair, threshold: float) -> bool:
    difference = pair.difference
    return difference is not None and abs(difference) > threshold


def _unscored_last(pair: Pair, value: float) -> tuple:
    # A pair without both scores sorts after every scored one, by query.
    return (pair.difference is None, value if pair.difference is not None else 0.0, pair.query_id)


_ORDERS = {
    "difference": lambda p: _unscored_last(p, -abs(p.difference or 0.0)),
    "regressions": lambda p: _unscored_last(p, p.difference or 0.0),
    "gains": lambda p: _unscored_last(p, -(p.difference or 0.0)),
    "query": lambda p: (p.query_id,),
}


def compare_outcomes(satisfied_a: bool | None, satisfied_b: bool | None) -> str:
    """How a criterion reads on the two sides, from rubrics.satisfied of each side's outcome
    (None: undecided, or not judged on that side)."""
    if satisfied_a is None or satisfied_b is None:
        return UNCOMPARED
    if satisfied_a == satisfied_b:
        return SAME
    return A_MEETS if satisfied_a else B_MEETS


class Compared(Protocol):
    @property
    def difference(self) -> str: ...
    @property
    def position(self) -> tuple: ...


C = TypeVar("C", bound=Compared)


def differing_first(rows: Iterable[C]) -> list[C]:
    """The criteria in the page's order: A meets / B misses, then A misses / B meets, then
    those undecided or not judged on a side, then the same on both; in the checklist's own
    order within each."""
    rank = {d: n for n, d in enumerate(DIFFERENCES)}
    return sorted(rows, key=lambda r: (rank[r.difference], r.position))

"""The facts of the review queues' items and the label policy's draw, in plain Python: no
ORM here; evaluation.review.selectors loads the facts and calls these. The queues are
ordered in the database (evaluation.review.order: each item's sort key); the same orders
said in Python from their definitions, for tests to compare, are tests/support/queues.py.

Labelling queue (one item per answer), by the dataset's label policy, drawn as a sampling
design that the analytics can undo (evaluation.review.sampling):
- all: every answer, in a random order fixed by a hash of (dataset id, answer id);
- random: a fixed share of answers, chosen by the same hash (stable across reloads; it
  does not move when labels arrive), in that order;
- uncertain: the share of answers drawn by priority sampling, with chances that grow with
  how uncertain the judges are (per criterion, how far the valid votes are from an even
  split), in priority order; answers without any valid vote are never drawn.
The random and uncertain policies take at least a floor of answers (`at_least`, all of
them on a smaller dataset) by going on down the same draw, so that a share of a small
dataset is not two answers. Answers that still need labels come first (fewest human
labels), then the order above (review.order.labelling_key): so that whatever point the
reviewers stop at, the labelled answers are a random sample with known chances, which keeps
the human-calibrated scores (PPI++) unbiased.

Disagreement queue (one item per answer and criterion): the panel's verdict differs from a
human label, or the judges' valid votes split. Split votes come first, the most even split
first; then items where a human disagrees with a unanimous panel; then answer, checklist,
criterion position and id (review.order.disagreement_key_sql). Adjudicated items are left
out (they are done). Unparseable and errored votes are shown by the pages but never counted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from evaluation.metrics.aggregation import CriterionVerdict
from evaluation.review import sampling

Policy = Literal["all", "random", "uncertain"]
POLICIES: frozenset[str] = frozenset({"all", "random", "uncertain"})


@dataclass(frozen=True)
class AnswerFacts:
    """What the labelling queue needs to know about one answer."""

    answer_id: int
    criteria: int  # criteria of the query's submitted checklists
    labels: int  # human labels on this answer, all raters
    # Mean over judged criteria of 1 - |2 · pass share - 1| (selectors._uncertainties); None
    # without a judged criterion.
    uncertainty: float | None
    judged: int = 0  # criteria with a valid vote (the uncertainty's mean is over them)


def drawn(
    answers: Sequence[AnswerFacts], *, policy: Policy | str, share: float, dataset_id: int,
    at_least: int = 0,
) -> list[AnswerFacts]:  # fmt: skip
    """The answers the policy selects, in its draw order, whatever their labels:
    sampling.uniform for all and random, the priority for uncertain; then answer id. Labels
    do not move it, so the kept queue keeps each answer's rank in it (review.order).

    `at_least`: the random and least-certain policies take at least that many answers (all
    of them when there are fewer), whatever the share, by going on down the same draw
    order. Any head of that order is a sample of the same design (a simple random sample,
    or a priority sample), so the floor changes how much is asked, never the weights."""
    if policy not in POLICIES:
        raise ValueError(f"unknown label policy {policy!r}; expected one of {sorted(POLICIES)}")
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"share must lie in [0, 1], got {share!r}")
    if policy == "uncertain":
        judged = [a for a in answers if a.uncertainty is not None]
        priority = {
            a.answer_id: sampling.priority(
                dataset_id=dataset_id,
                answer_id=a.answer_id,
                size=sampling.size(a.uncertainty or 0.0, a.judged),
            )
            for a in judged
        }
        judged.sort(key=lambda a: (-priority[a.answer_id], a.answer_id))
        # ceil: a share above zero of a small dataset still offers at least one answer.
        return judged[: max(math.ceil(share * len(judged)), at_least)]
    draw = {
        a.answer_id: sampling.uniform(dataset_id=dataset_id, answer_id=a.answer_id) for a in answers
    }
    ordered = sorted(answers, key=lambda a: (draw[a.answer_id], a.answer_id))
    if policy == "all":
        return ordered
    share_of = [
        a
        for a in ordered
        if sampling.in_random_share(dataset_id=dataset_id, answer_id=a.answer_id, share=share)
    ]
    if len(share_of) >= at_least:
        return share_of
    # The share is a head of the draw order (the same hash): the floor goes on down it.
    taken = {a.answer_id for a in share_of}
    rest = [a for a in ordered if a.answer_id not in taken]
    return share_of + rest[: at_least - len(share_of)]


@dataclass(frozen=True)
class ItemFacts:
    """One (answer, criterion) with the panel's verdict and the human labels on it."""

    answer_id: int
    criterion_id: int
    position: int  # the criterion's order on the review page, for stable ties
    verdict: CriterionVerdict
    human_labels: tuple[str, ...]  # "pass" / "fail", one per rater
    adjudicated: bool = False
    checklist_id: int = 0  # the criterion's checklist: it orders ties before the position

    @property
    def split(self) -> bool:
        return self.verdict.split

    @property
    def human_disagreements(self) -> int:
        """Human labels that differ from a decided panel verdict (undecided: nothing to
        disagree with; a tie is already a split)."""
        if self.verdict.outcome not in ("pass", "fail"):
            return 0
        return sum(1 for label in self.human_labels if label != self.verdict.outcome)

    @property
    def reason(self) -> str:
        parts = []
        if self.split:
            parts.append(f"judges split {self.verdict.vote_split}")
        if self.human_disagreements:
            n = self.human_disagreements
            parts.append(f"{n} human label differs" if n == 1 else f"{n} human labels differ")
        return "; ".join(parts)

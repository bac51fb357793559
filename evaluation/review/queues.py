"""Review queues, in plain Python: which answers to label, which items to adjudicate, and in
what order. No ORM here; evaluation.review.selectors loads the facts and calls these.

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
labels), then the order above: so that whatever point the reviewers stop at, the labelled
answers are a random sample with known chances, which keeps the human-calibrated scores
(PPI++) unbiased.

Disagreement queue (one item per answer and criterion): the panel's verdict differs from a
human label, or the judges' valid votes split. Split votes come first, the most even split
first; then items where a human disagrees with a unanimous panel. Adjudicated items are left
out (they are done). Unparseable and errored votes are shown by the pages but never counted.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from evaluation.metrics.aggregation import CriterionVerdict
from evaluation.review import sampling

Policy = Literal["all", "random", "uncertain"]
POLICIES: frozenset[str] = frozenset({"all", "random", "uncertain"})


def in_random_share(*, dataset_id: int, answer_id: int, share: float) -> bool:
    """Whether the answer is in the dataset's random share.

    The first 8 bytes of SHA-256("dataset:answer") as a number in [0, 1): stable across
    reloads, processes and machines (unlike Python's salted hash()), and independent per
    dataset.
    """
    digest = hashlib.sha256(f"{dataset_id}:{answer_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < share


def uncertainty(verdicts: Iterable[CriterionVerdict]) -> float | None:
    """Mean over criteria with a valid vote of 1 - |2·pass share - 1|.

    1 means every criterion split 50/50, 0 means every vote agreed. None when no criterion
    has a valid vote (nothing the judges could be uncertain about).
    """
    values = [1 - abs(2 * v.pass_share - 1) for v in verdicts if v.pass_share is not None]
    return sum(values) / len(values) if values else None


@dataclass(frozen=True)
class AnswerFacts:
    """What the labelling queue needs to know about one answer."""

    answer_id: int
    criteria: int  # criteria of the query's submitted checklists
    labels: int  # human labels on this answer, all raters
    uncertainty: float | None  # see uncertainty(); None without a judged criterion
    judged: int = 0  # criteria with a valid vote (the uncertainty's mean is over them)


def labelling_queue(
    answers: Sequence[AnswerFacts], *, policy: Policy | str, share: float, dataset_id: int,
    at_least: int = 0,
) -> list[AnswerFacts]:  # fmt: skip
    """The answers the policy selects, in queue order: fewest human labels first, then the
    policy's draw order (`drawn`)."""
    # A stable sort: equal labels keep the draw order.
    chosen = drawn(answers, policy=policy, share=share, dataset_id=dataset_id, at_least=at_least)
    return sorted(chosen, key=lambda a: a.labels)


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
        if in_random_share(dataset_id=dataset_id, answer_id=a.answer_id, share=share)
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
    def disagreeing(self) -> bool:
        return self.split or self.human_disagreements > 0

    @property
    def evenness(self) -> Fraction:
        """|passes - fails| / valid votes: 0 for a 50/50 split, 1 for unanimous votes. Exact,
        so that 2–1 and 1–2 tie instead of differing by a float rounding."""
        valid = self.verdict.valid
        return (
            Fraction(abs(self.verdict.passes - self.verdict.fails), valid) if valid else Fraction(1)
        )

    @property
    def reason(self) -> str:
        parts = []
        if self.split:
            parts.append(f"judges split {self.verdict.vote_split}")
        if self.human_disagreements:
            n = self.human_disagreements
            parts.append(f"{n} human label differs" if n == 1 else f"{n} human labels differ")
        return "; ".join(parts)


def disagreement_queue(items: Iterable[ItemFacts]) -> list[ItemFacts]:
    """The disagreeing, not yet adjudicated items, by priority: split votes first (the most
    even split first, then those a human also disagrees with), then a unanimous panel that
    humans contradict (most contradicting labels first); ties by answer and position."""
    open_items = [i for i in items if i.disagreeing and not i.adjudicated]
    return sorted(
        open_items,
        key=lambda i: (
            not i.split,
            i.evenness,
            -i.human_disagreements,
            i.answer_id,
            i.position,
            i.criterion_id,
        ),
    )


def next_after(keys: Sequence[tuple[int, ...]], current: tuple[int, ...]) -> tuple[int, ...] | None:
    """The key after `current` in queue order, wrapping around; the first one when `current`
    has left the queue (adjudicated, say). None when nothing else is queued."""
    others = [k for k in keys if k != current]
    if not others:
        return None
    if current in keys:
        index = keys.index(current)
        following = [k for k in keys[index + 1 :] if k != current]
        return following[0] if following else others[0]
    return others[0]

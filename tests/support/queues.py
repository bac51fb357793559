"""The review queues' orders said in plain Python from their definitions, for tests: the
product orders them in the database (evaluation/review/order.py, one sort key per item),
and the tests compare that order with these (tests/evaluation/review/test_queue_order.py).

- `labelling_queue`: the label policy's draw (evaluation.review.queues.drawn), then fewest
  human labels first, as `order.labelling_key` says.
- `disagreement_queue`: split votes first, the most even split first, then the most
  contradicting human labels, then answer, checklist, criterion position and id, as
  `order.disagreement_key_sql` says.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fractions import Fraction

from evaluation.metrics.aggregation import CriterionVerdict
from evaluation.review.queues import AnswerFacts, ItemFacts, Policy, drawn


def uncertainty(verdicts: Iterable[CriterionVerdict]) -> float | None:
    """Mean over criteria with a valid vote of 1 - |2·pass share - 1|: 1 when every
    criterion split 50/50, 0 when every vote agreed; None when no criterion has a valid
    vote. The selectors count the same from vote splits (selectors._uncertainties)."""
    values = [1 - abs(2 * v.pass_share - 1) for v in verdicts if v.pass_share is not None]
    return sum(values) / len(values) if values else None


def labelling_queue(
    answers: Sequence[AnswerFacts], *, policy: Policy | str, share: float, dataset_id: int,
    at_least: int = 0,
) -> list[AnswerFacts]:  # fmt: skip
    """The answers the policy selects, in queue order: fewest human labels first, then the
    policy's draw order. A stable sort: equal labels keep the draw order."""
    chosen = drawn(answers, policy=policy, share=share, dataset_id=dataset_id, at_least=at_least)
    return sorted(chosen, key=lambda a: a.labels)


def disagreeing(item: ItemFacts) -> bool:
    """Queued: the judges' valid votes split, or a human contradicts a decided verdict."""
    return item.split or item.human_disagreements > 0


def evenness(item: ItemFacts) -> Fraction:
    """|passes - fails| / valid votes: 0 for a 50/50 split, 1 for unanimous votes (or no
    valid vote). Exact, so that 2–1 and 1–2 tie, as the SQL's integer division does."""
    valid = item.verdict.valid
    return Fraction(abs(item.verdict.passes - item.verdict.fails), valid) if valid else Fraction(1)


def disagreement_queue(items: Iterable[ItemFacts]) -> list[ItemFacts]:
    """The disagreeing, not yet adjudicated items, by priority: split votes first (the most
    even split first, then those a human also disagrees with), then a unanimous panel that
    humans contradict (most contradicting labels first); ties by answer, checklist, the
    criterion's position and id."""
    open_items = [i for i in items if disagreeing(i) and not i.adjudicated]
    return sorted(
        open_items,
        key=lambda i: (
            not i.split,
            evenness(i),
            -i.human_disagreements,
            i.answer_id,
            i.checklist_id,
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

"""Which answers the labelling queue offers, as a sampling design that the analytics can
undo: plain Python, no ORM.

Human labels calibrate the judges' scores (PPI++, docs/metrics.md). PPI++ is unbiased only
when the labelled answers are a random sample, or when each labelled answer is weighted by
the inverse of its chance of being labelled (active inference: Zrnic and Candès 2024,
"Active Statistical Inference", ICML). So the queue's order is a random draw with known
chances, whatever point the reviewers stop at:

- Every answer has a fixed uniform number `uniform(dataset, answer)` in (0, 1), from a
  hash: the same across reloads, processes and machines.
- The "random" and "all" policies order answers by it: any first k answers of the queue
  are a simple random sample.
- The "least certain" policy orders answers by *priority* = size / uniform, where the
  size grows with how much the judges' verdicts on the answer may be wrong
  (`size`). That is priority sampling (Duffield, Lund and Thorup 2007, "Priority sampling
  for estimation of arbitrary subset sums", JACM 54(6)): the first k answers are a sample
  drawn with chances roughly proportional to the size, and with the threshold τ (the
  priority of the first answer not taken), an answer's chance given the others is exactly
  min(1, size / τ). Weighting each labelled answer by max(1, τ / size) makes a sum over
  them an unbiased estimate of the sum over every answer.

Why that size: the PPI++ interval's width is driven by the variance of Y - λŶ on the
labelled items (human label minus the tuned judge verdict). With λ near 1 and the panel's
majority as Ŷ, an item's expected (Y - Ŷ)² is the chance that a person disagrees with the
majority, about the minority's share of the votes, min(p, 1 - p) = uncertainty / 2. The
chances that minimise the estimator's variance for a budget of labels are proportional to
the square root of that expected square (Neyman allocation; active inference, section
4), summed over the answer's criteria since a reviewer labels a whole answer. A panel
whose votes are unanimous is still wrong sometimes: each criterion counts at least
UNANIMOUS_ERROR, so that every judged answer keeps a chance of being drawn (a chance of 0
would leave its errors unseen and the estimate biased).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from dataclasses import dataclass

# The share of criteria on which a unanimous panel is assumed wrong, as the floor of each
# criterion's expected squared error: the judges' own agreement cannot show this.
UNANIMOUS_ERROR = 0.05


def hash_draw(*, dataset_id: int, answer_id: int) -> int:
    """The answer's draw in the dataset, the one hash every label policy reads: the first 8
    bytes of SHA-256("dataset:answer") as a number below 2^64. Stable across reloads,
    processes and machines (unlike Python's salted hash()), and independent per dataset."""
    digest = hashlib.sha256(f"{dataset_id}:{answer_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def uniform(*, dataset_id: int, answer_id: int) -> float:
    """A number in (0, 1), uniform over answers and fixed per (dataset, answer): the hash
    draw over 2^64, moved half a step off 0 so that a priority is always finite."""
    return (hash_draw(dataset_id=dataset_id, answer_id=answer_id) + 0.5) / 2**64


def in_random_share(*, dataset_id: int, answer_id: int, share: float) -> bool:
    """Whether the answer is in the dataset's random share: its hash draw over 2^64, a
    number in [0, 1), is below the share. Growing the share only adds answers."""
    return hash_draw(dataset_id=dataset_id, answer_id=answer_id) / 2**64 < share


def size(uncertainty: float, judged: int) -> float:
    """The answer's size measure: sqrt(Σ over its judged criteria of the expected squared
    error of the majority verdict), with `uncertainty` the mean over those criteria of
    1 - |2 · pass share - 1| (twice the minority's share) and `judged` their number."""
    return math.sqrt(max(judged, 1) * (uncertainty / 2 + UNANIMOUS_ERROR))


def priority(*, dataset_id: int, answer_id: int, size: float) -> float:
    return size / uniform(dataset_id=dataset_id, answer_id=answer_id)


# The share of the queue's head that must be labelled for it to count as drawn: reviewers
# skip an answer now and then, and one skipped answer must not cut the sample short.
COVERAGE = 0.9


@dataclass(frozen=True)
class Design:
    """Inverse chances of the labelled answers under priority sampling."""

    weights: dict[int, float]  # labelled answer in the drawn head -> 1 / its chance
    threshold: float  # τ: the priority of the first answer after the head (0: none)
    outside: frozenset[int]  # labelled answers after the head: not drawn by the design
    skipped: int = 0  # unlabelled answers inside the head (taken as missing at random)


def priority_design(dataset_id: int, answers: Iterable[tuple[int, float, bool]]) -> Design:
    """The design of the labels already made: `answers` are (answer id, size, labelled) for
    every judged answer of the population. The drawn sample is the longest head of the
    priority order that ends on a labelled answer and of which at least COVERAGE is
    labelled; τ is the priority of the first answer after it; each labelled answer of the
    head weighs max(1, τ / size), its inverse chance given the other priorities. The
    head's unlabelled answers (skipped by the reviewers) are taken as missing at random.
    Labelled answers after the head (labelled out of the queue's order, or imported) were
    not drawn by the design and are left out (`outside`): counting them would favour
    whatever made someone pick them."""
    rows = sorted(
        (
            (priority(dataset_id=dataset_id, answer_id=a, size=s), a, s, labelled)
            for a, s, labelled in answers
            if s > 0
        ),
        key=lambda r: (-r[0], r[1]),
    )
    head = done = 0
    for n, (_, _, _, labelled) in enumerate(rows, start=1):
        done += labelled
        if labelled and done >= COVERAGE * n:
            head = n
    threshold = rows[head][0] if head < len(rows) else 0.0
    drawn = rows[:head]
    return Design(
        weights={a: max(1.0, threshold / s) for _, a, s, labelled in drawn if labelled},
        threshold=threshold,
        outside=frozenset(a for _, a, _, labelled in rows[head:] if labelled),
        skipped=sum(1 for *_, labelled in drawn if not labelled),
    )

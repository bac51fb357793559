"""The order of the review queues, read and computed in tests."""

from __future__ import annotations

import hashlib
import math


def keys(items):
    return [i.key for i in items]


def by_priority(dataset, facts: dict) -> list[int]:
    """Answers in the "least certain" draw's order, computed here from its definition
    (evaluation/review/sampling.py): sqrt(judged criteria × (uncertainty / 2 + 0.05)) over
    a uniform draw from SHA-256("dataset:answer"). `facts`: answer -> (uncertainty, judged)."""

    def priority(answer):
        uncertainty, judged = facts[answer]
        digest = hashlib.sha256(f"{dataset.pk}:{answer.pk}".encode()).digest()
        draw = (int.from_bytes(digest[:8], "big") + 0.5) / 2**64
        return math.sqrt(judged * (uncertainty / 2 + 0.05)) / draw

    return [a.pk for a in sorted(facts, key=lambda a: -priority(a))]

"""Small independent implementations of the figures of the tools teams come from, written
from their published definitions, for tests (issue 41): nothing here reads
evaluation.metrics. A grade is True (met), False (not met) or None (missing: no valid
vote); each tool's own reading of a missing grade is built in, as its source says.

- Axion AnswerCriteria: `concept` = criteria met / all criteria; `aspect` = aspects whose
  criteria are all met / all aspects; `blend` = w x concept + (1 - w) x aspect. Every
  criterion counts: a missing grade is not met.
- PaperBench rubric trees: a leaf scores 1 when met, else 0 (a missing grade is 0); a node
  scores the weighted mean of its children's scores, by the children's weights; the paper's
  score is the root's.
- HealthBench points: an example scores the sum of the points of its met criteria (a
  negative one subtracts when met) over the sum of its positive points, None when it has
  none; a grade that is not `criteria_met: true` scores no point. HealthBench clips the
  mean over examples to [0, 1], not each example; `healthbench_clipped` is the example's
  score clipped, what the app shows per answer (docs/metrics.md#undecided-criteria).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass
class Criterion:
    weight: float
    grade: bool | None  # met, not met, missing


@dataclass
class Aspect:
    """An Axion aspect (a group of criteria), or a PaperBench node (children: criteria and
    nodes, each with a weight)."""

    weight: float = 1.0
    children: list = field(default_factory=list)  # Criterion | Aspect


# -- Axion AnswerCriteria -----------------------------------------------------------------


def axion_concept(criteria: list[Criterion]) -> float | None:
    if not criteria:
        return None
    return sum(c.grade is True for c in criteria) / len(criteria)


def axion_aspect(aspects: list[list[Criterion]]) -> float | None:
    if not aspects:
        return None
    return sum(all(c.grade is True for c in a) for a in aspects) / len(aspects)


def axion_blend(aspects: list[list[Criterion]], w: float) -> float | None:
    concept = axion_concept([c for a in aspects for c in a])
    aspect = axion_aspect(aspects)
    if concept is None or aspect is None:
        return None
    return w * concept + (1 - w) * aspect


# -- PaperBench ---------------------------------------------------------------------------


def paperbench(node: Aspect) -> float:
    total = sum(child.weight for child in node.children)
    got = 0.0
    for child in node.children:
        score = (
            (1.0 if child.grade is True else 0.0)
            if isinstance(child, Criterion)
            else (paperbench(child))
        )
        got += child.weight * score
    return got / total


# -- HealthBench --------------------------------------------------------------------------


def healthbench(criteria: list[Criterion]) -> float | None:
    possible = sum(c.weight for c in criteria if c.weight > 0)
    if possible == 0:
        return None
    return sum(c.weight for c in criteria if c.grade is True) / possible


def healthbench_clipped(criteria: list[Criterion]) -> float | None:
    score = healthbench(criteria)
    return None if score is None else min(1.0, max(0.0, score))


# -- the excluded reading -----------------------------------------------------------------


def decided_only(node: Aspect) -> Aspect | None:
    """The tree with its missing grades left out, and any node left empty: what each tool
    computes on it is the app's figure under `excluded`."""
    kept: list = []
    for child in node.children:
        if isinstance(child, Criterion):
            if child.grade is not None:
                kept.append(child)
        elif (sub := decided_only(child)) is not None:
            kept.append(sub)
    return Aspect(node.weight, kept) if kept else None


# -- generated cases ----------------------------------------------------------------------


def grade(rng: random.Random, missing: float) -> bool | None:
    return None if rng.random() < missing else rng.random() < 0.6


def flat_aspects(rng: random.Random, *, missing: float = 0.2) -> list[list[Criterion]]:
    """Axion's shape: a few aspects of a few criteria of weight 1."""
    return [
        [Criterion(1.0, grade(rng, missing)) for _ in range(rng.randint(1, 4))]
        for _ in range(rng.randint(1, 5))
    ]


def weighted_tree(rng: random.Random, depth: int, *, missing: float = 0.2) -> Aspect:
    """PaperBench's shape: positive weights, nodes nested up to `depth` deep."""
    children: list = []
    for _ in range(rng.randint(1, 4)):
        if depth > 0 and rng.random() < 0.5:
            child = weighted_tree(rng, depth - 1, missing=missing)
            child.weight = rng.choice([1.0, 2.0, 3.0, 0.5])
            children.append(child)
        else:
            children.append(Criterion(rng.choice([1.0, 2.0, 0.5, 4.0]), grade(rng, missing)))
    return Aspect(1.0, children)


def points_list(rng: random.Random, *, missing: float = 0.2) -> list[Criterion]:
    """HealthBench's shape: positive points and negative ones (penalties)."""
    return [
        Criterion(
            rng.choice([1.0, 2.0, 5.0, 10.0]) * (-1 if rng.random() < 0.3 else 1),
            grade(rng, missing),
        )
        for _ in range(rng.randint(1, 8))
    ]

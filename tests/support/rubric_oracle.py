"""An independent, deliberately naive computation of every scoring strategy, for tests.

Written from the definitions in docs/metrics.md#scoring-strategies, recursively over nested
objects, without evaluation.metrics.rubrics' counts or its bottom-up pass: a test that holds
the implementation to this one catches a formula that drifted from its definition.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass
class Leaf:
    key: str
    weight: float
    outcome: str  # pass, fail, undecided: after the adjudication, if any
    verdict: str = ""  # the judges' outcome before an adjudication
    adjudication: str | None = None


@dataclass
class Node:
    key: str
    weight: float
    children: list = field(default_factory=list)  # Node | Leaf


def read_undecided(node: Node, undecided: str) -> Node:
    """A copy of the tree whose undecided criteria read as `undecided` says: unchanged under
    `excluded`; under `not_met`, each one not met, its verdict `fail` (the reading of Axion,
    PaperBench and HealthBench, docs/metrics.md#undecided-criteria)."""
    if undecided == "excluded":
        return node
    out = Node(node.key, node.weight)
    for child in node.children:
        if isinstance(child, Node):
            out.children.append(read_undecided(child, undecided))
        elif child.outcome == "undecided":
            out.children.append(Leaf(child.key, child.weight, "fail", child.verdict))
        else:
            out.children.append(child)
    return out


def satisfied(leaf: Leaf) -> bool:
    return (leaf.outcome == "pass") == (leaf.weight >= 0)


def leaves(node: Node) -> list[Leaf]:
    out: list[Leaf] = []
    for child in node.children:
        out.extend([child] if isinstance(child, Leaf) else leaves(child))
    return out


def decided(node: Node) -> list[Leaf]:
    return [leaf for leaf in leaves(node) if leaf.outcome != "undecided"]


def share(node: Node) -> float | None:
    d = decided(node)
    return sum(satisfied(x) for x in d) / len(d) if d else None


def weighted(node: Node) -> float | None:
    d = decided(node)
    total = sum(abs(x.weight) for x in d)
    return sum(abs(x.weight) for x in d if satisfied(x)) / total if total > 0 else None


def points(node: Node) -> float | None:
    d = decided(node)
    possible = sum(x.weight for x in d if x.weight >= 0)
    if possible <= 0:
        return None
    got = sum(x.weight for x in d if x.outcome == "pass")  # a met penalty adds its negative
    return min(1.0, max(0.0, got / possible))


def fully(node: Node) -> float | None:
    d = decided(node)
    return (1.0 if all(satisfied(x) for x in d) else 0.0) if d else None


def aspect(root: Node) -> float | None:
    values = []
    for child in root.children:
        if isinstance(child, Leaf):
            if child.outcome != "undecided":
                values.append(1.0 if satisfied(child) else 0.0)
        elif (v := fully(child)) is not None:
            values.append(v)
    return sum(values) / len(values) if values else None


def tree(node: Node) -> float | None:
    numerator = denominator = 0.0
    for child in node.children:
        if isinstance(child, Leaf):
            if child.outcome == "undecided":
                continue
            value, weight = (1.0 if satisfied(child) else 0.0), abs(child.weight)
        else:
            value, weight = tree(child), child.weight
            if value is None:
                continue
        numerator += weight * value
        denominator += weight
    return numerator / denominator if denominator > 0 else None


def blend(node: Node, w: float, *, whole: bool = True) -> float | None:
    s, a = share(node), (aspect(node) if whole else fully(node))
    return None if s is None or a is None else w * s + (1 - w) * a


def value(root: Node, strategy: str, w: float = 0.7) -> float | None:
    return {
        "share": share, "concept": share, "weighted": weighted, "points": points,
        "aspect": aspect, "tree": tree, "blend": lambda n: blend(n, w),
    }[strategy](root)  # fmt: skip


def group_value(group: Node, strategy: str, w: float = 0.7) -> float | None:
    """A group's own score: the strategy on its subtree; all or nothing for aspect."""
    if strategy == "aspect":
        return fully(group)
    if strategy == "blend":
        return blend(group, w, whole=False)
    return value(group, strategy, w)


def groups(node: Node) -> list[Node]:
    out: list[Node] = []
    for child in node.children:
        if isinstance(child, Node):
            out.append(child)
            out.extend(groups(child))
    return out


def generate(
    rng: random.Random,
    *,
    depth: int,
    leaves_wanted: int,
    penalties: bool = True,
    undecided: float = 0.1,
    adjudicated: float = 0.05,
) -> Node:
    """A random checklist of about `leaves_wanted` criteria under groups nested `depth` deep
    (0: no group; the root is the checklist), with weights, penalties, undecided verdicts and
    adjudications that overrule some verdicts."""
    counter = iter(range(10**9))

    def leaf() -> Leaf:
        weight = rng.choice([1.0, 1.0, 2.0, 0.5, 3.25, 0.0])
        if penalties and rng.random() < 0.15:
            weight = -rng.choice([1.0, 2.0, 5.0])
        verdict = rng.choices(["pass", "fail", "undecided"], [1, 1, undecided * 2])[0]
        adjudication = rng.choice(["pass", "fail"]) if rng.random() < adjudicated else None
        return Leaf(f"c{next(counter)}", weight, adjudication or verdict, verdict, adjudication)

    def build(level: int, budget: int) -> list:
        if level >= depth or budget <= 2:
            return [leaf() for _ in range(max(1, budget))]
        children: list = []
        parts = rng.randint(1, min(6, budget))
        shares = [budget // parts] * parts
        shares[0] += budget - sum(shares)
        for part in shares:
            if part <= 4 and rng.random() < 0.5:  # criteria beside groups
                children.extend(leaf() for _ in range(part))
            else:
                node = Node(f"g{next(counter)}", rng.choice([1.0, 2.0, 0.5, 4.0]))
                node.children = build(level + 1, part)
                children.append(node)
        return children

    return Node("root", 1.0, build(0, leaves_wanted))

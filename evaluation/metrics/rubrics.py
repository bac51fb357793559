"""Scoring strategies for rubrics of every shape: flat lists, aspects, weighted trees of any
depth, points with penalty criteria. Plain Python; docs/metrics.md#scoring-strategies has
every formula with a worked example.

A checklist is a tree: its groups (nested through `parent`, each with a positive weight) and
its criteria, each in at most one group (`group` None: at the top). A criterion's weight is
negative for a penalty, a pitfall the answer should avoid: it is *met* when the answer does
the bad thing, as its judge question asks, and the sign alone says it counts against.

Every strategy reads one fact per criterion: is it *satisfied* (a positive criterion met, a
penalty not met: `satisfied`, the one rule, whose SQL form is evaluation.metrics.rubrics_sql),
with |weight| as its weight; `points` alone reads the sign. What an undecided criterion
(no valid vote, a tied panel) counts as is the checklist's choice (`UNDECIDED`): under
`excluded` (the default) it leaves every numerator and denominator, and a group with no
decided criterion is undecided and leaves its parent's denominator; under `not_met` it
counts as not met, as Axion, PaperBench (a missing grade is 0) and HealthBench count it: a
positive criterion unsatisfied, a penalty not committed (`satisfied(..., undecided=)`;
`GroupCounts.read_as` folds the counted undecided criteria in the same way). An
adjudication has already replaced the judges' verdict in `outcome` when a criterion gets
here (evaluation.runs.scores, evaluation.rewards.reward).

Scores are computed from per-group counts (`GroupCounts`: what a database GROUP BY over a
run's verdicts gives), so a run of a million verdicts never brings a verdict into Python;
`score_rubric` counts criteria into the same counts first, so both ways share one formula.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property

STRATEGIES = ("share", "weighted", "concept", "aspect", "blend", "tree", "points")
DEFAULT_STRATEGY = "share"
DEFAULT_BLEND_WEIGHT = 0.7

# What an undecided criterion counts as: left out of every total, or not met.
EXCLUDED, NOT_MET = "excluded", "not_met"
UNDECIDED = (EXCLUDED, NOT_MET)
DEFAULT_UNDECIDED = EXCLUDED


def check_strategy(name: str) -> str:
    if name not in STRATEGIES:
        raise ValueError(f"unknown scoring strategy {name!r}; known: {', '.join(STRATEGIES)}")
    return name


def check_undecided(name: str) -> str:
    if name not in UNDECIDED:
        raise ValueError(f"unknown undecided setting {name!r}; known: {', '.join(UNDECIDED)}")
    return name


@dataclass(frozen=True)
class Group:
    """One group of a checklist. `key` is any id unique in the checklist (the app uses the
    row id as text); `parent` is the key of its parent group, None at the top."""

    key: str
    parent: str | None = None
    weight: float | Decimal = 1.0
    title: str = ""
    external_id: str = ""
    position: int = 0


class TreeError(ValueError):
    """A bad tree: a cycle, an unknown parent (one in another checklist), a weight that is not
    positive. `group` names the group at fault, `field` its column."""

    def __init__(self, group: str, field: str, message: str) -> None:
        super().__init__(message)
        self.group = group
        self.field = field


@dataclass(frozen=True)
class Tree:
    """A checklist's groups, checked and ordered once: `order` lists them children first, so
    that one pass sums a subtree into its parent."""

    groups: Mapping[str, Group]
    order: tuple[str, ...]  # children before parents
    tops: tuple[str, ...]  # top-level groups, by position
    depth: Mapping[str, int]  # 1 for a top-level group

    @classmethod
    def of(cls, groups: Iterable[Group]) -> Tree:
        by_key: dict[str, Group] = {}
        for group in groups:
            if group.key in by_key:
                raise TreeError(group.key, "external_id", f"group {group.key!r} appears twice")
            weight = float(group.weight)
            if not math.isfinite(weight) or weight <= 0:
                raise TreeError(
                    group.key, "weight", f"group {group.key!r}: weight must be positive"
                )
            by_key[group.key] = group
        for group in by_key.values():
            if group.parent is not None and group.parent not in by_key:
                raise TreeError(
                    group.key,
                    "parent",
                    f"group {group.key!r}: parent {group.parent!r} is not a group of this "
                    "checklist",
                )
        depth: dict[str, int] = {}
        for key in by_key:
            # Walk up to a known depth or the top; a walk longer than the tree is a cycle.
            path: list[str] = []
            at: str | None = key
            while at is not None and at not in depth:
                if len(path) > len(by_key):
                    raise TreeError(key, "parent", f"group {key!r}: its parents form a cycle")
                path.append(at)
                at = by_key[at].parent
            known = 0 if at is None else depth[at]
            for step in reversed(path):
                known += 1
                depth[step] = known
        order = tuple(sorted(by_key, key=lambda k: -depth[k]))
        tops = tuple(
            sorted(
                (k for k, g in by_key.items() if g.parent is None),
                key=lambda k: (by_key[k].position, k),
            )
        )
        return cls(by_key, order, tops, depth)

    # Read for every answer scored by the tree (50,000 answers of a million-verdict run):
    # computed once per tree. A cached_property writes the instance's __dict__ directly,
    # which a frozen dataclass allows.
    @cached_property
    def reading(self) -> tuple[str, ...]:
        """The groups in reading order (_preorder)."""
        return tuple(_preorder(self))

    @cached_property
    def weights(self) -> dict[str, float]:
        return {key: float(group.weight) for key, group in self.groups.items()}

    def top_of(self) -> dict[str, str]:
        """Each group's top-level ancestor (itself at the top)."""
        top: dict[str, str] = {}
        for key in sorted(self.groups, key=lambda k: self.depth[k]):
            parent = self.groups[key].parent
            top[key] = key if parent is None else top[parent]
        return top


EMPTY_TREE = Tree({}, (), (), {})


def satisfied(
    outcome: str, weight: float | Decimal, undecided: str = DEFAULT_UNDECIDED
) -> bool | None:
    """The one rule every strategy reads: is this criterion satisfied? A positive criterion
    (weight 0 included) when met (`pass`), a penalty (negative weight) when not met (`fail`:
    the pitfall avoided). An undecided criterion (anything but pass or fail): None under
    `excluded`, left out; under `not_met` read as not met, as `fail`. Its SQL form is
    evaluation.metrics.rubrics_sql.satisfied (the counts, which `GroupCounts.read_as` folds
    by the same rule), held to this on the same cases."""
    if outcome == "pass":
        return weight >= 0
    if outcome == "fail" or undecided == NOT_MET:
        return weight < 0
    return None


def outcome_shown(outcome: str, is_penalty: bool) -> tuple[str, str]:
    """How a verdict, vote or label on a criterion reads on a page: (word, css outcome).
    A penalty's "pass" means the answer did the bad thing: it reads "committed", in the
    colour of a failure; its "fail" reads "avoided", in the colour of a pass (satisfied()
    above). Positive criteria and undecided outcomes read as they are."""
    if is_penalty and outcome in ("pass", "fail"):
        return ("committed", "fail") if outcome == "pass" else ("avoided", "pass")
    return outcome, outcome


@dataclass
class GroupCounts:
    """A group's own criteria (not its subgroups'), enabled only, counted: satisfied or not,
    decided or not, with their |weight|s; and the positive weight met and the penalty weight
    met, for points. `undecided` counts criteria with no verdict; the last three fields say
    what they weigh (Σ |weight|, Σ weight of the positive ones, how many are penalties), so
    that `read_as` can count them as not met without going back to the criteria."""

    satisfied: int = 0
    unsatisfied: int = 0
    undecided: int = 0
    weight_satisfied: float = 0.0
    weight_decided: float = 0.0
    points_met: float = 0.0  # Σ weight of met positive criteria
    penalty_met: float = 0.0  # Σ |weight| of met penalties
    points_decided: float = 0.0  # Σ weight of decided positive criteria
    weight_undecided: float = 0.0  # Σ |weight| of undecided criteria
    points_undecided: float = 0.0  # Σ weight of undecided positive criteria
    undecided_penalties: int = 0  # undecided criteria that are penalties

    def add(self, other: GroupCounts) -> None:
        self.satisfied += other.satisfied
        self.unsatisfied += other.unsatisfied
        self.undecided += other.undecided
        self.weight_satisfied += other.weight_satisfied
        self.weight_decided += other.weight_decided
        self.points_met += other.points_met
        self.penalty_met += other.penalty_met
        self.points_decided += other.points_decided
        self.weight_undecided += other.weight_undecided
        self.points_undecided += other.points_undecided
        self.undecided_penalties += other.undecided_penalties

    @property
    def decided(self) -> int:
        """Criteria the strategies count: the decided ones, and the undecided ones too
        once read as not met."""
        return self.satisfied + self.unsatisfied

    def read_as(self, undecided: str) -> GroupCounts:
        """These counts with the undecided criteria counted as `undecided` says: unchanged
        under `excluded`; under `not_met`, what counting each one by satisfied(outcome,
        weight, NOT_MET) gives: a positive criterion unsatisfied (its weight decided, no
        point met), a penalty satisfied (not committed: no penalty met). `undecided`
        still counts them, for the pages. Read once: the counts it gives are not to be read
        again."""
        if check_undecided(undecided) == EXCLUDED:
            return self
        penalties = self.undecided_penalties
        return GroupCounts(
            satisfied=self.satisfied + penalties,
            unsatisfied=self.unsatisfied + self.undecided - penalties,
            undecided=self.undecided,
            weight_satisfied=self.weight_satisfied + self.weight_undecided - self.points_undecided,
            weight_decided=self.weight_decided + self.weight_undecided,
            points_met=self.points_met,
            penalty_met=self.penalty_met,
            points_decided=self.points_decided + self.points_undecided,
            weight_undecided=self.weight_undecided,
            points_undecided=self.points_undecided,
            undecided_penalties=penalties,
        )

    def decided_only(self, undecided: str) -> tuple[int, int]:
        """(met, missing) of counts read_as(undecided) gave, the undecided criteria apart
        whatever they were read as: the decided criteria satisfied and not, for a reader
        who is shown the undecided ones beside them."""
        if undecided == EXCLUDED:
            return self.satisfied, self.unsatisfied
        penalties = self.undecided_penalties
        return self.satisfied - penalties, self.unsatisfied - (self.undecided - penalties)


@dataclass(frozen=True)
class RubricCriterion:
    """One enabled criterion with its verdict: pass (met), fail (not met) or undecided."""

    outcome: str
    weight: float | Decimal = 1.0
    group: str | None = None

    def count(self, into: GroupCounts) -> None:
        weight = float(self.weight)
        is_satisfied = satisfied(self.outcome, weight)
        if is_satisfied is None:
            into.undecided += 1
            into.weight_undecided += abs(weight)
            if weight >= 0:
                into.points_undecided += weight
            else:
                into.undecided_penalties += 1
            return
        met = self.outcome == "pass"
        into.satisfied += is_satisfied
        into.unsatisfied += not is_satisfied
        into.weight_decided += abs(weight)
        into.weight_satisfied += abs(weight) if is_satisfied else 0.0
        if weight >= 0:
            into.points_decided += weight
            into.points_met += weight if met else 0.0
        elif met:
            into.penalty_met += -weight


@dataclass(frozen=True)
class GroupScore:
    key: str
    external_id: str
    title: str
    depth: int
    score: float | None  # the strategy's value on the group's subtree; None: undecided
    met: int  # decided criteria of the subtree satisfied (a penalty: avoided)
    missing: int  # decided and not satisfied (a penalty: committed)
    undecided: int  # whatever the setting counted them as


@dataclass(frozen=True)
class RubricScore:
    scoring: str
    value: float | None
    groups: tuple[GroupScore, ...] = field(default=())
    undecided: int = 0  # the checklist's undecided criteria, whatever they counted as


def _clip(value: float) -> float:
    return min(1.0, max(0.0, value))


def _ratio(numerator: float, denominator: float) -> float | None:
    return numerator / denominator if denominator > 0 else None


def _blend(weight: float, concept: float | None, aspect: float | None) -> float | None:
    if concept is None or aspect is None:
        return None
    return weight * concept + (1 - weight) * aspect


def score_counted(
    counts: Mapping[str | None, GroupCounts],
    tree: Tree,
    scoring: str,
    *,
    blend_weight: float = DEFAULT_BLEND_WEIGHT,
    undecided: str = DEFAULT_UNDECIDED,
) -> RubricScore:
    """The checklist's score under `scoring` from its per-group counts (key None: the
    criteria in no group), its undecided criteria counted as `undecided` says. For `aspect`
    and `blend`, the aspects are the top-level groups, and each criterion in no group is an
    aspect of its own."""
    check_strategy(scoring)
    counts = {key: counted.read_as(undecided) for key, counted in counts.items()}
    own = {key: counts.get(key) or GroupCounts() for key in tree.groups}
    # Subtree totals, children first; tree scores bottom-up.
    subtree: dict[str, GroupCounts] = {}
    node: dict[str, float | None] = {}
    tree_sums: dict[str, list[float]] = {k: [0.0, 0.0] for k in tree.groups}  # Σ w·s, Σ w
    for key in tree.order:
        total = subtree.setdefault(key, GroupCounts())
        total.add(own[key])
        mine = tree_sums[key]
        mine[0] += own[key].weight_satisfied
        mine[1] += own[key].weight_decided
        node[key] = _ratio(mine[0], mine[1])
        parent = tree.groups[key].parent
        if parent is not None:
            subtree.setdefault(parent, GroupCounts()).add(total)
            if node[key] is not None:
                weight = tree.weights[key]
                tree_sums[parent][0] += weight * node[key]  # type: ignore[operator]
                tree_sums[parent][1] += weight
    whole = GroupCounts()
    loose = counts.get(None) or GroupCounts()
    whole.add(loose)
    for key in tree.tops:
        whole.add(subtree[key])

    def fully(total: GroupCounts) -> float | None:
        return None if total.decided == 0 else float(total.unsatisfied == 0)

    def value_of(total: GroupCounts, key: str | None) -> float | None:
        if scoring in _FLAT:
            return _flat_value(total, scoring)
        share = _ratio(total.satisfied, total.decided)
        if key is not None:  # a group: all or nothing, its tree node
            if scoring == "tree":
                return node[key]
            return (
                fully(total) if scoring == "aspect" else _blend(blend_weight, share, fully(total))
            )
        return None  # the checklist's aspect, blend and tree: below

    groups = tuple(
        GroupScore(
            key,
            tree.groups[key].external_id,
            tree.groups[key].title,
            tree.depth[key],
            value_of(subtree[key], key),
            *subtree[key].decided_only(undecided),
            subtree[key].undecided,
        )
        for key in tree.reading
    )
    if scoring in ("aspect", "blend"):
        tops = [a for k in tree.tops if (a := fully(subtree[k])) is not None]
        aspect = _ratio(sum(tops) + loose.satisfied, len(tops) + loose.decided)
        value = (
            aspect
            if scoring == "aspect"
            else _blend(blend_weight, _ratio(whole.satisfied, whole.decided), aspect)
        )
    elif scoring == "tree":
        numerator = loose.weight_satisfied
        denominator = loose.weight_decided
        for key in tree.tops:
            if node[key] is not None:
                numerator += tree.weights[key] * node[key]  # type: ignore[operator]
                denominator += tree.weights[key]
        value = _ratio(numerator, denominator)
    else:
        value = value_of(whole, None)
    return RubricScore(scoring, value, groups, whole.undecided)


def value_counted(
    counts: Mapping[str | None, GroupCounts],
    tree: Tree,
    scoring: str,
    *,
    blend_weight: float = DEFAULT_BLEND_WEIGHT,
    undecided: str = DEFAULT_UNDECIDED,
) -> float | None:
    """score_counted(...).value alone. The strategies that read the checklist's counts as
    one (share, concept, weighted, points) sum them without walking the tree: analytics
    score every (answer, checklist) and each criterion kind and source type of it, tens of
    thousands per run."""
    if scoring in _FLAT:
        total = GroupCounts()
        for counted in counts.values():
            total.add(counted)
        return _flat_value(total.read_as(undecided), scoring)
    return score_counted(
        counts, tree, scoring, blend_weight=blend_weight, undecided=undecided
    ).value


# The strategies that read a (sub)tree's criteria as one pool, whatever its groups.
_FLAT = ("share", "concept", "weighted", "points")


def _flat_value(total: GroupCounts, scoring: str) -> float | None:
    if scoring == "weighted":
        return _ratio(total.weight_satisfied, total.weight_decided)
    if scoring == "points":
        points = _ratio(total.points_met - total.penalty_met, total.points_decided)
        return None if points is None else _clip(points)
    return _ratio(total.satisfied, total.decided)  # share, concept


def _preorder(tree: Tree) -> list[str]:
    """The groups as a reader meets them: each followed by its children, by position."""
    children: dict[str | None, list[str]] = {}
    for key, group in tree.groups.items():
        children.setdefault(group.parent, []).append(key)
    for keys in children.values():
        keys.sort(key=lambda k: (tree.groups[k].position, k))
    out: list[str] = []
    stack = list(reversed(children.get(None, [])))
    while stack:
        key = stack.pop()
        out.append(key)
        stack.extend(reversed(children.get(key, [])))
    return out


def count_criteria(criteria: Iterable[RubricCriterion]) -> dict[str | None, GroupCounts]:
    counts: dict[str | None, GroupCounts] = {}
    for criterion in criteria:
        criterion.count(counts.setdefault(criterion.group, GroupCounts()))
    return counts


def score_rubric(
    criteria: Sequence[RubricCriterion],
    tree: Tree = EMPTY_TREE,
    scoring: str = DEFAULT_STRATEGY,
    *,
    blend_weight: float = DEFAULT_BLEND_WEIGHT,
    undecided: str = DEFAULT_UNDECIDED,
) -> RubricScore:
    """One checklist's score from its enabled criteria's verdicts (see score_counted)."""
    return score_counted(
        count_criteria(criteria), tree, scoring, blend_weight=blend_weight, undecided=undecided
    )

"""Undecided criteria as the dataset's choice (issue 41): under `not_met` every strategy
equals its source tool's figure (Axion AnswerCriteria's concept, aspect and blend,
PaperBench's tree, HealthBench's points), computed by the small independent
implementations of tests/support/peer_oracles.py on generated cases; under `excluded` it
equals the same tool's figure on the decided criteria alone. The worked examples of
docs/metrics.md#undecided-criteria, and the aspect and tree semantics it states."""

from __future__ import annotations

import random
from dataclasses import astuple

import pytest

from evaluation.metrics import rubrics
from evaluation.metrics.rubrics import GroupCounts, RubricCriterion, Tree, score_rubric
from evaluation.metrics.scoring import share_score
from tests.support import peer_oracles as peers

CASES = 300


def outcome(grade: bool | None) -> str:
    return {True: "pass", False: "fail", None: "undecided"}[grade]


def from_aspects(aspects: list[list[peers.Criterion]]) -> tuple[list[RubricCriterion], Tree]:
    """Axion's aspects as top-level groups of the app's checklist."""
    groups = [rubrics.Group(f"a{n}", None, 1, position=n) for n in range(len(aspects))]
    criteria = [
        RubricCriterion(outcome(c.grade), c.weight, f"a{n}")
        for n, aspect in enumerate(aspects)
        for c in aspect
    ]
    return criteria, Tree.of(groups)


def from_tree(root: peers.Aspect) -> tuple[list[RubricCriterion], Tree]:
    """A PaperBench tree as the app's groups (the root is the checklist)."""
    groups: list[rubrics.Group] = []
    criteria: list[RubricCriterion] = []

    def walk(node: peers.Aspect, key: str | None) -> None:
        for n, child in enumerate(node.children):
            if isinstance(child, peers.Criterion):
                criteria.append(RubricCriterion(outcome(child.grade), child.weight, key))
            else:
                sub = f"{key or ''}/{n}"
                groups.append(rubrics.Group(sub, key, child.weight, position=n))
                walk(child, sub)

    walk(root, None)
    return criteria, Tree.of(groups)


def close(a: float | None, b: float | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and a == pytest.approx(b))


@pytest.mark.parametrize("seed", range(3))
def test_concept_aspect_and_blend_equal_axion(seed):
    rng = random.Random(seed)
    for _ in range(CASES):
        aspects = peers.flat_aspects(rng)
        criteria, tree = from_aspects(aspects)
        decided = [[c for c in a if c.grade is not None] for a in aspects]
        decided = [a for a in decided if a]
        for undecided, reading in (("not_met", aspects), ("excluded", decided)):
            flat = [c for a in reading for c in a]
            expected = {
                "concept": peers.axion_concept(flat),
                "aspect": peers.axion_aspect(reading),
                "blend": peers.axion_blend(reading, 0.7),
            }
            for strategy, figure in expected.items():
                got = score_rubric(criteria, tree, strategy, undecided=undecided).value
                assert close(got, figure), (strategy, undecided, aspects)


@pytest.mark.parametrize("seed", range(3))
def test_tree_equals_paperbench(seed):
    rng = random.Random(seed)
    for _ in range(CASES):
        root = peers.weighted_tree(rng, depth=3)
        criteria, tree = from_tree(root)
        got = score_rubric(criteria, tree, "tree", undecided="not_met").value
        assert close(got, peers.paperbench(root)), root
        decided = peers.decided_only(root)
        got = score_rubric(criteria, tree, "tree", undecided="excluded").value
        assert close(got, None if decided is None else peers.paperbench(decided)), root


@pytest.mark.parametrize("seed", range(3))
def test_points_equal_healthbench_per_answer(seed):
    rng = random.Random(seed)
    for _ in range(CASES):
        listed = peers.points_list(rng)
        criteria = [RubricCriterion(outcome(c.grade), c.weight) for c in listed]
        got = score_rubric(criteria, scoring="points", undecided="not_met").value
        assert close(got, peers.healthbench_clipped(listed)), listed
        decided = [c for c in listed if c.grade is not None]
        got = score_rubric(criteria, scoring="points", undecided="excluded").value
        assert close(got, peers.healthbench_clipped(decided)), listed


def test_the_worked_examples_of_the_docs():
    # Concept: six criteria, four met, one not, one undecided.
    six = [RubricCriterion(o) for o in ("pass",) * 4 + ("fail", "undecided")]
    assert score_rubric(six, scoring="concept").value == pytest.approx(0.8)
    assert score_rubric(six, scoring="concept", undecided="not_met").value == pytest.approx(4 / 6)
    # Aspect and blend: A {met, met, undecided}, B {met, not met}, C {undecided}, D {met}.
    aspects = [["pass", "pass", "undecided"], ["pass", "fail"], ["undecided"], ["pass"]]
    groups = Tree.of(rubrics.Group(k, None, 1, position=n) for n, k in enumerate("ABCD"))
    grouped = [RubricCriterion(o, 1, k) for k, a in zip("ABCD", aspects, strict=True) for o in a]
    assert score_rubric(grouped, groups, "aspect").value == pytest.approx(2 / 3)
    assert score_rubric(grouped, groups, "aspect", undecided="not_met").value == 0.25
    assert score_rubric(grouped, groups, "blend").value == pytest.approx(0.76)
    assert score_rubric(grouped, groups, "blend", undecided="not_met").value == pytest.approx(
        0.7 * 4 / 7 + 0.3 * 0.25
    )
    # Tree: Facts (weight 3) {met, met, undecided of weight 2}, Form (weight 1) {met, not}.
    tree = Tree.of([rubrics.Group("Facts", None, 3), rubrics.Group("Form", None, 1, position=1)])
    leaves = [RubricCriterion("pass", 1, "Facts"), RubricCriterion("pass", 1, "Facts"),
              RubricCriterion("undecided", 2, "Facts"), RubricCriterion("pass", 1, "Form"),
              RubricCriterion("fail", 1, "Form")]  # fmt: skip
    assert score_rubric(leaves, tree, "tree").value == pytest.approx(0.875)
    assert score_rubric(leaves, tree, "tree", undecided="not_met").value == pytest.approx(0.5)
    # Points: +3 met, +5 not met, +2 undecided, a penalty of 2 avoided.
    points = [RubricCriterion("pass", 3), RubricCriterion("fail", 5),
              RubricCriterion("undecided", 2), RubricCriterion("fail", -2)]  # fmt: skip
    assert score_rubric(points, scoring="points").value == pytest.approx(0.375)
    assert score_rubric(points, scoring="points", undecided="not_met").value == pytest.approx(0.3)


def test_an_aspect_whose_decided_criteria_all_pass_but_one_is_undecided():
    tree = Tree.of([rubrics.Group("A", None, 1), rubrics.Group("B", None, 1, position=1)])
    criteria = [RubricCriterion("pass", 1, "A"), RubricCriterion("undecided", 1, "A"),
                RubricCriterion("fail", 1, "B")]  # fmt: skip
    excluded = score_rubric(criteria, tree, "aspect")
    not_met = score_rubric(criteria, tree, "aspect", undecided="not_met")
    # Excluded: fully met on what was decided; not met: an undecided criterion breaks it.
    assert [g.score for g in excluded.groups] == [1.0, 0.0]
    assert excluded.value == 0.5
    assert [g.score for g in not_met.groups] == [0.0, 0.0]
    assert not_met.value == 0.0
    # Either way the group shows its decided criteria and its undecided one apart.
    for scored in (excluded, not_met):
        assert (scored.groups[0].met, scored.groups[0].missing, scored.groups[0].undecided) == (
            1, 0, 1,
        )  # fmt: skip
        assert scored.undecided == 1


def test_an_aspect_with_nothing_decided_leaves_or_counts_as_not_met():
    tree = Tree.of([rubrics.Group("A", None, 1), rubrics.Group("B", None, 1, position=1)])
    criteria = [RubricCriterion("undecided", 1, "A"), RubricCriterion("pass", 1, "B")]
    excluded = score_rubric(criteria, tree, "aspect")
    assert excluded.groups[0].score is None  # no figure: it leaves the aspects
    assert excluded.value == 1.0
    not_met = score_rubric(criteria, tree, "aspect", undecided="not_met")
    assert not_met.groups[0].score == 0.0
    assert not_met.value == 0.5


def test_an_undecided_tree_leaf_leaves_its_node_or_scores_zero():
    tree = Tree.of([rubrics.Group("A", None, 1), rubrics.Group("A1", "A", 3),
                    rubrics.Group("A2", "A", 1, position=1)])  # fmt: skip
    criteria = [RubricCriterion("undecided", 2, "A1"), RubricCriterion("pass", 1, "A2")]
    excluded = score_rubric(criteria, tree, "tree")
    by_key = {g.key: g.score for g in excluded.groups}
    assert by_key == {"A": 1.0, "A1": None, "A2": 1.0}  # A1 leaves A's denominator
    not_met = score_rubric(criteria, tree, "tree", undecided="not_met")
    by_key = {g.key: g.score for g in not_met.groups}
    assert by_key == {"A": pytest.approx(0.25), "A1": 0.0, "A2": 1.0}


def test_an_undecided_penalty_counts_as_not_committed():
    criteria = [RubricCriterion("pass", 2), RubricCriterion("undecided", -5)]
    for strategy in ("share", "weighted", "points"):
        assert score_rubric(criteria, scoring=strategy, undecided="not_met").value == 1.0
    assert rubrics.satisfied("undecided", -5, "not_met") is True
    assert rubrics.satisfied("undecided", 5, "not_met") is False
    assert rubrics.satisfied("undecided", 5) is None


def test_penalties_alone_score_nothing_as_in_healthbench():
    criteria = [RubricCriterion("pass", -2), RubricCriterion("undecided", -1)]
    for undecided in rubrics.UNDECIDED:
        assert score_rubric(criteria, scoring="points", undecided=undecided).value is None
    assert peers.healthbench([peers.Criterion(-2, True)]) is None


def test_read_as_equals_counting_each_criterion_by_the_rule():
    rng = random.Random(5)
    for _ in range(200):
        listed = [(rng.choice(["pass", "fail", "undecided"]), rng.choice([-3, -1, 0, 0.5, 2]))
                  for _ in range(rng.randint(0, 8))]  # fmt: skip
        counted = GroupCounts()
        for o, w in listed:
            RubricCriterion(o, w).count(counted)
        # By hand: each undecided criterion read as a fail, then counted as decided.
        by_rule = GroupCounts()
        for o, w in listed:
            RubricCriterion("fail" if o == "undecided" else o, w).count(by_rule)
        folded = counted.read_as("not_met")
        assert astuple(folded)[:8] == pytest.approx(
            (*astuple(by_rule)[:2], counted.undecided, *astuple(by_rule)[3:8])
        )
        assert counted.read_as("excluded") is counted


def test_shares_follow_the_setting_and_keep_the_counts():
    counted = GroupCounts()
    for o in ("pass", "pass", "fail", "undecided"):
        RubricCriterion(o).count(counted)
    core = GroupCounts()
    RubricCriterion("undecided").count(core)
    excluded = share_score(counted, core)
    not_met = share_score(counted, core, "not_met")
    assert excluded.share == pytest.approx(2 / 3) and not_met.share == 0.5
    assert excluded.core_share is None and not_met.core_share == 0.0
    assert (not_met.passed, not_met.failed, not_met.undecided, not_met.total) == (2, 1, 1, 4)


def test_an_unknown_setting_is_refused():
    with pytest.raises(ValueError, match="unknown undecided setting 'zero'"):
        score_rubric([RubricCriterion("pass")], undecided="zero")


def test_the_models_choices_are_the_rules():
    from annotation.models import Undecided

    assert tuple(Undecided.values) == rubrics.UNDECIDED


def test_the_reward_strategy_reads_the_setting():
    from evaluation.rewards import reward

    checked = reward.ChecklistVerdicts(
        (RubricCriterion("pass"), RubricCriterion("undecided")), (True, True)
    )
    assert reward.strategy_named("concept")(checked) == 1.0
    assert reward.strategy_named("concept", undecided="not_met")(checked) == 0.5

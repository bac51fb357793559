"""Every scoring strategy held to an independent, recursive computation (tests/support/
rubric_oracle.py) on generated trees: depth 0 (no group) to 6, up to 2,000 criteria,
penalties, zero weights, undecided verdicts and adjudications; and the tree's refusals."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluation.metrics import rubrics
from evaluation.metrics.rubrics import Group, RubricCriterion, Tree, TreeError, score_rubric
from tests.support import rubric_oracle as oracle

STRATEGIES = rubrics.STRATEGIES


def flatten(root: oracle.Node) -> tuple[list[RubricCriterion], Tree]:
    """The oracle's nested objects as the implementation's rows: groups with parents and
    criteria with their group, as the database holds them."""
    groups: list[Group] = []
    criteria: list[RubricCriterion] = []

    def walk(node: oracle.Node, parent: str | None) -> None:
        for position, child in enumerate(node.children):
            if isinstance(child, oracle.Leaf):
                criteria.append(RubricCriterion(child.outcome, child.weight, parent))
            else:
                groups.append(
                    Group(child.key, parent, child.weight, child.key, child.key, position)
                )
                walk(child, child.key)

    walk(root, None)
    random.Random(len(criteria)).shuffle(groups)  # the tree's order must not matter
    return criteria, Tree.of(groups)


def close(a: float | None, b: float | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and abs(a - b) < 1e-9)


def check(root: oracle.Node, blend_weight: float = 0.7) -> None:
    criteria, tree = flatten(root)
    by_key = {g.key: g for g in oracle.groups(root)}
    for strategy in STRATEGIES:
        got = score_rubric(criteria, tree, strategy, blend_weight=blend_weight)
        want = oracle.value(root, strategy, blend_weight)
        assert close(got.value, want), (strategy, got.value, want)
        assert len(got.groups) == len(by_key)
        for group in got.groups:
            node = by_key[group.key]
            expected = oracle.group_value(node, strategy, blend_weight)
            assert close(group.score, expected), (strategy, group.key, group.score, expected)
            decided = oracle.decided(node)
            assert group.met == sum(oracle.satisfied(x) for x in decided)
            assert group.missing == len(decided) - group.met
            assert group.undecided == len(oracle.leaves(node)) - len(decided)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32),
    depth=st.integers(0, 6),
    leaves=st.integers(1, 120),
    undecided=st.sampled_from([0.0, 0.1, 0.6]),
    blend_weight=st.floats(0, 1),
)
def test_every_strategy_matches_the_oracle(seed, depth, leaves, undecided, blend_weight):
    rng = random.Random(seed)
    root = oracle.generate(rng, depth=depth, leaves_wanted=leaves, undecided=undecided)
    check(root, blend_weight)


@pytest.mark.parametrize("depth", [1, 3, 6])
def test_large_trees_of_two_thousand_criteria(depth):
    root = oracle.generate(random.Random(depth), depth=depth, leaves_wanted=2000)
    assert 1900 <= len(oracle.leaves(root)) <= 2100
    check(root)


def test_points_are_clipped_to_zero_and_one():
    tree = Tree.of([Group("a")])
    # One point possible, five lost to a committed pitfall: -4 clipped to 0.
    bad = [RubricCriterion("pass", 1, "a"), RubricCriterion("pass", -5, "a")]
    assert score_rubric(bad, tree, "points").value == 0.0
    assert score_rubric(bad, tree, "points").groups[0].score == 0.0
    # Avoided pitfalls add nothing: 1 of 1 possible.
    good = [RubricCriterion("pass", 1), RubricCriterion("fail", -5)]
    assert score_rubric(good, Tree.of([]), "points").value == 1.0
    # Only pitfalls decided: nothing possible, no score.
    assert score_rubric([RubricCriterion("pass", -1)], Tree.of([]), "points").value is None


def test_a_group_with_nothing_decided_leaves_its_parents_denominator():
    tree = Tree.of([Group("a", weight=3), Group("b", weight=1)])
    criteria = [RubricCriterion("undecided", 1, "a"), RubricCriterion("pass", 1, "b")]
    score = score_rubric(criteria, tree, "tree")
    assert score.value == 1.0
    assert [g.score for g in score.groups] == [None, 1.0]


def test_a_worked_tree():
    # docs/metrics.md's tree example: (2 × 0.5 + 1 × 1) / 3.
    tree = Tree.of([Group("a", weight=2), Group("a1", "a"), Group("a2", "a"), Group("b")])
    criteria = [
        RubricCriterion("pass", 1, "a1"),
        RubricCriterion("fail", 1, "a2"),
        RubricCriterion("pass", 1, "b"),
    ]
    assert score_rubric(criteria, tree, "tree").value == pytest.approx(2 / 3)
    assert score_rubric(criteria, tree, "aspect").value == 0.5
    assert score_rubric(criteria, tree, "blend").value == pytest.approx(0.7 * 2 / 3 + 0.3 * 0.5)


@pytest.mark.parametrize(
    ("groups", "field"),
    [
        ([Group("a", "b"), Group("b", "a")], "parent"),
        ([Group("a", "a")], "parent"),
        ([Group("a", "elsewhere")], "parent"),
        ([Group("a", weight=0)], "weight"),
        ([Group("a", weight=-1)], "weight"),
    ],
)
def test_bad_trees_are_refused(groups, field):
    with pytest.raises(TreeError) as refused:
        Tree.of(groups)
    assert refused.value.field == field


def test_an_unknown_strategy_is_refused():
    with pytest.raises(ValueError, match="unknown scoring strategy"):
        score_rubric([], Tree.of([]), "median")


def test_a_penalty_reads_avoided_or_committed_and_everything_else_as_it_is():
    from evaluation.metrics.rubrics import outcome_shown, satisfied

    assert outcome_shown("fail", True) == ("avoided", "pass")
    assert outcome_shown("pass", True) == ("committed", "fail")
    assert outcome_shown("pass", False) == ("pass", "pass")
    assert outcome_shown("fail", False) == ("fail", "fail")
    for outcome in ("unparseable", "error", ""):
        assert outcome_shown(outcome, True) == (outcome, outcome)
    # The colour agrees with the one satisfied rule the scores read.
    for outcome in ("pass", "fail"):
        for weight in (2, -2):
            assert (outcome_shown(outcome, weight < 0)[1] == "pass") is satisfied(outcome, weight)

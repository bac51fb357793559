"""Side by side's rules without a database: one answer per query and side, the pairs a
filter keeps and their order, and a criterion's two outcomes compared by the one satisfied
rule (a penalty is met when avoided), the differing ones first."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from evaluation.metrics.rubrics import NOT_MET, satisfied
from evaluation.runs.scores import AnswerBrief
from evaluation.side_by_side import pairing
from evaluation.side_by_side.pairing import (
    A_MEETS,
    B_MEETS,
    SAME,
    UNCOMPARED,
    compare_outcomes,
    differing_first,
    pair_by_query,
    select_pairs,
)


def brief(answer: int, query: int, value: float | None, undecided: int = 0) -> AnswerBrief:
    return AnswerBrief(answer, query, 1, value, value, undecided)


def test_pairs_are_the_queries_both_sides_answered():
    a = [brief(1, 10, 0.5), brief(2, 11, 0.25), brief(3, 12, 1.0)]
    b = [brief(7, 11, 0.75), brief(8, 12, 0.0), brief(9, 13, 0.5)]
    paired = pair_by_query(a, b)
    assert [(p.query_id, p.a.answer_id, p.b.answer_id) for p in paired.pairs] == [
        (11, 2, 7), (12, 3, 8),
    ]  # fmt: skip
    assert (paired.only_a, paired.only_b) == (1, 1)
    assert [p.difference for p in paired.pairs] == [0.5, -1.0]


def test_one_answer_per_query_and_side_the_lowest_id():
    """Two run labels of one system on one query: the first answer stands for the side, as
    the run comparison links its queries."""
    paired = pair_by_query([brief(5, 10, 0.1), brief(4, 10, 0.9)], [brief(6, 10, 0.5)])
    assert [p.a.answer_id for p in paired.pairs] == [4]


def test_two_runs_of_one_answer_pair_it_with_itself():
    paired = pair_by_query([brief(4, 10, 0.25)], [brief(4, 10, 0.75)])
    assert paired.pairs[0].a.answer_id == paired.pairs[0].b.answer_id == 4
    assert paired.pairs[0].difference == 0.5


def pairs():
    return pair_by_query(
        [brief(1, 1, 0.5), brief(2, 2, 0.5), brief(3, 3, 0.5), brief(4, 4, None), brief(5, 5, 0.4)],
        [
            brief(6, 1, 0.9),
            brief(7, 2, 0.1),
            brief(8, 3, 0.55),
            brief(9, 4, 0.5),
            brief(10, 5, 0.4),
        ],
    ).pairs


def queries(found) -> list[int]:
    return [p.query_id for p in found]


def test_orders_largest_difference_first_unscored_last():
    # |diff|: q1 0.4, q2 0.4, q3 0.05, q5 0; q4 has no score on A.
    assert queries(select_pairs(pairs())) == [1, 2, 3, 5, 4]
    assert queries(select_pairs(pairs(), sort="regressions")) == [2, 5, 3, 1, 4]
    assert queries(select_pairs(pairs(), sort="gains")) == [1, 3, 5, 2, 4]
    assert queries(select_pairs(pairs(), sort="query")) == [1, 2, 3, 4, 5]
    assert queries(select_pairs(pairs(), sort="sideways")) == [1, 2, 3, 5, 4]


def test_min_difference_keeps_differences_strictly_larger_either_way():
    assert queries(select_pairs(pairs(), min_difference=0.1)) == [1, 2]
    assert queries(select_pairs(pairs(), min_difference=0.4)) == []  # 0.9 - 0.5 is not > 0.4
    assert queries(select_pairs(pairs(), min_difference=0.0)) == [1, 2, 3]  # unscored left out


def test_query_filter_keeps_only_its_queries():
    assert queries(select_pairs(pairs(), queries={2, 4, 99})) == [2, 4]
    assert queries(select_pairs(pairs(), queries=set())) == []
    assert queries(select_pairs(pairs(), queries={1, 3}, min_difference=0.1)) == [1]


@pytest.mark.parametrize(
    ("a", "b", "weight", "setting", "expected"),
    [
        ("pass", "fail", 1.0, "excluded", A_MEETS),
        ("fail", "pass", 1.0, "excluded", B_MEETS),
        ("pass", "pass", 1.0, "excluded", SAME),
        ("fail", "fail", 0.0, "excluded", SAME),
        # A penalty: "pass" is the pitfall committed, so B (fail: avoided) meets it.
        ("pass", "fail", -1.0, "excluded", B_MEETS),
        ("fail", "pass", -1.0, "excluded", A_MEETS),
        ("pass", "undecided", 1.0, "excluded", UNCOMPARED),
        ("pass", None, 1.0, "excluded", UNCOMPARED),
        # Read as not met, an undecided criterion differs as the scores count it.
        ("pass", "undecided", 1.0, NOT_MET, A_MEETS),
    ],
)
def test_outcomes_compared_by_the_one_satisfied_rule(a, b, weight, setting, expected):
    def met(outcome):
        return None if outcome is None else satisfied(outcome, weight, setting)

    assert compare_outcomes(met(a), met(b)) == expected


@dataclass(frozen=True)
class Row:
    name: str
    difference: str
    position: tuple


def test_differing_first_then_uncompared_then_same_in_checklist_order():
    rows = [
        Row("s1", SAME, (1, 1)), Row("b1", B_MEETS, (1, 2)), Row("u1", UNCOMPARED, (1, 3)),
        Row("a2", A_MEETS, (2, 1)), Row("a1", A_MEETS, (1, 4)), Row("s0", SAME, (1, 0)),
    ]  # fmt: skip
    assert [r.name for r in differing_first(rows)] == ["a1", "a2", "b1", "u1", "s0", "s1"]
    assert set(pairing.DIFFERENCE_LABELS) == set(pairing.DIFFERENCES)

"""Answer scores: plain, weighted and core shares; undecided and disabled criteria excluded."""

from __future__ import annotations

from decimal import Decimal

import pytest

from evaluation.metrics import (
    AnswerScore,
    ScoredCriterion,
    mean_grade,
    mean_score,
    passes_threshold,
    score_answer,
)


def crit(outcome: str, **kwargs: object) -> ScoredCriterion:
    key = kwargs.pop("key", "c")
    return ScoredCriterion(key=str(key), outcome=outcome, **kwargs)  # type: ignore[arg-type]


# --- share ----------------------------------------------------------------------------------


def test_share_is_passed_over_decided() -> None:
    score = score_answer([crit("pass"), crit("pass"), crit("fail"), crit("pass")])
    assert (score.passed, score.failed, score.undecided, score.total) == (3, 1, 0, 4)
    assert score.share == 0.75
    assert score.decided == 4


def test_undecided_is_excluded_from_the_denominator_and_reported() -> None:
    # An unparseable judge output (undecided) must neither lower nor raise the score.
    score = score_answer([crit("pass"), crit("fail"), crit("undecided"), crit("undecided")])
    assert score.share == 0.5
    assert score.undecided == 2
    assert score.total == 4
    assert score.decided == 2


def test_nothing_decided_gives_no_score_rather_than_zero() -> None:
    score = score_answer([crit("undecided"), crit("undecided")])
    assert score.share is None
    assert score.weighted_share is None
    assert score.core_share is None
    assert (score.passed, score.failed, score.undecided, score.total) == (0, 0, 2, 2)


def test_empty_checklist() -> None:
    assert score_answer([]) == AnswerScore(0, 0, 0, 0, None, None, None)


def test_all_failed_is_zero_not_none() -> None:
    score = score_answer([crit("fail"), crit("fail")])
    assert score.share == 0.0
    assert score.weighted_share == 0.0


# --- disabled criteria ----------------------------------------------------------------------


def test_disabled_criteria_are_ignored_entirely() -> None:
    score = score_answer(
        [
            crit("pass"),
            crit("fail", enabled=False),
            crit("undecided", enabled=False),
            crit("fail", enabled=False, weight=10, core=True),
        ]
    )
    assert (score.passed, score.failed, score.undecided, score.total) == (1, 0, 0, 1)
    assert score.share == 1.0
    assert score.weighted_share == 1.0
    assert score.core_share == 1.0


def test_only_disabled_criteria_gives_no_score() -> None:
    score = score_answer([crit("pass", enabled=False)])
    assert score.total == 0
    assert score.share is None


# --- weighted share -------------------------------------------------------------------------


def test_weighted_share() -> None:
    score = score_answer(
        [
            crit("pass", weight=3),
            crit("fail", weight=1),
            crit("pass", weight=0.5),
            crit("undecided", weight=100),  # excluded from the denominator
        ]
    )
    assert score.weighted_share == pytest.approx(3.5 / 4.5)
    assert score.share == pytest.approx(2 / 3)


def test_weights_may_be_decimals_as_stored_by_the_model() -> None:
    score = score_answer(
        [crit("pass", weight=Decimal("1.50")), crit("fail", weight=Decimal("0.50"))]
    )
    assert score.weighted_share == pytest.approx(0.75)


def test_equal_weights_give_the_plain_share() -> None:
    criteria = [crit("pass", weight=2), crit("fail", weight=2), crit("pass", weight=2)]
    score = score_answer(criteria)
    assert score.weighted_share == pytest.approx(score.share)


def test_decided_criteria_of_zero_weight_give_no_weighted_share() -> None:
    score = score_answer([crit("pass", weight=0), crit("fail", weight=0)])
    assert score.share == 0.5
    assert score.weighted_share is None


@pytest.mark.parametrize("weight", [-1, float("nan"), float("inf")])
def test_invalid_weights_are_rejected(weight: float) -> None:
    with pytest.raises(ValueError, match="weight"):
        crit("pass", weight=weight)


def test_unknown_outcome_is_rejected() -> None:
    with pytest.raises(ValueError, match="outcome"):
        crit("unparseable")  # a vote outcome, not a verdict: aggregate first


# --- core share -----------------------------------------------------------------------------


def test_core_share_counts_core_criteria_only() -> None:
    score = score_answer(
        [
            crit("pass", core=True),
            crit("fail", core=True),
            crit("pass", core=True),
            crit("fail", core=False),
            crit("fail", core=False),
        ]
    )
    assert score.core_share == pytest.approx(2 / 3)
    assert score.share == pytest.approx(2 / 5)


def test_core_share_is_none_without_decided_core_criteria() -> None:
    score = score_answer([crit("pass", core=False), crit("undecided", core=True)])
    assert score.core_share is None
    assert score.share == 1.0


# --- mean over a query's checklists ---------------------------------------------------------


def test_mean_score_averages_checklists_equally_and_ignores_none() -> None:
    alice = score_answer([crit("pass")] * 3 + [crit("fail")])  # 0.75, 4 criteria
    bob = score_answer([crit("pass")] + [crit("fail")] * 9)  # 0.1, 10 criteria
    nobody = score_answer([crit("undecided")])  # None
    assert mean_score([alice, bob, nobody]) == pytest.approx((0.75 + 0.1) / 2)


def test_mean_score_of_other_attributes() -> None:
    a = score_answer([crit("pass", weight=3, core=False), crit("fail", weight=1)])
    b = score_answer([crit("pass", weight=1), crit("fail", weight=1)])
    assert mean_score([a, b], "weighted_share") == pytest.approx((0.75 + 0.5) / 2)
    assert mean_score([a, b], "core_share") == pytest.approx((0.0 + 0.5) / 2)


def test_mean_score_is_none_when_nothing_was_scored() -> None:
    assert mean_score([]) is None
    assert mean_score([score_answer([crit("undecided")])]) is None


def test_mean_score_rejects_unknown_attributes() -> None:
    with pytest.raises(ValueError, match="attr"):
        mean_score([score_answer([crit("pass")])], "passed")


# --- pass threshold -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("score", "threshold", "expected"),
    [
        (0.75, 0.7, True),
        (0.7, 0.7, True),  # meeting the threshold passes
        (0.69, 0.7, False),
        ((0.6 + 0.7 + 0.8) / 3, 0.7, True),  # 0.6999999999999998: float noise is not a fail
        (0.0, 0.0, True),
        (None, 0.5, None),
    ],
)
def test_passes_threshold(score: float | None, threshold: float, expected: bool | None) -> None:
    assert passes_threshold(score, threshold) is expected


def test_passes_threshold_rejects_a_threshold_outside_0_1() -> None:
    with pytest.raises(ValueError, match="threshold"):
        passes_threshold(0.5, 70)


# --- graded view ----------------------------------------------------------------------------


def test_mean_grade_averages_samples_and_ignores_unparseable() -> None:
    assert mean_grade([4, 5, None, 3]) == 4.0
    assert mean_grade([1, 2]) == 1.5


def test_mean_grade_is_none_without_a_grade() -> None:
    assert mean_grade([]) is None
    assert mean_grade([None, None]) is None


@pytest.mark.parametrize("grade", [0, 6, -1, 4.5, True, "4"])
def test_mean_grade_rejects_grades_outside_1_to_5(grade: object) -> None:
    with pytest.raises(ValueError, match="grade"):
        mean_grade([3, grade])  # type: ignore[list-item]


def test_share_score_equals_score_answer():
    """The counted form (a database GROUP BY's output) gives score_answer()'s shares."""
    import random

    from evaluation.metrics.rubrics import GroupCounts
    from evaluation.metrics.scoring import share_score

    rng = random.Random(5)
    for _ in range(300):
        criteria = [
            ScoredCriterion(
                str(n), rng.choice(["pass", "fail", "undecided"]),
                weight=rng.choice([0, 0.25, 1, 2.5]), core=rng.random() < 0.6,
                enabled=rng.random() < 0.85,
            )
            for n in range(rng.randint(0, 12))
        ]  # fmt: skip
        on = [c for c in criteria if c.enabled]
        whole = GroupCounts(
            satisfied=sum(c.outcome == "pass" for c in on),
            unsatisfied=sum(c.outcome == "fail" for c in on),
            undecided=sum(c.outcome == "undecided" for c in on),
            weight_satisfied=sum(c.weight for c in on if c.outcome == "pass"),
            weight_decided=sum(c.weight for c in on if c.outcome != "undecided"),
        )
        core = GroupCounts(
            satisfied=sum(c.core and c.outcome == "pass" for c in on),
            unsatisfied=sum(c.core and c.outcome == "fail" for c in on),
        )
        expected, found = score_answer(criteria), share_score(whole, core)
        assert (found.passed, found.failed, found.undecided, found.total) == (
            expected.passed, expected.failed, expected.undecided, expected.total,
        )  # fmt: skip
        for attr in ("share", "weighted_share", "core_share"):
            if getattr(expected, attr) is None:
                assert getattr(found, attr) is None
            else:
                assert getattr(found, attr) == pytest.approx(getattr(expected, attr), abs=1e-12)

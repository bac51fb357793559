"""Adjudicated outcomes, graded means and per-system pass rates (evaluation.metrics.summary)."""

from __future__ import annotations

import pytest

from evaluation.metrics import ScoredCriterion, score_answer
from evaluation.metrics.summary import decided_outcome, graded_mean, mean, pass_rate


@pytest.mark.parametrize(
    ("panel", "adjudicated", "final"),
    [
        ("pass", None, "pass"),
        ("undecided", None, "undecided"),
        ("pass", "fail", "fail"),
        ("fail", "pass", "pass"),
        ("undecided", "pass", "pass"),  # a tie or no valid vote, decided by a person
    ],
)
def test_an_adjudication_decides_where_present(panel, adjudicated, final):
    assert decided_outcome(panel, adjudicated) == final


def test_an_adjudication_is_pass_or_fail():
    with pytest.raises(ValueError):
        decided_outcome("pass", "undecided")


def test_adjudicated_outcomes_enter_the_score():
    panel = ["pass", "fail", "undecided"]
    labels = [None, "pass", "fail"]
    scored = [
        ScoredCriterion(str(i), decided_outcome(p, a))
        for i, (p, a) in enumerate(zip(panel, labels, strict=True))
    ]
    assert score_answer(scored).share == 2 / 3


def test_graded_mean_counts_each_judge_once():
    # A model sampled three times does not outvote one sampled once: (2 + 5) / 2.
    assert graded_mean({"a": [1, 2, 3], "b": [5]}) == 3.5
    assert graded_mean({"a": [4, None], "b": [None]}) == 4.0
    assert graded_mean({"a": [None]}) is None and graded_mean({}) is None
    with pytest.raises(ValueError):
        graded_mean({"a": [6]})


def test_means_and_pass_rates_skip_missing_values():
    assert mean([0.5, None, 1.0]) == 0.75 and mean([None]) is None
    assert pass_rate([True, False, None, True]) == 2 / 3
    assert pass_rate([None, None]) is None

"""Pairwise preference figures (evaluation/metrics/preference.py) against independent
implementations on generated data: statsmodels' Wilson interval, a Bradley–Terry maximum
likelihood found by scipy's optimiser, scikit-learn's Cohen's kappa, statsmodels' Fleiss'."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss
from statsmodels.stats.proportion import proportion_confint

from evaluation.metrics import preference


@pytest.mark.parametrize(("count", "n"), [(0, 1), (1, 1), (0, 10), (3, 10), (10, 10), (57, 200)])
def test_wilson_matches_statsmodels(count, n):
    got = preference.wilson(count, n)
    low, high = proportion_confint(count, n, alpha=0.05, method="wilson")
    assert got.rate == count / n
    assert got.low == pytest.approx(low, abs=1e-12) and got.high == pytest.approx(high, abs=1e-12)


def test_wilson_of_nothing_is_undefined_and_bad_counts_are_refused():
    assert preference.wilson(0, 0).rate is None
    with pytest.raises(ValueError, match="between 0 and n"):
        preference.wilson(3, 2)


def test_win_tie_loss_counts_each_vote_once():
    figures = preference.win_tie_loss(["a", "a", "b", "tie", "a"])
    assert (figures.n, figures.a.count, figures.tie.count, figures.b.count) == (5, 3, 1, 1)
    with pytest.raises(ValueError, match="not 'A'"):
        preference.win_tie_loss(["A"])


def generated(strengths: dict[str, float], n: int, seed: int) -> list[tuple[str, str, str]]:
    rng = random.Random(seed)
    names = list(strengths)
    made = []
    for _ in range(n):
        a, b = rng.sample(names, 2)
        p_a = 1 / (1 + math.exp(strengths[b] - strengths[a]))
        u = rng.random()
        made.append((a, b, "tie" if abs(u - p_a) < 0.05 else ("a" if u < p_a else "b")))
    return made


def scipy_bradley_terry(comparisons, prior: float) -> dict[str, float]:
    """The maximum of the Bradley–Terry likelihood (ties as half a win each, `prior` tied
    games between every two systems), found by BFGS on the log strengths."""
    names = sorted({s for a, b, _ in comparisons for s in (a, b)})
    index = {s: i for i, s in enumerate(names)}
    wins = np.zeros((len(names), len(names)))
    for a, b, p in comparisons:
        score = {"a": 1.0, "b": 0.0, "tie": 0.5}[p]
        wins[index[a], index[b]] += score
        wins[index[b], index[a]] += 1 - score
    wins += prior / 2 * (1 - np.eye(len(names)))

    def negative_log_likelihood(theta):
        diff = theta[:, None] - theta[None, :]
        return -np.sum(wins * -np.logaddexp(0, -diff))

    theta = minimize(negative_log_likelihood, np.zeros(len(names)), method="BFGS", tol=1e-12).x
    theta -= theta.mean()
    return {s: theta[index[s]] for s in names}


@pytest.mark.parametrize("prior", [0.0, 0.5])
def test_bradley_terry_matches_a_likelihood_maximised_by_scipy(prior):
    truth = {"alpha": 1.0, "beta": 0.3, "gamma": -0.2, "delta": -1.1}
    comparisons = generated(truth, 600, seed=7)
    got = preference.bradley_terry(comparisons, prior=prior)
    oracle = scipy_bradley_terry(comparisons, prior)
    for system in truth:
        assert got[system] == pytest.approx(oracle[system], abs=1e-5)
    assert sorted(got, key=got.get) == ["delta", "gamma", "beta", "alpha"]


def test_a_system_that_never_wins_needs_a_prior():
    comparisons = [("a", "b", "a"), ("b", "c", "a"), ("a", "c", "a")]
    with pytest.raises(ValueError, match="prior > 0"):
        preference.bradley_terry(comparisons, prior=0)
    assert preference.bradley_terry(comparisons)["c"] < preference.bradley_terry(comparisons)["a"]


def test_bootstrap_intervals_hold_the_point_and_narrow_with_more_queries():
    truth = {"alpha": 0.8, "beta": 0.0, "gamma": -0.8}

    def width(n: int) -> float:
        made = generated(truth, n, seed=3)
        found = preference.bradley_terry_intervals(
            [(i // 2, c) for i, c in enumerate(made)], resamples=200, seed=1
        )
        assert [s.system for s in found] == ["alpha", "beta", "gamma"]
        assert all(s.low <= s.strength <= s.high for s in found)
        return found[0].high - found[0].low

    assert width(1200) < width(150)
    again = preference.bradley_terry_intervals(
        [(0, ("x", "y", "a")), (1, ("x", "y", "tie"))], resamples=50
    )
    assert again == preference.bradley_terry_intervals(
        [(0, ("x", "y", "a")), (1, ("x", "y", "tie"))], resamples=50
    )


def test_two_reviewers_agreement_is_cohens_kappa_as_sklearn_counts_it():
    rng = random.Random(5)
    votes = {}
    for item in range(80):
        first = rng.choice(preference.PREFERENCES)
        second = first if rng.random() < 0.6 else rng.choice(preference.PREFERENCES)
        votes[item] = {"ann": first, "bob": second}
    votes[999] = {"ann": "a"}  # one rater only: not an item of agreement
    got = preference.rater_agreement(votes)
    expected = cohen_kappa_score(
        [v["ann"] for k, v in votes.items() if k != 999],
        [v["bob"] for k, v in votes.items() if k != 999],
    )
    assert (got.method, got.raters, got.items) == ("cohen", 2, 80)
    assert got.kappa == pytest.approx(expected, abs=1e-12)
    assert got.low < got.kappa < got.high


def test_three_reviewers_agreement_is_fleiss_kappa_as_statsmodels_counts_it():
    rng = random.Random(11)
    votes = {}
    for item in range(60):
        truth = rng.choice(preference.PREFERENCES)
        votes[item] = {
            r: truth if rng.random() < 0.7 else rng.choice(preference.PREFERENCES)
            for r in ("ann", "bob", "cy")
        }
    got = preference.rater_agreement(votes)
    table = np.array(
        [[list(v.values()).count(p) for p in preference.PREFERENCES] for v in votes.values()]
    )
    assert (got.method, got.raters, got.items) == ("fleiss", 3, 60)
    assert got.kappa == pytest.approx(sm_fleiss(table, method="fleiss"), abs=1e-12)


def test_fleiss_is_undefined_when_everyone_says_the_same():
    assert preference.fleiss_kappa([{"a": 3}, {"a": 3}]) is None
    assert preference.fleiss_kappa([{"a": 1}]) is None


def test_judge_agreement_is_against_the_reviewers_majority():
    reviewers = {
        1: {"x": "a", "y": "a", "z": "b"},
        2: {"x": "b", "y": "b"},
        3: {"x": "a", "y": "b"},
    }
    judge = {1: "a", 2: "a", 3: "a", 4: "tie"}
    got = preference.judge_agreement(judge, reviewers)
    assert got.n == 2  # item 3 split evenly, item 4 has no reviewer
    # The judge said "a" both times, the reviewers "a" then "b": agreement no better than chance.
    assert got.kappa == pytest.approx(cohen_kappa_score(["a", "a"], ["a", "b"]), abs=1e-12) == 0


def test_the_checklist_predicts_preference_when_the_higher_score_is_preferred():
    P = preference.PredictedPair
    pairs = [
        P("a", 0.9, 0.5, "digest"),  # gap 40: agrees
        P("b", 0.9, 0.5, "digest"),  # gap 40: disagrees
        P("b", 0.50, 0.55, "time series"),  # gap 5: agrees
        P("a", 0.60, 0.45, "time series"),  # gap 15: agrees
        P("tie", 0.9, 0.1, "digest"),  # a tie: left out
        P("a", 0.7, 0.7, "digest"),  # equal scores: left out
        P("a", None, 0.7, "digest"),  # unscored: left out
    ]
    got = preference.checklist_prediction(pairs)
    assert (got.overall.count, got.overall.n) == (3, 4)
    assert got.overall == preference.wilson(3, 4)
    assert [(label, r.count, r.n) for label, r in got.by_gap] == [
        ("0%–10%", 1, 1), ("10%–25%", 1, 1), ("25%+", 1, 2)
    ]  # fmt: skip
    assert [(c, r.count, r.n) for c, r in got.by_category] == [
        ("digest", 1, 2),
        ("time series", 2, 2),
    ]
    assert (got.ties, got.not_separated) == (1, 2)


def test_majority_of_votes_or_none_on_a_split():
    assert preference.majority(["a", "a", "b"]) == "a"
    assert preference.majority(["a", "b"]) is None
    assert preference.majority([]) is None


def test_a_verdict_that_changes_with_the_order_is_a_tie():
    assert preference.both_orders("a", "a") == ("a", False)
    assert preference.both_orders("tie", "tie") == ("tie", False)
    assert preference.both_orders("a", "b") == ("tie", True)
    assert preference.both_orders("a", "tie") == ("tie", True)
    bias = preference.position_bias([("a", "b"), ("a", "b"), ("b", "b"), ("tie", "tie")])
    assert (bias.flips.count, bias.flips.n) == (2, 4)
    assert (bias.first_preferred.count, bias.first_preferred.n) == (5, 8)

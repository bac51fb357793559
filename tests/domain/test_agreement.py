"""Agreement statistics against independent implementations used as oracles:
scikit-learn (`cohen_kappa_score`, `confusion_matrix`) and the `krippendorff` package.
The kappa standard error is checked against the delta method computed numerically, a
different derivation of the same large-sample variance."""

from __future__ import annotations

import random
import warnings

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from sklearn.metrics import confusion_matrix as sk_confusion_matrix

from evaluation.metrics.agreement import (
    alpha_over_raters,
    cohen_kappa,
    compare,
    confusion_matrix,
    kappa_from_matrix,
    kappa_undefined_reason,
    krippendorff_alpha,
    majority,
    pairwise,
    percent_agreement,
)

LABELS = ("pass", "fail")


def random_pairs(seed: int, n: int, agree: float, pass_rate: float) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        first = "pass" if rng.random() < pass_rate else "fail"
        second = first if rng.random() < agree else rng.choice(LABELS)
        pairs.append((first, second))
    return pairs


FIXTURES = [
    random_pairs(seed, n, agree, rate)
    for seed, (n, agree, rate) in enumerate(
        [
            (5, 0.5, 0.5),
            (10, 0.9, 0.7),
            (23, 0.3, 0.5),
            (50, 0.8, 0.9),
            (100, 0.6, 0.2),
            (400, 0.95, 0.5),
            (7, 0.0, 0.5),
            (1000, 0.7, 0.6),
        ]
    )
    for _repeat in range(3)
] + [
    [("pass", "fail"), ("fail", "pass")],  # complete disagreement
    [("pass", "pass"), ("fail", "fail")],  # perfect agreement with both categories
    [("pass", "fail")] * 4,  # each rater uses one category, never the same
    [("pass", "pass")] * 3 + [("pass", "fail")],  # the first rater never fails
]


@pytest.mark.parametrize("pairs", FIXTURES)
def test_kappa_and_percent_match_sklearn(pairs):
    first, second = zip(*pairs, strict=True)
    result = compare(pairs)
    assert result.kappa.kappa == pytest.approx(cohen_kappa_score(first, second), abs=1e-12)
    assert result.percent == pytest.approx(np.mean(np.array(first) == np.array(second)))
    assert percent_agreement(pairs) == result.percent
    expected = sk_confusion_matrix(first, second, labels=list(LABELS))
    assert [list(row) for row in result.confusion.counts] == expected.tolist()
    assert result.n == len(pairs) and result.agree == int(np.trace(expected))


def delta_method_se(counts: np.ndarray) -> float:
    """SE of kappa by the multinomial delta method: Var = (g'Dg - (g'p)²) / n, with g the
    numerical gradient of kappa with respect to the cell proportions."""
    n = counts.sum()
    p = (counts / n).ravel()
    k = counts.shape[0]

    def kappa_of(flat: np.ndarray) -> float:
        table = flat.reshape(k, k)
        po = np.trace(table)
        pe = float(table.sum(axis=1) @ table.sum(axis=0))
        return (po - pe) / (1 - pe)

    h = 1e-6
    grad = np.array([(kappa_of(p + h * e) - kappa_of(p - h * e)) / (2 * h) for e in np.eye(k * k)])
    variance = (grad**2 @ p - (grad @ p) ** 2) / n
    return float(np.sqrt(max(variance, 0.0)))


@pytest.mark.parametrize("pairs", [f for f in FIXTURES if len(set(f)) > 1])
def test_kappa_standard_error_matches_the_delta_method(pairs):
    result = compare(pairs).kappa
    counts = np.array(confusion_matrix(pairs, LABELS).counts, dtype=float)
    assert result.se == pytest.approx(delta_method_se(counts), abs=1e-6)
    assert result.low == pytest.approx(max(-1.0, result.kappa - 1.959963984540054 * result.se))
    assert result.high == pytest.approx(min(1.0, result.kappa + 1.959963984540054 * result.se))
    assert -1.0 <= result.low <= result.kappa <= result.high <= 1.0


def test_kappa_with_three_categories_matches_sklearn_and_the_delta_method():
    # Fleiss (1981), Statistical Methods for Rates and Proportions, two diagnosticians, 100
    # patients: psychotic / neurotic / organic.
    table = [[75, 1, 4], [5, 4, 1], [0, 0, 10]]
    cats = ["psychotic", "neurotic", "organic"]
    pairs = [(cats[i], cats[j]) for i in range(3) for j in range(3) for _ in range(table[i][j])]
    first, second = zip(*pairs, strict=True)
    result = cohen_kappa(pairs, cats)
    assert result.kappa == pytest.approx(cohen_kappa_score(first, second))
    assert result.kappa == pytest.approx((0.89 - 0.66) / 0.34)
    assert result.se == pytest.approx(delta_method_se(np.array(table, dtype=float)), abs=1e-6)


def test_all_agree_on_one_category_leaves_kappa_undefined():
    pairs = [("pass", "pass")] * 6
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isnan(cohen_kappa_score(*zip(*pairs, strict=True)))  # the oracle agrees
    result = compare(pairs)
    assert result.percent == 1.0
    assert result.kappa.kappa is None and result.kappa.se is None and result.kappa.low is None
    assert result.kappa.expected == 1.0


def test_perfect_agreement_has_kappa_one_and_zero_width_interval():
    result = compare([("pass", "pass"), ("fail", "fail"), ("pass", "pass")]).kappa
    assert result.kappa == pytest.approx(1.0)
    assert result.se == pytest.approx(0.0, abs=1e-9)
    assert result.low == pytest.approx(1.0) and result.high == 1.0


def test_no_items_gives_no_figures():
    result = compare([])
    assert (result.n, result.percent, result.kappa.kappa) == (0, None, None)
    assert result.confusion.counts == ((0, 0), (0, 0))
    assert percent_agreement([]) is None


def test_a_label_outside_the_categories_is_refused():
    with pytest.raises(ValueError, match="outside categories"):
        compare([("pass", "Pass")])


def to_matrix(units: list[list[str | None]]) -> np.ndarray:
    codes = {"pass": 1.0, "fail": 0.0, "maybe": 2.0, None: np.nan}
    return np.array([[codes[v] for v in unit] for unit in units], dtype=float).T


def random_units(seed: int, items: int, raters: int, missing: float, agree: float):
    rng = random.Random(seed)
    units = []
    for _ in range(items):
        truth = rng.choice(LABELS)
        unit = []
        for _ in range(raters):
            if rng.random() < missing:
                unit.append(None)
            else:
                unit.append(truth if rng.random() < agree else rng.choice(LABELS))
        units.append(unit)
    return units


ALPHA_FIXTURES = [
    random_units(seed, items, raters, missing, agree)
    for seed, (items, raters, missing, agree) in enumerate(
        [
            (10, 2, 0.0, 0.8),
            (30, 3, 0.0, 0.6),
            (30, 3, 0.3, 0.6),
            (100, 5, 0.5, 0.9),
            (200, 4, 0.1, 0.4),
            (12, 6, 0.6, 0.7),
            (500, 3, 0.2, 0.75),
        ]
    )
] + [
    [["pass", "fail"], ["fail", "pass"], ["pass", "pass"], ["fail", "fail"]],
    [["pass", "pass", None], ["fail", None, "fail"], [None, "pass", "fail"], ["pass", None, None]],
    [["pass", "maybe", "fail"], ["maybe", "maybe", None], ["fail", "fail", "pass"]],
]


@pytest.mark.parametrize("units", ALPHA_FIXTURES)
def test_alpha_matches_the_krippendorff_package(units):
    expected = krippendorff.alpha(reliability_data=to_matrix(units), level_of_measurement="nominal")
    assert krippendorff_alpha(units) == pytest.approx(expected, abs=1e-12)


def test_alpha_is_undefined_with_one_category_or_nothing_pairable():
    assert krippendorff_alpha([["pass", "pass"], ["pass", None, "pass"]]) is None
    assert krippendorff_alpha([["pass", None], [None, "fail"]]) is None
    assert krippendorff_alpha([]) is None


def test_pairwise_uses_the_items_both_raters_labelled():
    ratings = {
        "bea": {1: "pass", 2: "fail", 3: "pass", 4: "pass"},
        "ana": {1: "pass", 2: "pass", 3: "pass"},
        "cy": {4: "fail", 5: "fail"},
    }
    pairs = pairwise(ratings)
    assert [(p.first, p.second, p.agreement.n) for p in pairs] == [
        ("ana", "bea", 3),
        ("ana", "cy", 0),
        ("bea", "cy", 1),
    ]
    ana_bea = pairs[0].agreement
    assert ana_bea.percent == pytest.approx(2 / 3)
    assert ana_bea.kappa.kappa == pytest.approx(
        cohen_kappa_score(["pass", "pass", "pass"], ["pass", "fail", "pass"])
    )
    units = [[ratings[r].get(i) for r in sorted(ratings)] for i in range(1, 6)]
    assert alpha_over_raters(ratings) == pytest.approx(krippendorff_alpha(units))


def test_majority_leaves_ties_undecided():
    assert majority(["pass", "fail", "pass"]) == "pass"
    assert majority(["pass", "fail"]) is None
    assert majority([]) is None
    assert majority(["fail"]) == "fail"


def test_kappa_undefined_reason_names_the_rater_that_never_varied():
    def matrix(pairs):
        return confusion_matrix(pairs, ("pass", "fail"))

    always_pass = matrix([("pass", "pass"), ("pass", "fail"), ("pass", "pass")])
    # kappa is 0 with a 0–0 interval here: a number that says nothing, so the page says why.
    k = kappa_from_matrix(always_pass)
    assert k.kappa == 0.0 and k.low == k.high == 0.0
    assert kappa_undefined_reason(always_pass, "the judge", "the humans") == (
        "the judge always said pass, so κ cannot tell agreement from chance"
    )
    humans_fail = matrix([("pass", "fail"), ("fail", "fail")])
    assert kappa_undefined_reason(humans_fail, "the judge", "the humans").startswith(
        "the humans always said fail"
    )
    both = matrix([("pass", "pass"), ("pass", "pass")])
    assert kappa_undefined_reason(both, "a", "b") == (
        "both always said pass: nothing to tell from chance"
    )
    opposite = matrix([("pass", "fail")])
    assert "a always said pass and b always said fail" in kappa_undefined_reason(opposite, "a", "b")
    assert kappa_undefined_reason(matrix([]), "a", "b") == "no items to compare"
    varied = matrix([("pass", "pass"), ("fail", "fail"), ("pass", "fail")])
    assert kappa_undefined_reason(varied, "a", "b") is None

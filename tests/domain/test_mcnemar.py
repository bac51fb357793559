"""McNemar's paired test against values computed by hand (no scipy): the exact binomial
tail for few discordant items, chi-square with continuity correction for many."""

from __future__ import annotations

import math

import pytest

from evaluation.metrics.mcnemar import EXACT_BELOW, mcnemar


@pytest.mark.parametrize(
    ("b", "c", "p"),
    [
        # 2 · (C(7,0) + C(7,1)) / 2^7 = 2 · 8 / 128
        (1, 6, 0.125),
        (6, 1, 0.125),
        # 2 · C(5,0) / 2^5
        (0, 5, 0.0625),
        # 2 · (C(10,0) + C(10,1) + C(10,2)) / 2^10 = 2 · 56 / 1024
        (2, 8, 0.109375),
        # b = c: the tail passes ½, p is capped at 1
        (3, 3, 1.0),
        # no discordant item: nothing tells the judges apart
        (0, 0, 1.0),
    ],
)
def test_few_discordant_items_use_the_exact_binomial_test(b, c, p):
    result = mcnemar(b, c)
    assert result.method == "exact" and result.statistic is None
    assert result.p_value == pytest.approx(p, abs=1e-12)


def test_many_discordant_items_use_chi_square_with_continuity_correction():
    # Agresti, Categorical Data Analysis (2002), §10.1: presidential approval, b = 150,
    # c = 86. χ² = (|150 - 86| - 1)² / 236 = 3969 / 236 = 16.8178; above 10.828, the 0.001
    # critical value of χ²₁, so p < 0.001.
    result = mcnemar(150, 86)
    assert result.method == "chi-square"
    assert result.statistic == pytest.approx(3969 / 236)
    assert result.p_value < 0.001
    # (|10 - 25| - 1)² / 35 = 5.6; P(χ²₁ ≥ 5.6) = 2·(1 - Φ(√5.6)) = 2·(1 - Φ(2.3664)) = 0.01796
    result = mcnemar(10, 25)
    assert result.statistic == pytest.approx(5.6)
    assert result.p_value == pytest.approx(0.01796, abs=5e-5)
    # 3.841459 is χ²₁'s 0.05 critical value: p at it is 0.05.
    assert math.erfc(math.sqrt(3.841459 / 2)) == pytest.approx(0.05, abs=1e-6)


def test_the_switch_from_exact_to_chi_square_is_at_25_discordant_items():
    assert mcnemar(12, EXACT_BELOW - 1 - 12).method == "exact"
    assert mcnemar(12, EXACT_BELOW - 12).method == "chi-square"


def test_counts_must_not_be_negative():
    with pytest.raises(ValueError):
        mcnemar(-1, 3)

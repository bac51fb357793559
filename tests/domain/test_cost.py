"""Estimated run cost: prices per million tokens, unknown without a price, projection."""

from __future__ import annotations

from decimal import Decimal

import pytest

from evaluation.metrics.cost import JudgeUsage, run_cost


def priced(name: str, prompt: int, completion: int, p: str = "2.5", c: str = "10") -> JudgeUsage:
    return JudgeUsage(name, True, prompt, completion, Decimal(p), Decimal(c))


def test_cost_so_far_and_projected():
    # 2,000,000 × 2.5 / 10⁶ + 100,000 × 10 / 10⁶ = 5 + 1 = 6; 400,000 × 0.15 / 10⁶ = 0.06.
    usages = [priced("gpt", 2_000_000, 100_000), priced("mini", 400_000, 0, "0.15", "0.6")]
    estimate = run_cost(usages, done=300, expected=1200)
    assert estimate.so_far == Decimal("6.06")
    assert estimate.projected == Decimal("24.24")  # 6.06 / 300 × 1200
    assert estimate.known and estimate.unpriced == ()


def test_no_llm_judges_are_free_and_never_unknown():
    usages = [JudgeUsage("Offline", False, 0, 0), priced("gpt", 1_000_000, 0, "1", "1")]
    assert run_cost(usages, done=10, expected=10).so_far == Decimal(1)
    assert run_cost([JudgeUsage("Offline", False)], done=5, expected=10).projected == 0


@pytest.mark.parametrize("missing", ["prompt_price", "completion_price"])
def test_a_judge_without_a_price_makes_the_estimate_unknown(missing):
    fields = {"prompt_price": Decimal(1), "completion_price": Decimal(1), missing: None}
    usages = [priced("gpt", 10, 10), JudgeUsage("claude", True, 10, 10, **fields)]
    estimate = run_cost(usages, done=1, expected=2)
    assert (estimate.so_far, estimate.projected, estimate.known) == (None, None, False)
    assert estimate.unpriced == ("claude",)


def test_projection_edges():
    usages = [priced("gpt", 1_000_000, 0, "3", "0")]
    assert run_cost(usages, done=0, expected=100).projected is None  # nothing to project from
    assert run_cost(usages, done=100, expected=100).projected == Decimal(3)
    # More done than expected (the run was recounted smaller): the cost so far is final.
    assert run_cost(usages, done=120, expected=100).projected == Decimal(3)
    # Cached results carry no tokens: they lower the projection, as they will lower the bill.
    assert run_cost(usages, done=3, expected=7).projected == Decimal("7")
    with pytest.raises(ValueError):
        run_cost(usages, done=-1, expected=1)

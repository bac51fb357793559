"""Judge stability (evaluation.metrics.stability): flip rates with Wilson intervals and the
test–retest κ, on a scripted judge that flips a known share of items."""

from __future__ import annotations

import random

import pytest

from evaluation.metrics.agreement import krippendorff_alpha
from evaluation.metrics.stability import RepeatedItem, retest_kappa, stability, unstable, wilson


def _scripted(share: dict[int, float], items: int, k: int, seed: int) -> list[RepeatedItem]:
    """Criterion c's items flip with probability share[c]: a flipped item gets one verdict
    unlike the others among its k calls; a stable one all the same."""
    rng = random.Random(seed)
    out = []
    for criterion, p in share.items():
        for _ in range(items):
            base = rng.random() < 0.6
            passes = k if base else 0
            if rng.random() < p:
                passes += -1 if base else 1
            out.append(RepeatedItem(criterion, 1, passes, k - passes))
    return out


def test_reported_flip_share_lies_within_its_interval():
    shares = {1: 0.0, 2: 0.1, 3: 0.3, 4: 0.6}
    found = stability(_scripted(shares, items=400, k=3, seed=11))
    by_criterion = {c.criterion_id: c.flips for c in found.criteria}
    for criterion, share in shares.items():
        rate = by_criterion[criterion]
        assert rate.items == 400
        assert rate.low <= share <= rate.high, (criterion, rate)
    # The most unstable first; the interval says which are surely above 10%.
    assert [c.criterion_id for c in found.criteria] == [4, 3, 2, 1]
    assert [unstable(c) for c in found.criteria] == [True, True, False, False]


def test_coverage_of_the_interval_over_many_scripted_runs():
    """A 95% interval holds the scripted share in about 95% of the runs."""
    held = 0
    for seed in range(200):
        rate = stability(_scripted({1: 0.2}, items=60, k=2, seed=seed)).flips
        held += rate.low <= 0.2 <= rate.high
    assert 0.9 <= held / 200 <= 0.99


def test_wilson_interval_by_hand():
    # 3 of 10: Wilson (1927) with z = 1.96 gives [0.1078, 0.6032].
    rate = wilson(3, 10)
    assert rate.rate == pytest.approx(0.3)
    assert (rate.low, rate.high) == pytest.approx((0.1078, 0.6032), abs=1e-4)
    assert wilson(0, 0).rate is None
    assert wilson(0, 5).low == 0.0 and wilson(5, 5).high == 1.0


def test_retest_kappa_is_fleiss_kappa_and_matches_alpha_for_two_calls():
    items = _scripted({1: 0.2, 2: 0.05}, items=300, k=2, seed=5)
    kappa = retest_kappa(items)
    # With two calls per item, Fleiss' kappa and Krippendorff's alpha (nominal) differ only
    # by alpha's small-sample correction: within 0.01 at 600 items.
    units = [["pass"] * i.passes + ["fail"] * i.fails for i in items]
    assert kappa == pytest.approx(krippendorff_alpha(units), abs=0.01)
    assert 0 < kappa < 1
    # Every call the same on every item: perfect agreement beyond chance.
    same = [RepeatedItem(1, 1, 3, 0), RepeatedItem(1, 1, 0, 3)]
    assert retest_kappa(same) == pytest.approx(1.0)
    # Every verdict pass: no chance correction possible.
    assert retest_kappa([RepeatedItem(1, 1, 2, 0)]) is None


def test_items_with_fewer_than_two_valid_verdicts_are_left_out():
    found = stability([RepeatedItem(1, 1, 1, 0), RepeatedItem(1, 1, 0, 0)])
    assert found.items == 0 and found.criteria == () and found.kappa is None
    assert found.flips.rate is None


# --- the fixed samples of items (evaluation.metrics.sampling) ------------------------------


def test_a_sample_is_the_same_whatever_order_the_items_come_in():
    from evaluation.metrics.sampling import sample_items

    items = [(a, c) for a in range(1, 30) for c in range(100, 110)]
    found = sample_items(items, 25, seed="canary:7")
    assert len(found) == 25 == len(set(found)) and set(found) <= set(items)
    assert found == sorted(found)
    assert sample_items(list(reversed(items)), 25, seed="canary:7") == found
    assert sample_items(items, 25, seed="canary:8") != found  # another seed, another draw
    assert sample_items(items, None, seed="x") == sorted(items)
    assert sample_items(items, 10_000, seed="x") == sorted(items)


def test_an_item_added_later_displaces_at_most_one_item_of_the_sample():
    from evaluation.metrics.sampling import sample_items

    items = [(a, c) for a in range(1, 40) for c in range(1, 6)]
    before = set(sample_items(items, 20, seed="canary:1"))
    for extra in [(100, 1), (100, 2), (101, 3)]:
        after = set(sample_items([*items, extra], 20, seed="canary:1"))
        assert len(before - after) <= 1 and len(after - before) <= 1
        assert after - before <= {extra}


def test_the_sample_is_a_fair_draw():
    """Over many seeds, every item is drawn about size/n of the time (a simple random
    sample): 2,000 draws of 10 of 40 items, each item's share near 1/4."""
    from collections import Counter

    from evaluation.metrics.sampling import sample_items

    items = [(a, 1) for a in range(40)]
    drawn: Counter = Counter()
    for seed in range(2000):
        drawn.update(sample_items(items, 10, seed=str(seed)))
    shares = [drawn[i] / 2000 for i in items]
    assert all(0.19 < s < 0.31 for s in shares), shares

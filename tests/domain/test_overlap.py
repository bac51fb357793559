"""Cross-evaluation overlap: pairs, the matrix, the dataset mean and its interval, the
histogram, and the shared core against the long tail. No database."""

from __future__ import annotations

import math

import pytest

from evaluation.metrics.overlap import (
    CORE_THRESHOLD,
    PairOverlap,
    core_and_tail,
    criterion_coverage,
    decided_outcome,
    histogram,
    mean_overlap,
    overlap_matrix,
    pair_overlap,
)


def test_overlap_is_the_share_of_decided_criteria_passed():
    pair = pair_overlap("A", "B", ["pass", "fail", "pass", "fail"])
    assert (pair.passed, pair.failed, pair.undecided, pair.total) == (2, 2, 0, 4)
    assert pair.overlap == 0.5
    assert not pair.is_self


def test_undecided_criteria_are_excluded_never_counted_as_fail():
    # An unparseable judge output leaves the criterion undecided: 1 of 2 decided, not 1 of 3.
    pair = pair_overlap("A", "B", ["pass", "fail", "undecided"])
    assert pair.overlap == 0.5
    assert pair.undecided == 1 and pair.total == 3
    assert pair_overlap("A", "B", ["undecided"]).overlap is None
    assert pair_overlap("A", "B", []).overlap is None


def test_unknown_outcomes_are_refused():
    with pytest.raises(ValueError, match="Pass"):
        pair_overlap("A", "B", ["Pass"])


def test_matrix_rows_are_checklists_with_a_perfect_answer():
    criteria = {"A": ["a1", "a2"], "B": ["b1", "b2", "b3"], "C": ["c1"]}
    verdicts = {
        ("A", "a1"): "pass", ("A", "a2"): "pass",
        ("A", "b1"): "pass", ("A", "b2"): "fail", ("A", "b3"): "undecided",
        ("A", "c1"): "fail",
        ("B", "a1"): "pass", ("B", "a2"): "fail",
        ("B", "b1"): "pass", ("B", "b2"): "pass", ("B", "b3"): "fail",
        # ("B", "c1") was never graded: undecided
    }  # fmt: skip
    matrix = overlap_matrix(["A", "B", "C"], criteria, verdicts, with_answer=["A", "B"])
    assert matrix.cell("A", "B").overlap == 0.5
    assert matrix.cell("A", "B").undecided == 1
    assert matrix.cell("A", "C").overlap == 0.0
    assert matrix.cell("B", "A").overlap == 0.5
    assert matrix.cell("B", "C").overlap is None and matrix.cell("B", "C").undecided == 1
    assert matrix.cell("C", "A") is None  # C has no perfect answer
    assert [(p.source, p.target) for p in matrix.pairs()] == [
        ("A", "B"), ("A", "C"), ("B", "A"), ("B", "C"),
    ]  # fmt: skip
    assert [p.overlap for p in matrix.self_checks()] == [1.0, 2 / 3]


def test_the_mean_is_over_ordered_pairs_and_leaves_out_self_checks_and_undefined_pairs():
    pairs = {
        "q1": [
            PairOverlap("A", "A", 3, 0, 0),  # self check: apart
            PairOverlap("A", "B", 1, 3, 0),  # 0.25
            PairOverlap("B", "A", 2, 1, 0),  # 2/3
            PairOverlap("B", "C", 0, 0, 2),  # nothing decided: left out
        ],
        "q2": [PairOverlap("X", "Y", 1, 1, 5)],  # 0.5
    }
    interval = mean_overlap(pairs)
    assert interval.mean == pytest.approx((0.25 + 2 / 3 + 0.5) / 3)
    assert (interval.n_pairs, interval.n_queries) == (3, 2)
    assert interval.low <= interval.mean <= interval.high


def test_one_query_has_a_mean_but_no_interval():
    interval = mean_overlap({"q": [PairOverlap("A", "B", 1, 1, 0), PairOverlap("B", "A", 1, 3, 0)]})
    assert interval.mean == pytest.approx(0.375)
    assert interval.low is None and interval.high is None
    assert mean_overlap({}).mean is None
    assert mean_overlap({"q": [PairOverlap("A", "A", 2, 0, 0)]}).n_pairs == 0


def test_the_bootstrap_interval_is_reproducible_and_narrows_with_more_queries():
    def data(n):
        return {
            q: [PairOverlap("A", "B", q % 4, 3 - q % 4, 0), PairOverlap("B", "A", 1, 2, 0)]
            for q in range(n)
        }

    few, again = mean_overlap(data(6)), mean_overlap(data(6))
    assert (few.low, few.high) == (again.low, again.high)
    many = mean_overlap(data(60))
    assert many.high - many.low < few.high - few.low
    assert 0.0 <= few.low <= few.mean <= few.high <= 1.0
    # Identical queries: every resample has the same mean, the interval collapses on it.
    same = mean_overlap({q: [PairOverlap("A", "B", 1, 3, 0)] for q in range(5)})
    assert math.isclose(same.low, 0.25) and math.isclose(same.high, 0.25)


def test_histogram_bins_cover_zero_to_one_with_one_in_the_last_bin():
    bins = histogram([0.0, 0.05, 0.1, 0.55, 0.999, 1.0])
    assert len(bins) == 10
    assert [b.count for b in bins] == [2, 1, 0, 0, 0, 1, 0, 0, 0, 2]
    assert (bins[0].low, bins[-1].high) == (0.0, 1.0)
    with pytest.raises(ValueError):
        histogram([1.2])


def test_coverage_counts_other_experts_answers_only():
    criteria = {"A": ["a1"], "B": ["b1", "b2"], "C": ["c1"]}
    verdicts = {
        ("A", "a1"): "pass",  # A's own answer on A's criterion: not counted
        ("B", "a1"): "pass", ("C", "a1"): "pass",
        ("A", "b1"): "pass", ("C", "b1"): "fail",
        ("A", "b2"): "fail", ("C", "b2"): "fail",
        ("A", "c1"): "undecided", ("B", "c1"): "fail",
    }  # fmt: skip
    coverage = {c.criterion: c for c in criterion_coverage(criteria, verdicts, ["A", "B", "C"])}
    assert (coverage["a1"].covered, coverage["a1"].decided) == (2, 2)
    assert coverage["b1"].share == 0.5 and coverage["b1"].is_core  # threshold is inclusive
    assert coverage["b2"].share == 0.0
    assert (coverage["c1"].decided, coverage["c1"].undecided) == (1, 1)
    core, tail = core_and_tail(coverage.values())
    assert [c.criterion for c in core] == ["a1", "b1"]
    assert [c.criterion for c in tail] == ["b2", "c1"]
    assert CORE_THRESHOLD == 0.5


def test_decided_outcome_adjudication_wins_then_panel_then_label_majority():
    assert decided_outcome(adjudication="fail", panel="pass") == "fail"
    assert decided_outcome(panel="undecided") == "undecided"
    assert decided_outcome(labels=["pass", "pass", "fail"]) == "pass"
    assert decided_outcome(labels=["pass", "fail"]) == "undecided"
    assert decided_outcome(labels=[]) == "undecided"
    assert decided_outcome(adjudication="pass", labels=["fail"]) == "pass"
    with pytest.raises(ValueError):
        decided_outcome(labels=["maybe"])


def _bootstrap_as_before(pairs_by_query, resamples=2000, seed=20240601):
    """The sorted resampled means, drawn as mean_overlap drew them before it called
    _randbelow directly."""
    import random

    values = {
        q: [p.overlap for p in pairs if not p.is_self and p.overlap is not None]
        for q, pairs in pairs_by_query.items()
    }
    values = {q: v for q, v in values.items() if v}
    clusters = [
        (math.fsum(v), len(v)) for _, v in sorted(values.items(), key=lambda kv: str(kv[0]))
    ]
    rng = random.Random(seed)
    means = []
    for _ in range(resamples):
        drawn = [clusters[rng.randrange(len(clusters))] for _ in clusters]
        means.append(math.fsum(s for s, _ in drawn) / sum(n for _, n in drawn))
    means.sort()
    return means


@pytest.mark.parametrize("queries", [2, 3, 7, 64, 65, 300])
def test_the_bootstrap_draws_exactly_what_it_drew_before(queries):
    import random

    rng = random.Random(queries)
    data = {
        q: [
            PairOverlap(a, b, rng.randint(0, 5), rng.randint(0, 5), rng.randint(0, 2))
            for a in "ABC"
            for b in "ABC"
        ]
        for q in range(queries)
    }
    means = _bootstrap_as_before(data, resamples=200)
    interval = mean_overlap(data, resamples=200)
    position = 0.025 * 199
    low = means[math.floor(position)] + (
        means[math.floor(position) + 1] - means[math.floor(position)]
    ) * (position - math.floor(position))
    assert interval.low == low  # bit for bit
    position = 0.975 * 199
    high = means[math.floor(position)] + (
        means[math.floor(position) + 1] - means[math.floor(position)]
    ) * (position - math.floor(position))
    assert interval.high == high

"""The analytics figures computed from a loaded run, without a database: a RunData built by
hand, as `load_run` would fill it, and the scores worked out on paper."""

from __future__ import annotations

import pytest

from evaluation.analytics import summaries
from evaluation.analytics.summaries import AnswerInfo, RunData
from evaluation.metrics import analytics as am
from evaluation.metrics.overlap import Interval

# Two systems answer two queries; each query has one checklist (ids 10 and 20) whose
# criteria are split between two kinds.
ANSWERS = {
    1: AnswerInfo(1, query_id=100, system_id=7, system="alpha", category="finance"),
    2: AnswerInfo(2, query_id=200, system_id=7, system="alpha", category="health"),
    3: AnswerInfo(3, query_id=100, system_id=8, system="beta", category="finance"),
    4: AnswerInfo(4, query_id=200, system_id=8, system="beta", category="health"),
}
# (answer, checklist, kind, passed, decided, items)
GROUPS = [
    (1, 10, "fact", 3, 4, 4),
    (1, 10, "format", 1, 1, 1),
    (2, 20, "fact", 2, 2, 2),
    (3, 10, "fact", 1, 4, 4),
    (3, 10, "format", 0, 1, 1),
    (4, 20, "fact", 1, 2, 2),
    (4, 20, "format", 0, 0, 1),  # nothing decided: no share for this kind
]


def run_data() -> RunData:
    return RunData(
        run=None,  # nothing computed here reads the run
        answers=ANSWERS,
        groups=GROUPS,
        source_groups=[(1, 10, "filing", 3, 4), (3, 10, None, 1, 4)],
        panel_counts=[],
        sources={},
        checklist_size={10: 12, 20: 22},
        buckets=am.complexity_buckets(),
        item_count=15,
        adjudicated=0,
        labelled=0,
    )


def test_query_scores_are_the_share_of_decided_criteria_passed_per_answer():
    data = run_data()
    assert summaries.query_scores(data, 7) == {100: (4 / 5, 1), 200: (1.0, 2)}
    assert summaries.query_scores(data, 8) == {100: (1 / 5, 3), 200: (1 / 2, 4)}


def test_system_scores_by_group():
    cells = summaries.system_scores(run_data(), resamples=200)
    found = {(c.system, c.group, c.value): c.estimate.mean for c in cells}
    assert found["alpha", "all", ""] == pytest.approx((4 / 5 + 1.0) / 2)
    assert found["beta", "all", ""] == pytest.approx((1 / 5 + 1 / 2) / 2)
    assert found["alpha", "kind", "format"] == pytest.approx(1.0)
    assert found["beta", "kind", "format"] == pytest.approx(0.0)  # answer 4 decided none
    assert found["alpha", "category", "health"] == pytest.approx(1.0)
    assert found["alpha", "source", "filing"] == pytest.approx(3 / 4)
    assert found["beta", "source", summaries.NO_VALUE] == pytest.approx(1 / 4)
    # Checklist 10 has 12 criteria and 20 has 22: two buckets of the default edges.
    buckets = {value for system, group, value in found if group == "bucket"}
    assert len(buckets) == 2


def test_saturated_queries_are_those_every_system_answers_fully():
    assert summaries.saturated(run_data()) == []
    full = run_data()
    full.groups = [(a, c, k, d, d, i) for a, c, k, _, d, i in GROUPS if ANSWERS[a].query_id == 200]
    assert summaries.saturated(full) == [200]


def test_run_comparison_pairs_the_queries_both_runs_answered():
    data = run_data()
    comparison = summaries.compare_runs(data, data, system_a=7, system_b=8, resamples=200)
    assert (comparison.system_a, comparison.system_b) == ("alpha", "beta")
    assert sorted(d.query_id for d in comparison.deltas) == [100, 200]
    assert comparison.deltas[0].difference == pytest.approx(min(1 / 5 - 4 / 5, 1 / 2 - 1.0))


def test_the_complexity_curve_carries_the_human_line_it_is_given():
    data = run_data()
    human = Interval(0.6, 0.5, 0.7, n_pairs=6, n_queries=3, method="bootstrap")
    curve = summaries.complexity_curve(
        data, summaries.system_scores(data, resamples=200), human=human
    )
    assert curve.human == human
    assert [line.system for line in curve.lines] == ["alpha", "beta"]

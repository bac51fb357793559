"""pass^k, worst-of-k, spread and their per-system means (evaluation.metrics.reliability)
against an independent computation on generated samples."""

from __future__ import annotations

import random
import statistics

import pytest

from evaluation.metrics.reliability import SampleScore, per_query, per_system


def _generated(seed: int, threshold: float | None) -> list[SampleScore]:
    """Three systems, forty queries, 1 to 8 samples each (a few of them with no score),
    in a shuffled order: the functions must not rely on the order rows arrive in."""
    rng = random.Random(seed)
    rows = []
    for system in (1, 2, 3):
        for query in range(100, 140):
            for sample in range(rng.randint(1, 8)):
                value = None if rng.random() < 0.05 else rng.choice([0, 0.25, 0.5, 0.75, 1.0])
                passed = None if threshold is None or value is None else value >= threshold
                rows.append(SampleScore(system, query, sample, value, passed))
    rng.shuffle(rows)
    return rows


def _by_hand(rows: list[SampleScore]) -> dict[tuple[int, int], dict]:
    """The same figures, written out plainly from the definitions in docs/metrics.md."""
    out: dict[tuple[int, int], dict] = {}
    keys = {(r.system_id, r.query_id) for r in rows}
    for key in keys:
        scored = [r for r in rows if (r.system_id, r.query_id) == key and r.value is not None]
        if not scored:
            continue
        values = [r.value for r in scored]
        out[key] = {
            "k": len(scored),
            "mean": statistics.fmean(values),
            "worst": min(values),
            "spread": max(values) - min(values),
            "pass_k": None if scored[0].passed is None else all(r.passed for r in scored),
        }
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_pass_k_and_worst_of_k_equal_an_independent_computation(seed):
    rows = _generated(seed, threshold=0.5)
    expected = _by_hand(rows)
    found = {(q.system_id, q.query_id): q for q in per_query(rows)}
    assert found.keys() == expected.keys()
    for key, want in expected.items():
        q = found[key]
        assert q.k == want["k"]
        assert q.mean == pytest.approx(want["mean"])
        assert q.worst == want["worst"]
        assert q.spread == pytest.approx(want["spread"])
        assert q.pass_k is want["pass_k"]
        assert list(q.samples) == sorted(q.samples)
    for system in per_system(found.values()):
        own = [v for (s, _), v in expected.items() if s == system.system_id]
        assert system.queries == len(own)
        assert system.samples == sum(v["k"] for v in own)
        assert system.pass_k.mean == pytest.approx(statistics.fmean(v["pass_k"] for v in own))
        assert system.worst.mean == pytest.approx(statistics.fmean(v["worst"] for v in own))
        assert system.mean.mean == pytest.approx(statistics.fmean(v["mean"] for v in own))
        assert system.mean.low <= system.mean.mean <= system.mean.high
        assert system.pass_k.low <= system.pass_k.mean <= system.pass_k.high
        # The per-sample pass rate is read over samples, not queries.
        scored = [r for r in rows if r.system_id == system.system_id and r.value is not None]
        assert system.pass_1 == pytest.approx(statistics.fmean(r.passed for r in scored))


def test_pass_k_is_at_most_the_share_of_queries_passing_any_one_sample():
    rows = _generated(7, threshold=0.5)
    for q in per_query(rows):
        assert q.worst <= q.mean <= q.best
        if q.pass_k:
            assert q.passes == q.k
        else:
            assert q.passes < q.k


def test_without_a_threshold_pass_k_is_not_defined():
    queries = per_query(_generated(4, threshold=None))
    assert all(q.pass_k is None and q.passes is None for q in queries)
    for system in per_system(queries):
        assert system.pass_k.mean is None and system.pass_1 is None
        assert system.worst.mean is not None


def test_one_sample_per_query_reads_as_the_plain_scores():
    rows = [SampleScore(1, q, 0, v, v >= 0.5) for q, v in enumerate([0.2, 0.6, 1.0, 0.5])]
    [system] = per_system(per_query(rows))
    assert (system.k_min, system.k_max) == (1, 1)
    assert system.spread.mean == 0
    assert system.pass_k.mean == pytest.approx(0.75) == system.pass_1
    assert system.worst.mean == pytest.approx(system.mean.mean)


def test_answers_without_a_score_are_left_out():
    rows = [SampleScore(1, 1, 0, None, None), SampleScore(1, 1, 1, 0.4, False)]
    [q] = per_query(rows)
    assert (q.k, q.samples, q.pass_k) == (1, (1,), False)
    assert per_query([SampleScore(1, 1, 0, None, None)]) == []

"""Analytics count a query once (issue 43): a system that answers a query k times (its
samples) has the query's k scores averaged first, then the queries; the system scores, the
complexity curve and the run comparison of `GET /api/datasets/{id}/analytics/` and
`.../analytics/compare/` equal that computation on generated samples, and differ from the
mean over answers they replaced (so the test tells the two apart)."""

from __future__ import annotations

import random
import statistics
from collections import defaultdict

import pytest
from django.urls import reverse

from evaluation.answers.models import Answer, System
from evaluation.judges.models import Judge
from evaluation.runs import snapshot
from evaluation.runs.models import Run, Verdict
from tests.factories import PanelFactory, UserFactory
from tests.support.builders import checklisted_query

pytestmark = pytest.mark.django_db

CRITERIA = ["c1", "c2", "c3", "c4"]
QUERIES = 8


def _generated_run(dataset, owner, queries, systems: dict[str, tuple[int, ...]], rng, name: str):
    """A done run: each system answers the n-th query k times (its ks, cycled), each
    sample's verdicts random, with a skill that falls as k grows, so that the samples'
    count and scores go together. Returns (run, scores[system][query] = samples' scores)."""
    judge = Judge.objects.create(name=f"J {name}", base_url="http://x/v1", model="m")
    panel = PanelFactory(name=f"P {name}", judges=[judge])
    run = Run.objects.create(
        dataset=dataset, panel=panel, status="done", created_by=owner, name=name,
        snapshot=snapshot.take(panel),
    )  # fmt: skip
    scores: dict[str, dict[int, list[float]]] = defaultdict(dict)
    for system_name, ks in systems.items():
        system = System.objects.create(name=system_name)
        for n, built in enumerate(queries):
            k = ks[n % len(ks)]
            # Many samples on the queries the system does worst: weighting by answers drags
            # its mean down, weighting by queries does not.
            skill = 0.2 if k > 2 else 0.9
            scores[system_name][built.query.pk] = []
            for sample in range(k):
                answer = Answer.objects.create(
                    system=system, query=built.query, text=f"{name}.{sample}", sample=sample
                )
                outcomes = ["pass" if rng.random() < skill else "fail" for _ in built.criteria]
                Verdict.objects.bulk_create(
                    Verdict(run=run, answer=answer, criterion=c, judge=judge, outcome=o)
                    for c, o in zip(built.criteria, outcomes, strict=True)
                )
                share = outcomes.count("pass") / len(outcomes)
                scores[system_name][built.query.pk].append(share)
    return run, scores


def _per_query(samples: dict[int, list[float]]) -> dict[int, float]:
    return {q: statistics.fmean(v) for q, v in samples.items()}


@pytest.fixture
def generated(reviewed_dataset, owner):
    rng = random.Random(4343)
    author = UserFactory(username="author")
    queries = [
        checklisted_query(reviewed_dataset, author=author, criteria=CRITERIA)
        for _ in range(QUERIES)
    ]
    before = _generated_run(
        reviewed_dataset, owner, queries, {"Agent": (1, 5, 2, 4), "Single": (1,)}, rng,
        "Before",
    )  # fmt: skip
    after = _generated_run(
        reviewed_dataset, owner, queries, {"Agent 2": (3, 1), "Single 2": (1,)},
        rng, "After",
    )  # fmt: skip
    return before, after


def test_system_scores_and_the_complexity_curve_average_a_querys_samples_first(
    generated, reviewed_dataset, reviewer_api, eager_refresh
):
    (run, scores), _ = generated
    url = reverse("api-evaluation:analytics", args=[reviewed_dataset.pk])
    body = reviewer_api.get(url, {"run": run.pk}).json()
    assert body["updating"] is False
    overall = {s["system"]: s for s in body["scores"] if s["group"] == "all"}
    curve = {s["system"]: s["points"] for s in body["complexity"]["systems"]}
    for system, samples in scores.items():
        by_query = statistics.fmean(_per_query(samples).values())
        by_answer = statistics.fmean(x for v in samples.values() for x in v)
        assert overall[system]["mean"] == pytest.approx(by_query)
        assert overall[system]["n"] == sum(map(len, samples.values()))  # still answers
        assert overall[system]["clusters"] == QUERIES
        (point,) = [p for p in curve[system] if p["mean"] is not None]  # 4 criteria: one bucket
        assert point["mean"] == pytest.approx(by_query)
        if system == "Agent":  # k samples differ between queries: the two ways differ
            assert abs(by_query - by_answer) > 0.05


def test_run_comparison_counts_each_system_once_per_query(
    generated, reviewed_dataset, reviewer_api, eager_refresh
):
    (before, scores_a), (after, scores_b) = generated
    url = reverse("api-evaluation:analytics-compare", args=[reviewed_dataset.pk])
    body = reviewer_api.get(url, {"a": before.pk, "b": after.pk}).json()
    assert body["updating"] is False

    def every_system(scores) -> dict[int, float]:
        means = [_per_query(samples) for samples in scores.values()]
        return {q: statistics.fmean(m[q] for m in means) for q in means[0]}

    a, b = every_system(scores_a), every_system(scores_b)
    got = {d["query"]: d for d in body["queries"]}
    assert set(got) == set(a)
    for query, row in got.items():
        assert row["a"] == pytest.approx(a[query]) and row["b"] == pytest.approx(b[query])
    assert body["test"]["difference"] == pytest.approx(statistics.fmean(b[q] - a[q] for q in a))
    # The mean over every answer of a query would weigh the Agent's k samples k times.
    agent, single = scores_a["Agent"], scores_a["Single"]
    differs = [q for q in a if len(agent[q]) > 1]
    by_answer = {q: statistics.fmean(agent[q] + single[q]) for q in differs}
    assert any(abs(by_answer[q] - a[q]) > 0.01 for q in differs)

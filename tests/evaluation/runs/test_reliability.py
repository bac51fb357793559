"""A run of several samples per (system, query): pass^k, worst-of-k, spread and the per
system means with intervals on the run page and in `GET /api/runs/{id}/scores/`, equal to
the figures worked out by hand from the verdicts; the page's queries stay flat."""

from __future__ import annotations

import statistics

import pytest
from django.urls import reverse

from evaluation.answers.models import Answer, System
from evaluation.judges.models import Judge
from evaluation.runs import snapshot
from evaluation.runs.models import Run, Verdict
from tests.factories import PanelFactory, UserFactory
from tests.support.builders import checklisted_query

pytestmark = pytest.mark.django_db

# Per query, each sample's verdicts on the query's two criteria (the share passed is the
# sample's score; the dataset's threshold is 0.5).
SAMPLES = {
    0: [("pass", "pass"), ("pass", "pass"), ("pass", "fail")],  # 1, 1, .5: pass^3
    1: [("pass", "pass"), ("fail", "fail"), ("pass", "fail")],  # 1, 0, .5: worst 0
    2: [("fail", "fail"), ("fail", "fail")],  # 0, 0: k = 2
}


def _run(dataset, owner, queries: dict[int, list[tuple[str, str]]], system: str = "Agent"):
    judge = Judge.objects.create(name=f"J {system}", base_url="http://x/v1", model="m")
    panel = PanelFactory(name=f"One {system}", judges=[judge])
    run = Run.objects.create(
        dataset=dataset, panel=panel, status="done", created_by=owner,
        snapshot=snapshot.take(panel),
    )  # fmt: skip
    author = UserFactory(username=f"author-{system}")
    agent = System.objects.create(name=system)
    made = {}
    for n, samples in queries.items():
        built = checklisted_query(dataset, author=author, criteria=["c1", "c2"], save_each=True)
        made[n] = built.query
        for sample, outcomes in enumerate(samples):
            answer = Answer.objects.create(
                system=agent, query=built.query, text=f"{n}.{sample}", sample=sample
            )
            Verdict.objects.bulk_create(
                Verdict(run=run, answer=answer, criterion=c, judge=judge, outcome=o)
                for c, o in zip(built.criteria, outcomes, strict=True)
            )
    return run, made


def _expected(queries):
    """pass^k, worst-of-k, spread and mean per query, worked out from the verdicts."""
    out = {}
    for n, samples in queries.items():
        scores = [sum(o == "pass" for o in pair) / 2 for pair in samples]
        out[n] = {
            "k": len(scores), "mean": statistics.fmean(scores), "worst": min(scores),
            "spread": max(scores) - min(scores), "pass_k": all(s >= 0.5 for s in scores),
            "passes": sum(s >= 0.5 for s in scores),
        }  # fmt: skip
    return out


@pytest.fixture
def sampled(reviewed_dataset, owner):
    reviewed_dataset.pass_threshold = 0.5
    reviewed_dataset.save()
    return _run(reviewed_dataset, owner, SAMPLES)


def test_scores_api_reports_pass_k_and_worst_of_k_per_query_and_system(
    sampled, reviewer_api, outsider_api, collaborator_api
):
    run, queries = sampled
    url = f"/api/runs/{run.pk}/scores/"
    assert outsider_api.get(url).status_code == 404
    assert collaborator_api.get(url).status_code == 403
    data = reviewer_api.get(url).json()
    expected = _expected(SAMPLES)
    found = {q["query"]: q for q in data["reliability"]["queries"]}
    assert found.keys() == {queries[n].pk for n in SAMPLES}
    for n, want in expected.items():
        got = found[queries[n].pk]
        assert {k: got[k] for k in want} == pytest.approx(want)
        assert got["samples"] == list(range(want["k"]))
    [system] = data["reliability"]["systems"]
    assert (system["queries"], system["samples"], system["k_min"], system["k_max"]) == (3, 8, 2, 3)
    assert system["pass_k"]["mean"] == pytest.approx(1 / 3)
    assert system["worst"]["mean"] == pytest.approx(statistics.fmean([0.5, 0, 0]))
    assert system["mean"]["mean"] == pytest.approx(
        statistics.fmean(e["mean"] for e in expected.values())
    )
    assert system["mean"]["low"] <= system["mean"]["mean"] <= system["mean"]["high"]
    assert system["pass_1"] == pytest.approx(5 / 8)
    assert {a["sample"] for a in data["answers"]} == {0, 1, 2}


def test_run_page_shows_the_reliability_tables(sampled, client, owner):
    run, _ = sampled
    client.force_login(owner)
    page = client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert "Reliability over samples" in page
    assert 'data-reliability-system="Agent"' in page
    assert page.count("data-reliability-query=") == 3
    assert "all 3 pass" in page and "2 of 3 pass" in page and "0 of 2 pass" in page


def test_a_run_of_single_answers_shows_no_reliability_table(reviewed_dataset, owner, client):
    run, _ = _run(reviewed_dataset, owner, {0: [("pass", "fail")], 1: [("pass", "pass")]})
    client.force_login(owner)
    page = client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert "Reliability over samples" not in page


def test_run_page_queries_stay_flat_with_more_samples(
    reviewed_dataset, owner, client, django_assert_max_num_queries
):
    small, _ = _run(reviewed_dataset, owner, SAMPLES)
    client.force_login(owner)
    client.get(reverse("run-detail", args=[small.pk]))  # counts and keeps the scores
    with django_assert_max_num_queries(40) as few:
        client.get(reverse("run-detail", args=[small.pk]))
    small_read = len(few)  # read now: the connection's query log moves on
    big, _ = _run(
        reviewed_dataset, owner, {n: [("pass", "fail")] * 6 for n in range(12)}, system="Big"
    )
    client.get(reverse("run-detail", args=[big.pk]))
    with django_assert_max_num_queries(small_read):
        page = client.get(reverse("run-detail", args=[big.pk])).content.decode()
    assert page.count("data-reliability-query=") == 12

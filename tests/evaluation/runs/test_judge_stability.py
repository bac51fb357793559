"""Judge stability on a scripted judge (issue 43): the loopback server answers some
criteria differently on repeated calls of one judge (a panel member with three samples);
the run reports the flip share of each criterion and overall within its interval, marks the
flipping criteria unstable and shows them where people look: the run page, criterion
health, the agreement page (test–retest κ beside judge–human κ) and
`GET /api/runs/{id}/stability/`, all reading the kept figure, never counting it cold."""

from __future__ import annotations

import pytest
from celery.canvas import Signature
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation import services
from evaluation import task_names
from evaluation.analytics.tasks import refresh_analytics
from evaluation.kept import refresh
from evaluation.runs import lifecycle, stability
from evaluation.runs import services as runs
from evaluation.runs.models import Run
from evaluation.runs.stability import run_stability
from tests.factories import AnswerFactory, PanelFactory, loopback_judges, valid_criteria
from tests.support.flipping import alternating_judge

pytestmark = pytest.mark.django_db

# Criterion text -> the answers (by their text) on which the scripted judge flips.
FLIPPING = {
    "States Q3 revenue of $4.12 billion.": {"a0", "a1", "a2", "a3"},
    "Reports a Q3 gross margin of 61.5%.": {"a0", "a1", "a2", "a3"},
    "Mentions the Q4 revenue guidance of $4.3–4.45 billion.": {"a0"},
}
ANSWERS = ("a0", "a1", "a2", "a3")
SAMPLES = 3


def _flipping_judge():
    """pass, fail, pass… on the repeated calls of a flipping item; pass on every other."""
    return alternating_judge(
        lambda text: any(
            criterion in text and any(f"Answer:\n{a}" in text for a in answers)
            for criterion, answers in FLIPPING.items()
        )
    )


def _flipping_run(dataset, owner, collaborator, query, loopback_openai):
    """A done run of the scripted flipping judge over ANSWERS; (run, criteria by text)."""
    checklist = services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria(), submit=True
    )
    criteria = {c.text: c for c in checklist.criteria.all()}
    answers = [AnswerFactory(query=query, text=text) for text in ANSWERS]
    loopback_openai.responder = _flipping_judge()
    (judge,) = loopback_judges(loopback_openai, 1)
    panel = PanelFactory(judges=[judge], judges__samples=SAMPLES)
    run = runs.run_start(run=runs.run_create(dataset=dataset, panel=panel, by=owner))
    for answer in answers:
        lifecycle.run_task(worker="test", run_id=run.pk, answer_id=answer.pk, judge_id=judge.pk)
    run.refresh_from_db()
    assert run.status == "done"
    return run, criteria


def test_a_scripted_flipping_judge_is_reported_within_its_interval(
    dataset, owner, collaborator, query, loopback_openai, client
):
    run, criteria = _flipping_run(dataset, owner, collaborator, query, loopback_openai)

    found = run_stability(run)
    items = len(criteria) * len(ANSWERS)
    flipped = sum(len(a) for a in FLIPPING.values())
    assert found["items"] == items
    assert found["flips"]["count"] == flipped
    assert found["flips"]["low"] <= flipped / items <= found["flips"]["high"]
    # Fleiss' kappa by hand: 15 items pass three times (agreement 1), 9 flip pass, fail,
    # pass (1/3); P = (15 + 9/3) / 24 = 0.75; pass share 63/72 = 0.875, Pe = 0.78125. So
    # rare fails make repeated calls agree less than chance would (kappa < 0).
    assert found["kappa"] == pytest.approx((0.75 - 0.78125) / (1 - 0.78125))
    by_criterion = {c["criterion_id"]: c["flips"] for c in found["criteria"]}
    for text, criterion in criteria.items():
        share = len(FLIPPING.get(text, ())) / len(ANSWERS)
        rate = by_criterion[criterion.pk]
        assert rate["rate"] == share
        assert rate["low"] <= share <= rate["high"]

    client.force_login(owner)
    page = client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert "Judge stability (repeated calls)" in page
    assert page.count("data-stability-criterion=") == len(criteria)
    # Four of four items flipped: surely above the 10% floor. One of four: not surely.
    assert page.count(">unstable</span>") == 2


def test_a_run_without_repeated_calls_shows_no_stability(
    dataset, owner, collaborator, query, loopback_openai, client, owner_api
):
    services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria(), submit=True
    )
    answer = AnswerFactory(query=query, text="a0")
    (judge,) = loopback_judges(loopback_openai, 1)
    run = runs.run_start(
        run=runs.run_create(dataset=dataset, panel=PanelFactory(judges=[judge]), by=owner)
    )
    lifecycle.run_task(worker="test", run_id=run.pk, answer_id=answer.pk, judge_id=judge.pk)
    run.refresh_from_db()
    assert run.status == "done" and run_stability(run)["items"] == 0
    body = owner_api.get(f"/api/runs/{run.pk}/stability/").json()
    assert body["items"] == 0 and body["criteria"] == [] and body["kappa"] is None
    assert body["flips"]["rate"] is None and body["updating"] is False
    client.force_login(owner)
    page = client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert "Judge stability (repeated calls)" not in page
    health = client.get(reverse("analytics-criteria", args=[dataset.pk]), {"run": run.pk})
    assert "Judge flips" not in health.content.decode()
    assert "Judge stability" not in health.content.decode()


def counts_stability(captured) -> bool:
    """The figure's count of repeated items (runs.stability._REPEATED_SQL) ran."""
    return any("HAVING count(*) >= 2" in q["sql"] for q in captured.captured_queries)


def test_criterion_health_agreement_and_the_api_show_the_flip_rates(
    dataset, owner, collaborator, query, loopback_openai, client, owner_api, eager_refresh,
    django_assert_max_num_queries,
):  # fmt: skip
    run, criteria = _flipping_run(dataset, owner, collaborator, query, loopback_openai)
    expected = run_stability(run)
    unstable = {c.pk for t, c in criteria.items() if len(FLIPPING.get(t, ())) == len(ANSWERS)}

    with django_assert_max_num_queries(6):
        body = owner_api.get(f"/api/runs/{run.pk}/stability/").json()
    assert body["updating"] is False and body["refresh_failed"] is None
    assert body["items"] == expected["items"] == len(criteria) * len(ANSWERS)
    assert body["kappa"] == pytest.approx(expected["kappa"])
    assert body["flips"] == expected["flips"]
    got = {c["criterion"]: c for c in body["criteria"]}
    assert set(got) == {c.pk for c in criteria.values()}
    for row in expected["criteria"]:
        assert got[row["criterion_id"]]["flips"] == row["flips"]
    assert {pk for pk, c in got.items() if c["unstable"]} == unstable
    rates = [c["flips"]["rate"] for c in body["criteria"]]
    assert rates == sorted(rates, reverse=True)  # the most unstable first

    client.force_login(owner)
    health_url = reverse("analytics-criteria", args=[dataset.pk])
    client.get(health_url, {"run": run.pk})  # the analytics figures' first count (eager)
    with django_assert_max_num_queries(16):
        health = client.get(health_url, {"run": run.pk}).content.decode()
    # A flip-rate column in the criterion table, and the most unstable criteria beside it.
    assert "Judge flips" in health and health.count("data-flips") == len(criteria)
    assert "4/4" in health and "1/4" in health and "0/4" in health
    assert health.count(">unstable</span>") == 2 * len(unstable)
    assert health.count("data-stability-criterion=") == len(criteria)

    agreement_url = reverse("dataset-agreement", args=[dataset.pk])
    client.get(agreement_url, {"run": run.pk})  # the agreement counts' first count
    with django_assert_max_num_queries(14):
        agreement = client.get(agreement_url, {"run": run.pk}).content.decode()
    assert "data-judge-vs-itself" in agreement and "data-retest-kappa" in agreement
    assert f"{expected['kappa']:.2f}" in agreement.split("data-retest-kappa")[1][:40]
    assert agreement.count("data-stability-criterion=") == len(criteria)


def test_a_cold_figure_is_queued_once_and_never_counted_in_the_request(
    dataset, owner, collaborator, query, loopback_openai, client, owner_api, settings,
    monkeypatch, django_assert_max_num_queries,
):  # fmt: skip
    run, criteria = _flipping_run(dataset, owner, collaborator, query, loopback_openai)
    settings.FIGURES_COLD_IN_REQUEST = False  # production's rule (evaluation.kept.cold)
    sent = []
    monkeypatch.setattr(
        Signature, "apply_async", lambda self, *a, **k: sent.append((self.task, self.args))
    )
    for _ in range(3):
        with (
            CaptureQueriesContext(connection) as read,
            django_assert_max_num_queries(10),
        ):
            body = owner_api.get(f"/api/runs/{run.pk}/stability/").json()
        assert not counts_stability(read)
        assert body["updating"] is True and body["computed_at"] is None
        assert body["items"] is None and body["criteria"] == []
    client.force_login(owner)
    for name in ("run-detail", "analytics-criteria", "dataset-agreement"):
        args = [run.pk] if name == "run-detail" else [dataset.pk]
        with CaptureQueriesContext(connection) as read:
            page = client.get(reverse(name, args=args), {"run": run.pk}).content.decode()
        assert not counts_stability(read), name
        assert "data-stability-computing" in page, name
    # Five readers, one refresh queued.
    assert sent.count((task_names.REFRESH_TASK, (run.pk, stability.REFRESH_GROUP))) == 1

    # What the worker does; then every reader gets the figure, counted once.
    assert refresh_analytics(run.pk, stability.REFRESH_GROUP) is True
    assert refresh.failure(run.dataset_id, run.pk, stability.REFRESH_GROUP) is None
    with CaptureQueriesContext(connection) as read:
        body = owner_api.get(f"/api/runs/{run.pk}/stability/").json()
    assert not counts_stability(read)
    assert body["updating"] is False and body["items"] == len(criteria) * len(ANSWERS)
    assert body["flips"] == run_stability(run)["flips"]


def test_after_a_resume_the_figure_before_is_served_updating_until_the_refresh(
    dataset, owner, collaborator, query, loopback_openai, owner_api, settings, monkeypatch
):
    run, _ = _flipping_run(dataset, owner, collaborator, query, loopback_openai)
    before = run_stability(run)
    settings.FIGURES_COLD_IN_REQUEST = False
    sent = []
    monkeypatch.setattr(
        Signature, "apply_async", lambda self, *a, **k: sent.append((self.task, self.args))
    )
    # What a resume or a retry of failed calls moves: the run's state (its attempt).
    Run.objects.filter(pk=run.pk).update(attempt=run.attempt + 1)
    for _ in range(2):
        with CaptureQueriesContext(connection) as read:
            body = owner_api.get(f"/api/runs/{run.pk}/stability/").json()
        assert not counts_stability(read)
        assert body["updating"] is True and body["computed_at"] is not None
        assert body["items"] == before["items"] and body["flips"] == before["flips"]
    assert sent == [(task_names.REFRESH_TASK, (run.pk, stability.REFRESH_GROUP))]
    assert refresh_analytics(run.pk, stability.REFRESH_GROUP) is True
    assert owner_api.get(f"/api/runs/{run.pk}/stability/").json()["updating"] is False

"""An ended run's verdict counts (by outcome, tokens, cost, requests, errors: the run page's
progress and `GET /api/runs/{id}/progress/`) are never counted in a user's request (issue
44, evaluation.kept.cold): with its kept rows gone (a flush, a new release), the page and
the API answer at once within their query budget, read no verdict, and say "counting"; the
refresh the reader queued counts them, and the page then shows the exact counts. After a
change of the run's state (a resume, a retry), the earlier counts are served marked
updating, never recounted in the request. A failed count says so and when it is tried
again."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.db.models import Count, Q
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evaluation.analytics.tasks import refresh_analytics
from evaluation.kept import refresh
from evaluation.kept.models import KeptFigure, KeptRefresh
from evaluation.runs import overview
from evaluation.runs.models import Run, Verdict
from tests.evaluation.agreement.labelled import build_labelled

# The run page with every figure a placeholder: access, run, snapshot, tasks, graded
# progress, the counts' read, refresh marker (read, insert) and failure, the scores' and
# the judge stability's the same, the canary, session and user.
PAGE_QUERIES = 45
API_QUERIES = 16


@pytest.fixture
def no_cold_in_request(settings):
    settings.FIGURES_COLD_IN_REQUEST = False  # production's rule (the suite's default: on)


def fresh(run: Run) -> Run:
    return Run.objects.select_related("dataset", "panel").get(pk=run.pk)


def reads_no_verdict(captured) -> bool:
    return not any("evaluation_verdict" in q["sql"] for q in captured.captured_queries)


def counted_in_the_database(run: Run) -> dict:
    outcome = Verdict.Outcome
    return Verdict.objects.filter(run=run).aggregate(
        done=Count("pk"),
        passed=Count("pk", filter=Q(outcome=outcome.PASS)),
        failed=Count("pk", filter=Q(outcome=outcome.FAIL)),
        unparseable=Count("pk", filter=Q(outcome=outcome.UNPARSEABLE)),
        errors=Count("pk", filter=Q(outcome=outcome.ERROR)),
    )


def shown_counts(html: str) -> tuple[int, int, int]:
    """(done, passed, failed) as the run page's progress shows them."""
    done = int(re.search(r"<strong data-done>([\d,]+)</strong>", html)[1].replace(",", ""))
    passed, failed = re.search(r"([\d,]+) pass · ([\d,]+) fail", html).groups()
    return done, int(passed.replace(",", "")), int(failed.replace(",", ""))


def test_cold_counts_are_queued_not_counted_and_the_refresh_shows_them_exact(
    reviewed_dataset, owner, client, no_cold_in_request, django_assert_max_num_queries
):
    run = build_labelled(reviewed_dataset, queries=3, criteria=4, systems=2, seed=91).run
    # Every kept row of the run gone: what a flush or a release that changes them leaves.
    KeptFigure.objects.filter(run_id=run.pk).delete()
    client.force_login(owner)

    for _ in range(3):  # many readers, one refresh
        with (
            CaptureQueriesContext(connection) as read,
            django_assert_max_num_queries(PAGE_QUERIES),
        ):
            page = client.get(reverse("run-detail", args=[run.pk]))
        html = page.content.decode()
        assert page.status_code == 200 and reads_no_verdict(read)
        assert "data-counting" in html and "data-done" not in html
    with CaptureQueriesContext(connection) as read, django_assert_max_num_queries(API_QUERIES):
        body = client.get(f"/api/runs/{run.pk}/progress/").json()
    assert reads_no_verdict(read)
    assert body["updating"] is True and body["computed_at"] is None and body["done"] == 0
    marker = KeptRefresh.objects.get(run_id=run.pk, group=overview.REFRESH_GROUP)
    assert marker.error == ""  # one refresh queued for every reader, none failed

    # The refresh the readers queued (what the worker runs): then the exact counts.
    assert refresh_analytics(run.pk, overview.REFRESH_GROUP) is True
    assert not KeptRefresh.objects.filter(run_id=run.pk, group=overview.REFRESH_GROUP).exists()
    exact = counted_in_the_database(run)
    assert exact["errors"] > 0 and exact["unparseable"] > 0  # every outcome is shown
    with CaptureQueriesContext(connection) as read:
        html = client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert "data-counting" not in html and "data-counts-updating" not in html
    assert shown_counts(html) == (exact["done"], exact["passed"], exact["failed"])
    assert f"{exact['unparseable']} unparseable" in html and f"{exact['errors']} errors" in html
    body = client.get(f"/api/runs/{run.pk}/progress/").json()
    assert body["updating"] is False and body["computed_at"] is not None
    assert {k: body[k] for k in exact} == exact


def test_the_progress_poll_of_a_page_counting_reloads_it_once_the_counts_are_kept(
    reviewed_dataset, owner, client, no_cold_in_request
):
    run = build_labelled(reviewed_dataset, queries=2, criteria=3, systems=2, seed=93).run
    KeptFigure.objects.filter(run_id=run.pk).delete()
    client.force_login(owner)
    url = reverse("run-detail", args=[run.pk])
    polled = client.get(url, headers={"HX-Request": "true", "HX-Target": "run-progress"})
    assert "data-counting" in polled.content.decode() and "HX-Refresh" not in polled.headers
    assert 'hx-trigger="every 2s"' in polled.content.decode()  # it polls on
    refresh_analytics(run.pk, overview.REFRESH_GROUP)
    polled = client.get(url, headers={"HX-Request": "true", "HX-Target": "run-progress"})
    assert polled.headers["HX-Refresh"] == "true"


def test_after_a_state_change_the_earlier_counts_are_served_updating_not_recounted(
    reviewed_dataset, owner, client, no_cold_in_request
):
    run = build_labelled(reviewed_dataset, queries=2, criteria=3, systems=2, seed=95).run
    before = overview.keep_counts(fresh(run))
    # A verdict more and a new attempt (what a retry of failed calls leaves once it ends).
    Verdict.objects.filter(run=run, outcome=Verdict.Outcome.ERROR).update(
        outcome=Verdict.Outcome.PASS
    )
    Run.objects.filter(pk=run.pk).update(attempt=run.attempt + 1)
    client.force_login(owner)
    with CaptureQueriesContext(connection) as read:
        html = client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert reads_no_verdict(read) and "data-counts-updating" in html
    assert shown_counts(html)[1] == before["totals"]["passed"]  # the earlier counts
    assert refresh_analytics(run.pk, overview.REFRESH_GROUP) is True
    html = client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert "data-counts-updating" not in html
    assert (
        shown_counts(html)[1] == counted_in_the_database(run)["passed"] > before["totals"]["passed"]
    )


def test_a_count_that_fails_is_said_with_its_next_try(
    reviewed_dataset, owner, client, no_cold_in_request
):
    run = build_labelled(reviewed_dataset, queries=2, criteria=3, systems=2, seed=97).run
    KeptFigure.objects.filter(run_id=run.pk).delete()
    refresh.fail(run.dataset_id, run.pk, overview.REFRESH_GROUP, TimeoutError("slow"))
    client.force_login(owner)
    html = client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert "data-counts-failed" in html and "TimeoutError" in html
    body = client.get(f"/api/runs/{run.pk}/progress/").json()
    assert body["updating"] is True and body["refresh_failed"]["error"] == "TimeoutError"
    assert body["refresh_failed"]["tries"] == 1


def test_an_outsider_gets_no_counts(reviewed_dataset, outsider, client, no_cold_in_request):
    run = build_labelled(reviewed_dataset, queries=2, criteria=3, systems=2, seed=99).run
    KeptFigure.objects.filter(run_id=run.pk).delete()
    client.force_login(outsider)
    assert client.get(reverse("run-detail", args=[run.pk])).status_code == 404
    assert client.get(f"/api/runs/{run.pk}/progress/").status_code == 404
    # Nothing queued for them either.
    assert not KeptRefresh.objects.filter(run_id=run.pk).exists()

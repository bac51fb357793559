"""Which run the agreement and analytics pages show by default: one rule for both
(evaluation.runs.selectors.choose_run). A run that ended with errors counts as finished:
its verdicts are real and its failed calls are error votes, excluded and counted. Before,
the agreement page skipped it and showed an older run while analytics showed it."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone

from evaluation.runs.models import Run
from evaluation.runs.selectors import choose_run, runs_of_system_answers
from tests.evaluation.agreement.labelled import build_labelled
from tests.evaluation.analytics.known import build_known

pytestmark = pytest.mark.django_db


def older_done_run(newest: Run) -> Run:
    """A run of the same dataset and panel that ended `done` a day before `newest`."""
    yesterday = timezone.now() - dt.timedelta(days=1)
    older = Run.objects.create(
        dataset=newest.dataset, panel=newest.panel, name="Older run", status=Run.Status.DONE,
        started_at=yesterday, finished_at=yesterday, snapshot=newest.snapshot,
    )  # fmt: skip
    Run.objects.filter(pk=older.pk).update(created_at=yesterday)
    return older


def ended_with_errors(run: Run) -> Run:
    Run.objects.filter(pk=run.pk).update(status=Run.Status.DONE_WITH_ERRORS, reason="1 error")
    run.refresh_from_db()
    return run


def test_the_latest_finished_run_may_have_ended_with_errors(reviewed_dataset):
    newest = ended_with_errors(build_labelled(reviewed_dataset).run)
    older_done_run(newest)
    runs = runs_of_system_answers(reviewed_dataset)
    assert choose_run(reviewed_dataset, None, runs) == newest
    assert choose_run(reviewed_dataset, None, runs, or_newest=True) == newest


def test_without_a_finished_run_only_analytics_fall_back_to_the_newest(reviewed_dataset):
    run = build_labelled(reviewed_dataset).run
    Run.objects.filter(pk=run.pk).update(status=Run.Status.CANCELLED)
    runs = runs_of_system_answers(reviewed_dataset)
    assert choose_run(reviewed_dataset, None, runs) is None  # agreement: humans only
    assert choose_run(reviewed_dataset, None, runs, or_newest=True) == run


def test_agreement_page_and_api_show_a_run_that_ended_with_errors(
    reviewed_dataset, client, reviewer, reviewer_api
):
    newest = ended_with_errors(build_labelled(reviewed_dataset).run)
    older_done_run(newest)
    client.force_login(reviewer)
    response = client.get(reverse("dataset-agreement", args=[reviewed_dataset.pk]))
    assert response.context["report"].run == newest
    assert f'<option value="{newest.pk}" selected>' in response.content.decode()
    body = reviewer_api.get(
        reverse("api-evaluation:agreement"), {"dataset": reviewed_dataset.pk}
    ).json()
    assert body["run"]["id"] == newest.pk


@pytest.mark.usefixtures("eager_refresh")
def test_analytics_page_and_api_show_a_run_that_ended_with_errors(
    reviewed_dataset, client, reviewer, reviewer_api
):
    newest = ended_with_errors(build_known(reviewed_dataset).run)
    older_done_run(newest)
    client.force_login(reviewer)
    response = client.get(reverse("dataset-analytics", args=[reviewed_dataset.pk]))
    assert response.context["run"] == newest
    assert f'<option value="{newest.pk}" selected>' in response.content.decode()
    body = reviewer_api.get(reverse("api-evaluation:analytics", args=[reviewed_dataset.pk]))
    assert body.json()["run"]["id"] == newest.pk

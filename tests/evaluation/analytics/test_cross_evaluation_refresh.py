"""Analytics reflect a finished cross-evaluation within a refresh's time (issue 28, item 6):
its end queues the refresh of the figures kept for the dataset's runs at once, whatever
refresh the labels had queued behind the spacing (FIGURES_REFRESH_SPACING); a reader who
finds figures moved by anything but labels queues the refresh without the spacing; and
meanwhile the page says the human line is updating, not "no cross-evaluation yet"."""

from __future__ import annotations

import pytest
from celery.canvas import Signature
from django.urls import reverse

from evaluation import task_names
from evaluation.analytics import figures
from evaluation.analytics.tasks import refresh_analytics
from evaluation.kept import refresh
from evaluation.kept.models import KeptRefresh
from evaluation.runs import overview, scores
from evaluation.runs.models import Run
from evaluation.runs.signals import run_ended
from tests.evaluation.cross_evaluation.two_queries import grade_directly, two_queries

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(monkeypatch):
    """The tasks queued (name, arguments, options), not sent: no worker here."""
    found: list[tuple] = []
    monkeypatch.setattr(
        Signature, "apply_async", lambda self, *a, **kw: found.append((self.task, self.args, kw))
    )
    return found


@pytest.fixture
def warm_before_cross_evaluation(known, reviewed_dataset, owner, settings):
    """The run's figures kept with perfect answers written but not yet cross-evaluated
    (no human line), a long spacing, and then a cross-evaluation that has finished."""
    settings.FIGURES_REFRESH_SPACING = 3600
    two_queries(reviewed_dataset, owner)
    figures.warm(known.run)
    assert figures.page(known.run).curve.human.mean is None
    return known, grade_directly(reviewed_dataset)


def _refreshes(sent, run) -> list[dict]:
    return [kw for name, args, kw in sent if name == task_names.REFRESH_TASK and args[0] == run.pk]


def test_a_reader_after_a_cross_evaluation_refreshes_at_once_and_says_updating(
    warm_before_cross_evaluation, reviewed_dataset, client, reviewer, sent
):
    known, _cross = warm_before_cross_evaluation
    client.force_login(reviewer)
    url = reverse("dataset-analytics", args=[reviewed_dataset.pk])
    html = client.get(url).content.decode()
    # No label since the figures were kept: the spacing does not hold the refresh back.
    assert [kw.get("countdown") for kw in _refreshes(sent, known.run)] == [0]
    assert "Updating." in html
    assert "data-human-updating" in html and "no cross-evaluation yet" not in html
    # The refresh keeps the human line; the next read is fresh and draws it.
    assert refresh_analytics(known.run.pk) is True
    html = client.get(url).content.decode()
    assert "Updating." not in html and 'class="human-line"' in html
    assert "50.0%" in html  # the scenario's mean overlap (two_queries.EXPECTED_MEAN)


def test_after_labels_the_spacing_still_holds(
    warm_before_cross_evaluation, reviewed_dataset, client, reviewer, sent
):
    from tests.evaluation.analytics.test_refresh import _label

    known, _cross = warm_before_cross_evaluation
    _label(known, reviewer)
    client.force_login(reviewer)
    client.get(reverse("dataset-analytics", args=[reviewed_dataset.pk]))
    ((options),) = _refreshes(sent, known.run)
    assert 3500 < options["countdown"] <= 3600


def test_a_cross_evaluations_end_queues_the_refresh_past_a_spaced_one(
    warm_before_cross_evaluation, reviewed_dataset, client, reviewer, sent
):
    from tests.evaluation.analytics.test_refresh import _label

    known, cross = warm_before_cross_evaluation
    _label(known, reviewer)  # a reader then queues a refresh an hour away
    client.force_login(reviewer)
    client.get(reverse("dataset-analytics", args=[reviewed_dataset.pk]))
    marker = KeptRefresh.objects.get(run=known.run, group=refresh.DEFAULT)
    run_ended.send(sender=Run, run_id=cross.pk)
    queued = _refreshes(sent, known.run)
    assert len(queued) == 2 and queued[-1].get("countdown", 0) == 0
    # The marker is taken over, so readers meanwhile queue no other refresh.
    assert KeptRefresh.objects.get(pk=marker.pk).claimed_at > marker.claimed_at
    client.get(reverse("dataset-analytics", args=[reviewed_dataset.pk]))
    assert len(_refreshes(sent, known.run)) == 2


def test_a_cross_evaluations_end_refreshes_only_runs_with_kept_figures(
    known, reviewed_dataset, owner, sent
):
    two_queries(reviewed_dataset, owner)
    cross = grade_directly(reviewed_dataset)
    run_ended.send(sender=Run, run_id=cross.pk)  # nothing kept yet: nothing to refresh
    assert _refreshes(sent, known.run) == []
    figures.warm(known.run)
    run_ended.send(sender=Run, run_id=known.run.pk)  # a system run: the warm task instead
    # ... and the count of its scores and of its verdicts (its page's progress), kept for
    # their first reader (no analytics refresh).
    assert [args for _, args, _ in sent] == [
        (known.run.pk,), (known.run.pk, scores.REFRESH_GROUP),
        (known.run.pk, overview.REFRESH_GROUP),
    ]  # fmt: skip
    assert [name for name, _, _ in sent] == [
        task_names.WARM_TASK, task_names.REFRESH_TASK, task_names.REFRESH_TASK
    ]  # fmt: skip

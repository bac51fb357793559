"""Analytics pages never wait for a recompute (issue 12, item 10): after a label they serve
the figures of the earlier state, marked updating, while one refresh per run runs in
Celery; the page polls until the fresh figures are kept. Failure paths: a dead worker's
marker expires, a task that raises clears its marker and leaves the old figures served, a
broker that cannot be reached queues nothing and leaves no marker. A real worker refreshes
the figures at the end."""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta

import pytest
from celery.canvas import Signature
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotation.models import Criterion
from evaluation import task_names
from evaluation.analytics import figures
from evaluation.analytics import selectors as sel
from evaluation.analytics.tasks import refresh_analytics
from evaluation.answers.models import Answer
from evaluation.kept import refresh
from evaluation.kept.counters import counters
from evaluation.kept.models import KeptFigure, KeptRefresh
from evaluation.review.services import adjudicate, label_set
from tests.evaluation.analytics.known import build_known
from tests.factories import DatasetFactory


@pytest.fixture
def queued(monkeypatch):
    """The refresh tasks queued by readers (names and arguments), not sent: no worker here."""
    sent: list[tuple] = []

    def record(self, *args, **kwargs):
        sent.append((self.task, tuple(self.args)))

    monkeypatch.setattr(Signature, "apply_async", record)
    return sent


# The analytics page serving kept figures: at most this many queries whatever the data (one
# of them since issue 43: the judge canary of the run's panel, if any; one since issue 44:
# the panel's runs for the score trend, whose kept scores are read when there are two).
PAGE_QUERIES = 22


def _label(known, reviewer) -> None:
    """A human label through the review service: the dataset's review revision moves."""
    answer_id = next(iter(known.answers))
    answer = Answer.objects.get(pk=answer_id)
    criterion = Criterion.objects.filter(checklist__query_id=answer.query_id).first()
    label_set(answer=answer, criterion=criterion, reviewer=reviewer, label="fail")


def _marker(run) -> KeptRefresh | None:
    return KeptRefresh.objects.filter(run=run, group=refresh.DEFAULT).first()


def _revision(dataset) -> int:
    return counters(dataset.pk).number


@pytest.fixture
def labelled_after_warm(known, reviewed_dataset, reviewer):
    figures.warm(known.run)
    before = _revision(reviewed_dataset)
    _label(known, reviewer)
    assert _revision(reviewed_dataset) > before
    return known, before


def test_after_a_label_the_page_serves_the_old_figures_marked_updating(
    labelled_after_warm, reviewed_dataset, client, reviewer, queued, django_assert_max_num_queries
):
    known, before = labelled_after_warm
    client.force_login(reviewer)
    url = reverse("dataset-analytics", args=[reviewed_dataset.pk])
    with django_assert_max_num_queries(PAGE_QUERIES), CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200
    assert not any("evaluation_verdict" in q["sql"] for q in captured.captured_queries)
    html = response.content.decode()
    assert 'id="label-source"' in html and 'id="system-scores"' in html  # the old figures
    assert "Updating." in html and f"(review revision {before})" in html
    assert 'hx-trigger="every 2s"' in html and "analytics/freshness/" in html
    assert queued == [(task_names.REFRESH_TASK, (known.run.pk, refresh.DEFAULT))]
    assert _marker(known.run) is not None


def test_many_readers_queue_one_refresh(
    labelled_after_warm, reviewed_dataset, client, reviewer, reviewer_api, queued
):
    known, _ = labelled_after_warm
    client.force_login(reviewer)
    for name in ("dataset-analytics", "analytics-complexity-csv", "analytics-compare"):
        for _ in range(7):
            assert client.get(reverse(name, args=[reviewed_dataset.pk])).status_code == 200
    api = reverse("api-evaluation:analytics", args=[reviewed_dataset.pk])
    assert reviewer_api.get(api).status_code == 200
    assert queued == [(task_names.REFRESH_TASK, (known.run.pk, refresh.DEFAULT))]


def test_a_dead_workers_marker_expires(
    labelled_after_warm, reviewed_dataset, client, reviewer, queued
):
    known, _ = labelled_after_warm
    client.force_login(reviewer)
    url = reverse("dataset-analytics", args=[reviewed_dataset.pk])
    client.get(url)
    client.get(url)
    assert len(queued) == 1
    # The worker died with the task: nobody releases the marker. Within the timeout it
    # still blocks; past it, the next reader queues a new refresh, and only that one.
    marker = _marker(known.run)
    young = timezone.now() - refresh.REFRESH_TIMEOUT + timedelta(seconds=30)
    KeptRefresh.objects.filter(pk=marker.pk).update(claimed_at=young)
    client.get(url)
    assert len(queued) == 1
    old = timezone.now() - refresh.REFRESH_TIMEOUT - timedelta(seconds=1)
    KeptRefresh.objects.filter(pk=marker.pk).update(claimed_at=old)
    client.get(url)
    client.get(url)
    assert len(queued) == 2
    assert _marker(known.run).claimed_at > old + timedelta(seconds=1)


def _broken(run, *args):
    raise RuntimeError("the database went away mid-compute")


def _past_backoff(run) -> None:
    """Time passes: the failed refresh's backoff runs out (its retry time moves back)."""
    marker = _marker(run)
    KeptRefresh.objects.filter(pk=marker.pk).update(retry_at=timezone.now() - timedelta(seconds=1))


def test_a_task_that_raises_keeps_the_old_figures_and_says_when_it_tries_again(
    labelled_after_warm, reviewed_dataset, client, reviewer, reviewer_api, queued, monkeypatch,
    caplog,
):  # fmt: skip
    known, before = labelled_after_warm
    client.force_login(reviewer)
    url = reverse("dataset-analytics", args=[reviewed_dataset.pk])
    client.get(url)
    assert _marker(known.run) is not None
    monkeypatch.setattr(figures, "warm", _broken)
    with caplog.at_level(logging.WARNING, logger="evaluation.analytics.recount"):
        started = timezone.now()
        assert refresh_analytics(known.run.pk, refresh.DEFAULT) is False
    assert "Analytics refresh of run" in caplog.text and "mid-compute" in caplog.text
    assert "1 failed tries in a row" in caplog.text

    html = client.get(url).content.decode()
    assert 'id="system-scores"' in html and f"(review revision {before})" in html  # old figures
    assert "Refresh failed." in html and "RuntimeError" in html and "1 failed try in" in html
    assert "mid-compute" not in html  # the message stays in the worker's log
    assert 'hx-trigger="every 30s"' in html and 'id="figures-retry-at"' in html
    body = reviewer_api.get(reverse("api-evaluation:analytics", args=[reviewed_dataset.pk])).json()
    failed = body["refresh_failed"]
    assert body["updating"] is True and body["scores"]
    assert failed["error"] == "RuntimeError" and failed["tries"] == 1
    retry_at = datetime.fromisoformat(failed["retry_at"])
    assert retry_at - started >= refresh.FIRST_BACKOFF - timedelta(seconds=1)
    # Neither readers nor the page's poll try again before the backoff runs out...
    poll = reverse("analytics-freshness", args=[reviewed_dataset.pk])
    for _ in range(5):
        client.get(url)
        assert client.get(poll, {"part": "page"}, HTTP_HX_REQUEST="true").status_code == 204
    assert len(queued) == 1
    # ...after it, one reader queues a new try, and a second failure waits twice as long.
    _past_backoff(known.run)
    client.get(url)
    client.get(url)
    assert len(queued) == 2
    assert "Refresh failed." not in client.get(url).content.decode()  # the try is running
    refresh_analytics(known.run.pk, refresh.DEFAULT)
    second = refresh.failure(known.run.dataset_id, known.run.pk, refresh.DEFAULT)
    assert second.tries == 2
    assert second.retry_at - second.failed_at == 2 * refresh.FIRST_BACKOFF
    # The cause mended, the try after the backoff keeps fresh figures and clears the count.
    monkeypatch.undo()
    monkeypatch.setattr(Signature, "apply_async", lambda self, *a, **k: queued.append(1))
    _past_backoff(known.run)
    client.get(url)
    assert len(queued) == 3
    assert refresh_analytics(known.run.pk, refresh.DEFAULT) is True
    assert _marker(known.run) is None
    html = client.get(url).content.decode()
    assert "Refresh failed." not in html and "Updating." not in html


def test_the_backoff_doubles_up_to_an_hour():
    waits = [refresh.backoff(n) for n in range(1, 10)]
    assert waits[:4] == [timedelta(minutes=m) for m in (1, 2, 4, 8)]
    assert waits[-1] == refresh.LAST_BACKOFF == timedelta(minutes=60)
    assert waits == sorted(waits)


def test_a_run_whose_figures_never_computed_answers_503_after_a_failure(
    reviewed_dataset, client, reviewer, reviewer_api, owner_api, queued, monkeypatch
):
    known = build_known(reviewed_dataset)
    KeptFigure.objects.filter(kind="analytics").delete()
    monkeypatch.setattr(figures, "warm", _broken)
    api = reverse("api-evaluation:analytics", args=[reviewed_dataset.pk])
    assert reviewer_api.get(api).status_code == 202  # queued a refresh
    assert refresh_analytics(known.run.pk, refresh.DEFAULT) is False
    answer = reviewer_api.get(api)
    assert answer.status_code == 503  # a client polling on 202 stops here
    assert 55 <= int(answer["Retry-After"]) <= 61
    assert answer.json()["refresh_failed"]["tries"] == 1 and "scores" not in answer.json()
    client.force_login(reviewer)
    html = client.get(reverse("dataset-analytics", args=[reviewed_dataset.pk])).content.decode()
    assert "Refresh failed." in html and "have not been computed yet" in html
    csv = client.get(reverse("analytics-complexity-csv", args=[reviewed_dataset.pk]))
    assert csv.status_code == 503 and b"failed" in csv.content
    assert csv["X-Figures-Refresh-Failed-At"] and int(csv["Retry-After"]) > 5
    health = owner_api.get(reverse("api-evaluation:analytics-criteria", args=[reviewed_dataset.pk]))
    assert health.status_code == 503 and health.json()["refresh_failed"]["error"] == "RuntimeError"
    assert queued == [(task_names.REFRESH_TASK, (known.run.pk, refresh.DEFAULT))]


def test_the_warm_task_at_a_runs_end_records_its_failure_too(reviewed_dataset, monkeypatch, caplog):
    from evaluation.analytics.tasks import warm_analytics

    known = build_known(reviewed_dataset)
    KeptFigure.objects.filter(kind="analytics").delete()
    refresh.claim(known.run.dataset_id, known.run.pk, refresh.DEFAULT)  # as the receiver does
    monkeypatch.setattr(figures, "warm", _broken)
    with caplog.at_level(logging.ERROR, logger="evaluation.analytics.recount"):
        assert warm_analytics(known.run.pk) is False
    failed = refresh.failure(known.run.dataset_id, known.run.pk, refresh.DEFAULT)
    assert failed is not None and failed.error == "RuntimeError" and failed.tries == 1
    assert not refresh.claim(known.run.dataset_id, known.run.pk, refresh.DEFAULT)


def test_a_broker_that_cannot_be_reached_leaves_no_marker(
    labelled_after_warm, reviewed_dataset, client, reviewer, monkeypatch, caplog
):
    known, _ = labelled_after_warm

    def down(self, *args, **kwargs):
        raise ConnectionError("broker down")

    monkeypatch.setattr(Signature, "apply_async", down)
    client.force_login(reviewer)
    with caplog.at_level(logging.ERROR, logger="evaluation.kept.refresh"):
        response = client.get(reverse("dataset-analytics", args=[reviewed_dataset.pk]))
    assert response.status_code == 200 and "Updating." in response.content.decode()
    assert "Could not queue the analytics refresh" in caplog.text
    assert _marker(known.run) is None


def test_the_state_moving_during_a_refresh_makes_the_next_reader_queue_another(
    labelled_after_warm, reviewed_dataset, client, reviewer, queued
):
    known, _ = labelled_after_warm
    client.force_login(reviewer)
    url = reverse("dataset-analytics", args=[reviewed_dataset.pk])
    client.get(url)
    figures.warm(known.run)  # the worker computes for the state it reads...
    _label(known, reviewer)  # ...and a label lands meanwhile (another rater, same item)
    refresh.release(known.run.dataset_id, known.run.pk, refresh.DEFAULT)  # the task ends
    html = client.get(url).content.decode()
    assert "Updating." in html
    assert len(queued) == 2


def test_fresh_figures_carry_no_mark_and_queue_nothing(
    reviewed_dataset, client, reviewer, reviewer_api, queued, django_assert_max_num_queries
):
    known = build_known(reviewed_dataset)
    figures.warm(known.run)
    client.force_login(reviewer)
    with django_assert_max_num_queries(PAGE_QUERIES):
        html = client.get(reverse("dataset-analytics", args=[reviewed_dataset.pk])).content
    assert b"Updating." not in html and b"figures-updating" not in html
    body = reviewer_api.get(reverse("api-evaluation:analytics", args=[reviewed_dataset.pk])).json()
    assert body["updating"] is False
    assert body["review_revision"] == _revision(reviewed_dataset)
    assert queued == []


def test_the_api_says_which_state_it_answers_from(
    labelled_after_warm, reviewed_dataset, reviewer_api, owner_api, client, owner, queued
):
    known, before = labelled_after_warm
    kept_at = KeptFigure.objects.get(kind="analytics", run_id=known.run.pk, part="page").computed_at
    body = reviewer_api.get(reverse("api-evaluation:analytics", args=[reviewed_dataset.pk])).json()
    assert body["updating"] is True
    assert body["review_revision"] == before
    assert body["computed_at"] == kept_at.isoformat()
    assert body["scores"]  # the figures of the earlier state
    health = owner_api.get(reverse("api-evaluation:analytics-criteria", args=[reviewed_dataset.pk]))
    assert health.status_code == 200
    assert health.json()["updating"] is True and health.json()["criteria"]
    compare = reverse("api-evaluation:analytics-compare", args=[reviewed_dataset.pk])
    answer = reviewer_api.get(compare, {"a": known.run.pk, "b": known.run.pk})
    assert answer.status_code == 202  # never compared before: no comparison to serve yet
    assert answer.json()["updating"] is True and answer.json()["computed_at"] is None
    client.force_login(owner)
    csv = client.get(reverse("analytics-complexity-csv", args=[reviewed_dataset.pk]))
    assert csv.status_code == 200
    assert csv["X-Figures-Updating"] == "true"
    assert csv["X-Figures-Review-Revision"] == str(before)
    assert csv["X-Figures-Computed-At"] == kept_at.isoformat()


def test_never_computed_figures_show_a_placeholder_not_a_recompute(
    reviewed_dataset, client, reviewer, reviewer_api, queued, django_assert_max_num_queries
):
    known = build_known(reviewed_dataset)  # the task at the run's end never ran
    KeptFigure.objects.filter(kind="analytics").delete()
    client.force_login(reviewer)
    url = reverse("dataset-analytics", args=[reviewed_dataset.pk])
    with django_assert_max_num_queries(PAGE_QUERIES), CaptureQueriesContext(connection) as captured:
        html = client.get(url).content.decode()
    assert not any("evaluation_verdict" in q["sql"] for q in captured.captured_queries)
    assert "Computing." in html and 'id="system-scores"' not in html
    assert 'hx-trigger="every 2s"' in html
    api = reviewer_api.get(reverse("api-evaluation:analytics", args=[reviewed_dataset.pk]))
    assert api.status_code == 202 and api["Retry-After"]
    assert api.json()["updating"] is True and "scores" not in api.json()
    csv = client.get(reverse("analytics-complexity-csv", args=[reviewed_dataset.pk]))
    assert csv.status_code == 503 and csv["Retry-After"]
    assert queued == [(task_names.REFRESH_TASK, (known.run.pk, refresh.DEFAULT))]


def test_the_query_list_keeps_its_too_easy_marks_while_the_figures_refresh(
    reviewed_dataset, client, reviewer, queued
):
    known = build_known(
        reviewed_dataset, sizes=(3, 3, 3), skill={"Alpha": 1.0, "Beta": 1.0}, hard_first=False,
        label_share=0.0,
    )  # fmt: skip
    url = reverse("dataset-detail", args=[reviewed_dataset.pk])
    client.force_login(reviewer)
    # Never kept: no mark, and the list computes nothing; it queues the run's refresh.
    with CaptureQueriesContext(connection) as captured:
        assert "too easy" not in client.get(url).content.decode()
    assert not any("evaluation_verdict" in q["sql"] for q in captured.captured_queries)
    assert queued == [(task_names.REFRESH_TASK, (known.run.pk, refresh.DEFAULT))]
    refresh_analytics(known.run.pk, refresh.DEFAULT)  # the worker's part
    assert client.get(url).content.decode().count(">too easy<") == 3
    # The marks read query scores, never a label: a label keeps them and queues nothing
    # (a team labelling all day would otherwise keep a refresh running).
    _label(known, reviewer)
    assert client.get(url).content.decode().count(">too easy<") == 3
    assert len(queued) == 1
    # An adjudication moves query scores: the marks kept before it stay, and are refreshed
    # once they are SATURATED_MAX_AGE old (a refresh of them is one of every analytics).
    answer = Answer.objects.get(pk=next(iter(known.answers)))
    criterion = Criterion.objects.filter(checklist__query_id=answer.query_id).first()
    adjudicate(answer=answer, criterion=criterion, by=reviewer, label="fail",
               expected_version=None)  # fmt: skip
    assert client.get(url).content.decode().count(">too easy<") == 3
    assert len(queued) == 1
    KeptFigure.objects.filter(kind="saturated-queries").update(
        computed_at=timezone.now() - figures.SATURATED_MAX_AGE - timedelta(seconds=1)
    )
    assert client.get(url).content.decode().count(">too easy<") == 3
    assert queued[1:] == [(task_names.REFRESH_TASK, (known.run.pk, refresh.DEFAULT))]


def test_a_refresh_starts_no_sooner_than_the_spacing_after_the_figures_served(settings):
    """Labels arriving without pause cost one refresh every FIGURES_REFRESH_SPACING
    seconds, not one after the other: the refresh of figures computed at t waits until
    t + spacing."""
    import datetime as dt

    settings.FIGURES_REFRESH_SPACING = 30
    now = dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.UTC)
    assert refresh.countdown(None, now) == 0
    assert refresh.countdown(now - dt.timedelta(seconds=10), now) == 20
    assert refresh.countdown(now - dt.timedelta(minutes=5), now) == 0
    settings.FIGURES_REFRESH_SPACING = 0
    assert refresh.countdown(now, now) == 0


def test_the_refresh_is_queued_with_its_countdown(
    labelled_after_warm, reviewed_dataset, client, reviewer, settings, monkeypatch
):
    sent = []
    monkeypatch.setattr(
        Signature, "apply_async", lambda self, *a, **kw: sent.append((self.args, kw))
    )
    settings.FIGURES_REFRESH_SPACING = 3600  # the figures were computed a moment ago
    client.force_login(reviewer)
    client.get(reverse("dataset-analytics", args=[reviewed_dataset.pk]))
    ((args, options),) = sent
    assert args[1] == refresh.DEFAULT and 3500 < options["countdown"] <= 3600


def test_the_spacing_grows_with_how_long_the_last_count_took(settings):
    """At 720,000 verdicts a run's analytics take 20-37 s to count: after labels, the next
    count waits FIGURES_REFRESH_PAUSE times that (when longer than the spacing), so that
    labellers cannot keep a core busy counting beside the pages they use."""
    import datetime as dt

    settings.FIGURES_REFRESH_SPACING, settings.FIGURES_REFRESH_PAUSE = 30, 4
    now = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.UTC)
    assert refresh.spacing(0.0) == 30 and refresh.spacing(2.5) == 30  # a small run
    assert refresh.spacing(30.0) == 120
    assert refresh.countdown(now - dt.timedelta(seconds=10), now, took=30.0) == 110
    assert refresh.countdown(now - dt.timedelta(seconds=10), now, took=1.0) == 20
    assert refresh.countdown(None, now, took=30.0) == 0  # not after labels: at once
    settings.FIGURES_REFRESH_PAUSE = 0
    assert refresh.countdown(now - dt.timedelta(seconds=10), now, took=30.0) == 20


def _count_took(run, seconds: float) -> None:
    """Say that the kept analytics of `run` took `seconds` to count (a large run's)."""
    for row in KeptFigure.objects.filter(kind="analytics", run_id=run.pk):
        row.cells = {**row.cells, "took": seconds}
        row.save(update_fields=["cells"])


def test_a_count_keeps_how_long_it_took_and_the_refresh_after_labels_waits_for_it(
    known, reviewed_dataset, reviewer, client, settings, monkeypatch
):
    sent = []
    monkeypatch.setattr(
        Signature, "apply_async", lambda self, *a, **kw: sent.append((self.args, kw))
    )
    figures.warm(known.run)
    tooks = [
        c["took"]
        for c in KeptFigure.objects.filter(kind="analytics").values_list("cells", flat=True)
    ]
    assert tooks and all(isinstance(t, float) and t > 0 for t in tooks)  # measured, every part
    _count_took(known.run, 50.0)
    _label(known, reviewer)
    settings.FIGURES_REFRESH_SPACING, settings.FIGURES_REFRESH_PAUSE = 30, 4
    client.force_login(reviewer)
    html = client.get(reverse("dataset-analytics", args=[reviewed_dataset.pk])).content
    assert b"figures-updating" in html  # the figures from before the label, meanwhile
    ((args, options),) = sent
    assert args == (known.run.pk, refresh.DEFAULT) and 190 < options["countdown"] <= 200
    # The poll (the page's "is it fresh yet?") reads the same time without the figures.
    KeptRefresh.objects.all().delete()
    poll = reverse("analytics-freshness", args=[reviewed_dataset.pk])
    client.get(poll, {"part": "page", "run": known.run.pk}, HTTP_HX_REQUEST="true")
    assert len(sent) == 2 and 190 < sent[1][1]["countdown"] <= 200


def test_custom_bucket_edges_refresh_their_own_part(reviewed_dataset, client, reviewer, queued):
    known = build_known(reviewed_dataset)
    figures.warm(known.run)
    client.force_login(reviewer)
    url = reverse("dataset-analytics", args=[reviewed_dataset.pk])
    html = client.get(url, {"edges": "10,20,30"}).content.decode()
    # The default edges' figures are not these: a placeholder, not the wrong buckets.
    assert "Computing." in html
    assert queued == [(task_names.REFRESH_TASK, (known.run.pk, "edges-10.20.30"))]
    assert refresh_analytics(known.run.pk, "edges-10.20.30") is True
    html = client.get(url, {"edges": "10,20,30"}).content.decode()
    assert "figures-updating" not in html and "20–29" in html
    html = client.get(url, {"edges": "10,25"}).content.decode()
    assert "Computing." in html  # other custom edges: not the ones kept


def test_the_poll_answers_no_content_until_the_fresh_figures_are_kept(
    labelled_after_warm, reviewed_dataset, client, reviewer, queued
):
    known, _ = labelled_after_warm
    client.force_login(reviewer)
    poll = reverse("analytics-freshness", args=[reviewed_dataset.pk])
    response = client.get(poll, {"part": "page", "run": known.run.pk}, HTTP_HX_REQUEST="true")
    assert response.status_code == 204 and not response.content
    assert len(queued) == 1  # the poll queues a refresh when none is queued
    opened = client.get(poll, {"part": "page", "run": known.run.pk})  # a link, not htmx
    assert opened.status_code == 200 and "being computed" in opened.content.decode()
    assert "HX-Refresh" not in opened
    assert refresh_analytics(known.run.pk) is True  # what the worker does
    response = client.get(poll, {"part": "page", "run": known.run.pk}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and response["HX-Refresh"] == "true"
    assert f'href="{reverse("dataset-analytics", args=[reviewed_dataset.pk])}?run=' in (
        response.content.decode()
    )
    html = client.get(reverse("dataset-analytics", args=[reviewed_dataset.pk])).content
    assert b"figures-updating" not in html
    assert client.get(poll, {"part": "nonsense"}).status_code == 404


def test_the_poll_is_guarded_like_the_page(
    reviewed_dataset, client, owner, reviewer, collaborator, outsider, queued
):
    from annotation import roles, services

    known = build_known(reviewed_dataset)
    figures.warm(known.run)
    services.dataset_set_role(
        dataset=reviewed_dataset, user=collaborator, role=roles.DatasetRole.EXPERT
    )
    poll = reverse("analytics-freshness", args=[reviewed_dataset.pk])
    page = reverse("dataset-analytics", args=[reviewed_dataset.pk])
    assert client.get(poll).status_code == 302  # anonymous: to the login page
    for part, expected in (
        ("page", {owner: 200, reviewer: 200, collaborator: 403, outsider: 404}),
        ("health", {owner: 200, reviewer: 403, collaborator: 403, outsider: 404}),
        ("compare", {owner: 404, reviewer: 404, collaborator: 403, outsider: 404}),
    ):
        for user, status in expected.items():
            client.force_login(user)
            assert client.get(poll, {"part": part}).status_code == status, (part, user)
            if part == "page":
                assert client.get(page).status_code == status, user
    client.force_login(reviewer)
    other = build_known(reviewed_dataset, seed=9, systems=("Gamma",))
    foreign = build_known(DatasetFactory(), seed=3)
    assert client.get(poll, {"run": foreign.run.pk}).status_code == 404
    assert client.get(
        poll, {"part": "compare", "a": known.run.pk, "b": other.run.pk}
    ).status_code in (
        200,
        204,
    )


def test_a_stale_comparison_is_served_while_the_runs_refresh(
    reviewed_dataset, client, reviewer, reviewer_api, queued
):
    first = build_known(reviewed_dataset, seed=1)
    second = build_known(reviewed_dataset, seed=2, systems=("Gamma", "Delta"))
    for known in (first, second):
        figures.warm(known.run)
    client.force_login(reviewer)
    url = reverse("analytics-compare", args=[reviewed_dataset.pk])
    params = {"a": first.run.pk, "b": second.run.pk}
    html = client.get(url, params).content.decode()  # both runs' scores kept: drawn here
    assert 'id="paired-test"' in html and "figures-updating" not in html
    assert queued == []
    _label(first, reviewer)
    html = client.get(url, params).content.decode()
    assert 'id="paired-test"' in html and "Updating." in html
    assert sorted(args for _, args in queued) == sorted(
        [(first.run.pk, refresh.DEFAULT), (second.run.pk, refresh.DEFAULT)]
    )
    body = reviewer_api.get(
        reverse("api-evaluation:analytics-compare", args=[reviewed_dataset.pk]), params
    ).json()
    assert body["updating"] is True and "test" in body and body["computed_at"]
    poll = reverse("analytics-freshness", args=[reviewed_dataset.pk])
    assert (
        client.get(poll, {"part": "compare", **params}, HTTP_HX_REQUEST="true").status_code == 204
    )
    for known in (first, second):
        assert refresh_analytics(known.run.pk) is True
    assert client.get(poll, {"part": "compare", **params}).status_code == 200
    html = client.get(url, params).content.decode()
    assert 'id="paired-test"' in html and "figures-updating" not in html


def test_a_real_worker_refreshes_once_for_many_readers_and_the_page_turns_fresh(
    celery_worker, reviewed_dataset, client, reviewer, monkeypatch
):
    known = build_known(reviewed_dataset)
    figures.warm(known.run)
    _label(known, reviewer)
    sent = []
    real = Signature.apply_async

    def counted(self, *args, **kwargs):
        sent.append(self.task)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Signature, "apply_async", counted)
    client.force_login(reviewer)
    url = reverse("dataset-analytics", args=[reviewed_dataset.pk])
    for _ in range(20):
        response = client.get(url)
        assert response.status_code == 200
    assert sent == [task_names.REFRESH_TASK]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and _marker(known.run) is not None:
        time.sleep(0.2)
    assert _marker(known.run) is None, celery_worker.log()[-3000:]
    assert figures.kept(known.run, "page") is not None  # kept for the current state
    html = client.get(url).content.decode()
    assert "figures-updating" not in html and 'id="system-scores"' in html
    # The fresh figures are those a computation in the request would have shown.
    fresh = figures.served_page(known.run).figures
    computed = figures.page_json(sel.load_run(known.run), fresh.curve.human)
    assert fresh.calibrated == figures.page_from_json(computed).calibrated

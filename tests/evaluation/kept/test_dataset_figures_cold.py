"""No cold figure of a dataset in a user's request (issue 44, item 1): the figures kept per
dataset, not per run (the review queues' orders, the cross-evaluation figures, the
agreement counts of a dataset without a run) are, when cold, never counted in the request.
The reader queues the dataset's refresh (one marker per dataset and group, one task however
many readers come) and is served the placeholder, or the earlier state's figures marked
updating; the refresh counts exactly what the reader used to count; a failing refresh backs
off and the page says so; the warm-up fills them before the first reader."""

from __future__ import annotations

import threading

import pytest
from celery.canvas import Signature
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evaluation import task_names
from evaluation.agreement import kept as agreement_kept
from evaluation.analytics import warmup
from evaluation.analytics.tasks import refresh_dataset_figures, warm_figures
from evaluation.cross_evaluation import counted
from evaluation.cross_evaluation.sources import Source
from evaluation.kept import readers, refresh
from evaluation.kept.events import Event, bump
from evaluation.kept.models import KeptFigure, KeptRefresh
from evaluation.review import selectors
from evaluation.runs.models import Run
from tests.evaluation.agreement.labelled import build_labelled
from tests.evaluation.cross_evaluation.two_queries import grade_directly, two_queries
from tests.factories import DatasetFactory
from tests.support.beat import wait_for

pytestmark = pytest.mark.django_db

LABELLING = selectors.refresh_group(readers.LABELLING_QUEUE, None)
DISAGREEMENT = selectors.refresh_group(readers.DISAGREEMENT_QUEUE, None)
CROSS = counted.refresh_group(Source("latest"))
# A cold queue page, measured 20 (labelling) and 21 (disagreement): session, user, access
# (dataset, two permission reads), runs, counters, the kept order's look-ups (exact, newer,
# newest), the dataset's marker (read, insert in a savepoint: 3) and its failure, the
# assigners' permissions and reviewers, the filters' systems and runs.
QUEUE_PAGE_QUERIES = 21


@pytest.fixture
def no_cold_in_request(settings):
    settings.FIGURES_COLD_IN_REQUEST = False


@pytest.fixture
def sent(monkeypatch):
    found: list[tuple[str, tuple]] = []
    monkeypatch.setattr(
        Signature, "apply_async", lambda self, *a, **k: found.append((self.task, self.args))
    )
    return found


def counts_nothing(captured) -> bool:
    """No query over verdicts, no labels counted over the dataset (the page's own read of
    the reader's labels on the items shown names the rater), nothing kept: nothing counted."""
    for query in captured.captured_queries:
        sql = query["sql"]
        writes = "INSERT INTO" in sql.replace('"', "")
        # The reader's refresh marker is the one write allowed.
        if ("evaluation_verdict" in sql or writes) and "evaluation_keptrefresh" not in sql:
            print("counted:", sql)
            return False
        if "evaluation_humanlabel" in sql and '"rater" =' not in sql:
            print("counted:", sql)
            return False
    return True


def queue_keys(dataset, user, queue: str) -> list[tuple[int, ...]]:
    if queue == "labelling":
        return [i.key for i in selectors.labelling_queue(dataset, user)]
    return [i.key for i in selectors.disagreement_queue(dataset, user).items]


def counted_in_the_request(dataset, user, queue: str, settings) -> list[tuple[int, ...]]:
    """What a reader counted before the rule: every kept order gone, counted here."""
    before = settings.FIGURES_COLD_IN_REQUEST
    settings.FIGURES_COLD_IN_REQUEST = True
    KeptFigure.objects.filter(dataset=dataset, kind__endswith="-queue").delete()
    try:
        return queue_keys(dataset, user, queue)
    finally:
        settings.FIGURES_COLD_IN_REQUEST = before


@pytest.mark.parametrize(
    ("queue", "group"), [("labelling", LABELLING), ("disagreement", DISAGREEMENT)]
)
def test_a_cold_queue_page_counts_nothing_and_queues_one_refresh(
    queue, group, reviewed_dataset, owner, client, no_cold_in_request, sent, settings,
    django_assert_max_num_queries,
):  # fmt: skip
    build_labelled(reviewed_dataset, queries=3, criteria=4, systems=2, seed=101)
    client.force_login(owner)
    url = reverse("review-queue", args=[reviewed_dataset.pk])
    for _ in range(4):
        with (
            CaptureQueriesContext(connection) as read,
            django_assert_max_num_queries(QUEUE_PAGE_QUERIES),
        ):
            page = client.get(url, {"queue": queue})
        html = page.content.decode()
        assert page.status_code == 200 and counts_nothing(read)
        assert "data-computing" in html and "Computing." in html and "0 items" in html
    assert sent == [(task_names.DATASET_REFRESH_TASK, (reviewed_dataset.pk, group))]
    # The API says it in headers, the body keeps its shape (empty).
    api = client.get("/api/review-queue/", {"dataset": reviewed_dataset.pk, "queue": queue})
    assert api.status_code == 200 and api["Figures-Updating"] == "computing"

    # What the worker does: then the page serves the exact order, the one a reader counted.
    assert refresh_dataset_figures(reviewed_dataset.pk, group) is True
    assert not KeptRefresh.objects.filter(dataset=reviewed_dataset).exists()
    html = client.get(url, {"queue": queue}).content.decode()
    assert "data-figures-cold" not in html
    served = queue_keys(reviewed_dataset, owner, queue)
    assert served and served == counted_in_the_request(reviewed_dataset, owner, queue, settings)

    # A change that moves every counter: the earlier order is served, marked updating, and
    # one more refresh queued.
    bump(reviewed_dataset.pk, Event.LABELS_IMPORTED)
    sent.clear()
    with CaptureQueriesContext(connection) as read:
        page = client.get(url, {"queue": queue})
    html = page.content.decode()
    assert counts_nothing(read) and "data-updating" in html and "Updating." in html
    assert queue_keys(reviewed_dataset, owner, queue) == served
    assert sent == [(task_names.DATASET_REFRESH_TASK, (reviewed_dataset.pk, group))]


def test_a_failing_queue_refresh_backs_off_and_the_page_says_so(
    reviewed_dataset, owner, client, no_cold_in_request, sent, monkeypatch
):
    build_labelled(reviewed_dataset, queries=2, criteria=3, systems=2, seed=103)
    client.force_login(owner)
    url = reverse("review-queue", args=[reviewed_dataset.pk])
    client.get(url, {"queue": "disagreement"})
    assert len(sent) == 1

    def broken(dataset, group):
        raise RuntimeError("the order could not be written")

    monkeypatch.setattr(warmup, "_count_dataset", broken)
    assert refresh_dataset_figures(reviewed_dataset.pk, DISAGREEMENT) is False
    failure = refresh.failure(reviewed_dataset.pk, None, DISAGREEMENT)
    assert failure is not None and failure.tries == 1 and failure.error == "RuntimeError"
    for _ in range(3):  # within the back-off, no reader queues it again
        html = client.get(url, {"queue": "disagreement"}).content.decode()
        assert "Refresh failed." in html and "RuntimeError" in html and "data-retry-at" in html
    assert len(sent) == 1
    api = client.get(
        "/api/review-queue/", {"dataset": reviewed_dataset.pk, "queue": "disagreement"}
    )
    assert api["Figures-Retry-At"] == failure.retry_at.isoformat()


@pytest.mark.django_db(transaction=True)
def test_readers_at_once_take_one_dataset_marker(reviewed_dataset):
    """Eight readers racing for the same cold figure: one takes the marker, whatever the
    NULL run (the conditional unique constraint on dataset and group)."""
    start = threading.Barrier(8)
    won: list[bool] = []

    def reader():
        try:
            start.wait()
            won.append(refresh.claim(reviewed_dataset.pk, None, CROSS))
        finally:
            connection.close()

    threads = [threading.Thread(target=reader) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(won) == [False] * 7 + [True]
    assert KeptRefresh.objects.filter(dataset=reviewed_dataset, run=None).count() == 1
    # Another group, or a run's marker of the same group, is another marker.
    assert refresh.claim(reviewed_dataset.pk, None, LABELLING) is True


def test_a_cold_cross_evaluation_page_counts_nothing_and_the_refresh_gives_the_figures(
    dataset, owner, client, no_cold_in_request, sent
):
    two_queries(dataset, by=owner)
    grade_directly(dataset)
    client.force_login(owner)
    url = reverse("dataset-cross-evaluation", args=[dataset.pk])
    for _ in range(3):
        with CaptureQueriesContext(connection) as read:
            page = client.get(url)
        html = page.content.decode()
        assert page.status_code == 200 and "data-computing" in html
        assert 'data-dataset-mean=""' in html and counts_nothing(read)
    assert sent == [(task_names.DATASET_REFRESH_TASK, (dataset.pk, CROSS))]
    # The analytics' human line, read in a request, is the placeholder's too (no mean).
    assert counted.interval_of(counted.figures(dataset, Source("latest"))).mean is None

    assert refresh_dataset_figures(dataset.pk, CROSS) is True
    html = client.get(url).content.decode()
    whole = counted.compute(dataset, Source("latest"))  # what a reader counted before
    mean = whole["interval"][0]
    assert "data-figures-cold" not in html and mean is not None
    assert f'data-dataset-mean="{mean:.4f}"' in html
    assert counted.figures(dataset, Source("latest")) == whole

    # Cold again: the earlier figures, marked updating.
    bump(dataset.pk, Event.LABELS_IMPORTED)
    html = client.get(url).content.decode()
    assert "data-updating" in html and f'data-dataset-mean="{mean:.4f}"' in html


def test_a_failing_cross_evaluation_refresh_is_said_on_the_page(
    dataset, owner, client, no_cold_in_request, sent, monkeypatch
):
    two_queries(dataset, by=owner)
    grade_directly(dataset)
    client.force_login(owner)
    url = reverse("dataset-cross-evaluation", args=[dataset.pk])
    client.get(url)
    monkeypatch.setattr(counted, "compute", lambda *a: 1 / 0)
    assert refresh_dataset_figures(dataset.pk, CROSS) is False
    html = client.get(url).content.decode()
    assert "Refresh failed." in html and "ZeroDivisionError" in html
    assert len(sent) == 1


def run_less(dataset):
    """Labels and adjudications with no run left: the agreement counts read labels only."""
    labelled = build_labelled(dataset, queries=2, criteria=4, systems=2, seed=107)
    Run.objects.filter(pk=labelled.run.pk).delete()
    assert not Run.objects.filter(dataset=dataset).exists()


def test_a_cold_run_less_agreement_page_counts_nothing_and_the_refresh_gives_the_counts(
    reviewed_dataset, owner, client, no_cold_in_request, sent, settings, monkeypatch
):
    run_less(reviewed_dataset)
    client.force_login(owner)
    for _ in range(3):
        with CaptureQueriesContext(connection) as read:
            body = client.get("/api/agreement/", {"dataset": reviewed_dataset.pk}).json()
        assert body["computing"] is True and body["counts"]["items"] == 0
        assert body["refresh_failed"] is None and counts_nothing(read)
    assert sent == [
        (task_names.DATASET_REFRESH_TASK, (reviewed_dataset.pk, agreement_kept.REFRESH_GROUP))
    ]
    page = client.get(reverse("dataset-agreement", args=[reviewed_dataset.pk]))
    assert "data-computing" in page.content.decode()

    assert refresh_dataset_figures(reviewed_dataset.pk, agreement_kept.REFRESH_GROUP) is True
    body = client.get("/api/agreement/", {"dataset": reviewed_dataset.pk}).json()
    assert body["computing"] is False and body["counts"]["items"] > 0
    kept = agreement_kept.cells(reviewed_dataset, None)
    counted_now = agreement_kept.counted_cells(reviewed_dataset, None, "majority", 0.5)
    assert kept and sorted(map(repr, kept)) == sorted(map(repr, counted_now))

    # A failing refresh: said in the API and on the page, and not queued again meanwhile.
    bump(reviewed_dataset.pk, Event.LABELS_IMPORTED)
    sent.clear()
    monkeypatch.setattr(agreement_kept, "keep_cells", lambda *a: 1 / 0)
    client.get("/api/agreement/", {"dataset": reviewed_dataset.pk})
    assert refresh_dataset_figures(reviewed_dataset.pk, agreement_kept.REFRESH_GROUP) is False
    body = client.get("/api/agreement/", {"dataset": reviewed_dataset.pk}).json()
    assert body["refresh_failed"]["error"] == "ZeroDivisionError" and body["computing"] is True
    page = client.get(reverse("dataset-agreement", args=[reviewed_dataset.pk]))
    assert "Refresh failed." in page.content.decode()
    assert len(sent) == 1


def test_the_warm_up_fills_the_datasets_own_figures(
    dataset, owner, client, no_cold_in_request, sent
):
    build_labelled(dataset, queries=2, criteria=3, systems=2, seed=109)
    two_queries(dataset, by=owner)
    grade_directly(dataset)
    without_run = DatasetFactory()
    run_less(without_run)
    result = warm_figures(None)  # the task, as migrate, start-up and the seeders queue it
    assert result["failed"] == [] and not KeptRefresh.objects.filter(run=None).exists()

    def kinds(d):
        return set(KeptFigure.objects.filter(dataset=d, run_id=None).values_list("kind", flat=True))

    assert {"labelling-queue", "disagreement-queue", "cross-evaluation"} <= kinds(dataset)
    assert "agreement" in kinds(without_run)  # without a run: the dataset's counts
    sent.clear()
    client.force_login(owner)
    url = reverse("review-queue", args=[dataset.pk])
    for queue in ("labelling", "disagreement"):
        html = client.get(url, {"queue": queue}).content.decode()
        assert "data-figures-cold" not in html
    html = client.get(reverse("dataset-cross-evaluation", args=[dataset.pk])).content.decode()
    assert "data-figures-cold" not in html
    assert agreement_kept.cells(without_run, None)  # kept: served, not queued
    # Nothing was cold: no reader queued a dataset refresh.
    assert not [s for s in sent if s[0] == task_names.DATASET_REFRESH_TASK]
    # Warm already: a second warm-up takes and releases the markers, counts nothing.
    with CaptureQueriesContext(connection) as again:
        warm_figures(dataset.pk)
    assert not any(
        "INSERT INTO evaluation_keptqueuerow" in q["sql"] for q in again.captured_queries
    )


def test_with_an_eager_celery_the_first_reader_finds_the_order_kept(
    reviewed_dataset, owner, client, no_cold_in_request, eager_refresh
):
    """A demo without a worker: the refresh the reader queued ran inside its request."""
    build_labelled(reviewed_dataset, queries=2, criteria=3, systems=2, seed=113)
    client.force_login(owner)
    html = client.get(
        reverse("review-queue", args=[reviewed_dataset.pk]), {"queue": "disagreement"}
    ).content.decode()
    assert "data-figures-cold" not in html and "Start reviewing" in html
    assert not KeptRefresh.objects.filter(dataset=reviewed_dataset).exists()


@pytest.mark.worker
def test_a_real_worker_fills_a_cold_queue_and_the_page_then_serves_it(
    celery_worker, reviewed_dataset, owner, client, no_cold_in_request, settings
):
    build_labelled(reviewed_dataset, queries=2, criteria=3, systems=2, seed=127)
    client.force_login(owner)
    url = reverse("review-queue", args=[reviewed_dataset.pk])
    first = client.get(url, {"queue": "labelling"}).content.decode()
    assert "data-computing" in first  # served before the worker can have counted it
    wait_for(
        lambda: not KeptRefresh.objects.filter(dataset=reviewed_dataset, run=None).exists()
        and "data-figures-cold" not in client.get(url, {"queue": "labelling"}).content.decode(),
        60, lambda: "queue never kept:\n" + celery_worker.log()[-3000:],
    )  # fmt: skip
    served = queue_keys(reviewed_dataset, owner, "labelling")
    assert served and served == counted_in_the_request(
        reviewed_dataset, owner, "labelling", settings
    )

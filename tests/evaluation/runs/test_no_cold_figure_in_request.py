"""No cold figure in a user's request (issue 44, item 1): after a deploy that changes a kept
figure's version (rows an earlier release kept, never served as this one's), the run page
and the scores API answer at once with a "computing" placeholder, counting no verdict; a
real worker counts them (the refresh the reader queued, or the warm-up task that `migrate`,
a web server's start and the seeders queue), and the page then serves them, equal to the
report built whole. Failure paths: a broker that cannot be reached still gives the
placeholder (and the next reader tries again); a flush's post_migrate queues no warm-up."""

from __future__ import annotations

from dataclasses import asdict

import pytest
from celery.canvas import Signature
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evaluation import task_names
from evaluation.agreement import kept as agreement_kept
from evaluation.analytics import figures, receivers, warmup
from evaluation.analytics.tasks import refresh_analytics
from evaluation.kept import refresh
from evaluation.kept.models import KeptFigure, KeptRefresh
from evaluation.labels.models import HumanLabel
from evaluation.review import services as review
from evaluation.runs import overview, scores, stability
from evaluation.runs.models import Run, Verdict
from tests.evaluation.agreement.labelled import build_labelled
from tests.support.beat import wait_for
from tests.support.compare import same
from tests.support.review_writes import version

# The run page with a placeholder: access, run, overview and progress, the scores' two
# reads (counters, slot), the refresh marker and its failure, session and user; and the
# judge-stability figure's read, its refresh marker and failure (issue 43: queued, never
# counted in the request); the judge canary that checked the run, if any (one).
PAGE_QUERIES = 45
API_QUERIES = 20


@pytest.fixture
def no_cold_in_request(settings):
    settings.FIGURES_COLD_IN_REQUEST = False


def fresh(run: Run) -> Run:
    return Run.objects.select_related("dataset").get(pk=run.pk)


def as_if_an_earlier_release_kept(run: Run) -> None:
    """What a new figure version finds: the run's kept scores written by the release
    before (their summary without this release's `shape`), under another state's key."""
    scores.keep_scores(fresh(run))
    for kept in KeptFigure.objects.filter(run_id=run.pk, kind=scores.readers.RUN_SCORES.kind):
        if isinstance(kept.cells, dict) and "systems" in kept.cells:
            kept.cells = {**kept.cells, "shape": "an-earlier-shape"}
        kept.key = "an-earlier-state-" + kept.key[:40]
        kept.save()
    assert not scores.scores_kept(fresh(run))


def counts_no_verdict(captured) -> bool:
    return not any("evaluation_verdict" in q["sql"] for q in captured.captured_queries)


def equal_to_the_whole_report(run: Run) -> None:
    whole = scores.run_report(fresh(run))
    kept = scores.run_scores(fresh(run))
    assert not kept.updating and kept.count == len(whole.answers) > 0
    same([asdict(s) for s in whole.systems], [asdict(s) for s in kept.systems])
    same([asdict(a) for a in whole.answers], [asdict(a) for a in kept[0 : kept.count]])


@pytest.mark.worker
def test_after_a_version_bump_pages_serve_a_placeholder_and_a_real_worker_fills_it(
    celery_worker, reviewed_dataset, client, owner, no_cold_in_request,
    django_assert_max_num_queries,
):  # fmt: skip
    run = build_labelled(reviewed_dataset, queries=3, criteria=4, systems=3, seed=71).run
    as_if_an_earlier_release_kept(run)
    client.force_login(owner)

    # The page first (the worker may keep the scores any moment after it queues them).
    with (
        CaptureQueriesContext(connection) as page_read,
        django_assert_max_num_queries(PAGE_QUERIES),
    ):
        page = client.get(reverse("run-detail", args=[run.pk]))
    # Nothing counted over the run's verdicts: not its scores, not its verdict counts by
    # outcome (runs.overview), not its judge stability.
    assert page.status_code == 200 and counts_no_verdict(page_read)
    assert "Computing." in page.content.decode() and "data-counting" in page.content.decode()

    # The reader's refresh, run by the real worker: then the page serves the fresh scores.
    wait_for(
        lambda: scores.scores_kept(fresh(run)), 60,
        lambda: "scores never kept:\n" + celery_worker.log()[-3000:],
    )  # fmt: skip
    html = client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert "Computing." not in html and 'aria-label="Scores per system"' in html
    equal_to_the_whole_report(run)


@pytest.mark.worker
def test_the_warm_up_task_fills_every_cold_figure_before_the_first_reader(
    celery_worker, reviewed_dataset, client, owner, no_cold_in_request, settings
):
    run = build_labelled(reviewed_dataset, queries=3, criteria=4, systems=2, seed=73).run
    as_if_an_earlier_release_kept(run)
    assert not figures.default_kept(fresh(run))

    settings.FIGURES_WARM_UP = True  # off in the test suite
    assert warmup.queue(why="test") is True  # what migrate, gunicorn and the seeders do
    wait_for(
        lambda: scores.scores_kept(fresh(run)) and figures.default_kept(fresh(run))
        and stability.stability_kept(fresh(run)) and overview.counts_kept(fresh(run))
        and not KeptRefresh.objects.filter(run_id=run.pk).exists(),
        60, lambda: "warm-up never finished:\n" + celery_worker.log()[-3000:],
    )  # fmt: skip
    # The queues and the agreement counts too: kept under the dataset's current state.
    kinds = set(KeptFigure.objects.filter(dataset=reviewed_dataset).values_list("kind", flat=True))
    assert {"agreement", "labelling-queue", "disagreement-queue"} <= kinds

    client.force_login(owner)
    with CaptureQueriesContext(connection) as first_read:
        body = client.get(f"/api/runs/{run.pk}/scores/").json()
    assert body["updating"] is False and body["count"] == 6
    assert counts_no_verdict(first_read)
    equal_to_the_whole_report(run)

    # Warm already: a second warm-up queues nothing and counts nothing.
    warmed = warmup.warm(reviewed_dataset.pk)
    assert warmed.queued == [] and warmed.failed == [] and warmed.datasets == [reviewed_dataset.pk]


def test_a_broker_out_of_reach_still_gives_the_placeholder_and_leaves_no_marker(
    reviewed_dataset, owner, client, no_cold_in_request, monkeypatch
):
    run = build_labelled(reviewed_dataset, queries=2, criteria=3, systems=2, seed=79).run

    def unreachable(self, *args, **kwargs):
        raise ConnectionRefusedError("broker down")

    monkeypatch.setattr(Signature, "apply_async", unreachable)
    client.force_login(owner)
    body = client.get(f"/api/runs/{run.pk}/scores/").json()
    assert body["updating"] is True and body["count"] == 0
    # No marker left behind: the next reader queues again once the broker is back.
    assert not KeptRefresh.objects.filter(run_id=run.pk).exists()
    # Logged; migrate and start-up go on.
    assert warmup.queue(why="test", asked=True) is False


def test_after_a_version_bump_the_api_answers_a_placeholder_queued_once_for_many_readers(
    reviewed_dataset, owner, client, no_cold_in_request, monkeypatch,
    django_assert_max_num_queries,
):  # fmt: skip
    run = build_labelled(reviewed_dataset, queries=2, criteria=3, systems=2, seed=83).run
    sent = []
    monkeypatch.setattr(
        Signature, "apply_async", lambda self, *a, **k: sent.append((self.task, self.args))
    )
    as_if_an_earlier_release_kept(run)
    client.force_login(owner)
    for _ in range(5):
        with (
            CaptureQueriesContext(connection) as read,
            django_assert_max_num_queries(API_QUERIES),
        ):
            body = client.get(f"/api/runs/{run.pk}/scores/").json()
        assert body["updating"] is True and body["computed_at"] is None
        assert body["count"] == 0 and body["answers"] == [] and body["systems"] == []
        assert counts_no_verdict(read)
    assert sent == [(task_names.REFRESH_TASK, (run.pk, scores.REFRESH_GROUP))]
    assert refresh.failure(run.dataset_id, run.pk, scores.REFRESH_GROUP) is None


def test_migrate_queues_the_warm_up_and_a_flush_does_not(settings, monkeypatch):
    settings.FIGURES_WARM_UP = True
    sent = []
    monkeypatch.setattr(
        Signature, "apply_async", lambda self, *a, **k: sent.append((self.task, self.args))
    )
    receivers.warm_after_migrate(sender=None, plan=None)  # a flush sends no plan
    assert sent == []
    receivers.warm_after_migrate(sender=None, plan=[])  # migrate, nothing to apply
    assert sent == [(task_names.WARM_FIGURES_TASK, (None, True))]
    settings.FIGURES_WARM_UP = False  # the test suite's default
    receivers.warm_after_migrate(sender=None, plan=[])
    assert len(sent) == 1


def test_a_runs_cold_agreement_counts_are_queued_and_the_page_says_computing(
    reviewed_dataset, owner, client, no_cold_in_request, monkeypatch
):
    run = build_labelled(reviewed_dataset, queries=2, criteria=3, systems=2, seed=89).run
    sent = []
    monkeypatch.setattr(
        Signature, "apply_async", lambda self, *a, **k: sent.append((self.task, self.args))
    )
    client.force_login(owner)
    for _ in range(3):
        with CaptureQueriesContext(connection) as read:
            body = client.get(
                "/api/agreement/", {"dataset": reviewed_dataset.pk, "run": run.pk}
            ).json()
        assert body["computing"] is True and body["counts"]["items"] == 0
        assert counts_no_verdict(read)
    assert sent == [(task_names.REFRESH_TASK, (run.pk, agreement_kept.REFRESH_GROUP))]
    page = client.get(reverse("dataset-agreement", args=[reviewed_dataset.pk]), {"run": run.pk})
    assert page.status_code == 200 and "data-computing" in page.content.decode()

    # What the worker does: then the readers get the counts, equal to a count in the request.
    assert refresh_analytics(run.pk, agreement_kept.REFRESH_GROUP) is True
    body = client.get("/api/agreement/", {"dataset": reviewed_dataset.pk, "run": run.pk}).json()
    assert body["computing"] is False and body["counts"]["items"] > 0
    fresh_run = fresh(run)
    method, threshold = agreement_kept.run_method(fresh_run)
    counted = agreement_kept.counted_cells(reviewed_dataset, fresh_run, method, threshold)
    kept = agreement_kept.keep_cells(reviewed_dataset, fresh_run)
    assert sorted(map(repr, kept)) == sorted(map(repr, counted)) and counted


def test_the_warm_up_leaves_figures_behind_labels_to_their_readers(reviewed_dataset, reviewer):
    """A label and an adjudication leave the run's analytics and scores behind, not cold:
    the warm-up of a start does not recount them (their readers serve them marked updating
    and queue the refresh); a flush of the analytics makes them cold, and warmed."""
    run = build_labelled(reviewed_dataset, queries=3, criteria=4, systems=2, seed=74).run
    scores.keep_scores(fresh(run))
    figures.warm(fresh(run))
    stability.run_stability(fresh(run))
    overview.keep_counts(fresh(run))
    assert warmup.cold_groups(fresh(run)) == []

    verdict = Verdict.objects.filter(run=run).select_related("answer", "criterion").first()
    review.label_set(answer=verdict.answer, criterion=verdict.criterion, reviewer=reviewer,
                     label="fail" if HumanLabel.objects.filter(answer=verdict.answer).exists()
                     else "pass")  # fmt: skip
    seen = version(verdict.answer, verdict.criterion)
    review.adjudicate(answer=verdict.answer, criterion=verdict.criterion, by=reviewer,
                      label="pass", expected_version=seen)  # fmt: skip
    assert not scores.scores_kept(fresh(run)) and not figures.default_kept(fresh(run))
    assert warmup.cold_groups(fresh(run)) == []

    KeptFigure.objects.filter(run_id=run.pk, kind="analytics").delete()  # a flush
    assert warmup.cold_groups(fresh(run)) == [refresh.DEFAULT]

"""The analytics figures kept in the figure cache (evaluation/analytics/figures.py): a kept
figure equals the selectors' own computation (the old path), a label change or a run
state change makes a new key (never a stale figure), and the task run when a run ends
keeps every part."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from evaluation.analytics import figures, summaries
from evaluation.analytics import selectors as sel
from evaluation.analytics.tasks import warm_analytics
from evaluation.kept.events import Event, bump
from evaluation.kept.models import KeptFigure
from evaluation.labels.models import HumanLabel
from evaluation.metrics import analytics as am
from evaluation.runs.models import Run
from tests.evaluation.analytics.known import build_known


def _kept(run) -> list[str]:
    """The parts kept for the run (one row each)."""
    found = KeptFigure.objects.filter(kind="analytics", run_id=run.pk)
    return sorted(found.values_list("part", flat=True))


@pytest.mark.parametrize("edges", [am.DEFAULT_EDGES, (12, 20)])
def test_kept_page_equals_the_computed_one(known, edges):
    data = sel.load_run(known.run, edges=edges)
    cells = summaries.system_scores(data)
    human = sel.dataset_mean_overlap(known.run.dataset)
    for _ in range(2):  # the miss, then the kept figure read back from the database
        page = figures.page(known.run, edges)
        assert page.cells == cells
        assert page.calibrated == sel.calibrated_scores(data)
        assert [o.as_dict() for o in page.panels] == [
            o.as_dict() for o in sel.panel_calibration(data)
        ]
        assert [a.as_dict() for a in page.judges] == [
            a.as_dict() for a in summaries.judge_agreement(data)
        ]
        assert page.saturated == summaries.saturated(data)
        assert page.curve == sel.complexity_curve(data, cells, human=human)
        assert (page.items, page.adjudicated, page.labelled) == (
            data.item_count,
            data.adjudicated,
            data.labelled,
        )
        for b in data.buckets:
            assert figures.bucket_rows(known.run, b.key, edges) == summaries.bucket_rows(
                data, b.key
            )
    assert len(_kept(known.run)) == 2  # the page and the buckets


def test_kept_queries_and_health_equal_the_computed_ones(known, reviewed_dataset):
    data = sel.load_run(known.run)
    for _ in range(2):
        queries = figures.queries(known.run)
        assert queries.systems == summaries.systems_of(data)
        assert queries.of(None) == summaries.query_scores(data, None)
        for system_id, _ in queries.systems:
            assert queries.of(system_id) == summaries.query_scores(data, system_id)
        health = summaries.criterion_health(data)
        assert figures.health(known.run) == health
        assert figures.health_page(known.run) == (len(health), health[:200])
        flagged = [h for h in health if "never passed" in h.flags]
        assert flagged and figures.health_page(known.run, "never passed") == (
            len(flagged),
            flagged[:200],
        )
    other = build_known(reviewed_dataset, seed=9, queries=known.plan)
    a, b = sel.load_run(known.run), sel.load_run(other.run)
    s = next(iter(known.systems))
    expected = summaries.compare_runs(a, b, system_a=s, system_b=s)
    kept = figures.compare(
        figures.queries(known.run), figures.queries(other.run), system_a=s, system_b=s
    )
    assert kept == expected
    # The comparison page's: kept per pair of runs and systems, read back the same.
    for _ in range(2):
        comparison, systems_a, systems_b = figures.comparison(
            known.run, other.run, system_a=s, system_b=s
        )
        assert comparison == expected
        assert (systems_a, systems_b) == (summaries.systems_of(a), summaries.systems_of(b))
    every = figures.comparison(known.run, other.run, system_a=None, system_b=None)[0]
    assert every == summaries.compare_runs(a, b, system_a=None, system_b=None)


def test_a_label_change_is_never_served_stale(known, reviewed_dataset, client, reviewer):
    before = figures.page(known.run)
    assert len(_kept(known.run)) == 1
    # Flip every human label (as an import does): the human-only scores must move.
    for label in HumanLabel.objects.filter(answer__query__dataset=reviewed_dataset):
        label.label = "fail" if label.label == "pass" else "pass"
        label.save()
    bump(reviewed_dataset.pk, Event.LABELS_IMPORTED)
    after = figures.page(known.run)
    assert after.calibrated != before.calibrated
    assert after.calibrated == sel.calibrated_scores(sel.load_run(known.run))
    assert len(_kept(known.run)) == 1  # the stale row was replaced, not kept beside
    client.force_login(reviewer)
    body = client.get(reverse("api-evaluation:analytics", args=[reviewed_dataset.pk])).json()
    assert body["calibrated"] == [c.as_dict() for c in after.calibrated]


def test_a_run_state_change_recomputes(known):
    first = figures.state(known.run)
    Run.objects.filter(pk=known.run.pk).update(attempt=known.run.attempt + 1)
    known.run.refresh_from_db()
    assert figures.state(known.run) != first
    known.run.finished_at = timezone.now()
    assert figures.state(known.run) != first


def test_the_label_policy_and_under_least_certain_other_runs_move_the_state(
    known, reviewed_dataset
):
    """PPI++ weighs the labels by the labelling queue's draw, which the policy, its share
    and (under least certain) every finished run's votes decide."""
    uncertain = figures.state(known.run)
    other = build_known(reviewed_dataset, sizes=(3,), seed=9, run_name="Other")  # finished
    assert figures.state(known.run) != uncertain
    reviewed_dataset.label_policy = "random"
    reviewed_dataset.save()
    known.run.dataset.refresh_from_db()
    random_ = figures.state(known.run)
    assert random_ != uncertain
    Run.objects.filter(pk=other.run.pk).update(attempt=5)  # the random draw ignores votes
    assert figures.state(known.run) == random_
    reviewed_dataset.label_share = 0.5
    reviewed_dataset.save()
    known.run.dataset.refresh_from_db()
    assert figures.state(known.run) != random_


def test_the_task_run_when_a_run_ends_keeps_every_part(known):
    assert warm_analytics(known.run.pk) is True
    assert _kept(known.run) == [
        "buckets",
        "health",
        # the API's criterion-health pages, cut in advance so that no request cuts them
        *(
            f"health-chunk-{f}-0"
            for f in ("all", "always passed", "disagrees", "never passed", "split")
        ),
        "health-top",
        "page",
        "queries",
    ]
    assert warm_analytics(10**9) is False  # a deleted run: nothing to do


def test_a_warm_page_reads_no_verdict(known, reviewed_dataset, client, reviewer):
    figures.warm(known.run)
    client.force_login(reviewer)
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    url = reverse("dataset-analytics", args=[reviewed_dataset.pk])
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    assert not any("evaluation_verdict" in q["sql"] for q in captured.captured_queries)

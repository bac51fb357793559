"""Every list and analytics page, and the API lists, run as many queries for 1,000 labelled
and judged items as for 10 (issue 14): nothing is loaded or counted per row."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation import roles
from annotation.services import dataset_create, dataset_set_role
from evaluation.kept.models import KeptFigure, KeptRefresh
from tests.evaluation.agreement.labelled import build_labelled


def pages(dataset, run) -> dict[str, str]:
    d = dataset.pk
    answer, criterion = run.verdicts.order_by("pk").values_list("answer_id", "criterion_id")[0]
    return {
        "dataset list": reverse("home"),
        "query list": reverse("dataset-detail", args=[d]),
        "labelling queue": reverse("review-queue", args=[d]) + "?queue=labelling",
        "disagreement queue": reverse("review-queue", args=[d]) + "?queue=disagreement",
        "filtered disagreement queue": reverse("review-queue", args=[d])
        + "?queue=disagreement&q=a&kind=fact&system=1&author=1",
        "review page from the queue (item X of N)": reverse("answer-review", args=[answer])
        + f"?queue=disagreement&criterion={criterion}&kind=fact",
        "review page from the labelling queue": reverse("answer-review", args=[answer])
        + "?queue=labelling&q=a",
        "run page": reverse("run-detail", args=[run.pk]),
        "run answer page": reverse("run-answer", args=[run.pk, answer]),
        "answers list": reverse("dataset-answers", args=[d]),
        "answers list, searched and filtered": reverse("dataset-answers", args=[d])
        + "?q=a&labelled=yes&tool_calls=no&context=no&sort=longest",
        "answer page": reverse("answer-detail", args=[answer]),
        "runs list": reverse("dataset-runs", args=[d]),
        "agreement": reverse("dataset-agreement", args=[d]),
        "agreement items": reverse("agreement-items", args=[d]) + "?figure=panel",
        "cross-evaluation": reverse("dataset-cross-evaluation", args=[d]),
        "API agreement": f"/api/agreement/?dataset={d}",
        "API queries": f"/api/queries/?dataset={d}",
        "API answers": f"/api/answers/?query__dataset={d}",
        "API verdicts": f"/api/verdicts/?run={run.pk}",
        "API labels": f"/api/labels/?dataset={d}",
        "API runs": f"/api/runs/?dataset={d}",
        "API run scores": f"/api/runs/{run.pk}/scores/",
        "API review queue": f"/api/review-queue/?dataset={d}",
        "API disagreement queue": f"/api/review-queue/?dataset={d}&queue=disagreement",
    }


def counts(client, dataset, run, *, cached: bool) -> dict[str, int]:
    """Queries per page, each page asked once before (what a session's first request does
    is not counted), with the figure cache either filled or emptied before counting (the
    analytics refresh markers too: the request then claims one)."""
    found = {}
    for name, url in pages(dataset, run).items():
        client.get(url)
        if not cached:
            KeptFigure.objects.all().delete()
            KeptRefresh.objects.all().delete()
        with CaptureQueriesContext(connection) as captured:
            response = client.get(url)
        assert response.status_code == 200, (name, response.status_code)
        found[name] = len(captured)
    return found


@pytest.mark.parametrize("cached", [False, True], ids=["computed", "from the cache"])
def test_query_counts_stay_flat_from_10_to_1000_items(client, owner, reviewer, cached):
    client.force_login(owner)
    small = dataset_create(name="Ten items", by=owner)
    big = dataset_create(name="A thousand items", by=owner)
    for dataset in (small, big):
        dataset_set_role(dataset=dataset, user=reviewer, role=roles.DatasetRole.REVIEWER)
    small_run = build_labelled(small, queries=1, criteria=5, systems=2, seed=1).run
    big_run = build_labelled(big, queries=10, criteria=10, systems=10, seed=2).run
    for run in (small_run, big_run):  # both show the run page's table of errors
        first = run.verdicts.order_by("pk").first()
        run.verdicts.filter(pk=first.pk).update(outcome="error", error_kind="timeout")
    few = counts(client, small, small_run, cached=cached)
    many = counts(client, big, big_run, cached=cached)
    assert many == few, {k: (few[k], many[k]) for k in few if few[k] != many[k]}
    # And a ceiling, so that a new query per page shows up here too. The highest is the run
    # page computing its scores the first time: it keeps them, then reads them back as
    # every later request does (runs.scores.run_scores); PostgreSQL adds its SET LOCAL. One
    # more since issue 23: the group trees of the run's checklists, read once. Issue 43: the
    # run's judge stability, counted and kept the first time (five queries, once per run),
    # and the judge canary that checked the run, if any (one), and its latest stability pass,
    # which measures its judge stability once it has finished (one).
    assert max(many.values()) <= 50, many

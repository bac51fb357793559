"""Each system's score across a panel's runs (issue 44: trend charts from kept per-run
figures). The trend equals each run's own scores, reads kept figures only (a fixed number
of queries however many runs, no verdict), shows a run whose scores are not counted yet as
a gap and queues its count once, keeps an archived run's frozen scores, and leaves out the
runs of other panels, the judge canaries and the stability passes. On the page and in the
API, for the dataset's reviewers only."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from bench.data_io.generate import generate
from evaluation.judges.models import Panel, PanelMember
from evaluation.kept.models import KeptFigure, KeptRefresh
from evaluation.runs import scores, trend
from evaluation.runs.models import Run, Verdict
from tests.support.compare import same
from tests.support.nights import next_night

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin(django_user_model):
    return django_user_model.objects.create_user("trend-admin", password="x-9-long-pw")


@pytest.fixture
def first_night(admin):
    dataset = generate("Trend", queries=3, systems=2, criteria=4, judges=2, admin=admin)
    run = Run.objects.filter(dataset=dataset).exclude(kind=Run.Kind.CROSS_EVALUATION).get()
    Run.objects.filter(pk=run.pk).update(finished_at=timezone.now() - timedelta(days=10))
    return fresh(run)


def fresh(run: Run) -> Run:
    return Run.objects.select_related("dataset").get(pk=run.pk)


def counted(*runs: Run) -> None:
    """Each run's scores kept, as its end or its run page keeps them."""
    for run in runs:
        scores.keep_scores(fresh(run))


def values(report) -> dict[str, float | None]:
    return {s.system: s.value for s in report.systems}


def test_the_trend_equals_each_runs_own_scores(first_night):
    runs = [first_night, *(next_night(first_night, n) for n in (1, 2, 3))]
    counted(*runs)
    found = trend.score_trend(runs[-1])
    assert [p.run_id for p in found.points] == [r.pk for r in runs]  # oldest first
    assert found.counting == 0 and found.systems == sorted(values(scores.run_report(runs[0])))
    for run, point in zip(runs, found.points, strict=True):
        report = scores.run_report(fresh(run))
        same({name: s.value for name, s in point.systems.items()}, values(report))
        reliability = {s["system_id"]: s["mean"] for s in report.reliability()["systems"]}
        for s in report.systems:
            shown = point.systems[s.system]
            assert (shown.low, shown.high) == (
                reliability[s.system_id]["low"],
                reliability[s.system_id]["high"],
            )
            assert shown.low <= shown.value <= shown.high
    # The nights differ (the trend is not one run drawn four times).
    assert len({tuple(sorted(values(scores.run_report(fresh(r))).items())) for r in runs}) > 1
    # Up to the run asked for: an earlier run's trend ends with it.
    assert [p.run_id for p in trend.score_trend(runs[1]).points] == [runs[0].pk, runs[1].pk]


def test_reading_it_costs_the_same_queries_for_two_runs_or_six_and_no_verdict(first_night):
    runs = [first_night, next_night(first_night, 1)]
    counted(*runs)

    def read(run):
        with CaptureQueriesContext(connection) as captured:
            found = trend.score_trend(fresh(run))
        assert not any("evaluation_verdict" in q["sql"] for q in captured.captured_queries)
        return found, len(captured.captured_queries)

    two, two_queries = read(runs[-1])
    runs += [next_night(first_night, n) for n in (2, 3, 4, 5)]
    counted(*runs[2:])
    six, six_queries = read(runs[-1])
    assert (len(two.points), len(six.points)) == (2, 6)
    assert two_queries == six_queries <= 3


def test_a_run_not_counted_yet_is_a_gap_and_its_count_is_queued_once(first_night, settings):
    settings.FIGURES_COLD_IN_REQUEST = False
    runs = [first_night, next_night(first_night, 1), next_night(first_night, 2)]
    counted(runs[0], runs[2])  # the middle night's scores were never counted
    with CaptureQueriesContext(connection) as captured:
        found = trend.score_trend(runs[-1])
        again = trend.score_trend(runs[-1])  # a second reader
    assert not any("evaluation_verdict" in q["sql"] for q in captured.captured_queries)
    assert [p.systems is None for p in found.points] == [False, True, False]
    assert found.counting == again.counting == 1
    assert KeptRefresh.objects.filter(run_id=runs[1].pk, group=scores.REFRESH_GROUP).count() == 1


def test_where_the_settings_count_cold_figures_in_the_request_the_trend_still_does_not(
    first_night, settings
):
    settings.FIGURES_COLD_IN_REQUEST = True  # the test suite's default, said here
    runs = [first_night, next_night(first_night, 1)]
    with CaptureQueriesContext(connection) as captured:
        found = trend.score_trend(runs[-1])
    assert not any("evaluation_verdict" in q["sql"] for q in captured.captured_queries)
    assert found.counting == 2 and found.systems == []
    chart = trend.chart(found)
    for line in chart.series:  # drawn as a break in each line, never as a point at 0
        assert (len(line.points), len(line.segments)) == (2, 2)


def test_only_the_panels_own_scoring_runs_are_drawn(first_night):
    other_panel = Panel.objects.create(name="Another panel")
    PanelMember.objects.create(panel=other_panel, judge=first_night.panel.members.first().judge)
    elsewhere = next_night(first_night, 1, panel=other_panel)
    canary = next_night(first_night, 2, canary_for=first_night)
    second = next_night(first_night, 3)
    Run.objects.filter(pk=next_night(first_night, 4).pk).update(status=Run.Status.CANCELLED)
    found = trend.score_trend(second)
    assert [p.run_id for p in found.points] == [first_night.pk, second.pk]
    assert {elsewhere.pk, canary.pk}.isdisjoint(p.run_id for p in found.points)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="run archives need PostgreSQL")
def test_an_archived_run_keeps_its_point(first_night, settings, tmp_path):
    from evaluation.archive import services

    settings.RUN_ARCHIVE_DIR = tmp_path / "archive"
    second = next_night(first_night, 1)
    counted(first_night, second)
    before = trend.score_trend(second)
    services.archive_run(first_night)
    KeptFigure.objects.filter(run_id=first_night.pk, kind=scores.readers.RUN_SCORES.kind).delete()
    after = trend.score_trend(fresh(second))
    assert [p.archived for p in after.points] == [True, False]
    same(after.points[0].systems, before.points[0].systems)
    assert Verdict.objects.filter(run_id=first_night.pk).count() == 0


def test_the_analytics_page_and_the_api_show_it_to_reviewers_only(
    first_night, admin, client, django_user_model
):
    second = next_night(first_night, 1)
    counted(first_night, second)
    client.force_login(admin)
    page = client.get(reverse("dataset-analytics", args=[first_night.dataset_id]))
    body = page.content.decode()
    assert page.status_code == 200
    assert 'id="score-trend"' in body and 'id="analytics-trend-chart"' in body
    for run in (first_night, second):
        assert f'data-trend-run="{run.pk}"' in body
    url = reverse("api-evaluation:analytics-trend", args=[first_night.dataset_id])
    answer = client.get(url, {"run": second.pk}).json()
    assert [r["id"] for r in answer["runs"]] == [first_night.pk, second.pk]
    assert answer["counting"] == 0 and answer["panel"] == second.panel_id
    shown = {s["system"]: s["value"] for s in answer["runs"][1]["systems"]}
    same(shown, values(scores.run_report(second)))

    outsider = django_user_model.objects.create_user("trend-outsider", password="x-9-long-pw")
    client.force_login(outsider)
    assert client.get(url).status_code in (403, 404)
    assert client.get(reverse("dataset-analytics", args=[first_night.dataset_id])).status_code in (
        403,
        404,
    )

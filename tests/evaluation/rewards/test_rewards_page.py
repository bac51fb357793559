"""A dataset's Rewards page (issue 26, item 6): its admins see the reward traffic (items per
minute, latency percentiles, cost, failures) and the rewards tokens limited to the dataset;
nobody else sees it; its queries do not grow with the traffic."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from accounts import services as accounts_services
from annotation.models import Checklist
from evaluation.charts.columns import column_chart, nice_top
from evaluation.rewards import traffic
from evaluation.rewards.example import reward_example
from evaluation.rewards.models import RewardBatch
from tests.factories import PanelFactory, QueryFactory, external_judges, offline_judge
from tests.support.builders import checklisted_query, finished_run

pytestmark = pytest.mark.django_db


def batch(
    dataset, *, ago_s: float, items: int, latency_ms: int | None, failed=0, cost="0.01", now=None
):
    """A reward request made ago_s seconds before now (the test's clock, or the real one)."""
    made = RewardBatch.objects.create(
        dataset=dataset, items=items, failed_items=failed, calls=items * 2, cache_hits=items,
        latency_ms=latency_ms, cost=Decimal(cost) if cost is not None else None,
    )  # fmt: skip
    RewardBatch.objects.filter(pk=made.pk).update(
        created_at=(now or timezone.now()) - dt.timedelta(seconds=ago_s)
    )
    return made


def test_the_traffic_figures_are_those_of_the_requests(dataset):
    now = timezone.now()
    for i, latency in enumerate([100, 200, 300, 400, 1000]):
        batch(dataset, ago_s=60 * i + 5, items=10, latency_ms=latency, failed=i % 2)
    batch(dataset, ago_s=3 * 3600, items=7, latency_ms=50)  # in the day, not the hour
    hour, day = traffic.overview(dataset.pk, now=now)["windows"]
    assert (hour.requests, hour.items, hour.failed_items) == (5, 50, 2)
    assert hour.items_per_minute == pytest.approx(50 / 60)
    # Nearest rank: the 3rd of 5 for the median, the 5th for p95.
    assert (hour.p50_ms, hour.p95_ms) == (300, 1000)
    assert hour.cost == Decimal("0.05")
    assert hour.cache_percent == pytest.approx(100 * 50 / 150)
    assert (day.requests, day.items, day.p50_ms) == (6, 57, 200)


def test_items_per_minute_puts_each_request_in_its_minute(dataset):
    # Times are placed on the test's clock (half past a minute), not the real one: a request
    # made a second before a real minute began fell in the minute before.
    now = timezone.now().replace(second=30, microsecond=0)
    batch(dataset, ago_s=0, items=4, latency_ms=10, now=now)
    batch(dataset, ago_s=1, items=3, latency_ms=10, now=now)
    batch(dataset, ago_s=120, items=9, latency_ms=10, now=now)
    batch(dataset, ago_s=2 * 3600, items=100, latency_ms=10, now=now)  # outside the chart
    minutes = traffic.items_per_minute(dataset.pk, now=now)
    assert len(minutes) == traffic.CHART_MINUTES
    counts = [n for _, n in minutes]
    assert counts[-1] == 7 and counts[-3] == 9 and sum(counts) == 16


def test_percentiles_of_nothing_are_none():
    assert traffic.percentile([], 0.5) is None
    assert traffic.percentile([7], 0.95) == 7


def test_the_column_chart_scales_to_a_round_top():
    assert [nice_top(v) for v in (0, 3, 10, 11, 240)] == [1, 5, 10, 20, 500]
    chart = column_chart([("a", 0), ("b", 5), ("c", 10)], title="t", unit="items")
    heights = [c.height for c in chart.columns]
    assert heights[0] == 0 and heights[2] == 2 * heights[1]
    assert not chart.empty
    assert column_chart([("a", 0)], title="t", unit="items").empty


def test_the_page_shows_traffic_and_tokens_to_admins(client, owner, dataset):
    batch(dataset, ago_s=5, items=12, latency_ms=850, failed=2)
    token, _ = accounts_services.api_token_create(
        user=owner, name="grpo trainer", scope="rewards", datasets=[dataset]
    )
    client.force_login(owner)
    page = client.get(reverse("dataset-rewards", args=[dataset.pk]))
    assert page.status_code == 200
    text = page.content.decode()
    assert "Reward items per minute" in text and "850 ms" in text
    assert "grpo trainer" in text and token.prefix in text
    detail = client.get(reverse("dataset-detail", args=[dataset.pk])).content.decode()
    assert reverse("dataset-rewards", args=[dataset.pk]) in detail


def test_an_empty_page_says_what_to_do(client, owner, dataset):
    client.force_login(owner)
    text = client.get(reverse("dataset-rewards", args=[dataset.pk])).content.decode()
    assert "No reward request yet. Make a rewards token below" in text
    assert "No rewards token for this dataset yet." in text


def test_only_the_datasets_admins_see_it(
    client, collaborator, reviewed_dataset, reviewer, outsider
):
    url = reverse("dataset-rewards", args=[reviewed_dataset.pk])
    for user, status in ((collaborator, 403), (reviewer, 403), (outsider, 404)):
        client.force_login(user)
        assert client.get(url).status_code == status, user
        assert (
            url
            not in client.get(
                reverse("dataset-detail", args=[reviewed_dataset.pk])
            ).content.decode()
        )


def test_the_pages_queries_do_not_grow_with_traffic(
    client, owner, dataset, django_assert_max_num_queries
):
    for i in range(60):
        batch(dataset, ago_s=30 * i, items=5, latency_ms=100 + i)
    for i in range(3):
        accounts_services.api_token_create(
            user=owner, name=f"t{i}", scope="rewards", datasets=[dataset]
        )
    client.force_login(owner)
    with django_assert_max_num_queries(14):
        assert client.get(reverse("dataset-rewards", args=[dataset.pk])).status_code == 200


def test_the_ready_request_names_a_scorable_query_and_a_panel_that_can_grade(
    client, owner, dataset, django_assert_max_num_queries
):
    """The query: the first with criteria to score (a draft's query is skipped). The panel:
    one with judges, none external; the panel of the dataset's latest run first. The page's
    queries do not grow with queries and panels."""
    draft = QueryFactory(dataset=dataset)
    Checklist.objects.create(query=draft, author=owner)  # a draft: nothing to score
    scorable = checklisted_query(dataset, criteria=2, answers=1, external_id="rev-q3")
    for i in range(5):
        checklisted_query(dataset, criteria=1, external_id=f"more-{i}", author=owner)
    PanelFactory(name="A empty")  # no judges
    PanelFactory(name="B imported", judges=external_judges(1))
    first = PanelFactory(name="C offline", judges=[offline_judge("Offline C")])
    latest = PanelFactory(name="D offline", judges=[offline_judge("Offline D")])
    client.force_login(owner)
    url = reverse("dataset-rewards", args=[dataset.pk])
    page = client.get(url).content.decode()
    assert "rev-q3" in page and f"&quot;panel&quot;: {first.pk}" in page
    assert "B imported" not in page and "A empty" not in page
    finished_run(dataset, latest, {})
    example = reward_example(dataset, "http://testserver/api/rewards/")
    assert (example.query_external_id, example.panel) == ("rev-q3", latest)
    assert example.body["items"][0]["query"] == scorable.query.external_id
    with django_assert_max_num_queries(17):
        assert client.get(url).status_code == 200


def test_without_a_panel_that_can_grade_the_page_says_so(client, owner, dataset):
    checklisted_query(dataset, criteria=1)
    PanelFactory(name="Imported only", judges=external_judges(1))
    client.force_login(owner)
    page = client.get(reverse("dataset-rewards", args=[dataset.pk])).content.decode()
    assert "No panel can grade rewards yet" in page and 'id="reward-curl"' not in page

"""An ended run's page watches its scores (issue 40): its poll answers 204 while the
scores it shows are current, and once a change moves them (here the dataset's strategy)
the "Updating" note, or a reload when the fresh ones are kept already."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.urls import reverse

from annotation import services
from annotation.models import Criterion
from evaluation.runs import scores
from tests.factories import PanelFactory, external_judges
from tests.support.builders import checklisted_query, finished_run

pytestmark = pytest.mark.django_db
WATCH = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "scores-watch"}


@pytest.fixture
def run(dataset):
    made = checklisted_query(dataset, criteria=3, answers=1)
    Criterion.objects.filter(pk=made.criteria[2].pk).update(weight=Decimal("-1"))
    panel = PanelFactory(judges=external_judges(1))
    outcomes = ("pass", "fail", "pass")
    return finished_run(
        dataset, panel,
        {(made.answers[0], c): (o,) for c, o in zip(made.criteria, outcomes, strict=True)},
    )  # fmt: skip


def watch_url(client, run) -> str:
    page = client.get(reverse("run-detail", args=[run.pk])).content.decode()
    (url,) = re.findall(r'id="scores-watch" hidden hx-get="([^"]+)"', page)
    return url.replace("&amp;", "&")


def test_the_poll_says_nothing_while_the_scores_are_current(client, owner, run):
    client.force_login(owner)
    url = watch_url(client, run)
    assert client.get(url, **WATCH).status_code == 204
    assert client.get(url, **WATCH).status_code == 204


def test_a_strategy_change_shows_the_note_then_reloads(client, owner, dataset, run):
    client.force_login(owner)
    url = watch_url(client, run)
    services.dataset_update(dataset=dataset, scoring="points")
    answer = client.get(url, **WATCH)
    # With no worker the refresh waits in the broker: the note, which polls on.
    assert answer.status_code == 200 and b'id="figures-updating"' in answer.content
    run.refresh_from_db()
    scores.refresh_scores(run)  # what the worker does
    answer = client.get(url, **WATCH)
    assert answer.status_code == 200 and answer.headers["HX-Refresh"] == "true"


def test_an_eager_refresh_reloads_at_once(client, owner, dataset, run, eager_refresh):
    client.force_login(owner)
    url = watch_url(client, run)
    services.dataset_update(dataset=dataset, undecided="not_met")
    answer = client.get(url, **WATCH)
    assert answer.headers.get("HX-Refresh") == "true"

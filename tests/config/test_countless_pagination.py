"""The large API lists page without counting every row (config.pagination): the pages
follow each other by `next` and `previous`, hold every row once, in order, a page past the
end and a page that is not a number answer 404, and no COUNT runs."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evaluation.labels.models import HumanLabel
from evaluation.runs.models import Verdict
from tests.evaluation.agreement.labelled import build_labelled

pytestmark = pytest.mark.django_db


@pytest.fixture
def labelled(dataset):
    return build_labelled(dataset, queries=2, criteria=3, systems=2, seed=3)


def _walk(api, url: str) -> tuple[list[int], int]:
    ids, pages, page = [], 0, api.get(url).json()
    assert set(page) == {"next", "previous", "results"} and page["previous"] is None
    while True:
        pages += 1
        ids += [row["id"] for row in page["results"]]
        if page["next"] is None:
            return ids, pages
        page = api.get(page["next"]).json()
        assert page["previous"] is not None


@pytest.mark.parametrize(
    ("url", "rows"),
    [
        ("/api/verdicts/?run={run}", lambda run: Verdict.objects.filter(run=run)),
        ("/api/labels/?dataset={dataset}", lambda run: HumanLabel.objects.all()),
    ],
    ids=["verdicts", "labels"],
)
def test_pages_hold_every_row_once_without_a_count(labelled, owner_api, settings, url, rows):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "PAGE_SIZE": 7}
    run = labelled.run
    url = url.format(run=run.pk, dataset=run.dataset_id)
    expected = list(rows(run).order_by("pk").values_list("pk", flat=True))
    assert len(expected) > 14
    ids, pages = _walk(owner_api, url)
    assert sorted(ids) == expected and len(set(ids)) == len(ids)
    assert pages == -(-len(expected) // 7)
    with CaptureQueriesContext(connection) as captured:
        assert owner_api.get(url, {"page": 2}).status_code == 200
    assert not [q for q in captured if "COUNT(" in q["sql"].upper()]
    for bad in (pages + 1, 0, -1, "x", 10**13):
        response = owner_api.get(url, {"page": bad})
        assert response.status_code == 404, bad
        assert response.json() == {"detail": "Invalid page."}


def test_an_empty_list_is_one_empty_page(owner_api):
    body = owner_api.get("/api/verdicts/").json()
    assert body == {"next": None, "previous": None, "results": []}

"""Filtering a list by an id answers the same for an id that does not exist and for one the
user may not see: an empty page, never an error that tells the two apart."""

from __future__ import annotations

import pytest

from annotation import services
from annotation.models import Dataset
from tests.factories import QueryFactory

pytestmark = pytest.mark.django_db

FILTERS = [
    ("/api/queries/", "dataset"),
    ("/api/checklists/", "query"),
    ("/api/checklists/", "query__dataset"),
    ("/api/criteria/", "checklist"),
    ("/api/runs/", "dataset"),
    ("/api/answers/", "query"),
    ("/api/verdicts/", "run"),
    ("/api/labels/", "answer"),
    ("/api/labels/", "criterion"),
    ("/api/adjudications/", "answer"),
]


@pytest.mark.parametrize(("url", "field"), FILTERS)
def test_missing_and_invisible_ids_look_the_same(outsider_api, owner, url, field):
    hidden = services.dataset_create(name="Hidden", by=owner)
    hidden_query = QueryFactory(dataset=hidden)
    visible_id = {"dataset": hidden.pk, "query__dataset": hidden.pk}.get(field, hidden_query.pk)
    missing_id = Dataset.objects.order_by("-pk").first().pk + 1000
    invisible = outsider_api.get(url, {field: visible_id})
    missing = outsider_api.get(url, {field: missing_id})
    assert (invisible.status_code, missing.status_code) == (200, 200)
    assert invisible.json()["results"] == missing.json()["results"] == []
    assert outsider_api.get(url, {field: "x"}).status_code == 400  # not a number: named error


def test_filtering_by_id_still_filters(owner_api, dataset, owner):
    QueryFactory(dataset=dataset)
    other = services.dataset_create(name="Other", by=owner)
    QueryFactory(dataset=other)
    response = owner_api.get("/api/queries/", {"dataset": dataset.pk})
    assert [q["dataset"] for q in response.json()["results"]] == [dataset.pk]

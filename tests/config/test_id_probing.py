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


def test_an_object_of_a_hidden_dataset_answers_as_a_missing_one(outsider_api, owner):
    """Each detail route answers a hidden object's id with the very status and body of an id
    that does not exist: no "No such dataset." that only hidden objects get."""
    from annotation.models import CriterionGroup
    from evaluation.runs.models import Run
    from tests.factories import AnswerFactory, CriterionFactory, PanelFactory

    hidden = services.dataset_create(name="Hidden", by=owner)
    criterion = CriterionFactory(checklist__query__dataset=hidden)
    checklist, query = criterion.checklist, criterion.checklist.query
    group = CriterionGroup.objects.create(checklist=checklist, title="G")
    answer = AnswerFactory(query=query)
    run = Run.objects.create(dataset=hidden, panel=PanelFactory())
    routes = [
        ("get", "/api/queries/{}/", query.pk),
        ("get", "/api/checklists/{}/", checklist.pk),
        ("get", "/api/criteria/{}/", criterion.pk),
        ("patch", "/api/groups/{}/", group.pk),
        ("get", "/api/answers/{}/", answer.pk),
        ("get", "/api/runs/{}/", run.pk),
    ]
    for method, url, pk in routes:
        seen = getattr(outsider_api, method)(url.format(pk), {})
        missing = getattr(outsider_api, method)(url.format(pk + 100_000), {})
        assert seen.status_code == missing.status_code == 404, url
        assert seen.json() == missing.json(), url

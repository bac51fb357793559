"""Every query has an external id (issue 40): `query-<id>` unless its creator gave one,
unique in its dataset; the dataset's admins and the query's author may change it on the
query's page and through the API while nothing outside the app holds it; every refusal is
a 400 on `external_id` (or `dataset`, for a move) that says why and changes nothing."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps
from django.urls import reverse

from annotation import services
from annotation.models import Query
from tests.factories import QueryFactory

pytestmark = pytest.mark.django_db

NEW = {"text": "What did Example Corp report for Q3 revenue?", "query_date": "2026-10-01"}


def test_a_query_made_through_the_api_gets_its_id_or_the_one_given(owner_api, dataset):
    made = owner_api.post("/api/queries/", {**NEW, "dataset": dataset.pk}, format="json")
    assert made.status_code == 201
    assert made.json()["external_id"] == f"query-{made.json()['id']}"
    assert made.json()["external_id_fixed_by"] == ""
    given = owner_api.post(
        "/api/queries/", {**NEW, "dataset": dataset.pk, "external_id": "ex-q3"}, format="json"
    )
    assert given.status_code == 201 and given.json()["external_id"] == "ex-q3"
    again = owner_api.post(
        "/api/queries/", {**NEW, "dataset": dataset.pk, "external_id": "ex-q3"}, format="json"
    )
    assert again.status_code == 400
    assert "Another query of this dataset" in again.json()["external_id"][0]
    assert Query.objects.filter(dataset=dataset).count() == 2


def test_a_default_id_another_query_holds_gets_a_suffix(dataset):
    last = Query.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    # The next query made will have id last + 2: its default name is taken already.
    QueryFactory(dataset=dataset, external_id=f"query-{last + 2}")
    made = services.query_create(dataset=dataset, text="Q", query_date="2026-10-01")
    if made.pk == last + 2:  # the sequence gave the expected id (no gap)
        assert made.external_id == f"query-{last + 2}-2"
    assert Query.objects.filter(dataset=dataset, external_id=made.external_id).count() == 1


def test_patch_changes_the_id_while_it_is_free(owner_api, dataset):
    query = QueryFactory(dataset=dataset)
    response = owner_api.patch(f"/api/queries/{query.pk}/", {"external_id": "rev-q3"})
    assert response.status_code == 200 and response.json()["external_id"] == "rev-q3"
    query.refresh_from_db()
    assert query.external_id == "rev-q3"  # not a silent 200: the change is made


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("", "may not be empty"),
        (" padded", "No spaces at the start or end"),
        ("a\tb", "No control characters"),
        ("x" * 201, "200 characters"),
        ("taken", "Another query of this dataset"),
    ],
)
def test_a_bad_id_is_refused_naming_the_field(owner_api, dataset, value, says):
    QueryFactory(dataset=dataset, external_id="taken")
    query = QueryFactory(dataset=dataset)
    before = query.external_id
    response = owner_api.patch(f"/api/queries/{query.pk}/", {"external_id": value}, format="json")
    assert response.status_code == 400
    assert says in " ".join(response.json()["external_id"])
    query.refresh_from_db()
    assert query.external_id == before


def test_a_fixed_id_is_refused_with_the_reason(owner_api, owner_client, dataset):
    query = QueryFactory(dataset=dataset, external_id="q-1")
    services.external_ids_fix(queries=Query.objects.filter(pk=query.pk), by="export")
    response = owner_api.patch(f"/api/queries/{query.pk}/", {"external_id": "q-2"})
    assert response.status_code == 400
    assert "the dataset was exported with it" in response.json()["external_id"][0]
    # Other fields still change; the same id again is no change.
    response = owner_api.patch(
        f"/api/queries/{query.pk}/", {"external_id": "q-1", "text": "New wording?"}
    )
    assert response.status_code == 200
    page = owner_client.get(reverse("query-detail", args=[query.pk])).content.decode()
    assert "fixed since" in page and "the dataset was exported with it" in page
    assert 'name="external_id"' not in page  # no edit control for a fixed id
    query.refresh_from_db()
    assert (query.external_id, query.text) == ("q-1", "New wording?")


def test_the_author_may_change_the_id_and_other_experts_may_not(
    client, collaborator, outsider, dataset
):
    services.dataset_set_role(dataset=dataset, user=outsider, role="expert")
    client.force_login(collaborator)
    client.post(reverse("query-create", args=[dataset.pk]), NEW)
    query = Query.objects.get(dataset=dataset)
    page = client.get(reverse("query-detail", args=[query.pk])).content.decode()
    assert 'name="external_id"' in page
    url = reverse("query-external-id", args=[query.pk])
    assert client.post(url, {"external_id": "mine"}).status_code == 302
    client.force_login(outsider)
    page = client.get(reverse("query-detail", args=[query.pk])).content.decode()
    assert 'name="external_id"' not in page and '<code id="query-external-id">mine</code>' in page
    assert client.post(url, {"external_id": "theirs"}).status_code == 403
    query.refresh_from_db()
    assert query.external_id == "mine"


def test_the_page_shows_why_a_change_is_refused(owner_client, dataset):
    QueryFactory(dataset=dataset, external_id="taken")
    query = QueryFactory(dataset=dataset)
    response = owner_client.post(
        reverse("query-external-id", args=[query.pk]), {"external_id": "taken"}
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert "Another query of this dataset has the external id “taken”." in page
    assert f'<code id="query-external-id">{query.external_id}</code>' in page


def test_a_move_to_a_dataset_holding_the_id_is_refused(owner_api, owner, dataset):
    other = services.dataset_create(name="Other", by=owner)
    QueryFactory(dataset=other, external_id="shared")
    query = QueryFactory(dataset=dataset, external_id="shared")
    response = owner_api.patch(f"/api/queries/{query.pk}/", {"dataset": other.pk})
    assert response.status_code == 400 and "external id “shared”" in response.json()["dataset"][0]
    query.refresh_from_db()
    assert query.dataset_id == dataset.pk


def test_the_migration_names_queries_as_exports_did_and_fixes_imported_ids(dataset):
    imported = QueryFactory(dataset=dataset, external_id="from-a-file")
    blank = QueryFactory(dataset=dataset)
    squatted = QueryFactory(dataset=dataset)
    Query.objects.filter(pk__in=[blank.pk, squatted.pk]).update(external_id="")
    Query.objects.filter(pk=imported.pk).update(external_id=f"query-{squatted.pk}")
    migration = importlib.import_module("annotation.migrations.0012_every_query_has_an_external_id")
    migration.give_ids(apps, None)
    ids = dict(Query.objects.filter(dataset=dataset).values_list("pk", "external_id"))
    assert ids[blank.pk] == f"query-{blank.pk}"
    assert ids[squatted.pk] == f"query-{squatted.pk}-2"
    fixed = dict(Query.objects.filter(dataset=dataset).values_list("pk", "external_id_fixed_by"))
    assert fixed == {imported.pk: "import", blank.pk: "", squatted.pk: ""}

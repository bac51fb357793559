"""Creating a dataset and changing its settings, in pages and the API: every setting can be
set, bad values are refused by field and change nothing, only the dataset's admins may."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Dataset, Guideline, LabelPolicy

pytestmark = pytest.mark.django_db


def test_new_dataset_page_takes_every_setting(client, owner):
    client.force_login(owner)
    guideline = Guideline.objects.order_by("pk").first()
    response = client.post(
        reverse("dataset-create"),
        {
            "name": "Earnings calls",
            "description": "Q3",
            "guideline": guideline.pk,
            "experts_per_query": 3,
            "formality_check": "on",
            "pass_threshold": "0.6",
            "label_policy": LabelPolicy.RANDOM,
            "label_share": "0.1",
        },
    )
    dataset = Dataset.objects.get(name="Earnings calls")
    assert response.status_code == 302
    assert response["Location"] == reverse("dataset-detail", args=[dataset.pk])
    assert (dataset.guideline, dataset.experts_per_query, dataset.formality_check) == (
        guideline, 3, True,
    )  # fmt: skip
    assert (dataset.pass_threshold, dataset.label_policy, dataset.label_share) == (
        0.6, "random", 0.1,
    )  # fmt: skip
    assert owner.has_perm("annotation.change_dataset", dataset)


def test_settings_page_by_role(client, dataset, owner, collaborator, outsider):
    url = reverse("dataset-edit", args=[dataset.pk])
    for user, code in ((owner, 200), (collaborator, 403), (outsider, 404)):
        client.force_login(user)
        assert client.get(url).status_code == code, user.username
        assert client.post(url, {"name": "Renamed"}).status_code in (code, 302)
    dataset.refresh_from_db()
    assert dataset.name == "Owner dataset"  # the owner's POST lacked fields: refused


def test_settings_page_saves_and_refuses_bad_values_by_field(client, dataset, owner):
    client.force_login(owner)
    url = reverse("dataset-edit", args=[dataset.pk])
    base = {"name": dataset.name, "experts_per_query": 2, "label_policy": "all", "label_share": 1}
    bad = client.post(url, {**base, "pass_threshold": "1.5"})
    assert bad.status_code == 200
    assert "pass_threshold" in bad.context["form"].errors
    dataset.refresh_from_db()
    assert dataset.pass_threshold is None and dataset.label_policy == "uncertain"

    assert client.post(url, {**base, "pass_threshold": "0.75"}).status_code == 302
    dataset.refresh_from_db()
    assert (dataset.pass_threshold, dataset.label_policy, dataset.label_share) == (0.75, "all", 1)


def test_api_creates_with_any_setting_and_updates_through_services(owner_api, collaborator_api):
    created = owner_api.post(
        "/api/datasets/", {"name": "API set", "formality_check": True, "pass_threshold": 0.5}
    )
    assert created.status_code == 201, created.content
    pk = created.json()["id"]
    assert created.json()["pass_threshold"] == 0.5

    bad = owner_api.patch(f"/api/datasets/{pk}/", {"label_share": 2}, format="json")
    assert bad.status_code == 400 and "label_share" in bad.json()
    assert Dataset.objects.get(pk=pk).label_share == 0.2

    ok = owner_api.patch(f"/api/datasets/{pk}/", {"label_policy": "all"}, format="json")
    assert ok.status_code == 200 and ok.json()["label_policy"] == "all"
    assert collaborator_api.delete(f"/api/datasets/{pk}/").status_code == 404
    assert owner_api.delete(f"/api/datasets/{pk}/").status_code == 202
    assert Dataset.objects.get(pk=pk).deleting_since is not None  # a worker deletes it


def test_reference_answer_is_set_through_the_query_api(owner_api, query):
    response = owner_api.patch(
        f"/api/queries/{query.pk}/", {"reference_answer": "Revenue was **$4.1bn**."}, format="json"
    )
    assert response.status_code == 200, response.content
    query.refresh_from_db()
    assert query.reference_answer == "Revenue was **$4.1bn**."

"""Tokens narrowed beyond their person (issues 26 and 28): limited to chosen datasets, with an
expiry, and rewards-only tokens for RL trainers. Each limit holds on every API call, and a
token cannot make a token that reaches further or lives longer than itself."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from accounts import services
from accounts.authentication import REWARDS_ONLY_REFUSAL
from accounts.models import ApiToken
from annotation import roles
from annotation import services as annotation_services
from annotation.access import DATASET_LIMIT_REFUSAL
from tests.factories import QueryFactory

pytestmark = pytest.mark.django_db


def with_key(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


@pytest.fixture
def second(owner, collaborator):
    """Another dataset of the owner's, where the collaborator is an expert too."""
    other = annotation_services.dataset_create(name="Second dataset", by=owner)
    annotation_services.dataset_set_role(
        dataset=other, user=collaborator, role=roles.DatasetRole.EXPERT
    )
    return other


@pytest.fixture
def elsewhere(outsider):
    """A dataset the owner is not a member of."""
    return annotation_services.dataset_create(name="Elsewhere", by=outsider)


def test_a_token_limited_to_a_dataset_reaches_that_dataset_alone(owner, dataset, second, elsewhere):
    QueryFactory(dataset=dataset)
    QueryFactory(dataset=second)
    _, key = services.api_token_create(user=owner, name="one", scope="write", datasets=[dataset])
    api = with_key(key)
    listed = api.get("/api/datasets/").json()["results"]
    assert [d["id"] for d in listed] == [dataset.pk]
    assert api.get(f"/api/datasets/{dataset.pk}/").status_code == 200
    # A dataset its person is a member of, outside its limit: refused, saying why.
    refused = api.get(f"/api/datasets/{second.pk}/")
    assert refused.status_code == 403
    assert refused.json()["detail"] == DATASET_LIMIT_REFUSAL
    # One its person is not a member of: as if it did not exist, as for any other request.
    assert api.get(f"/api/datasets/{elsewhere.pk}/").status_code == 404
    # Lists of things inside datasets follow the limit too.
    queries = api.get("/api/queries/").json()["results"]
    assert {q["dataset"] for q in queries} == {dataset.pk}
    # Writes too: no query can be added to the other dataset.
    added = api.post(
        "/api/queries/", {"dataset": second.pk, "text": "Q?", "query_date": "2025-01-01"}
    )
    assert added.status_code in (400, 403)
    assert not second.queries.filter(text="Q?").exists()
    # The same person's session, and an unlimited token, still reach both.
    _, free = services.api_token_create(user=owner, name="all")
    assert len(with_key(free).get("/api/datasets/").json()["results"]) == 2


def test_an_expired_token_authenticates_nobody(owner, dataset):
    token, key = services.api_token_create(
        user=owner, name="short", expires_at=timezone.now() + dt.timedelta(hours=1)
    )
    assert with_key(key).get("/api/datasets/").status_code == 200
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    refused = with_key(key).get("/api/datasets/")
    # 403 rather than 401, as for any bad key: the API's first authenticator is the session's.
    assert refused.status_code == 403
    assert "This token expired on" in refused.json()["detail"]


def test_an_expiry_in_the_past_is_refused(owner):
    with pytest.raises(services.Refused) as refused:
        services.api_token_create(
            user=owner, name="x", expires_at=timezone.now() - dt.timedelta(days=1)
        )
    assert refused.value.field == "expires_at"
    assert not ApiToken.objects.exists()


def test_a_rewards_token_reaches_nothing_but_the_reward_endpoints(owner, dataset):
    _, key = services.api_token_create(
        user=owner, name="trainer", scope="rewards", datasets=[dataset]
    )
    api = with_key(key)
    for method, url in (
        ("get", "/api/datasets/"),
        ("get", f"/api/datasets/{dataset.pk}/"),
        ("get", "/api/tokens/"),
        ("post", "/api/tokens/"),
        ("post", "/api/runs/"),
    ):
        refused = getattr(api, method)(url, {})
        assert refused.status_code == 403, url
        assert refused.json()["detail"] == REWARDS_ONLY_REFUSAL


def test_a_rewards_token_is_made_by_an_admin_for_chosen_datasets(owner, collaborator, dataset):
    with pytest.raises(services.Refused, match="made for chosen datasets"):
        services.api_token_create(user=owner, name="t", scope="rewards")
    # An expert of the dataset may not make one for it: rewards spend the dataset's judges.
    with pytest.raises(services.Refused, match="not an admin of the dataset “Owner dataset”"):
        services.api_token_create(user=collaborator, name="t", scope="rewards", datasets=[dataset])
    assert not ApiToken.objects.exists()


def test_a_token_is_limited_only_to_datasets_of_its_person(collaborator, elsewhere):
    with pytest.raises(services.Refused, match="not a member of the dataset “Elsewhere”"):
        services.api_token_create(user=collaborator, name="t", datasets=[elsewhere])


def test_the_api_makes_limited_and_expiring_tokens(owner, dataset, second, elsewhere):
    api = APIClient()
    api.force_authenticate(owner)
    expiry = timezone.now() + dt.timedelta(days=30)
    made = api.post(
        "/api/tokens/",
        {
            "name": "trainer",
            "scope": "rewards",
            "datasets": [dataset.pk],
            "expires_at": expiry.isoformat(),
        },
    )
    assert made.status_code == 201, made.content
    body = made.json()
    assert body["datasets"] == [dataset.pk] and body["scope"] == "rewards"
    assert body["expires_at"] and body["key"]
    listed = api.get("/api/tokens/").json()["results"][0]
    assert listed["datasets"] == [dataset.pk] and "key" not in listed
    # An id the person cannot see is named, and nothing is made.
    refused = api.post("/api/tokens/", {"name": "x", "datasets": [elsewhere.pk]})
    assert refused.status_code == 400
    assert refused.json() == {"datasets": [f"No such dataset: {elsewhere.pk}."]}
    assert ApiToken.objects.count() == 1


def test_a_token_cannot_make_a_token_that_reaches_further(owner, dataset, second):
    _, limited = services.api_token_create(
        user=owner, name="limited", scope="write", datasets=[dataset],
        expires_at=timezone.now() + dt.timedelta(days=7),
    )  # fmt: skip
    api = with_key(limited)
    later = (timezone.now() + dt.timedelta(days=6)).isoformat()
    wider = api.post("/api/tokens/", {"name": "wider", "datasets": [], "expires_at": later})
    assert wider.status_code == 400
    assert "datasets" in wider.json()
    # The second dataset is outside its limit: the person's other membership is not reachable.
    other = api.post(
        "/api/tokens/", {"name": "other", "datasets": [second.pk], "expires_at": later}
    )
    assert other.status_code == 400
    longer = api.post("/api/tokens/", {"name": "longer", "datasets": [dataset.pk]})
    assert longer.status_code == 400
    assert "expire no later" in longer.json()["expires_at"][0]
    ok = api.post("/api/tokens/", {"name": "narrow", "datasets": [dataset.pk], "expires_at": later})
    assert ok.status_code == 201, ok.content
    assert ApiToken.objects.count() == 2


def test_the_account_page_makes_a_limited_expiring_token(client, owner, dataset, second):
    client.force_login(owner)
    page = client.get(reverse("account")).content.decode()
    assert "Owner dataset" in page and "Second dataset" in page and "Rewards only" in page
    response = client.post(
        reverse("token-create"),
        {"name": "trainer", "scope": "rewards", "datasets": [dataset.pk], "expires_in": "30"},
    )
    assert response.status_code == 200, response.content.decode()
    token = ApiToken.objects.get()
    assert list(token.datasets.all()) == [dataset] and token.scope == "rewards"
    assert dt.timedelta(days=29) < token.expires_at - timezone.now() <= dt.timedelta(days=30)
    listed = client.get(reverse("account")).content.decode()
    assert "Rewards only" in listed and token.expires_at.strftime("%Y-%m-%d") in listed
    # A rewards token without a dataset is refused on the field, and nothing is made.
    refused = client.post(reverse("token-create"), {"name": "t2", "scope": "rewards"})
    assert refused.status_code == 400
    assert "choose the ones it may score for" in refused.content.decode()
    assert ApiToken.objects.count() == 1


def test_rewards_tokens_are_offered_to_dataset_admins_alone(client, collaborator, dataset):
    client.force_login(collaborator)  # an expert of the dataset, admin of none
    page = client.get(reverse("account")).content.decode()
    assert 'value="rewards"' not in page
    refused = client.post(
        reverse("token-create"), {"name": "t", "scope": "rewards", "datasets": [dataset.pk]}
    )
    assert refused.status_code == 400 and not ApiToken.objects.exists()

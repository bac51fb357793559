"""Reward traffic through a personal API token: the batch records the token, and the quota
counts per token, apart from its owner's other tokens and sessions."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from accounts.models import ApiToken
from accounts.services.tokens import api_token_create
from annotation import services as annotation_services
from evaluation.rewards.models import RewardBatch
from tests.evaluation.rewards.conftest import native

URL = "/api/rewards/"
pytestmark = pytest.mark.django_db


def token_client(user, dataset, name: str) -> tuple[APIClient, ApiToken]:
    token, key = api_token_create(
        user=user, name=name, scope=ApiToken.Scope.REWARDS, datasets=[dataset]
    )
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client, token


def test_the_quota_counts_per_token(owner, owner_api, dataset, checklisted, panel, settings):
    settings.REWARDS_ITEMS_PER_MINUTE = 1
    first, first_token = token_client(owner, dataset, "trainer 1")
    second, second_token = token_client(owner, dataset, "trainer 2")

    assert first.post(URL, native(dataset, panel, "a"), format="json").status_code == 200
    assert first.post(URL, native(dataset, panel, "a"), format="json").status_code == 429
    assert second.post(URL, native(dataset, panel, "a"), format="json").status_code == 200
    assert owner_api.post(URL, native(dataset, panel, "a"), format="json").status_code == 200

    recorded = list(RewardBatch.objects.order_by("pk").values_list("user", "token_id"))
    assert recorded == [
        (owner.pk, first_token.pk), (owner.pk, second_token.pk), (owner.pk, None)
    ]  # fmt: skip


def test_a_rewards_token_of_another_dataset_is_refused(owner, dataset, checklisted, panel):
    other = annotation_services.dataset_create(name="Other dataset", by=owner)
    client, _ = token_client(owner, other, "trainer for the other dataset")
    refused = client.post(URL, native(dataset, panel, "a"), format="json")
    assert refused.status_code == 403
    assert "limited to other datasets" in refused.json()["detail"]
    assert not RewardBatch.objects.exists()
    # Its own dataset's reward routes are all it reaches: the trainer shapes too.
    elsewhere = client.get(f"/api/datasets/{other.pk}/")
    assert elsewhere.status_code == 403 and "rewards only" in elsewhere.json()["detail"]

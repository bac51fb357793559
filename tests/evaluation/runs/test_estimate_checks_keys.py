"""Issue 40: the start form checks the judges' keys before it estimates. A panel whose judge
names a key variable that is not set gets the reason at the estimate, no price, and the
Start button disabled (swapped in with the estimate); set, the estimate shows and Start is
enabled again. Without JavaScript the Start button still refuses with the same reason."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluation.judges.models import Judge
from tests.factories import PanelFactory
from tests.support.builders import checklisted_query

pytestmark = pytest.mark.django_db

VARIABLE = "JUDGE_KEY_ESTIMATE_TEST"


@pytest.fixture
def panel(dataset):
    checklisted_query(dataset, criteria=3, answers=2)
    judge = Judge.objects.create(
        name="Keyed", base_url="http://127.0.0.1:9/v1", model="m", api_key_env=VARIABLE,
        prompt_price="1", completion_price="1",
    )  # fmt: skip
    return PanelFactory(name="Keyed panel", judges=[judge])


def estimate(client, dataset, panel) -> str:
    url = reverse("run-estimate", args=[dataset.pk])
    params = {"panel": panel.pk, "scope": "all", "concurrency": 16}
    response = client.get(url, params, headers={"HX-Request": "true"})
    assert response.status_code == 200
    return response.content.decode()


def test_a_key_not_set_is_said_at_the_estimate_and_start_is_disabled(
    client, owner, dataset, panel, monkeypatch
):
    monkeypatch.delenv(VARIABLE, raising=False)
    client.force_login(owner)
    fragment = estimate(client, dataset, panel)
    assert "data-estimate-refused" in fragment and "data-estimate-calls" not in fragment
    assert f"its API key variable {VARIABLE} is not set on this server" in fragment
    assert 'id="start-run" hx-swap-oob="true" disabled' in fragment

    monkeypatch.setenv(VARIABLE, "sk-test")
    fragment = estimate(client, dataset, panel)
    assert "data-estimate-calls" in fragment and "data-estimate-refused" not in fragment
    assert 'id="start-run" hx-swap-oob="true">' in fragment


def test_without_javascript_start_refuses_with_the_same_reason(
    client, owner, dataset, panel, monkeypatch
):
    monkeypatch.delenv(VARIABLE, raising=False)
    client.force_login(owner)
    page = client.get(reverse("dataset-runs", args=[dataset.pk])).content.decode()
    assert 'id="start-run"' in page and "hx-swap-oob" not in page
    whole = client.get(
        reverse("run-estimate", args=[dataset.pk]), {"panel": panel.pk, "scope": "all",
                                                     "concurrency": 16}
    ).content.decode()  # fmt: skip
    assert "<html" in whole and "data-estimate-refused" in whole and "hx-swap-oob" not in whole
    response = client.post(
        reverse("dataset-runs", args=[dataset.pk]),
        {"panel": panel.pk, "scope": "all", "concurrency": 16},
    )
    assert f"its API key variable {VARIABLE} is not set on this server" in response.content.decode()

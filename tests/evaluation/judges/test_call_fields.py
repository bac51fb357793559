"""How a judge calls its endpoint (issue 25), on its page and in the API: criteria per call
(0 to 50), the token parameter, the response format, the reasoning effort and the price of
cached prompt tokens; left out of a post, each keeps its value."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from evaluation.judges.models import Judge
from tests.evaluation.judges.test_pages import form_data

pytestmark = pytest.mark.django_db

CALL = {
    "criteria_per_call": "0", "token_parameter": "max_completion_tokens",
    "response_format": "json_object", "reasoning_effort": "low",
    "cached_prompt_price": "0.075",
}  # fmt: skip


def test_the_page_sets_and_checks_the_call_fields(client, owner):
    client.force_login(owner)
    page = client.get(reverse("judge-create")).content.decode()
    for name in CALL:
        assert f'name="{name}"' in page
    refused = client.post(
        reverse("judge-create"), form_data(criteria_per_call="51", cached_prompt_price="-1")
    )
    assert set(refused.context["form"].errors) == {"criteria_per_call", "cached_prompt_price"}
    assert client.post(reverse("judge-create"), form_data(**CALL)).status_code == 302
    judge = Judge.objects.get()
    assert (judge.criteria_per_call, judge.token_parameter, judge.response_format) == (
        0, "max_completion_tokens", "json_object",
    )  # fmt: skip
    assert (judge.reasoning_effort, judge.cached_prompt_price) == ("low", Decimal("0.075"))
    # A post that predates the fields (a script, an old page) leaves them as they are.
    assert client.post(reverse("judge-edit", args=[judge.pk]), form_data()).status_code == 302
    judge.refresh_from_db()
    assert (judge.criteria_per_call, judge.reasoning_effort) == (0, "low")


def test_the_api_sets_and_checks_the_call_fields(owner_api):
    body = {"name": "R", "kind": "llm", "base_url": "https://api.example.com/v1", "model": "o"}
    refused = owner_api.post("/api/judges/", {**body, "criteria_per_call": 51}, format="json")
    assert refused.status_code == 400 and "criteria_per_call" in refused.json()
    refused = owner_api.post("/api/judges/", {**body, "reasoning_effort": "max"}, format="json")
    assert refused.status_code == 400 and "reasoning_effort" in refused.json()
    made = owner_api.post("/api/judges/", {**body, **CALL}, format="json")
    assert made.status_code == 201, made.content
    assert {k: made.json()[k] for k in CALL} == {
        **CALL,
        "criteria_per_call": 0,
        "cached_prompt_price": "0.0750",
    }
    judge = Judge.objects.get()
    patched = owner_api.patch(f"/api/judges/{judge.pk}/", {"criteria_per_call": 5}, format="json")
    assert patched.status_code == 200
    judge.refresh_from_db()
    assert (judge.criteria_per_call, judge.response_format) == (5, "json_object")
    plain = owner_api.post("/api/judges/", {**body, "name": "Plain"}, format="json").json()
    assert (plain["criteria_per_call"], plain["token_parameter"]) == (1, "max_tokens")

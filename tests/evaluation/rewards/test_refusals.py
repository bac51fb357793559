"""What the reward endpoints refuse, before anything is called or recorded: bad items (a 400
naming the item and the field), callers who may not spend the dataset's judge money (404 for
non-members, 403 for experts), and traffic over the quota (429 with Retry-After)."""

from __future__ import annotations

import json

import pytest

from annotation import roles, services
from evaluation.rewards.models import RewardBatch
from tests.evaluation.rewards.conftest import native
from tests.factories import PanelFactory, QueryFactory, external_judges

URL = "/api/rewards/"
pytestmark = pytest.mark.django_db


def refused(response, status: int = 400) -> list[dict]:
    assert response.status_code == status, response.content
    return response.json().get("errors", [])


@pytest.fixture
def nothing_happened(judge_server):
    yield
    assert judge_server.call_count == 0
    assert not RewardBatch.objects.exists()


def test_an_unknown_query_names_the_item(owner_api, dataset, checklisted, panel, nothing_happened):
    body = native(dataset, panel, "Fine.", "Fine too.")
    body["items"][1]["query"] = "q-404"

    response = owner_api.post(URL, body, format="json")

    assert refused(response) == [
        {"item": 1, "field": "query", "message": f"No query with external id “q-404” in "
         f"dataset {dataset.pk}."}
    ]  # fmt: skip
    assert response.json()["detail"].startswith("Item 1, field “query”")


def test_a_query_without_a_submitted_checklist(owner_api, dataset, panel, nothing_happened):
    QueryFactory(dataset=dataset, external_id="q-draft")

    errors = refused(
        owner_api.post(URL, native(dataset, panel, "x", query="q-draft"), format="json")
    )

    assert errors[0]["item"] == 0 and errors[0]["field"] == "query"
    assert "no submitted checklist" in errors[0]["message"]


@pytest.mark.parametrize("completion", ["", "   ", None, 7])
def test_an_empty_or_missing_completion(
    owner_api, dataset, checklisted, panel, nothing_happened, completion
):
    body = native(dataset, panel, "Fine.", "Fine.")
    body["items"][1]["completion"] = completion

    errors = refused(owner_api.post(URL, body, format="json"))

    assert [(e["item"], e["field"]) for e in errors] == [(1, "completion")]


def test_too_many_items(owner_api, dataset, checklisted, panel, settings, nothing_happened):
    settings.REWARDS_MAX_BATCH = 2

    errors = refused(owner_api.post(URL, native(dataset, panel, "a", "b", "c"), format="json"))

    assert errors[0]["field"] == "items" and "REWARDS_MAX_BATCH" in errors[0]["message"]


def test_an_unknown_panel_or_one_of_external_judges(
    owner_api, dataset, checklisted, panel, nothing_happened
):
    body = native(dataset, panel, "a")
    body["panel"] = 987654
    assert refused(owner_api.post(URL, body, format="json"))[0]["field"] == "panel"

    imported = PanelFactory(judges=external_judges(1))
    errors = refused(owner_api.post(URL, native(dataset, imported, "a"), format="json"))
    assert errors[0]["field"] == "panel" and "external" in errors[0]["message"]


def test_a_bad_shaping_value(owner_api, dataset, checklisted, panel, nothing_happened):
    body = native(dataset, panel, "a", over_length_penalty=3)
    errors = refused(owner_api.post(URL, body, format="json"))
    assert errors[0]["field"] == "over_length_penalty"


@pytest.mark.parametrize(
    ("field", "literal"),
    [
        ("length_reference", "1e999"),
        ("max_words", "1e999"),
        ("max_words", "-1e999"),
        ("length_exponent", "NaN"),
        ("over_length_penalty", "Infinity"),
        ("length_reference", "-Infinity"),
        ("length_exponent", "1" + "0" * 400),  # an integer no float holds
    ],
)
def test_a_number_that_is_not_finite_is_refused_naming_its_field(
    owner_api, dataset, checklisted, panel, nothing_happened, field, literal
):
    """Issue 38: `1e999` in `length_reference` was an OverflowError, an HTML 500. The API's
    JSON parser refuses it, and NaN and ±Infinity, before the view runs (config/parsers.py)."""
    body = json.dumps(native(dataset, panel, "a"))[:-1] + f', "{field}": {literal}}}'

    response = owner_api.post(URL, body, content_type="application/json")

    assert response.status_code == 400, response.content
    shown = literal if len(literal) < 24 else "100000000000… (401 characters)"
    assert response.json() == {field: [f"A finite number, not {shown}."]}


def test_a_number_that_is_not_finite_deep_in_the_body_is_named_by_its_path(
    owner_api, dataset, checklisted, panel, nothing_happened
):
    body = json.dumps(native(dataset, panel, "a", "b"))
    body = body.replace('"completion": "b"', '"completion": "b", "weight": [1, NaN, 1e999]')

    response = owner_api.post(URL, body, content_type="application/json")

    assert response.status_code == 400, response.content
    assert response.json() == {
        "items[1].weight[1]": ["A finite number, not NaN."],
        "items[1].weight[2]": ["A finite number, not 1e999."],
    }


@pytest.mark.parametrize(
    "query", ["length_reference=1e999", "max_words=inf", "length_exponent=nan",
              "length_exponent=1e999", "over_length_penalty=-inf"],
)  # fmt: skip
def test_a_url_parameter_that_is_not_finite_is_refused(
    owner_api, dataset, checklisted, panel, nothing_happened, query
):
    """The trainers' shapes take their shaping knobs in the URL: a number there is text, and
    `shaping_from` refuses what is not a number of its range."""
    prompt = "Question?"
    body = {"query": [prompt + " An answer."], "prompts": [prompt], "labels": ["q-1"]}
    url = f"{URL}openrlhf/?dataset={dataset.pk}&panel={panel.pk}&{query}"

    errors = refused(owner_api.post(url, body, format="json"))

    assert [e["field"] for e in errors] == [query.split("=")[0]]


def test_a_non_member_gets_404_and_an_expert_403(
    outsider_api, collaborator_api, dataset, checklisted, panel, nothing_happened
):
    body = native(dataset, panel, "a")
    assert outsider_api.post(URL, body, format="json").status_code == 404
    response = collaborator_api.post(URL, body, format="json")
    assert response.status_code == 403
    assert "admins" in response.json()["detail"]


def test_an_anonymous_caller_is_refused(client, dataset, checklisted, panel, nothing_happened):
    response = client.post(URL, native(dataset, panel, "a"), content_type="application/json")
    assert response.status_code in (401, 403)


def test_the_rate_limit_answers_429_with_retry_after(
    owner_api, dataset, checklisted, panel, settings, judge_server
):
    settings.REWARDS_ITEMS_PER_MINUTE = 3
    assert owner_api.post(URL, native(dataset, panel, "a", "b"), format="json").status_code == 200
    calls = judge_server.call_count

    response = owner_api.post(URL, native(dataset, panel, "c", "d"), format="json")

    assert response.status_code == 429
    assert 1 <= int(response["Retry-After"]) <= 60
    assert "REWARDS_ITEMS_PER_MINUTE" in response.json()["detail"]
    assert RewardBatch.objects.count() == 1  # the refused request left nothing
    assert judge_server.call_count == calls
    # What still fits goes through.
    assert owner_api.post(URL, native(dataset, panel, "a"), format="json").status_code == 200


def test_the_daily_quota_is_counted_apart(owner_api, dataset, checklisted, panel, settings):
    settings.REWARDS_ITEMS_PER_DAY = 2
    assert owner_api.post(URL, native(dataset, panel, "a", "b"), format="json").status_code == 200

    response = owner_api.post(URL, native(dataset, panel, "a"), format="json")

    assert response.status_code == 429
    assert "REWARDS_ITEMS_PER_DAY" in response.json()["detail"]
    assert int(response["Retry-After"]) > 60 * 60 * 23


def test_quotas_are_per_user_without_a_token(
    owner_api, reviewer, reviewer_api, dataset, checklisted, panel, settings
):
    settings.REWARDS_ITEMS_PER_MINUTE = 1
    services.dataset_set_role(dataset=dataset, user=reviewer, role=roles.DatasetRole.ADMIN)
    assert owner_api.post(URL, native(dataset, panel, "a"), format="json").status_code == 200
    assert owner_api.post(URL, native(dataset, panel, "a"), format="json").status_code == 429
    assert reviewer_api.post(URL, native(dataset, panel, "a"), format="json").status_code == 200

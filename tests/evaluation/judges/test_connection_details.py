"""A judge's connection details are for the people who manage judges (issue 38, point 3):
its base URL and API key variable reach only site admins (the Admin group, superusers), in
the API, on pages and through the parameters verdicts record; query values are masked
wherever a base URL is shown; and what an endpoint answered that is not a verdict is kept
short and shown only to site admins."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from accounts import services as accounts
from evaluation.judges.models import Judge
from evaluation.judging import client as judge_client
from evaluation.judging import engine
from evaluation.judging.ratelimit import Unlimited
from evaluation.runs.models import Verdict
from loopback import Fault, LoopbackOpenAI
from tests.factories import PanelFactory, UserFactory
from tests.support.builders import checklisted_query, finished_run

pytestmark = pytest.mark.django_db

HOST = "llm-gateway.internal.example"
SECRET = "sk-in-the-query-7f3a"
BASE_URL = f"https://{HOST}/openai/v1?api-version=2024-10-21&api-key={SECRET}"
SHOWN = f"https://{HOST}/openai/v1?api-version=***&api-key=***"
VARIABLE = "JUDGE_KEY_GATEWAY"
UNPARSED = "I cannot answer in JSON. Here is the internal page: CANARY-7f3a"


@pytest.fixture
def judge() -> Judge:
    return Judge.objects.create(name="Gateway", base_url=BASE_URL, model="m", api_key_env=VARIABLE)


@pytest.fixture
def graded(reviewed_dataset, judge):
    """A run of the judge with a parsed verdict and an unparseable one, each recording the
    judge's parameters (its base URL among them) as a run does."""
    made = checklisted_query(reviewed_dataset, criteria=2, answers=1)
    answer, (first, second) = made.answers[0], made.criteria
    run = finished_run(
        reviewed_dataset, PanelFactory(judges=[judge]),
        {(answer, first): ("pass",), (answer, second): ("unparseable",)},
    )  # fmt: skip
    params = {"kind": "llm", "base_url": BASE_URL, "model": "m", "prompt_version": "verdict-v1"}
    Verdict.objects.filter(run=run).update(judge_params=params)
    Verdict.objects.filter(run=run, outcome="pass").update(
        raw_output=json.dumps({"verdict": "pass", "rationale": "States the revenue."})
    )
    Verdict.objects.filter(run=run, outcome="unparseable").update(raw_output=UNPARSED)
    return run, answer


def api_as(user) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


def token_api(user) -> APIClient:
    _, key = accounts.api_token_create(user=user, name="script")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return api


def test_only_site_admins_get_them_from_the_api(owner, reviewer, collaborator, judge):
    nobody = UserFactory(username="no-role")
    readers = [api_as(reviewer), api_as(collaborator), api_as(nobody), token_api(reviewer)]
    for api in readers:
        for url in ("/api/judges/", f"/api/judges/{judge.pk}/"):
            response = api.get(url)
            assert response.status_code == 200
            body = response.content.decode()
            assert HOST not in body and VARIABLE not in body and SECRET not in body, url
            shown = response.json()
            row = shown["results"][0] if "results" in shown else shown
            assert "base_url" not in row and "api_key_env" not in row
            assert row["name"] == "Gateway" and row["model"] == "m"
    for api in (api_as(owner), token_api(owner)):
        row = api.get(f"/api/judges/{judge.pk}/").json()
        assert (row["base_url"], row["api_key_env"]) == (SHOWN, VARIABLE)
        assert SECRET not in api.get("/api/judges/").content.decode()


def test_a_change_through_the_api_answers_masked(owner_api, judge):
    response = owner_api.patch(f"/api/judges/{judge.pk}/", {"model": "m2"}, format="json")
    assert response.status_code == 200 and response.json()["base_url"] == SHOWN
    judge.refresh_from_db()
    assert judge.base_url == BASE_URL  # left as it was


def test_a_masked_url_is_not_saved_back(owner_api):
    """The API shows query values as ***: a client that sends one back is told to give it."""
    judge = Judge.objects.create(name="Azure", base_url="https://93.184.215.14/v1?key=k", model="m")
    shown = owner_api.get(f"/api/judges/{judge.pk}/").json()["base_url"]
    assert shown == "https://93.184.215.14/v1?key=***"
    patched = owner_api.patch(f"/api/judges/{judge.pk}/", {"base_url": shown}, format="json")
    assert patched.status_code == 400 and "***" in patched.json()["base_url"][0]
    judge.refresh_from_db()
    assert judge.base_url == "https://93.184.215.14/v1?key=k"


def test_pages_mask_the_query_but_the_edit_form_keeps_it(client, owner, judge):
    client.force_login(owner)
    listing = client.get(reverse("judge-list")).content.decode()
    assert SHOWN.replace("&", "&amp;") in listing and SECRET not in listing
    form = client.get(reverse("judge-edit", args=[judge.pk])).content.decode()
    assert f'value="{BASE_URL.replace("&", "&amp;")}"' in form  # to be edited


def test_verdicts_show_no_connection_details_to_reviewers(client, reviewer, graded):
    run, answer = graded
    api = api_as(reviewer)
    listed = api.get(f"/api/verdicts/?run={run.pk}")
    assert listed.status_code == 200 and len(listed.json()["results"]) == 2
    ids = run.verdicts.values_list("pk", flat=True)
    pages = [
        listed.content.decode(),
        *(api.get(f"/api/verdicts/{v}/").content.decode() for v in ids),
    ]
    client.force_login(reviewer)
    for url in (reverse("run-answer", args=[run.pk, answer.pk]),
                reverse("answer-review", args=[answer.pk])):  # fmt: skip
        response = client.get(url)
        assert response.status_code == 200
        pages.append(response.content.decode())
    for page in pages:
        assert HOST not in page and VARIABLE not in page and SECRET not in page


def test_an_unparseable_output_is_shown_only_to_site_admins(client, owner, reviewer, graded):
    run, answer = graded
    unparsed = run.verdicts.get(outcome="unparseable")
    parsed = run.verdicts.get(outcome="pass")
    assert api_as(reviewer).get(f"/api/verdicts/{unparsed.pk}/").json()["raw_output"] is None
    assert (
        "States the revenue."
        in api_as(reviewer).get(f"/api/verdicts/{parsed.pk}/").json()["raw_output"]
    )
    assert api_as(owner).get(f"/api/verdicts/{unparsed.pk}/").json()["raw_output"] == UNPARSED
    pages = (reverse("run-answer", args=[run.pk, answer.pk]),
             reverse("answer-review", args=[answer.pk]))  # fmt: skip
    client.force_login(reviewer)
    for url in pages:
        page = client.get(url).content.decode()
        assert "unparseable" in page and "CANARY-7f3a" not in page
    client.force_login(owner)
    for url in pages:
        assert "CANARY-7f3a" in client.get(url).content.decode()


def test_an_unparseable_output_is_kept_short():
    """The real engine against a loopback judge that answers 5,000 characters of not-JSON."""
    content = "x" * 5_000
    with LoopbackOpenAI(responder=lambda request: Fault.malformed_json(content)) as server:
        endpoint = judge_client.Endpoint(server.base_url, "m", timeout=5)
        messages = [{"role": "user", "content": "Does the answer state the revenue?"}]
        [result] = judge_client.run_sync(
            engine.judge_all([engine.Call(1, 0, "k", messages, endpoint)], concurrency=1,
                             limiter=Unlimited(), policy=judge_client.RetryPolicy(attempts=1))
        )  # fmt: skip
    assert result.outcome == "unparseable"
    assert result.raw_output == content[: engine.UNPARSEABLE_KEPT]
    assert len(result.raw_output) == engine.UNPARSEABLE_KEPT == 2_000

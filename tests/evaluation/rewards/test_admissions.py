"""The rewards service admits the requests that arrive together in one step
(evaluation.rewards.served.Admissions): they share the token, dataset and panel lookups
(config/shared_lookups.py) as the items of one batch request do, and nothing else. Each
request still gets the answer it would get alone, and nothing is kept after the step."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.urls import resolve
from rest_framework.response import Response

from accounts import services as accounts_services
from config import shared_lookups
from evaluation.rewards import api, served, waves

pytestmark = pytest.mark.django_db

PROMPT = "<|im_start|>user\nSummarise the call.<|im_end|>\n<|im_start|>assistant\n"
ROUTE = "/api/rewards/openrlhf/"


def _request(dataset, panel, key: str, text: str, label: str = "q-1"):
    """A request as the service's URL conf hands it to the route's view."""
    body = {"query": [f"{PROMPT}{text}"], "prompts": [PROMPT], "labels": [label]}
    request = RequestFactory().post(
        f"{ROUTE}?dataset={dataset.pk}&panel={panel.pk}", data=json.dumps(body),
        content_type="application/json", HTTP_AUTHORIZATION=f"Token {key}",
    )  # fmt: skip
    request.resolver_match = resolve(ROUTE, urlconf="evaluation.rewards.service_urls")
    return request


def _token(user, dataset) -> str:
    return accounts_services.api_token_create(
        user=user, name="trainer", scope="rewards", datasets=[dataset]
    )[1]


def _admit(requests) -> list:
    return served._admitted_together([(api.OpenRlhfRewardsView, r) for r in requests])


def test_a_trainers_requests_admitted_together_read_their_token_dataset_and_panel_once(
    checklisted, owner, dataset, panel
):
    key = _token(owner, dataset)
    _admit([_request(dataset, panel, key, "warm")])  # the token's first use is recorded
    requests = [_request(dataset, panel, key, f"answer {i}") for i in range(32)]
    with CaptureQueriesContext(connection) as alone:
        _admit([_request(dataset, panel, key, "alone")])
    with CaptureQueriesContext(connection) as together:
        admitted = _admit(requests)
    # One request's lookups for the whole step, not one set per request.
    assert len(together) == len(alone) >= 4
    jobs = [job for _, _, job in admitted]
    assert all(isinstance(job, waves.Job) for job in jobs)
    assert [job.items[0].completion.removeprefix(PROMPT) for job in jobs] == [
        f"answer {i}" for i in range(32)
    ]
    assert {job.key() for job in jobs} == {jobs[0].key()}  # one wave may take them all


def test_callers_admitted_in_one_step_each_get_their_own_answer(
    checklisted, owner, collaborator, outsider, dataset, panel
):
    """A step holding the admin's requests, a member's, an outsider's, a bad key's and a
    bad label: the shared lookups are per caller and per token, so no request borrows
    another's access, and a refused request is refused alone."""
    admin_key = _token(owner, dataset)
    _, member_key = accounts_services.api_token_create(user=collaborator, name="m", scope="write")
    _, outsider_key = accounts_services.api_token_create(user=outsider, name="o", scope="write")
    admitted = _admit([
        _request(dataset, panel, admin_key, "one"),
        _request(dataset, panel, member_key, "two"),
        _request(dataset, panel, admin_key, "three"),
        _request(dataset, panel, outsider_key, "four"),
        _request(dataset, panel, "cwb_not-a-key", "five"),
        _request(dataset, panel, admin_key, "six", label="no-such"),
        _request(dataset, panel, admin_key, "seven"),
    ])  # fmt: skip

    def answer(entry):
        job = entry[2]
        return job.status_code if isinstance(job, Response) else "job"

    # A label is checked when the wave is prepared, not at admission: "six" is a job too.
    # A bad key: 403 here as on the web routes (DRF answers 403 when the first
    # authenticator, the session's, sends no WWW-Authenticate).
    assert [answer(entry) for entry in admitted] == ["job", 403, "job", 404, 403, "job", "job"]
    assert admitted[4][2].data["detail"] == "Invalid token."
    assert "dataset's admins" in admitted[1][2].data["detail"]
    assert admitted[6][2].by == owner


def test_nothing_is_shared_after_a_step_a_revoked_token_is_refused_at_the_next(
    checklisted, owner, dataset, panel
):
    from accounts.models import ApiToken

    key = _token(owner, dataset)
    (first,) = _admit([_request(dataset, panel, key, "before")])
    assert isinstance(first[2], waves.Job)
    accounts_services.api_token_revoke(token=ApiToken.objects.get(user=owner))
    (second,) = _admit([_request(dataset, panel, key, "after")])
    assert isinstance(second[2], Response) and second[2].data["detail"] == "Invalid token."


def test_outside_a_step_every_lookup_is_read():
    reads = []
    assert shared_lookups.once("k", lambda: reads.append(1) or len(reads)) == 1
    assert shared_lookups.once("k", lambda: reads.append(1) or len(reads)) == 2
    with shared_lookups.shared():
        assert shared_lookups.once("k", lambda: reads.append(1) or len(reads)) == 3
        assert shared_lookups.once("k", lambda: reads.append(1) or len(reads)) == 3
    assert shared_lookups.once("k", lambda: reads.append(1) or len(reads)) == 4


def test_a_lookup_that_raises_is_not_shared():
    calls = []

    def refuse():
        calls.append(1)
        raise PermissionError("no")

    with shared_lookups.shared():
        for _ in range(2):
            with pytest.raises(PermissionError):
                shared_lookups.once("refused", refuse)
    assert len(calls) == 2

"""Rewards from a judge that grades the whole checklist in one call (issue 25): the same
rewards as one call per criterion, one request per completion, and the reward cache keeps
batched and single verdicts apart."""

from __future__ import annotations

import pytest

from loopback import LoopbackOpenAI, checklist_responder, listed_criteria
from tests.evaluation.rewards.conftest import FAILED_CRITERION, native
from tests.factories import PanelFactory, loopback_judges

URL = "/api/rewards/"
pytestmark = pytest.mark.django_db


def decide(criterion: str, answer: str) -> dict:
    if FAILED_CRITERION in criterion:
        return {"verdict": "fail", "failure_kind": "missing", "rationale": "Not stated."}
    return {"verdict": "pass", "failure_kind": None, "rationale": "Stated."}


def test_a_batched_judge_gives_the_rewards_of_one_call_per_criterion(
    owner_api, dataset, checklisted
):
    with LoopbackOpenAI(responder=checklist_responder(decide)) as server:
        single, whole = loopback_judges(server, 2)
        whole.criteria_per_call = 0
        whole.save()
        found = {}
        for judge in (single, whole):
            panel = PanelFactory(judges=[judge])
            body = native(dataset, panel, "First answer.", "Second answer.")
            response = owner_api.post(URL, body, format="json")
            assert response.status_code == 200, response.content
            found[judge.pk] = response.json()["items"]
        batched_calls = [c for c in server.calls if c.request.model == whole.model]
    strip = [
        [(c["criterion"], c["outcome"], c["rationale"]) for c in item["criteria"]]
        for item in found[single.pk]
    ]
    assert strip == [
        [(c["criterion"], c["outcome"], c["rationale"]) for c in item["criteria"]]
        for item in found[whole.pk]
    ]
    assert [i["reward"] for i in found[single.pk]] == [i["reward"] for i in found[whole.pk]]
    # One request per completion, listing its three criteria.
    assert [len(listed_criteria(c.request)) for c in batched_calls] == [3, 3]

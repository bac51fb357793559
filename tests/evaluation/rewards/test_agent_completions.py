"""Rewards for answers with structure (issue 26 item 1 with issue 24): a completion given as
turns is graded on its last assistant turn with the conversation before it in the prompt,
as runs grade an answer's last turn; a criterion with a deterministic check (issue 24) is
decided by the check, as in runs, with no judge call; bad turns are refused by item."""

from __future__ import annotations

import pytest

from evaluation.checks.models import CriterionCheck
from evaluation.rewards.models import RewardBatch
from tests.evaluation.rewards.conftest import native

URL = "/api/rewards/"
pytestmark = pytest.mark.django_db

TURNS = [
    {"role": "user", "content": "What did Example Corp report?"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"name": "search_filings", "arguments": {"company": "Example Corp"}}]},
    {"role": "tool", "content": "Q3 revenue 4.2bn."},
    {"role": "assistant", "content": "Revenue was 4.2bn in the quarter."},
]  # fmt: skip


def test_turns_are_graded_on_the_last_assistant_turn_with_the_conversation(
    owner_api, dataset, checklisted, panel, judge_server
):
    response = owner_api.post(URL, native(dataset, panel, TURNS), format="json")
    assert response.status_code == 200, response.content
    [item] = response.json()["items"]
    assert item["reward"] == pytest.approx(2 / 3) and not item["failed"]
    prompts = [call.request.last_user_text for call in judge_server.calls]
    assert len(prompts) == 3
    for prompt in prompts:
        assert "Conversation before the graded turn:" in prompt
        assert "What did Example Corp report?" in prompt and "search_filings" in prompt
        assert "Graded turn:\nRevenue was 4.2bn in the quarter." in prompt


def test_the_same_text_as_turns_and_as_a_string_are_different_calls(
    owner_api, dataset, checklisted, panel, judge_server
):
    owner_api.post(URL, native(dataset, panel, TURNS), format="json")
    owner_api.post(URL, native(dataset, panel, "Revenue was 4.2bn in the quarter."), format="json")
    # The conversation is part of what the judge saw: the plain text is not answered from it.
    assert judge_server.call_count == 6


def test_a_checked_criterion_is_decided_by_its_check_without_a_call(
    owner_api, dataset, checklisted, panel, judge_server
):
    first, second, third = checklisted.criteria
    CriterionCheck.objects.create(
        criterion=first, kind="tool_set", params={"tools": ["search_filings"]}
    )
    CriterionCheck.objects.create(
        criterion=second, kind="keyword_share", params={"keywords": ["revenue", "margin"]},
        threshold=0.5,
    )  # fmt: skip
    response = owner_api.post(URL, native(dataset, panel, TURNS), format="json")
    [item] = response.json()["items"]
    outcomes = {c["criterion"]: c["outcome"] for c in item["criteria"]}
    # The tool was called (from the turns); one keyword of two is present at a 0.5 threshold;
    # the third criterion is the judge's (it passes it).
    assert outcomes == {first.pk: "pass", second.pk: "pass", third.pk: "pass"}
    assert judge_server.call_count == 1
    rationale = {c["criterion"]: c["rationale"] for c in item["criteria"]}
    assert "tool_set" in rationale[first.pk] and "search_filings" in rationale[first.pk]
    assert RewardBatch.objects.get().calls == 1
    # Without the tool call the tool-set check fails: the plain string has no trajectory.
    again = owner_api.post(URL, native(dataset, panel, "Revenue rose."), format="json")
    outcomes = {c["criterion"]: c["outcome"] for c in again.json()["items"][0]["criteria"]}
    assert outcomes[first.pk] == "fail"


def test_bad_turns_are_refused_naming_the_item(
    owner_api, dataset, checklisted, panel, judge_server
):
    body = native(dataset, panel, "fine", [{"role": "robot", "content": "x"}])
    refused = owner_api.post(URL, body, format="json")
    assert refused.status_code == 400
    [error] = refused.json()["errors"]
    assert (error["item"], error["field"]) == (1, "completion")
    assert "'role' must be one of" in error["message"]
    no_answer = native(dataset, panel, [{"role": "user", "content": "hello?"}])
    refused = owner_api.post(URL, no_answer, format="json")
    assert refused.json()["errors"][0]["message"] == "No assistant turn with content to grade."
    assert judge_server.call_count == 0 and not RewardBatch.objects.exists()

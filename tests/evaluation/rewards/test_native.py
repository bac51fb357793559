"""POST /api/rewards/: rewards in the items' order, from the real openai client against the
loopback judge; the reward cache and the batch's own deduplication save calls; a failed
call marks its item and never gives it a reward; the batch is recorded compactly."""

from __future__ import annotations

import pytest

from evaluation.rewards.models import RewardAudit, RewardBatch, RewardVerdict
from evaluation.runs.models import Verdict
from tests.evaluation.rewards.conftest import BROKEN, native
from tests.factories import PanelFactory, UserFactory, loopback_judges
from tests.support.builders import checklisted_query

URL = "/api/rewards/"
pytestmark = pytest.mark.django_db


def test_each_item_is_scored_against_its_checklist(owner_api, dataset, checklisted, panel):
    response = owner_api.post(URL, native(dataset, panel, "Revenue was up."), format="json")

    assert response.status_code == 200, response.content
    [item] = response.json()["items"]
    assert item["reward"] == pytest.approx(2 / 3)
    assert item["score"] == pytest.approx(2 / 3)
    assert (item["failed"], item["undecided"], item["words"]) == (False, 0, 3)
    assert [c["outcome"] for c in item["criteria"]] == ["pass", "fail", "pass"]
    assert [c["criterion"] for c in item["criteria"]] == [c.pk for c in checklisted.criteria]
    assert item["criteria"][1]["rationale"] == "Not stated."
    # Reward traffic never writes verdicts: only its own compact rows.
    assert not Verdict.objects.exists()


def test_the_batch_is_recorded_with_its_counts(owner, owner_api, dataset, checklisted, panel):
    # One judge, one sample: three calls per distinct completion.
    judge = panel.members.get().judge
    judge.prompt_price, judge.completion_price = 1, 2
    judge.save()

    body = native(dataset, panel, "First answer.", "Second answer.")
    response = owner_api.post(URL, body, format="json")

    batch = RewardBatch.objects.get()
    assert response.json()["batch"] == batch.pk
    assert (batch.user, batch.token_id, batch.dataset, batch.panel) == (owner, None, dataset, panel)
    assert (batch.shape, batch.items, batch.failed_items) == ("native", 2, 0)
    assert (batch.calls, batch.cache_hits, batch.checks) == (6, 0, 0)
    assert batch.prompt_tokens > 0 and batch.completion_tokens > 0
    expected = (batch.prompt_tokens * 1 + batch.completion_tokens * 2) / 1_000_000
    assert float(batch.cost) == pytest.approx(expected, abs=1e-6)
    assert batch.latency_ms is not None
    assert not RewardAudit.objects.exists()  # REWARDS_AUDIT_SAMPLE is 0 by default


def test_a_repeated_completion_is_answered_without_a_call(
    owner_api, dataset, checklisted, panel, judge_server
):
    first = owner_api.post(URL, native(dataset, panel, "Same answer."), format="json")
    calls = judge_server.call_count
    assert calls == 3

    again = owner_api.post(URL, native(dataset, panel, "Same answer."), format="json")

    assert judge_server.call_count == calls
    assert again.json()["items"][0]["reward"] == first.json()["items"][0]["reward"]
    batch = RewardBatch.objects.order_by("pk").last()
    assert (batch.calls, batch.cache_hits, batch.prompt_tokens) == (0, 3, 0)
    assert RewardVerdict.objects.count() == 3


def test_identical_completions_of_a_batch_share_their_calls(
    owner_api, dataset, checklisted, panel, judge_server
):
    body = native(dataset, panel, "A group sample.", "A group sample.", "Another one.")
    response = owner_api.post(URL, body, format="json")

    assert [i["reward"] for i in response.json()["items"]] == [pytest.approx(2 / 3)] * 3
    assert judge_server.call_count == 6  # 2 distinct completions × 3 criteria


def test_an_unparseable_judge_output_fails_the_item_with_no_reward(
    owner_api, dataset, checklisted, panel
):
    body = native(dataset, panel, "A fine answer.", f"A {BROKEN} answer.")
    response = owner_api.post(URL, body, format="json")

    assert response.status_code == 200
    fine, broken = response.json()["items"]
    assert (fine["failed"], fine["reward"]) == (False, pytest.approx(2 / 3))
    assert (broken["failed"], broken["reward"], broken["score"]) == (True, None, None)
    assert all(c["outcome"] == "undecided" for c in broken["criteria"])
    assert "could not be parsed" in broken["criteria"][0]["rationale"]
    assert RewardBatch.objects.get().failed_items == 1
    # Failures are not cached: the next ask calls again.
    assert RewardVerdict.objects.count() == 3


def test_a_judge_that_is_down_fails_the_items(
    owner_api, dataset, checklisted, panel, judge_server, settings
):
    settings.JUDGE_RETRY_ATTEMPTS = 1
    judge_server.go_down()
    try:
        response = owner_api.post(URL, native(dataset, panel, "Any answer."), format="json")
    finally:
        judge_server.come_up()

    [item] = response.json()["items"]
    assert (item["failed"], item["reward"]) == (True, None)
    assert "failed" in item["criteria"][0]["rationale"]
    assert RewardBatch.objects.get().failed_items == 1


def test_a_panel_of_votes_aggregates_with_its_method(owner_api, dataset, checklisted, judge_server):
    # Three samples of one judge, majority: the loopback judge answers them alike.
    panel = PanelFactory(judges=[(loopback_judges(judge_server, 1)[0], {"samples": 3})])

    response = owner_api.post(URL, native(dataset, panel, "Three votes."), format="json")

    assert response.json()["items"][0]["reward"] == pytest.approx(2 / 3)
    assert judge_server.call_count == 9


def test_the_reward_is_the_mean_over_the_querys_checklists(owner_api, dataset, checklisted, panel):
    # A second expert's checklist for the same query: two criteria, both passed.
    checklisted_query(
        query=checklisted.query, criteria=["States figure 5.", "States figure 6."],
        author=UserFactory(username="second-expert"),
    )  # fmt: skip

    response = owner_api.post(URL, native(dataset, panel, "Two checklists."), format="json")

    assert response.json()["items"][0]["reward"] == pytest.approx((2 / 3 + 1) / 2)


def test_sampled_items_keep_every_vote_for_audit(owner_api, dataset, checklisted, panel, settings):
    settings.REWARDS_AUDIT_SAMPLE = 1.0

    owner_api.post(URL, native(dataset, panel, "Audited answer."), format="json")

    audit = RewardAudit.objects.get()
    assert (audit.item, audit.query, audit.completion) == (0, checklisted.query, "Audited answer.")
    assert [v["outcome"] for v in audit.verdicts] == ["pass", "fail", "pass"]
    assert audit.verdicts[1]["votes"][0]["rationale"] == "Not stated."
    assert audit.verdicts[0]["votes"][0]["source"] == "call"


def test_shaping_penalises_a_completion_over_the_length(owner_api, dataset, checklisted, panel):
    long = " ".join(["word"] * 15)
    body = native(dataset, panel, long, max_words=10, over_length_penalty=0.5)

    [item] = owner_api.post(URL, body, format="json").json()["items"]

    # 15 words, 5 over 10: 2/3 - 0.5 × 5/10
    assert item["score"] == pytest.approx(2 / 3)
    assert item["reward"] == pytest.approx(2 / 3 - 0.25)

"""No-LLM checks in a reward panel: free and first. A panel of a no-LLM judge calls nothing;
a mixed panel calls only its LLM judge, and the checks' votes are counted apart."""

from __future__ import annotations

import pytest

from evaluation.rewards.models import RewardBatch
from tests.evaluation.rewards.conftest import native
from tests.factories import PanelFactory, loopback_judges, offline_judge
from tests.support.builders import checklisted_query

URL = "/api/rewards/"
pytestmark = pytest.mark.django_db


def test_a_no_llm_panel_never_calls_a_judge(owner_api, dataset, offline_panel, judge_server):
    checklisted_query(
        dataset, criteria=["States revenue of $4.12 billion.", "Presents a table."],
        external_id="q-1",
    )  # fmt: skip

    response = owner_api.post(
        URL, native(dataset, offline_panel, "Revenue was $4.12 billion."), format="json"
    )

    [item] = response.json()["items"]
    assert [c["outcome"] for c in item["criteria"]] == ["pass", "fail"]
    assert item["criteria"][0]["rationale"].startswith("No-LLM check")
    assert item["reward"] == pytest.approx(0.5)
    assert judge_server.call_count == 0
    batch = RewardBatch.objects.get()
    assert (batch.calls, batch.checks, batch.cost) == (0, 2, 0)


def test_a_mixed_panel_calls_only_its_llm_judge(owner_api, dataset, checklisted, judge_server):
    panel = PanelFactory(
        judges=[offline_judge(), loopback_judges(judge_server, 1)[0]], method="unanimity"
    )

    response = owner_api.post(URL, native(dataset, panel, "Figure 0 and 2."), format="json")

    assert response.status_code == 200
    assert judge_server.call_count == 3
    batch = RewardBatch.objects.get()
    assert (batch.calls, batch.checks) == (3, 3)

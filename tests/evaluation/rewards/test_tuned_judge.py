"""A reward asks the panel's judges as they are now, with the dataset's tuning: its
instructions and examples are in every reward call, and an edit of them makes new calls (the
tuned version is in the cache key), as in runs (issue 25); another dataset's tuning of the
same judge is never sent (issue 38)."""

from __future__ import annotations

import pytest

from annotation import services
from evaluation.judges import tuning
from evaluation.judging import prompts
from tests.evaluation.rewards.conftest import native
from tests.factories import tune

URL = "/api/rewards/"
pytestmark = pytest.mark.django_db
EXAMPLE = {"criterion": "States figure 9.", "excerpt": "Figure 9 is 4.", "decision": "pass",
           "reason": "Stated."}  # fmt: skip


def test_rewards_send_the_tuning_and_key_it(
    owner, owner_api, dataset, checklisted, panel, judge_server
):
    judge = panel.members.get().judge
    other = services.dataset_create(name="Other team", by=owner)
    tune(judge, other, instructions="OTHER TEAM RULE")  # never sent for this dataset
    tune(judge, dataset, instructions="Be exact.", examples=[EXAMPLE])
    owner_api.post(URL, native(dataset, panel, "Revenue was up."), format="json")
    system = f"{prompts.SYSTEM}\n\n{tuning.system_addition('Be exact.', [EXAMPLE])}"
    assert [c.request.messages[0]["content"] for c in judge_server.calls] == [system] * 3

    owner_api.post(URL, native(dataset, panel, "Revenue was up."), format="json")
    assert judge_server.call_count == 3  # unchanged: the cache answers
    tune(judge, dataset, instructions="Be exact to 0.1.")
    owner_api.post(URL, native(dataset, panel, "Revenue was up."), format="json")
    assert judge_server.call_count == 6  # a new version: new calls

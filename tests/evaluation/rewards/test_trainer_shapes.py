"""The trainer shapes: OpenRLHF's remote reward model and NeMo-Gym's /verify, with the real
openai client against the loopback judge. A completion without a reward gets 0.0 there
(trainers need a number), always flagged: extra_logs.failed / no_reward in OpenRLHF,
`failed` and `mask_sample` in NeMo-Gym."""

from __future__ import annotations

import pytest

from evaluation.rewards.models import RewardBatch
from tests.evaluation.rewards.conftest import BROKEN

pytestmark = pytest.mark.django_db
EOS = "<|im_end|>"


def openrlhf_url(dataset, panel, **params) -> str:
    extra = "".join(f"&{k}={v}" for k, v in params.items())
    return f"/api/rewards/openrlhf/?dataset={dataset.pk}&panel={panel.pk}{extra}"


def test_openrlhf_rewards_in_order(owner_api, dataset, checklisted, panel, judge_server):
    prompts = ["<|im_start|>user\nWhat was Q3 revenue?<|im_end|>\n<|im_start|>assistant\n"] * 2
    completions = ["Revenue was $4.1 billion.", f"It was up. {BROKEN}"]
    body = {
        "query": [f"<pad><pad>{p}{c}{EOS}<pad>" for p, c in zip(prompts, completions, strict=True)],
        "prompts": prompts,
        "labels": ["q-1", "q-1"],
    }

    response = owner_api.post(
        openrlhf_url(dataset, panel) + f"&strip={EOS}&strip=<pad>", body, format="json"
    )

    assert response.status_code == 200, response.content
    data = response.json()
    assert data["rewards"] == [pytest.approx(2 / 3), 0.0]
    assert data["scores"] == [pytest.approx(2 / 3), 0.0]
    assert data["extra_logs"] == {
        "failed": [0.0, 1.0], "no_reward": [0.0, 1.0], "undecided": [0.0, 3.0]
    }  # fmt: skip
    # The completion the judge saw is what followed the prompt, tokens stripped.
    seen = {c.request.last_user_text.split("Answer:\n", 1)[1].split("\n\nCriterion")[0]
            for c in judge_server.calls}  # fmt: skip
    assert "Revenue was $4.1 billion." in seen
    batch = RewardBatch.objects.get()
    assert (batch.shape, batch.items, batch.failed_items) == ("openrlhf", 2, 1)


def test_openrlhf_refuses_a_query_without_its_prompt(owner_api, dataset, checklisted, panel):
    body = {"query": ["Something else entirely"], "prompts": ["The prompt"], "labels": ["q-1"]}

    response = owner_api.post(openrlhf_url(dataset, panel), body, format="json")

    assert response.status_code == 400
    assert response.json()["errors"][0] | {"message": ""} == {
        "item": 0, "field": "query", "message": ""
    }  # fmt: skip
    assert not RewardBatch.objects.exists()


def test_openrlhf_an_unknown_label_names_the_labels_field(owner_api, dataset, checklisted, panel):
    body = {"query": ["P: answer"], "prompts": ["P:"], "labels": ["q-404"]}

    response = owner_api.post(openrlhf_url(dataset, panel), body, format="json")

    assert response.status_code == 400
    assert (response.json()["errors"][0]["item"], response.json()["errors"][0]["field"]) == (
        0, "labels"
    )  # fmt: skip


def verify_request(text: str, query: str = "q-1") -> dict:
    return {
        "responses_create_params": {"input": [{"role": "user", "content": "Q3 revenue?"}]},
        "response": {
            "id": "resp_1", "object": "response", "model": "policy",
            "output": [
                {"type": "reasoning", "id": "r1", "summary": []},
                {
                    "type": "message", "id": "m1", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                },
            ],
        },
        "query": query,
        "task_field": "kept as sent",
    }  # fmt: skip


def verify_url(dataset, panel) -> str:
    return f"/api/rewards/verify/?dataset={dataset.pk}&panel={panel.pk}"


def test_verify_echoes_the_request_with_the_reward(owner_api, dataset, checklisted, panel):
    body = verify_request("Revenue was $4.1 billion.")

    response = owner_api.post(verify_url(dataset, panel), body, format="json")

    assert response.status_code == 200, response.content
    data = response.json()
    assert {k: data[k] for k in body} == body
    assert data["reward"] == pytest.approx(2 / 3)
    assert (data["mask_sample"], data["failed"], data["undecided"]) == (False, False, 0)
    assert RewardBatch.objects.get().shape == "verify"


def test_verify_masks_a_failed_sample(owner_api, dataset, checklisted, panel):
    response = owner_api.post(verify_url(dataset, panel), verify_request(BROKEN), format="json")

    data = response.json()
    assert (data["reward"], data["mask_sample"], data["failed"]) == (0.0, True, True)
    assert data["checklist_score"] is None


def test_verify_refuses_a_response_without_text(owner_api, dataset, checklisted, panel):
    body = verify_request("")

    response = owner_api.post(verify_url(dataset, panel), body, format="json")

    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "response"


def test_trainer_shapes_check_access_like_the_native_one(
    collaborator_api, outsider_api, dataset, checklisted, panel
):
    body = verify_request("x")
    assert outsider_api.post(verify_url(dataset, panel), body, format="json").status_code == 404
    assert collaborator_api.post(verify_url(dataset, panel), body, format="json").status_code == 403
    missing = "/api/rewards/openrlhf/?panel=1"
    assert outsider_api.post(missing, {}, format="json").status_code == 400

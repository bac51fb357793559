"""The trainer adapters (issue 26, item 2): TRL's `reward_funcs` callable and verl's batched
`compute_score`, called with a fake trainer batch, talk over real HTTP to the workbench
(pytest-django's live server) with a rewards-only token, whose judge is the loopback server
through the real openai client. Failures are marked, never silent zeros."""

from __future__ import annotations

import pytest

from accounts import services as accounts_services
from evaluation.rewards import trainers
from evaluation.rewards.models import RewardBatch
from tests.evaluation.rewards.conftest import BROKEN

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def client_for(live_server, owner, dataset, checklisted, panel):
    _, key = accounts_services.api_token_create(
        user=owner, name="trainer", scope="rewards", datasets=[dataset]
    )

    def make(**given) -> trainers.RewardClient:
        return trainers.RewardClient(
            url=live_server.url, token=key, dataset=dataset.pk, panel=panel.pk, **given
        )

    make.key = key
    return make


def test_the_trl_reward_function_scores_a_grpo_batch(client_for):
    reward = trainers.trl_reward_func(client_for())
    # GRPOTrainer's call: the prompts, the completions (here conversational, as TRL gives
    # them for a chat dataset) and every other dataset column as a keyword argument.
    completions = [
        [{"role": "assistant", "content": "Revenue was up."}],
        [{"role": "assistant", "content": f"{BROKEN} output"}],
        "A plain-text completion.",
    ]
    rewards = reward(
        prompts=[[{"role": "user", "content": "Q?"}]] * 3,
        completions=completions,
        query_id=["q-1", "q-1", "q-1"],
        completion_ids=[[1], [2], [3]],
    )
    # Two of three criteria pass; the unparseable judge outputs leave the 2nd unscored: None,
    # which TRL leaves out of this reward's mean, rather than a zero it would learn from.
    assert rewards == [pytest.approx(2 / 3), None, pytest.approx(2 / 3)]
    assert reward.__name__ == "checklist_reward"
    assert RewardBatch.objects.get().items == 3


def test_a_failed_reward_may_be_given_a_number(client_for):
    reward = trainers.trl_reward_func(client_for(), failed_reward=0.0)
    assert reward(completions=[f"{BROKEN}"], query_id=["q-1"]) == [0.0]


def test_the_trl_function_names_a_missing_column(client_for):
    reward = trainers.trl_reward_func(client_for())
    with pytest.raises(trainers.RewardError, match="needs a “query_id” column"):
        reward(completions=["x"], prompts=["p"])


def test_batches_larger_than_batch_size_are_split(client_for):
    scored = client_for(batch_size=2).score(["q-1"] * 5, [f"answer {i}" for i in range(5)])
    assert len(scored) == 5 and all(s.reward == pytest.approx(2 / 3) for s in scored)
    assert sorted(RewardBatch.objects.values_list("items", flat=True)) == [1, 2, 2]


def test_verl_compute_score_reads_its_settings_from_reward_kwargs_or_the_environment(
    client_for, live_server, dataset, panel, monkeypatch
):
    monkeypatch.setenv(trainers.ENV_URL, live_server.url)
    monkeypatch.setenv(trainers.ENV_TOKEN, client_for.key)
    scores = trainers.verl_compute_score(
        data_sources=["workbench", "workbench"],
        solution_strs=["Revenue was up.", f"{BROKEN} reply"],
        ground_truths=["q-1", "q-1"],
        extra_infos=[{"index": 0}, {"index": 1}],
        dataset=dataset.pk,  # verl's custom_reward_function.reward_kwargs
        panel=panel.pk,
    )
    assert scores[0] == {"score": pytest.approx(2 / 3), "failed": 0.0, "undecided": 0.0}
    assert scores[1] == {"score": 0.0, "failed": 1.0, "undecided": 3.0}


def test_a_refused_batch_raises_the_servers_reason(client_for):
    with pytest.raises(trainers.RewardError) as refused:
        client_for().score(["q-1", "no-such-query"], ["a", "b"])
    assert refused.value.status == 400
    assert "Item 1" in str(refused.value) and "no-such-query" in str(refused.value)
    assert not RewardBatch.objects.exists()


def test_a_token_of_another_scope_is_refused(client_for, owner):
    _, read_key = accounts_services.api_token_create(user=owner, name="reader", scope="read")
    client = client_for()
    client.token = read_key
    with pytest.raises(trainers.RewardError) as refused:
        client.score(["q-1"], ["a"])
    assert refused.value.status == 403 and "read-only" in str(refused.value)


def test_settings_missing_from_the_environment_are_named(monkeypatch):
    for name in (trainers.ENV_URL, trainers.ENV_TOKEN, trainers.ENV_DATASET, trainers.ENV_PANEL):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(trainers.RewardError, match="Set CWB_URL or pass url="):
        trainers.RewardClient.from_env()


def test_an_unreachable_workbench_is_a_reward_error():
    client = trainers.RewardClient(
        url="http://127.0.0.1:9", token="t", dataset=1, panel=1, retries=0
    )
    with pytest.raises(trainers.RewardError, match="could not be reached"):
        client.score(["q"], ["c"])

"""The trainers' own clients against the rewards service as operations run it (issue 45): a
uvicorn process serving config.asgi_rewards, on the test PostgreSQL and Redis, its judge the
loopback server through the real openai client. Each trainer is called as its source calls
it: OpenRLHF loads openrlhf_reward.py by path and calls `reward_func` one sample at a time,
every sample of a rollout at once, in threads; TRL's GRPOTrainer calls its reward function
once per batch with the dataset's columns; verl calls `compute_score` per sample (naive
manager) or per batch (batch manager); NeMo-Gym posts one /verify per rollout, concurrently.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from accounts import services as accounts_services
from bench.rewards.served import ConnectionWatch, ServiceProcess, one_rollout
from evaluation.rewards import trainers
from evaluation.rewards.models import RewardBatch
from tests.evaluation.rewards.conftest import BROKEN
from tests.faults.conftest import POSTGRES_ONLY, database_down
from tests.support.celery_worker import database_url

pytestmark = pytest.mark.django_db(transaction=True)

OPENRLHF_FILE = Path(trainers.__file__).with_name("openrlhf_reward.py")
PROMPT = "<|im_start|>user\nSummarise the call.<|im_end|>\n<|im_start|>assistant\n"


def rewards_service(**env: str) -> ServiceProcess:
    """The service as docs/operations.md runs it, on the test database and Redis."""
    return ServiceProcess(
        server="uvicorn", workers=1,
        env={
            "DATABASE_URL": database_url(connection.settings_dict),
            # The tests' judges are loopback servers (docs/operations.md, "Which hosts
            # judges may call").
            "JUDGE_ALLOW_PRIVATE_NETWORK": "1", "ALLOWED_HOSTS": "127.0.0.1", **env,
        },
    ).start()  # fmt: skip


@pytest.fixture
def service(checklisted, panel):
    served = rewards_service()
    yield served
    served.stop()


@pytest.fixture
def token(owner, dataset):
    _, key = accounts_services.api_token_create(
        user=owner, name="trainer", scope="rewards", datasets=[dataset]
    )
    return key


@pytest.fixture
def trainer_env(monkeypatch, service, token, dataset, panel):
    """The training job's environment, as docs/rewards.md sets it."""
    monkeypatch.setenv(trainers.ENV_URL, service.url)
    monkeypatch.setenv(trainers.ENV_TOKEN, token)
    monkeypatch.setenv(trainers.ENV_DATASET, str(dataset.pk))
    monkeypatch.setenv(trainers.ENV_PANEL, str(panel.pk))
    return service


def _post(url: str, body: dict, token: str) -> tuple[int, dict, dict]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, dict(answer.headers), json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, dict(refused.headers), json.loads(refused.read())


def _post_all(url: str, bodies: list[dict], token: str) -> list[tuple[int, dict, dict]]:
    """Every body at once, each its own request (as a trainer's samples arrive)."""
    with ThreadPoolExecutor(len(bodies)) as pool:
        return list(pool.map(lambda body: _post(url, body, token), bodies))


def _openrlhf_module():
    """As OpenRLHF's SingleTurnAgentExecutor loads a --remote_rm_url ending in .py."""
    spec = importlib.util.spec_from_file_location("reward_func", OPENRLHF_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def _openrlhf_rollout(reward_func, samples: list[tuple[str, str, str]]) -> list[dict]:
    """OpenRLHF's SingleTurnAgentExecutor: every sample of the rollout at once, each its own
    `_fetch_rewards_via_func([query], [prompt], [label])`, i.e. asyncio.to_thread(reward_func,
    ...) on one-element lists; the first result of each is the sample's."""
    calls = [asyncio.to_thread(reward_func, [q], [p], [label]) for q, p, label in samples]
    return list(await asyncio.gather(*calls))


def test_openrlhf_reward_func_scores_a_rollout_one_sample_per_request(trainer_env):
    reward_func = _openrlhf_module().reward_func
    samples = [(f"{PROMPT}Revenue was up {i}%.<|im_end|>", PROMPT, "q-1") for i in range(11)]
    samples.append((f"{PROMPT}{BROKEN} reply<|im_end|>", PROMPT, "q-1"))
    answers = asyncio.run(_openrlhf_rollout(reward_func, samples))

    assert [a["rewards"] for a in answers[:11]] == [[pytest.approx(2 / 3)]] * 11
    assert all(a["extra_logs"]["failed"] == [0.0] for a in answers[:11])
    # The unparseable judge outputs: no reward, marked as failed, never a silent zero.
    assert answers[11]["rewards"] == [0.0]
    assert answers[11]["extra_logs"]["failed"] == [1.0]
    assert answers[11]["extra_logs"]["no_reward"] == [1.0]
    assert sum(RewardBatch.objects.values_list("items", flat=True)) == 12
    assert set(RewardBatch.objects.values_list("shape", flat=True)) == {"openrlhf"}


def test_openrlhf_reward_func_strips_the_end_of_sequence_tokens_it_is_told(
    trainer_env, monkeypatch
):
    monkeypatch.setenv("CWB_STRIP", "<|im_end|> <|endoftext|>")
    reward_func = _openrlhf_module().reward_func
    answer = reward_func([f"{PROMPT}Revenue was up.<|im_end|><|endoftext|>"], [PROMPT], ["q-1"])
    assert answer["rewards"] == [pytest.approx(2 / 3)]
    audit_words = RewardBatch.objects.get().items
    assert audit_words == 1


def test_openrlhf_reward_func_raises_the_servers_reason_for_a_bad_label(trainer_env):
    reward_func = _openrlhf_module().reward_func
    with pytest.raises(Exception, match="no-such-query") as refused:
        reward_func([f"{PROMPT}x"], [PROMPT], ["no-such-query"])
    assert refused.value.status == 400
    assert not RewardBatch.objects.exists()


def test_openrlhf_reward_func_names_missing_settings(monkeypatch):
    for name in (trainers.ENV_URL, trainers.ENV_TOKEN, trainers.ENV_DATASET, trainers.ENV_PANEL):
        monkeypatch.delenv(name, raising=False)
    reward_func = _openrlhf_module().reward_func
    with pytest.raises(Exception, match="Set CWB_TOKEN"):
        reward_func(["q"], ["p"], ["l"])


def test_a_bad_request_in_a_shared_wave_is_refused_alone(trainer_env, token, dataset, panel):
    url = f"{trainer_env.url}/api/rewards/openrlhf/?dataset={dataset.pk}&panel={panel.pk}"
    bodies = [
        {"query": [f"{PROMPT}answer {i}"], "prompts": [PROMPT], "labels": ["q-1"]}
        for i in range(15)
    ]
    bodies.insert(7, {"query": [f"{PROMPT}x"], "prompts": [PROMPT], "labels": ["no-such"]})
    answers = _post_all(url, bodies, token)
    statuses = [status for status, _, _ in answers]
    assert statuses == [200] * 7 + [400] + [200] * 8
    assert answers[7][2]["errors"] == [
        {"item": 0, "field": "labels", "message": answers[7][2]["errors"][0]["message"]}
    ]
    assert "no-such" in answers[7][2]["detail"]
    assert all(a[2]["rewards"] == [pytest.approx(2 / 3)] for i, a in enumerate(answers) if i != 7)
    assert sum(RewardBatch.objects.values_list("items", flat=True)) == 15


def test_trl_reward_function_as_grpo_trainer_calls_it(trainer_env):
    reward = trainers.trl_reward_func(trainers.RewardClient.from_env())
    # GRPOTrainer._calculate_rewards: reward_func(prompts=, completions=, completion_ids=,
    # **reward_kwargs), the dataset's other columns and the trainer state as keywords.
    rewards = reward(
        prompts=[[{"role": "user", "content": "Q?"}]] * 3,
        completions=[
            [{"role": "assistant", "content": "Revenue was up."}],
            [{"role": "assistant", "content": f"{BROKEN} output"}],
            [{"role": "assistant", "content": "Margins fell."}],
        ],
        completion_ids=[[1], [2], [3]],
        query_id=["q-1", "q-1", "q-1"],
        trainer_state=None,
    )
    assert rewards == [pytest.approx(2 / 3), None, pytest.approx(2 / 3)]


def test_verl_compute_score_per_batch_and_per_sample(trainer_env):
    # The batch reward manager: compute_score(data_sources=, solution_strs=, ground_truths=,
    # extra_infos=, **reward_kwargs).
    batch = trainers.verl_compute_score(
        data_sources=["workbench"] * 2, solution_strs=["Revenue was up.", f"{BROKEN}"],
        ground_truths=["q-1", "q-1"], extra_infos=[None, None],
    )  # fmt: skip
    assert batch == [
        {"score": pytest.approx(2 / 3), "failed": 0.0, "undecided": 0.0},
        {"score": 0.0, "failed": 1.0, "undecided": 3.0},
    ]
    # The naive reward manager: compute_score(data_source=, solution_str=, ground_truth=,
    # extra_info=) once per sample.
    one = trainers.verl_compute_score_one(
        data_source="workbench", solution_str="Margins fell.", ground_truth="q-1",
        extra_info={"index": 0},
    )  # fmt: skip
    assert one == {"score": pytest.approx(2 / 3), "failed": 0.0, "undecided": 0.0}


def _verify_request(text: str, query: str = "q-1") -> dict:
    return {
        "responses_create_params": {"input": [{"role": "user", "content": "Summarise."}]},
        "response": {
            "id": "resp_1",
            "output": [
                {"type": "reasoning", "summary": []},
                {
                    "type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": text}],
                },
            ],
        },
        "query": query,
    }  # fmt: skip


def test_nemo_gym_verify_one_rollout_per_request_concurrently(trainer_env, token, dataset, panel):
    url = f"{trainer_env.url}/api/rewards/verify/?dataset={dataset.pk}&panel={panel.pk}"
    bodies = [_verify_request(f"Revenue was up {i}%.") for i in range(15)]
    bodies.append(_verify_request(f"{BROKEN} output"))
    answers = _post_all(url, bodies, token)
    assert [status for status, _, _ in answers] == [200] * 16
    for (_, _, answer), body in zip(answers[:15], bodies[:15], strict=True):
        assert answer["reward"] == pytest.approx(2 / 3) and not answer["mask_sample"]
        assert answer["response"] == body["response"]  # the request echoed, as NeMo-Gym expects
    broken = answers[15][2]
    assert broken["reward"] == 0.0 and broken["mask_sample"] and broken["failed"]


def test_concurrent_one_sample_requests_share_waves(trainer_env, token, dataset, panel):
    url = f"{trainer_env.url}/api/rewards/openrlhf/?dataset={dataset.pk}&panel={panel.pk}"
    bodies = [
        {"query": [f"{PROMPT}answer {i}"], "prompts": [PROMPT], "labels": ["q-1"]}
        for i in range(48)
    ]
    answers = _post_all(url, bodies, token)
    assert [status for status, _, _ in answers] == [200] * 48
    # One batch row per wave, not per request: the requests were planned together.
    waves = list(RewardBatch.objects.values_list("items", flat=True))
    assert sum(waves) == 48
    assert len(waves) < 48 and max(waves) > 1


def test_past_its_limit_the_service_answers_503_with_retry_after_and_clients_retry(
    checklisted, panel, token, dataset, judge_server
):
    judge_server.latency = 0.5
    served = rewards_service(REWARDS_MAX_PENDING="4")
    try:
        url = f"{served.url}/api/rewards/openrlhf/?dataset={dataset.pk}&panel={panel.pk}"
        bodies = [
            {"query": [f"{PROMPT}answer {i}"], "prompts": [PROMPT], "labels": ["q-1"]}
            for i in range(12)
        ]
        answers = _post_all(url, bodies, token)
        statuses = sorted(status for status, _, _ in answers)
        assert 500 not in statuses
        assert statuses.count(200) >= 4 and 503 in statuses
        for status, headers, body in answers:
            if status == 503:
                assert int(headers["retry-after"]) >= 1
                assert "REWARDS_MAX_PENDING" in body["detail"]
        # The trainers' client honours Retry-After: every sample gets its reward.
        with ThreadPoolExecutor(12) as pool:
            retried = list(pool.map(lambda body: trainers.post_json(url, token, body), bodies))
        assert all(a["rewards"] == [pytest.approx(2 / 3)] for a in retried)
    finally:
        served.stop()
    assert "Traceback" not in served.log_path.read_text()


@POSTGRES_ONLY
def test_a_database_outage_answers_503_with_retry_after_and_the_trainer_waits_it_out(
    trainer_env, token, dataset, panel
):
    """PostgreSQL restarting under the service: the request is answered 503 with
    Retry-After (not a 500 the trainers' loops give up on), nothing is recorded, and the
    trainers' client asking again once it is back gets the sample's reward."""
    url = f"{trainer_env.url}/api/rewards/openrlhf/?dataset={dataset.pk}&panel={panel.pk}"
    body = {"query": [f"{PROMPT}an answer"], "prompts": [PROMPT], "labels": ["q-1"]}
    with database_down(0):
        status, headers, refused = _post(url, body, token)
    assert status == 503 and headers["retry-after"] == "2"
    assert "cannot reach its database" in refused["detail"] and refused["retry_after"] == 2
    assert not RewardBatch.objects.exists()

    # An outage the client's retries outlast: refused while it lasts, answered after.
    answered: list = []
    with ThreadPoolExecutor(1) as pool:
        with database_down(0):
            asked = pool.submit(trainers.post_json, url, token, body)
            time.sleep(1.5)  # the first try, and perhaps a second, is refused
        answered.append(asked.result(timeout=60))
    assert answered[0]["rewards"] == [pytest.approx(2 / 3)]
    assert sum(RewardBatch.objects.values_list("items", flat=True)) == 1
    log = trainer_env.log_path.read_text()
    assert "the database is unreachable" in log and "Traceback" not in log


def test_a_thousand_concurrent_one_sample_requests_are_all_answered(
    checklisted, panel, token, dataset, judge_server
):
    """OpenRLHF's pattern at 1,000 samples (its client code: bench/rewards/served.py): every
    request answered 200 with its reward, none retried, the database connections bounded by
    REWARDS_DB_THREADS whatever the load."""
    judge_server.latency = 0.05
    database = database_url(connection.settings_dict)
    # Only the service's own connections, by the application_name its settings give them:
    # in a suite, a Celery worker or a live server of other tests may open some meanwhile.
    served = rewards_service(REWARDS_CONCURRENCY="256", JUDGE_MAX_IN_FLIGHT="256")
    try:
        url = f"{served.url}/api/rewards/openrlhf/?dataset={dataset.pk}&panel={panel.pk}"
        bodies = [
            {"query": [f"{PROMPT}answer {i}"], "prompts": [PROMPT], "labels": ["q-1"]}
            for i in range(1000)
        ]
        with ConnectionWatch(database, settings.REWARDS_APPLICATION_NAME) as watch:
            found = asyncio.run(one_rollout(url, token, bodies))
    finally:
        served.stop()
    assert found.errors == [] and found.statuses == {200: 1000} and found.retried == 0
    assert found.rewarded == 1000 and found.failed == 0
    assert sum(RewardBatch.objects.values_list("items", flat=True)) == 1000
    # The service's REWARDS_DB_THREADS (4) at most; never one per request. (SQLite: no
    # server to count connections on.)
    assert watch.peak <= 4 and (watch.peak >= 1 or connection.vendor != "postgresql"), watch.peak
    assert "Traceback" not in served.log_path.read_text()


def test_the_service_checks_access_as_the_web_routes_do(
    service, token, owner, collaborator, outsider, dataset, panel
):
    """The rewards service's routes run the web routes' own DRF steps: no token 403, a
    token of another scope 403, a member who is not the dataset's admin 403, a non-member
    404; nothing recorded."""
    url = f"{service.url}/api/rewards/openrlhf/?dataset={dataset.pk}&panel={panel.pk}"
    body = {"query": [f"{PROMPT}x"], "prompts": [PROMPT], "labels": ["q-1"]}
    _, read_key = accounts_services.api_token_create(user=owner, name="reader", scope="read")
    _, member_key = accounts_services.api_token_create(user=collaborator, name="m", scope="write")
    _, outsider_key = accounts_services.api_token_create(user=outsider, name="o", scope="write")
    assert _post(url, body, "")[0] in (401, 403)
    status, _, refused = _post(url, body, read_key)
    assert status == 403 and "read-only" in refused["detail"]
    status, _, refused = _post(url, body, member_key)
    assert status == 403 and "dataset's admins" in refused["detail"]
    assert _post(url, body, outsider_key)[0] == 404
    assert not RewardBatch.objects.exists()

"""LoopbackOpenAI against the real openai client (sync and async), no mocks, no database."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from evaluation.judging.client import http_library
from loopback import (
    ChatRequest,
    Fault,
    FaultKind,
    LoopbackOpenAI,
    fail_first,
    jitter,
    sequence_responder,
    verdict_responder,
)

http = http_library()  # the openai client's: httpx2 from 3.x, else httpx

MODEL = "judge-mini"
USER = [{"role": "user", "content": "Does the answer cite a source?"}]
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {
        "name": "verdict",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {
                "verdict": {"type": "string", "enum": ["pass", "fail"]},
                "failure_kind": {"type": ["string", "null"]},
                "rationale": {"type": "string"},
                "confidence": {"type": "number"},
            },
            "required": ["verdict", "failure_kind", "rationale", "confidence"],
            "additionalProperties": False,
        },
    },
}
REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def server() -> Iterator[LoopbackOpenAI]:
    with LoopbackOpenAI(models=[MODEL, "judge-large"], retry_after=0.01) as running:
        yield running


def ask(client: openai.OpenAI, content: str = USER[0]["content"], **kwargs: Any) -> Any:
    messages = [{"role": "user", "content": content}]
    return client.chat.completions.create(model=MODEL, messages=messages, **kwargs)


# --------------------------------------------------------------------------- protocol


def test_plain_completion_parses_with_positive_usage(server: LoopbackOpenAI) -> None:
    completion = ask(server.client(max_retries=0))

    assert completion.object == "chat.completion"
    assert completion.model == MODEL
    assert completion.id.startswith("chatcmpl-")
    choice = completion.choices[0]
    assert choice.message.role == "assistant"
    assert choice.finish_reason == "stop"
    assert json.loads(choice.message.content)["verdict"] == "pass"
    usage = completion.usage
    assert isinstance(usage.prompt_tokens, int) and usage.prompt_tokens > 0
    assert isinstance(usage.completion_tokens, int) and usage.completion_tokens > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert server.call_count == 1
    assert server.calls[0].status == 200


def test_json_mode_returns_parseable_json_async(server: LoopbackOpenAI) -> None:
    async def run() -> str:
        async with server.async_client(max_retries=0) as client:
            completion = await client.chat.completions.create(
                model=MODEL, messages=USER, response_format={"type": "json_object"}
            )
        return completion.choices[0].message.content

    body = json.loads(asyncio.run(run()))
    assert body == {"verdict": "pass", "failure_kind": None, "rationale": body["rationale"]}
    assert server.calls[0].request.response_format_type == "json_object"


def test_structured_outputs_fill_every_required_key(server: LoopbackOpenAI) -> None:
    completion = ask(server.client(max_retries=0), response_format=VERDICT_SCHEMA)

    body = json.loads(completion.choices[0].message.content)
    assert set(body) >= {"verdict", "failure_kind", "rationale", "confidence"}
    assert body["verdict"] == "pass" and body["confidence"] == 0
    assert server.calls[0].request.json_schema["required"][0] == "verdict"


def test_structured_outputs_unsupported_is_a_bad_request() -> None:
    with LoopbackOpenAI(supports_structured_outputs=False) as server:
        client = server.client()  # default retries: a 400 must not be retried
        with pytest.raises(openai.BadRequestError) as info:
            ask(client, response_format=VERDICT_SCHEMA)
        # JSON mode still works: that is what the judge falls back to.
        fallback = ask(client, response_format={"type": "json_object"})

    assert info.value.status_code == 400
    assert info.value.param == "response_format"
    assert info.value.type == "invalid_request_error"
    assert json.loads(fallback.choices[0].message.content)["verdict"] == "pass"
    assert server.call_count == 2


def test_responder_missing_required_schema_keys_is_reported(server: LoopbackOpenAI) -> None:
    server.responder = lambda request: {"verdict": "pass"}

    with pytest.raises(openai.InternalServerError) as info:
        ask(server.client(), response_format=VERDICT_SCHEMA)

    assert "misses required keys" in info.value.message
    assert server.call_count == 1  # x-should-retry: false stops the client's retries
    assert len(server.errors) == 1


def test_scripted_responder_sees_the_request(server: LoopbackOpenAI) -> None:
    seen: list[ChatRequest] = []

    def decide(request: ChatRequest) -> str:
        seen.append(request)
        return "fail" if "wrong" in request.last_user_text else "pass"

    server.responder = verdict_responder(decide, failure_kind="factual_error")
    client = server.client(max_retries=0)
    failed = ask(client, "This answer is wrong.", temperature=0.3, seed=7)
    passed = ask(client, "This answer is right.")

    assert json.loads(failed.choices[0].message.content) == {
        "verdict": "fail",
        "failure_kind": "factual_error",
        "rationale": "Loopback judge decided 'fail'.",
    }
    assert json.loads(passed.choices[0].message.content)["verdict"] == "pass"
    assert (seen[0].model, seen[0].temperature, seen[0].seed) == (MODEL, 0.3, 7)
    assert seen[0].last_user_text == "This answer is wrong."
    assert seen[0].raw["messages"][0]["role"] == "user"


def test_async_responder_and_verbatim_text_content(server: LoopbackOpenAI) -> None:
    async def respond(request: ChatRequest) -> str:
        await asyncio.sleep(0)
        return f"plain prose about {request.model}"

    server.responder = respond
    completion = ask(server.client(max_retries=0))

    assert completion.choices[0].message.content == f"plain prose about {MODEL}"


def test_sequence_responder_and_n_choices(server: LoopbackOpenAI) -> None:
    server.responder = sequence_responder({"verdict": "pass"}, {"verdict": "fail"}, "last")
    completion = ask(server.client(max_retries=0), n=3)
    again = ask(server.client(max_retries=0))

    contents = [choice.message.content for choice in completion.choices]
    assert contents == ['{"verdict": "pass"}', '{"verdict": "fail"}', "last"]
    assert [choice.index for choice in completion.choices] == [0, 1, 2]
    assert again.choices[0].message.content == "last"


def test_max_tokens_cuts_content_with_finish_reason_length(server: LoopbackOpenAI) -> None:
    completion = ask(server.client(max_retries=0), max_tokens=5)

    choice = completion.choices[0]
    assert choice.finish_reason == "length"
    assert len(choice.message.content) == 20
    assert completion.usage.completion_tokens == 5


def test_streaming_is_rejected(server: LoopbackOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        ask(server.client(max_retries=0), stream=True)
    assert info.value.param == "stream"


# ----------------------------------------------------------------------------- faults


def test_rate_limit_raises_with_retry_after_header(server: LoopbackOpenAI) -> None:
    server.responder = lambda request: Fault.rate_limit(retry_after=2)

    with pytest.raises(openai.RateLimitError) as info:
        ask(server.client(max_retries=0))

    assert info.value.status_code == 429
    assert info.value.response.headers["retry-after"] == "2"
    assert info.value.response.headers["retry-after-ms"] == "2000"
    assert info.value.code == "rate_limit_exceeded"
    assert server.fault_counts == {FaultKind.RATE_LIMIT: 1}
    assert server.calls[0].fault_kind is FaultKind.RATE_LIMIT


def test_one_time_rate_limit_is_retried_transparently(
    server: LoopbackOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    server.fault_plan = fail_first(1, Fault.rate_limit(retry_after=0.02))

    with caplog.at_level(logging.INFO, logger="openai._base_client"):
        completion = ask(server.client())  # the client's default max_retries=2

    assert json.loads(completion.choices[0].message.content)["verdict"] == "pass"
    assert server.call_count == 2
    assert [call.status for call in server.calls] == [429, 200]
    # The 0.02 s of Retry-After was honoured: without a usable one the client backs off
    # >= 0.375 s. Read from the client's own log rather than the wall clock, which a slow or
    # busy machine stretches past any bound tight enough to tell the two apart.
    waits = [r.getMessage() for r in caplog.records if "Retrying request in" in r.getMessage()]
    assert waits == ["Retrying request in 0.020000 seconds (retry 1 of 2)"]


@pytest.mark.parametrize("status", [500, 503])
def test_server_errors_raise_internal_server_error(server: LoopbackOpenAI, status: int) -> None:
    fault = Fault.server_error() if status == 500 else Fault.service_unavailable()
    server.responder = lambda request: fault

    with pytest.raises(openai.InternalServerError) as info:
        ask(server.client(max_retries=0))

    assert info.value.status_code == status
    assert info.value.type == "server_error"


def test_timeout_raises_api_timeout_error(server: LoopbackOpenAI) -> None:
    server.responder = lambda request: Fault.timeout(delay=5)
    started = time.perf_counter()

    with pytest.raises(openai.APITimeoutError):
        ask(server.client(max_retries=0, timeout=0.2))

    assert time.perf_counter() - started < 2
    assert server.fault_counts[FaultKind.TIMEOUT] == 1
    # The stalled handler is cancelled when the client hangs up, not left sleeping.
    deadline = time.monotonic() + 2
    while server.in_flight and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.in_flight == 0


def test_malformed_json_arrives_as_a_non_json_string(server: LoopbackOpenAI) -> None:
    server.responder = lambda request: Fault.malformed_json()

    content = ask(server.client(max_retries=0)).choices[0].message.content

    assert isinstance(content, str) and content.startswith('{"verdict": "pass",')
    with pytest.raises(json.JSONDecodeError):
        json.loads(content)


def test_truncated_body_raises_api_connection_error(server: LoopbackOpenAI) -> None:
    server.responder = lambda request: Fault.truncated_body()

    with pytest.raises(openai.APIConnectionError) as info:
        ask(server.client(max_retries=0))

    # Not a timeout: the client's HTTP parser notices the short body at once.
    assert not isinstance(info.value, openai.APITimeoutError)
    assert isinstance(info.value.__cause__, http.RemoteProtocolError)
    assert "incomplete" in str(info.value.__cause__) or "expected" in str(info.value.__cause__)


def test_truncated_body_once_is_retried_by_the_client(server: LoopbackOpenAI) -> None:
    server.fault_plan = fail_first(1, "truncated_body")

    completion = ask(server.client())

    assert json.loads(completion.choices[0].message.content)["verdict"] == "pass"
    assert server.call_count == 2


def test_responder_exception_is_a_non_retryable_500(server: LoopbackOpenAI) -> None:
    def broken(request: ChatRequest) -> str:
        raise RuntimeError("bug in the test responder")

    server.responder = broken
    with pytest.raises(openai.InternalServerError) as info:
        ask(server.client())

    assert "bug in the test responder" in info.value.message
    assert server.call_count == 1
    assert isinstance(server.errors[0], RuntimeError)


# ---------------------------------------------------------------------- fault planning


def faulted_prompts(seed: int, prompts: list[str]) -> set[str]:
    with LoopbackOpenAI(fault_rate=0.3, seed=seed, retry_after=0.01) as server:
        client = server.client(max_retries=0)
        faulted = set()
        for prompt in prompts:
            try:
                ask(client, prompt)
            except openai.APIStatusError:
                faulted.add(prompt)
        assert sum(server.fault_counts.values()) == len(faulted)
        return faulted


def test_fault_rate_is_deterministic_for_a_seed_whatever_the_order() -> None:
    prompts = [f"criterion {i}" for i in range(40)]

    first = faulted_prompts(1, prompts)
    reversed_order = faulted_prompts(1, prompts[::-1])
    other_seed = faulted_prompts(2, prompts)

    assert 0 < len(first) < len(prompts)
    assert first == reversed_order
    assert first != other_seed


@pytest.mark.parametrize("limit", [1, 2])
def test_max_faults_per_request_bounds_recurrences(limit: int) -> None:
    fault = Fault.rate_limit(retry_after=0.01)
    with LoopbackOpenAI(
        fault_rate=1.0, fault_kinds=[fault], max_faults_per_request=limit
    ) as server:
        client = server.client(max_retries=limit)
        for i in range(5):
            ask(client, f"criterion {i}")

    assert server.fault_counts == {FaultKind.RATE_LIMIT: 5 * limit}
    assert server.call_count == 5 * (limit + 1)


def test_ten_percent_transient_faults_still_yield_every_verdict() -> None:
    async def judge_all(server: LoopbackOpenAI, n: int) -> list[str]:
        async with server.async_client() as client:  # default retries
            tasks = [
                client.chat.completions.create(
                    model=MODEL, messages=[{"role": "user", "content": f"criterion {i}"}]
                )
                for i in range(n)
            ]
            completions = await asyncio.gather(*tasks)
        return [json.loads(c.choices[0].message.content)["verdict"] for c in completions]

    with LoopbackOpenAI(fault_rate=0.1, seed=3, retry_after=0.01) as server:
        verdicts = asyncio.run(judge_all(server, 60))

    assert verdicts == ["pass"] * 60
    faults = sum(server.fault_counts.values())
    assert faults > 0
    assert server.call_count == 60 + faults
    assert all(count <= 1 for count in _faults_per_key(server).values())


def _faults_per_key(server: LoopbackOpenAI) -> dict[str, int]:
    counts: dict[str, int] = {}
    for call in server.calls:
        if call.fault is not None:
            counts[call.request.key] = counts.get(call.request.key, 0) + 1
    return counts


def test_jitter_latency_is_deterministic_per_request() -> None:
    latency = jitter(0.2, 0.1, seed=5)
    body = {"model": MODEL, "messages": USER}
    request = ChatRequest.from_body(body)

    assert latency(request) == latency(ChatRequest.from_body(dict(body)))
    assert 0.1 <= latency(request) <= 0.3


# ------------------------------------------------------------------------ concurrency


def test_concurrent_requests_are_not_serialized() -> None:
    async def burst(server: LoopbackOpenAI, n: int) -> float:
        async with server.async_client(max_retries=0) as client:
            started = time.perf_counter()
            await asyncio.gather(
                *(
                    client.chat.completions.create(
                        model=MODEL, messages=[{"role": "user", "content": f"q{i}"}]
                    )
                    for i in range(n)
                )
            )
            return time.perf_counter() - started

    with LoopbackOpenAI(latency=0.2) as server:
        elapsed = asyncio.run(burst(server, 64))

    # The overlap at the server is the proof; the wall time only has to be well under the
    # serialized 64 * 0.2 = 12.8 s (a busy CI machine took 4.4 s for what takes 0.4 quiet).
    assert server.max_concurrency >= 32
    assert elapsed < 64 * 0.2 / 2
    assert server.call_count == 64
    assert all(call.latency == 0.2 for call in server.calls)


# ------------------------------------------------------------- auth, models, routing


def test_bearer_key_is_checked() -> None:
    with LoopbackOpenAI(api_key="sk-right") as server:
        with pytest.raises(openai.AuthenticationError) as info:
            ask(server.client(api_key="sk-wrong", max_retries=0))
        ok = ask(server.client(max_retries=0))  # defaults to the server's key

    assert info.value.status_code == 401
    assert info.value.code == "invalid_api_key"
    assert ok.choices[0].message.content
    assert [call.status for call in server.calls] == [401, 200]


def test_models_endpoint_lists_configured_models(server: LoopbackOpenAI) -> None:
    ids = [model.id for model in server.client(max_retries=0).models.list()]

    assert ids == [MODEL, "judge-large"]
    assert server.calls[0].path == "/v1/models"


def test_unknown_path_is_an_openai_shaped_404(server: LoopbackOpenAI) -> None:
    response = http.post(f"{server.base_url}/embeddingz", json={})

    assert response.status_code == 404
    error = response.json()["error"]
    assert set(error) >= {"message", "type", "code"}
    assert error["message"] == "Invalid URL (POST /v1/embeddingz)"


def test_strict_models_rejects_unknown_model() -> None:
    with (
        LoopbackOpenAI(models=[MODEL], strict_models=True) as server,
        pytest.raises(openai.NotFoundError),
    ):
        server.client(max_retries=0).chat.completions.create(model="nope", messages=USER)


# ------------------------------------------------------------------ observability


def test_calls_records_outcomes_and_reset_clears_them(server: LoopbackOpenAI) -> None:
    server.fault_plan = fail_first(1, Fault.server_error(status=502))
    client = server.client(max_retries=0)
    with pytest.raises(openai.InternalServerError):
        ask(client)
    ask(client)

    first, second = server.calls
    assert (first.status, first.fault_kind, first.fault_source) == (502, "server_error", "plan")
    assert (second.status, second.fault_kind) == (200, None)
    assert first.request.key == second.request.key

    server.reset()
    assert (server.call_count, server.fault_counts, server.max_concurrency) == (0, {}, 0)
    with pytest.raises(openai.InternalServerError):
        ask(client)  # attempts were forgotten too: the plan fires again
    assert server.calls[0].status == 502


def test_stop_closes_the_port() -> None:
    server = LoopbackOpenAI().start()
    base_url = server.base_url
    server.stop()
    server.stop()  # idempotent

    assert not server.running
    with pytest.raises(http.ConnectError):
        http.get(f"{base_url}/models")


def test_standalone_command_serves_until_interrupted() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    command = [sys.executable, "-m", "loopback", "--port", "0", "--fault-rate", "0"]
    process = subprocess.Popen(
        command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        banner = process.stdout.readline()
        base_url = banner.strip().split("base_url=")[1]
        with openai.OpenAI(base_url=base_url, api_key="x", max_retries=0) as client:
            content = client.chat.completions.create(model=MODEL, messages=USER)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=10)
    finally:
        process.kill()

    assert json.loads(content.choices[0].message.content)["verdict"] == "pass"
    assert process.returncode == 0, err
    assert "served 1 requests" in out

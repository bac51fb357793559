"""Endpoints as they are (issue 25): reasoning models, providers without structured outputs,
prompt caching, and batched calls through the engine's rate limiter. The real openai client
against the loopback server speaking each variant; no database."""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools

import pytest

from evaluation.judging import batched, client, engine, prompts
from loopback import LoopbackOpenAI, checklist_responder, listed_criteria

SCHEMA = prompts.SCHEMA
MESSAGES = [{"role": "user", "content": "Does the answer state the revenue?"}]
# The model names are unique per test: a refusal of schemas is remembered per endpoint.
MODELS = (f"variant-model-{n}" for n in itertools.count())


def call(server: LoopbackOpenAI, **endpoint) -> client.Completion:
    settings = {"base_url": server.base_url, "model": next(MODELS), "timeout": 5, **endpoint}
    return asyncio.run(
        client.complete_json(
            client.Endpoint(**settings), MESSAGES, schema_name="verdict", schema=SCHEMA
        )
    )


def reasoning_server(**options) -> LoopbackOpenAI:
    return LoopbackOpenAI(reasoning_models=("o-reasoner",), reasoning_tokens=40, **options)


def test_a_reasoning_model_gets_max_completion_tokens_and_its_effort_without_temperature():
    with reasoning_server() as server:
        completion = call(
            server, model="o-reasoner", token_parameter="max_completion_tokens",
            reasoning_effort="low", temperature=0.3,
        )  # fmt: skip
    body = server.calls[0].request.raw
    assert body["max_completion_tokens"] == 512 and "max_tokens" not in body
    assert body["reasoning_effort"] == "low" and "temperature" not in body
    assert completion.data["verdict"] == "pass"
    # Reasoning tokens are reported, and are part of the completion tokens (billed as such).
    assert completion.reasoning_tokens == 40
    assert completion.completion_tokens > 40


def test_a_reasoning_model_refuses_max_tokens_and_temperature():
    with reasoning_server() as server:
        with pytest.raises(client.JudgeRejected, match="max_completion_tokens"):
            call(server, model="o-reasoner")
        with pytest.raises(client.JudgeRejected, match="temperature"):
            call(server, model="o-reasoner", token_parameter="max_completion_tokens")
    assert [c.status for c in server.calls] == [400, 400]


def test_a_plain_model_keeps_max_tokens_and_temperature():
    with LoopbackOpenAI() as server:
        completion = call(server, temperature=0.5)
    body = server.calls[0].request.raw
    assert body["max_tokens"] == 512 and body["temperature"] == 0.5
    assert "reasoning_effort" not in body and "max_completion_tokens" not in body
    assert completion.reasoning_tokens == completion.cached_tokens == 0


def test_json_mode_is_asked_for_when_the_judge_says_so():
    with LoopbackOpenAI() as server:
        completion = call(server, response_format="json_object")
    assert completion.mode == "json_object" and completion.data["verdict"] == "pass"
    assert server.calls[0].request.response_format == {"type": "json_object"}


def test_auto_falls_back_to_json_mode_and_remembers_it():
    model = next(MODELS)
    with LoopbackOpenAI(supports_structured_outputs=False) as server:
        first = call(server, model=model)
        second = call(server, model=model)
    assert first.mode == second.mode == "json_object"
    assert [c.status for c in server.calls] == [400, 200, 200]


def test_json_schema_never_falls_back():
    server = LoopbackOpenAI(supports_structured_outputs=False)
    with server, pytest.raises(client.JudgeRejected, match="response_format"):
        call(server, response_format="json_schema")
    assert [c.status for c in server.calls] == [400]


def test_cached_prompt_tokens_are_read_when_reported():
    with LoopbackOpenAI(prompt_cache=True, prompt_cache_block=4) as server:
        first = call(server)
        second = call(server)
    assert first.cached_tokens == 0
    # The same prompt again: its whole-block prefix came from the provider's cache.
    assert 0 < second.cached_tokens <= second.prompt_tokens
    assert second.cached_tokens == len(server.calls[1].request.prompt_text) // 16 * 4


class Recording:
    """A rate limiter that lets everything through and remembers what it was charged."""

    def __init__(self) -> None:
        self.charged: list[int] = []

    async def acquire(self, tokens: int = 0) -> float:
        self.charged.append(tokens)
        return 0.0


def plain_calls(server: LoopbackOpenAI, criteria: list[str], per_call: int) -> list[engine.Call]:
    endpoint = client.Endpoint(base_url=server.base_url, model="batcher", timeout=5)
    found = []
    for number, text in enumerate(criteria):
        messages = prompts.messages(
            query="What did SLVX report?", query_date=dt.date(2026, 3, 1),
            answer="Revenue was $4.12 billion.", criterion=text,
        )  # fmt: skip
        call = engine.Call(
            number, 0, f"key-{number}", messages, endpoint, criterion=text, per_call=per_call
        )
        found.append(call)
    return found


def judge(calls: list[engine.Call], limiter: Recording) -> list[engine.CallResult]:
    async def go() -> list[engine.CallResult]:
        return await engine.judge_all(
            calls, concurrency=4, limiter=limiter, policy=client.RetryPolicy(attempts=1)
        )

    # This thread's loop, as the workers do: the engine's sessions are kept per thread and
    # bound to its loop (a fresh loop per call would meet a session of an earlier one when
    # a later loopback server gets the same port).
    return client.run_sync(go())


def test_the_rate_limiter_is_charged_the_batched_prompt_and_its_whole_cap():
    criteria = [f"States figure {i} of the report." for i in range(7)]
    limiter = Recording()
    responder = checklist_responder(lambda criterion, answer: "pass")
    with LoopbackOpenAI(responder=responder) as server:
        calls = plain_calls(server, criteria, per_call=0)
        results = judge(calls, limiter)
        sent = server.calls[0].request
    assert [r.outcome for r in results] == ["pass"] * 7
    assert server.call_count == 1
    prompt_chars = sum(len(m["content"]) for m in sent.messages)
    # One charge for the one call: its prompt (characters / 4) and 7 verdicts' max tokens.
    assert limiter.charged == [prompt_chars // 4 + 7 * 512]
    assert sent.max_tokens == 7 * 512
    assert sent.json_schema == batched.SCHEMA
    # The shared tokens add up to the call's, and only the first verdict carries its attempt.
    assert sum(r.prompt_tokens for r in results) > 0
    assert [r.attempts for r in results] == [1, 0, 0, 0, 0, 0, 0]


def test_a_large_batch_asks_for_no_more_output_than_models_accept():
    criteria = [f"States figure {i} of the report." for i in range(40)]
    limiter = Recording()
    responder = checklist_responder(lambda criterion, answer: "pass")
    with LoopbackOpenAI(responder=responder) as server:
        results = judge(plain_calls(server, criteria, per_call=0), limiter)
        sent = server.calls[0].request
    assert server.call_count == 1 and [r.outcome for r in results] == ["pass"] * 40
    assert 40 * 512 > engine.BATCH_MAX_TOKENS == sent.max_tokens == 16_384
    prompt_chars = sum(len(m["content"]) for m in sent.messages)
    assert limiter.charged == [prompt_chars // 4 + 16_384]  # the cap that was asked for


def test_batches_of_k_criteria_and_a_lone_remainder():
    criteria = [f"States figure {i} of the report." for i in range(7)]
    limiter = Recording()
    responder = checklist_responder(lambda criterion, answer: "fail")
    with LoopbackOpenAI(responder=responder) as server:
        results = judge(plain_calls(server, criteria, per_call=3), limiter)
        sizes = [len(batched_criteria(c.request)) for c in server.calls]
    assert sorted(sizes) == [0, 3, 3]  # 3 + 3 + one criterion asked alone (single prompt)
    assert [r.outcome for r in results] == ["fail"] * 7
    assert [r.criterion_id for r in results] == list(range(7))  # the order of the calls
    assert len(limiter.charged) == 3


def batched_criteria(request) -> list[str]:
    return [text for _, text in listed_criteria(request)]

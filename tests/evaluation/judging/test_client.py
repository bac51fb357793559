"""The judge client through the real openai client against the loopback server."""

from __future__ import annotations

import asyncio

import pytest

from evaluation.judging import client
from loopback import Fault, LoopbackOpenAI

SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string"}},
    "required": ["verdict"],
    "additionalProperties": False,
}
MESSAGES = [{"role": "user", "content": "Does the answer state the revenue?"}]


def call(server: LoopbackOpenAI, **endpoint) -> client.Completion:
    settings = {"base_url": server.base_url, "model": "gpt-4o-mini", "timeout": 5, **endpoint}
    return asyncio.run(
        client.complete_json(
            client.Endpoint(**settings), MESSAGES, schema_name="verdict", schema=SCHEMA
        )
    )


def test_structured_outputs_are_asked_for_and_parsed():
    with LoopbackOpenAI(responder=lambda r: {"verdict": "pass"}) as server:
        completion = call(server)
    assert completion.data == {"verdict": "pass"}
    assert completion.mode == "json_schema"
    assert completion.prompt_tokens > 0 and completion.completion_tokens > 0
    request = server.calls[0].request
    assert request.response_format["type"] == "json_schema"


def test_falls_back_to_json_mode_when_schemas_are_refused():
    with LoopbackOpenAI(
        responder=lambda r: {"verdict": "fail"}, supports_structured_outputs=False
    ) as server:
        first = call(server, model="no-schema-model")
        second = call(server, model="no-schema-model")
    assert first.data == second.data == {"verdict": "fail"}
    assert first.mode == second.mode == "json_object"
    # The refusal is remembered: the second call goes straight to JSON mode.
    assert [c.status for c in server.calls] == [400, 200, 200]


def test_unparseable_output_is_returned_as_raw_text_not_guessed():
    with LoopbackOpenAI(responder=lambda r: Fault.malformed_json()) as server:
        completion = call(server)
    assert completion.data is None
    assert completion.raw


def test_transient_faults_are_retried():
    with LoopbackOpenAI(
        responder=lambda r: {"verdict": "pass"},
        fault_plan=lambda request, attempt: (
            Fault.rate_limit(retry_after=0.01) if attempt == 0 else None
        ),
    ) as server:
        completion = call(server)
    assert completion.data == {"verdict": "pass"}
    assert [c.status for c in server.calls] == [429, 200]


def test_a_judge_that_keeps_failing_is_unavailable():
    server = LoopbackOpenAI(responder=lambda r: Fault.server_error())
    with server, pytest.raises(client.JudgeUnavailable):
        call(server, max_retries=1)
    assert server.call_count == 2


def test_a_wrong_key_is_a_rejection_not_a_retry(monkeypatch):
    monkeypatch.setenv("JUDGE_KEY_TEST", "wrong")
    with LoopbackOpenAI(api_key="right") as server, pytest.raises(client.JudgeRejected):
        call(server, api_key_env="JUDGE_KEY_TEST")
    assert server.call_count == 1


def test_the_key_is_read_from_the_named_variable(monkeypatch):
    monkeypatch.setenv("JUDGE_KEY_TEST", "right")
    with LoopbackOpenAI(api_key="right", responder=lambda r: {"verdict": "pass"}) as server:
        assert call(server, api_key_env="JUDGE_KEY_TEST").data == {"verdict": "pass"}


def test_only_the_client_module_imports_openai():
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parents[3]
    importers = {
        str(path.relative_to(root))
        for folder in ("annotation", "evaluation", "config")
        for path in (root / folder).rglob("*.py")
        if re.search(r"^\s*(import openai|from openai)", path.read_text(), re.M)
    }
    # The loopback server is test infrastructure: it serves the protocol, it does not call it.
    assert importers - {"loopback/server.py", "loopback/__init__.py"} == {
        "evaluation/judging/client.py"
    }


def test_a_refused_connection_is_a_connection_error_not_a_timeout():
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # No retries: they would only wait (about 6 s of backoff) before the same refusal.
    endpoint = client.Endpoint(
        base_url=f"http://127.0.0.1:{port}/v1", model="m", timeout=5, max_retries=0
    )
    with pytest.raises(client.JudgeUnavailable) as failure:
        asyncio.run(client.complete_json(endpoint, MESSAGES, schema_name="verdict", schema=SCHEMA))
    assert failure.value.kind == "connection"


def test_a_slow_server_is_a_timeout():
    with (
        LoopbackOpenAI(responder=lambda r: {"verdict": "pass"}, latency=2.0) as server,
        pytest.raises(client.JudgeUnavailable) as failure,
    ):
        call(server, timeout=0.3, max_retries=0)
    assert failure.value.kind == "timeout"

"""A judge whose API key variable is not set on the worker: each of its calls becomes an error
result of kind missing_key that names the variable, no request is sent, and the other calls
of the same batch are judged as usual. The real engine and openai client against the
loopback server; no database except for the run at the end."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from evaluation.judges.models import Judge
from evaluation.judging import client, engine, graded
from evaluation.judging.ratelimit import Unlimited
from evaluation.runs import lifecycle, scope
from evaluation.runs import services as runs
from evaluation.runs.models import Run, Verdict
from loopback import LoopbackOpenAI
from tests.evaluation.runs.workload import build_workload, scripted_judge
from tests.factories import PanelFactory, loopback_judges

VARIABLE = "JUDGE_KEY_TEST_NOT_SET"
MESSAGE = f"The API key variable {VARIABLE} is not set on this worker."
MISSING = ("error", "missing_key", MESSAGE)  # outcome, error kind, error
VERDICT = {"verdict": "pass", "failure_kind": None, "rationale": "States it."}
POLICY = client.RetryPolicy(attempts=2, base_delay=0.01)


@pytest.fixture
def unset(monkeypatch):
    monkeypatch.delenv(VARIABLE, raising=False)


def endpoints(server: LoopbackOpenAI) -> tuple[client.Endpoint, client.Endpoint]:
    """A judge without its key and one that needs none, on the same server."""
    keyless = client.Endpoint(server.base_url, "model-a", api_key_env=VARIABLE, timeout=5)
    return keyless, client.Endpoint(server.base_url, "model-b", timeout=5)


def test_missing_key_names_the_variable_when_unset_or_empty(unset, monkeypatch):
    endpoint = client.Endpoint("http://127.0.0.1:9/v1", "m", api_key_env=VARIABLE)
    assert client.missing_key(endpoint) == MESSAGE
    monkeypatch.setenv(VARIABLE, "")
    assert client.missing_key(endpoint) == MESSAGE
    monkeypatch.setenv(VARIABLE, "sk-secret-value")
    assert client.missing_key(endpoint) is None
    # No variable named: a local server that takes any key.
    assert client.missing_key(client.Endpoint("http://127.0.0.1:9/v1", "m")) is None


def test_a_verdict_batch_fails_only_the_keyless_judges_calls(unset):
    with LoopbackOpenAI(responder=lambda r: VERDICT) as server:
        keyless, keyed = endpoints(server)
        messages = [{"role": "user", "content": "Does the answer state the revenue?"}]
        calls = [
            engine.Call(i, 0, f"key-{i}", messages, keyless if i % 2 else keyed) for i in range(6)
        ]
        results = client.run_sync(
            engine.judge_all(calls, concurrency=4, limiter=Unlimited(), policy=POLICY)
        )

    by_id = {r.criterion_id: r for r in results}
    for i in (1, 3, 5):
        failed = by_id[i]
        assert (failed.outcome, failed.error_kind, failed.error) == (
            "error",
            "missing_key",
            MESSAGE,
        )
        assert failed.attempts == 0 and failed.prompt_tokens == 0
    assert [by_id[i].outcome for i in (0, 2, 4)] == ["pass"] * 3
    # No request for the keyless judge: only the other judge's three calls reached the server.
    assert server.call_count == 3
    assert {c.request.model for c in server.calls} == {"model-b"}


def test_a_graded_batch_fails_only_the_keyless_judges_calls(unset):
    with LoopbackOpenAI(responder=lambda r: {"reasoning": "Agrees.", "score": 4}) as server:
        keyless, keyed = endpoints(server)
        messages = graded.messages(
            query="What was the revenue?", query_date=dt.date(2024, 5, 1),
            references=["Revenue was $4.12 billion."], answer="$4.12 billion.",
        )  # fmt: skip
        calls = [
            graded.GradeCall(i, f"key-{i}", messages, keyless if i % 2 else keyed) for i in range(4)
        ]
        results = client.run_sync(graded.grade_all(calls, limiter=Unlimited(), policy=POLICY))

    by_sample = {r.sample: r for r in results}
    for i in (1, 3):
        failed = by_sample[i]
        assert (failed.outcome, failed.error_kind, failed.error) == (
            "error",
            "missing_key",
            MESSAGE,
        )
    assert [(by_sample[i].outcome, by_sample[i].score) for i in (0, 2)] == [("scored", 4)] * 2
    assert server.call_count == 2


def test_a_single_call_raises_missing_api_key_a_rejection_without_a_request(unset):
    with LoopbackOpenAI(responder=lambda r: VERDICT) as server:
        keyless, _ = endpoints(server)
        with pytest.raises(client.MissingApiKey, match=VARIABLE) as failure:
            asyncio.run(
                client.complete_json(
                    keyless, [{"role": "user", "content": "?"}], schema_name="s", schema={}
                )
            )
    # Callers of complete_json (formality check, perfect-answer draft) catch JudgeRejected.
    assert isinstance(failure.value, client.JudgeRejected)
    assert server.call_count == 0


@pytest.mark.django_db
def test_a_run_records_missing_key_verdicts_beside_the_other_judges(
    unset, dataset, loopback_openai, monkeypatch
):
    loopback_openai.responder = scripted_judge
    build_workload(dataset, queries=1, answers_per_query=2, criteria=3)
    panel = PanelFactory(judges=loopback_judges(loopback_openai, 2))
    Judge.objects.filter(name="Judge 1").update(api_key_env=VARIABLE)
    monkeypatch.setenv(VARIABLE, "sk-test")  # set where the run starts (pre-flight passes)…
    run = runs.run_start(run=runs.run_create(dataset=dataset, panel=panel))
    monkeypatch.delenv(VARIABLE)  # …and missing where its tasks run
    for answer in scope.run_answers(run):
        for member in run.panel.members.all():
            lifecycle.run_task(
                run_id=run.pk, answer_id=answer.pk, judge_id=member.judge_id, worker="test"
            )

    run.refresh_from_db()
    assert run.status == Run.Status.DONE_WITH_ERRORS and VARIABLE in run.reason
    verdicts = Verdict.objects.filter(run=run)
    assert verdicts.count() == run.expected == 2 * 3 * 2
    failed = verdicts.filter(judge__name="Judge 1")
    assert set(failed.values_list("outcome", "error_kind", "error")) == {MISSING}
    assert not verdicts.filter(judge__name="Judge 0", outcome="error").exists()
    assert loopback_openai.call_count == 2 * 3
